//go:build !linux

package handlers

import "context"

// corked runs send: TCP_CORK, which keeps an answer's headers in the
// first segment of the file that follows them, is Linux's alone
// (cork_linux.go).
func corked(_ context.Context, send func()) {
	send()
}
