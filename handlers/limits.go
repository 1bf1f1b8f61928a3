package handlers

import (
	"net/http"
	"sync"
)

// defaultBodiesPerToken is how many requests with a body one token may have
// in flight when Deps leaves BodiesPerToken zero: twice sentry-cli's chunk
// upload concurrency, with room for its assemble polls.
const defaultBodiesPerToken = 8

// errTooManyBodies is the answer to a token over its bound.
var errTooManyBodies = &apiError{status: http.StatusTooManyRequests, detail: "Too many uploads in flight for this token"}

// bodyLimiter bounds the requests that send a body (POST, PUT, PATCH) which
// one token has in flight: a client that sends its bodies slowly holds
// goroutines, sockets and spool files, never a database connection, and
// this keeps one token from holding many.
type bodyLimiter struct {
	mu     sync.Mutex
	max    int
	flying map[int64]int // token id -> requests in flight
}

func newBodyLimiter(max int) *bodyLimiter {
	if max <= 0 {
		max = defaultBodiesPerToken
	}
	return &bodyLimiter{max: max, flying: map[int64]int{}}
}

// hasBody reports whether r's method sends a body that a handler reads.
func hasBody(r *http.Request) bool {
	return r.Method == http.MethodPost || r.Method == http.MethodPut || r.Method == http.MethodPatch
}

// acquire counts one more request of token, or reports that it is over
// the bound.
func (l *bodyLimiter) acquire(token int64) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.flying[token] >= l.max {
		return false
	}
	l.flying[token]++
	return true
}

// release counts one request of token fewer.
func (l *bodyLimiter) release(token int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.flying[token]--; l.flying[token] <= 0 {
		delete(l.flying, token)
	}
}
