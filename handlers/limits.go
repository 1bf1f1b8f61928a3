package handlers

import (
	"context"
	"errors"
	"fmt"
	"mime"
	"net/http"
	"strings"
	"time"

	"errata/handlers/symbolication"
	"errata/store"
)

// defaultBodiesPerToken is how many uploads one token may have in flight
// when Deps leaves BodiesPerToken zero: four times sentry-cli's chunk
// upload concurrency, for pipelines that share a token.
const defaultBodiesPerToken = 16

// tooMany is the answer to a token over its bound: 503 with Retry-After,
// which sentry-cli retries (it fails at once on 429).
func (l *bodyLimiter) tooMany() error {
	return &apiError{status: http.StatusServiceUnavailable, retryAfter: uploadRetryAfter,
		detail: fmt.Sprintf("Too many uploads in flight for this token, its limit is %d: retry later", l.max)}
}

// uploadRetryAfter is the Retry-After, in seconds, of a token over its
// bound of uploads: one of its uploads ends by then, usually.
const uploadRetryAfter = 5

// jobLimitRetryAfter is the Retry-After, in seconds, of a request that
// would take its organization over its limit of queued jobs
// (store.ErrJobLimit): some of them have run by then.
const jobLimitRetryAfter = 30

// retryAfter is the Retry-After, in seconds, of the answer to err; 0 is
// none.
func retryAfter(err error) int {
	if ae, ok := errors.AsType[*apiError](err); ok && ae.retryAfter > 0 {
		return ae.retryAfter
	}
	if errors.Is(err, store.ErrJobLimit) {
		return jobLimitRetryAfter
	}
	if errors.Is(err, store.ErrTurnTimeout) {
		return uploadRetryAfter
	}
	return 0
}

// bodyLimiter bounds the uploads (multipart bodies: chunks and files, up to
// 32 MiB each) which one token has being read at once: a client that sends
// its bodies slowly holds goroutines, sockets and spool files, never a
// database connection, and this keeps one token from holding many. An
// upload over the bound waits for a slot, as long as uploadSlotWait, then
// is answered 503 with Retry-After. JSON bodies (at most 1 MiB) are not counted.
type bodyLimiter struct {
	max int
	// tokens are max slots per token; their slots of all are not used.
	tokens *symbolication.Slots[int64]
}

// uploadSlotWait is how long an upload waits for one of its token's slots.
const uploadSlotWait = 10 * time.Second

func newBodyLimiter(max int) *bodyLimiter {
	if max <= 0 {
		max = defaultBodiesPerToken
	}
	return &bodyLimiter{max: max, tokens: symbolication.NewSlots[int64](max, 1)}
}

// isUpload reports whether r sends a multipart body, an upload.
func isUpload(r *http.Request) bool {
	mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	return strings.HasPrefix(mt, "multipart/")
}

// acquire takes one of token's slots, waiting at most wait; it reports
// false when none came free in time or ctx ended. A true comes with the
// release that gives the slot back.
func (l *bodyLimiter) acquire(ctx context.Context, token int64, wait time.Duration) (release func(), ok bool) {
	ctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	release, err := l.tokens.AcquireOrg(ctx, token, nil)
	return release, err == nil
}

// defaultMaxBundleSize is the bundle limit when Deps leaves it zero; it
// matches the worker's default.
const defaultMaxBundleSize = 256 << 20

// maxBundleSize is d.MaxBundleSize, or defaultMaxBundleSize when it is 0.
func maxBundleSize(d Deps) int64 {
	if d.MaxBundleSize > 0 {
		return d.MaxBundleSize
	}
	return defaultMaxBundleSize
}

// workSlotWait is how long a request of a route that inflates or parses
// waits for one of its organization's slots and one of all
// (acquireWork).
const workSlotWait = 10 * time.Second

// workRetryAfter is the Retry-After, in seconds, of a request that found
// no slot in time: one of the requests before it ends by then, usually.
const workRetryAfter = 5

// acquireWork takes one of slots' slots for the organization org, before
// the request opens a file, so that a request waiting holds nothing: it
// waits at most workSlotWait, then is answered 503 with Retry-After, as an
// upload over its token's bound is; a request whose client left stops
// waiting at once. what names the work in the answer. The release it
// returns gives the slots back.
func acquireWork(r *http.Request, slots *symbolication.Slots[string], org, what string) (release func(), err error) {
	return waitForSlot(r, what, func(ctx context.Context) (func(), error) { return slots.Acquire(ctx, org, nil) })
}

// startResolution checks that the caller of sc sees its project (404
// otherwise, as an upload checks before it reads its body), then takes the
// resolution slots of its organization (acquireResolution): a caller
// cannot hold, nor wait for, the slots of an organization it does not
// belong to. The check takes a connection only for its query, before the
// body is read.
func startResolution(r *http.Request, d Deps, sc store.ProjectScope) (all func() error, release func(), err error) {
	if err := d.Store.CheckProject(r.Context(), sc); err != nil {
		return nil, nil, err
	}
	return acquireResolution(r, d.resolving, sc.OrgSlug)
}

// acquireResolution takes the slots of a resolution request in two steps:
// one of its organization's before it reads the body (a slow client holds
// a slot of its own organization only), then, with the body read and
// checked, one of all (slots.AcquireAll through the continuation it
// returns). Each step waits as acquireWork does. release gives back what
// was taken.
func acquireResolution(r *http.Request, slots *symbolication.Slots[string], org string) (all func() error, release func(), err error) {
	releaseOrg, err := waitForSlot(r, "resolutions", func(ctx context.Context) (func(), error) { return slots.AcquireOrg(ctx, org, nil) })
	if err != nil {
		return nil, nil, err
	}
	var releaseAll func()
	all = func() error {
		release, err := waitForSlot(r, "resolutions", func(ctx context.Context) (func(), error) { return slots.AcquireAll(ctx, nil) })
		releaseAll = release
		return err
	}
	return all, func() {
		if releaseAll != nil {
			releaseAll()
		}
		releaseOrg()
	}, nil
}

// waitForSlot waits for acquire at most workSlotWait: 503 with
// Retry-After past it, the context's error when the client left.
func waitForSlot(r *http.Request, what string, acquire func(ctx context.Context) (func(), error)) (release func(), err error) {
	ctx, cancel := context.WithTimeout(r.Context(), workSlotWait)
	defer cancel()
	release, err = acquire(ctx)
	switch {
	case err == nil:
		return release, nil
	case r.Context().Err() != nil:
		return nil, r.Context().Err()
	}
	return nil, &apiError{status: http.StatusServiceUnavailable, retryAfter: workRetryAfter,
		detail: fmt.Sprintf("Too many %s at once for this organization or this server: retry later", what)}
}

// The resolution requests (symbolicate/, symbolicate-js/,
// symbolicate-jvm/, all three together) that run at once: two per
// organization and four in all, each within its request budget
// (symbolication.Budget), so that what they hold together is bounded
// whatever the number of requests.
const (
	resolveSlotsPerOrg = 2
	resolveSlots       = 4
)

// newResolveSlots returns the slots of the resolution routes.
func newResolveSlots() *symbolication.Slots[string] {
	return symbolication.NewSlots[string](resolveSlotsPerOrg, resolveSlots)
}
