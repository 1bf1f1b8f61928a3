package handlers

import (
	"context"
	"net"
	"syscall"
)

// corked runs send with the request's TCP connection corked (TCP_CORK),
// then uncorks it: net/http writes an answer's headers in a write of their
// own before sendfile(2) sends the file, and corked they leave in the
// file's first segment instead of a small one of their own that the client
// wakes up for. On any other connection send just runs.
func corked(ctx context.Context, send func()) {
	tc, ok := ctx.Value(connKey{}).(*net.TCPConn)
	if !ok {
		send()
		return
	}
	raw, err := tc.SyscallConn()
	if err != nil {
		send()
		return
	}
	setCork := func(on int) {
		raw.Control(func(fd uintptr) { //nolint:errcheck // a connection that refuses is served uncorked
			syscall.SetsockoptInt(int(fd), syscall.IPPROTO_TCP, syscall.TCP_CORK, on) //nolint:errcheck
		})
	}
	setCork(1)
	defer setCork(0)
	send()
}
