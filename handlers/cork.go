package handlers

import (
	"context"
	"net"
)

// connKey is the context key of a request's connection (WithConn).
type connKey struct{}

// WithConn is an http.Server's ConnContext: it keeps each request's
// connection in its context, so that a handler sending a file can cork it
// (corked).
func WithConn(ctx context.Context, c net.Conn) context.Context {
	return context.WithValue(ctx, connKey{}, c)
}
