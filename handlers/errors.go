package handlers

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"strings"

	"errata/authn"
	"errata/handlers/symbolication"
	"errata/handlers/symbolkey"
	"errata/store"
)

// apiError is an error with a status and a message for the client; cause,
// when set, goes to the log only.
type apiError struct {
	status int
	detail string
	cause  error
	// retryAfter, when positive, is the Retry-After of the answer, in
	// seconds.
	retryAfter int
}

func (e *apiError) Error() string {
	if e.cause != nil {
		return e.detail + ": " + e.cause.Error()
	}
	return e.detail
}

func (e *apiError) Unwrap() error { return e.cause }

// Errors with the contract's bodies.
var (
	errUnauthorized     = &apiError{status: http.StatusUnauthorized, detail: "Unauthorized"}
	errPermissionDenied = &apiError{status: http.StatusForbidden, detail: "Permission denied"}
	errNotFound         = &apiError{status: http.StatusNotFound, detail: "Not Found"}
	errCannotParse      = &apiError{status: http.StatusBadRequest, detail: "Cannot parse request body"}
	errTooLarge         = &apiError{status: http.StatusRequestEntityTooLarge, detail: "Request body too large"}
	errMethodNotAllowed = &apiError{status: http.StatusMethodNotAllowed, detail: "Method Not Allowed"}
)

// badRequest is a 400 whose detail is msg, one of the spec's messages.
func badRequest(msg string) error {
	return &apiError{status: http.StatusBadRequest, detail: msg}
}

// fieldError is one entry of a 422 body.
type fieldError struct {
	Type string `json:"type"`
	Loc  []any  `json:"loc"`
	Msg  string `json:"msg"`
}

// validationError is a 422 answer listing what is wrong with the input.
type validationError []fieldError

func (v validationError) Error() string {
	var b strings.Builder
	b.WriteString("invalid input:")
	for _, f := range v {
		b.WriteString(" ")
		b.WriteString(f.Msg)
	}
	return b.String()
}

// Kinds of validation errors.
const (
	missing   = "missing"
	typeError = "type_error"
	valueErr  = "value_error"
)

// invalid returns a validation error of kind typ at loc.
func invalid(typ, msg string, loc ...any) error {
	return validationError{{Type: typ, Loc: loc, Msg: msg}}
}

// writeError answers err as the contract says and logs what the client does
// not see.
func writeError(w http.ResponseWriter, r *http.Request, log *slog.Logger, err error) {
	status, body := errorResponse(err)
	if secs := retryAfter(err); secs > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(secs))
	}
	logFailure(r, log, status, err)
	writeJSON(w, r, log, status, body)
}

// logFailure logs an answer of status 500 or more, which the client sees
// without its cause.
func logFailure(r *http.Request, log *slog.Logger, status int, err error) {
	switch {
	case status >= 500 && errors.Is(err, context.Canceled) && r.Context().Err() != nil:
		// The client went away; nobody reads this answer.
		log.InfoContext(r.Context(), "request canceled", "err", err)
	case status >= 500:
		log.ErrorContext(r.Context(), "request failed", "status", status, "err", err)
	}
}

// writeTextError answers err as writeError does, from the same table, with
// the detail as a short text/plain body instead of JSON: the answers of the
// direct routes (routes.go), which debuggers show. A 401 names the Basic
// scheme they take, a 405 the methods they answer; the headers of a file
// the answer was to carry are dropped.
func writeTextError(w http.ResponseWriter, r *http.Request, log *slog.Logger, err error) {
	status, body := errorResponse(err)
	text := http.StatusText(status)
	if d, ok := body.(detail); ok {
		text = d.Detail
	}
	logFailure(r, log, status, err)
	hd := w.Header()
	for _, k := range []string{"Content-Length", "Content-Range", "Etag", "Last-Modified", "X-Debuginfod-Size", "X-Debuginfod-File", "Content-Encoding"} {
		hd.Del(k)
	}
	hd.Set("Content-Type", "text/plain; charset=utf-8")
	hd.Set("Cache-Control", "no-store")
	switch status {
	case http.StatusUnauthorized:
		hd.Set("WWW-Authenticate", `Basic realm="errata"`)
	case http.StatusMethodNotAllowed:
		hd.Set("Allow", "GET, HEAD")
	}
	if secs := retryAfter(err); secs > 0 {
		hd.Set("Retry-After", strconv.Itoa(secs))
	}
	text += "\n"
	hd.Set("Content-Length", strconv.Itoa(len(text)))
	w.WriteHeader(status)
	io.WriteString(w, text) //nolint:errcheck // the client went away
}

// errorResponse maps err to a status and a body; it is the one table from
// error kinds to statuses.
func errorResponse(err error) (int, any) {
	var ae *apiError
	var ve validationError
	var le *symbolication.LimitError
	var ie *symbolication.InvalidError
	var malformedKey *symbolkey.MalformedError
	switch {
	case errors.As(err, &le):
		return errorResponse(limitError(le))
	case errors.As(err, &ie):
		return errorResponse(invalid(valueErr, ie.Msg, ie.Loc...))
	case errors.As(err, &ae):
		return ae.status, detail{ae.detail}
	case errors.As(err, &ve):
		// A body can have many faults (350 000 bad chunk names); the
		// first ones tell the client what is wrong.
		if len(ve) > maxFieldErrors {
			ve = ve[:maxFieldErrors]
		}
		return http.StatusUnprocessableEntity, map[string]any{"detail": ve}
	case errors.Is(err, authn.ErrNoCredential), errors.Is(err, authn.ErrBadCredential):
		return http.StatusUnauthorized, detail{"Unauthorized"}
	case errors.Is(err, authn.ErrTwoFactorRequired):
		// Sentry's TwoFactorRequired, whose detail is an object.
		return http.StatusUnauthorized, map[string]any{"detail": map[string]any{"code": "2fa-required",
			"message": "Organization requires two-factor authentication to be enabled", "extra": map[string]any{}}}
	case errors.Is(err, store.ErrNotFound), errors.Is(err, symbolkey.ErrNotFound):
		return http.StatusNotFound, detail{"Not Found"}
	case errors.As(err, &malformedKey):
		// A symbol route's build id or source path (docs/symbol-server.md).
		return http.StatusBadRequest, detail{malformedKey.Msg}
	case errors.Is(err, store.ErrConflict):
		// Two requests changed the same record at once; the one that lost
		// may try again.
		return http.StatusConflict, detail{"Conflict"}
	case errors.Is(err, store.ErrUnavailable):
		return http.StatusServiceUnavailable, detail{"Service Unavailable"}
	case errors.Is(err, store.ErrJobLimit):
		limit := 0
		if le, ok := errors.AsType[*store.JobLimitError](err); ok {
			limit = le.Limit
		}
		return http.StatusServiceUnavailable, detail{fmt.Sprintf(
			"The organization has %d background jobs queued or running, its limit: retry later", limit)}
	case errors.Is(err, store.ErrTurnTimeout):
		return http.StatusServiceUnavailable, detail{
			"Too many requests of the organization wait for their turn to enqueue work: retry later"}
	case errors.Is(err, store.ErrQuotaExceeded):
		return http.StatusForbidden, detail{"The organization's storage quota is exceeded"}
	}
	return http.StatusInternalServerError, detail{"Internal Server Error"}
}

// limitError is the 422 of a resolution request beyond one of its limits.
func limitError(le *symbolication.LimitError) error {
	switch le.Limit {
	case symbolication.ParseBytes:
		return invalid(valueErr, fmt.Sprintf("The request would parse more than %d bytes of debug files", le.Max), "body", "modules")
	case symbolication.ReadBytes:
		return invalid(valueErr, fmt.Sprintf("The request reads more than %d bytes of stored files", le.Max), "body", "stacktraces")
	case symbolication.AnswerBytes:
		return invalid(valueErr, fmt.Sprintf("The answer would be larger than %d bytes", le.Max), "body", "stacktraces")
	case symbolication.HeldBytes:
		return invalid(valueErr, fmt.Sprintf("The request would hold more than %d bytes of parsed files", le.Max), "body", "stacktraces")
	}
	return invalid(valueErr, fmt.Sprintf("At most %d distinct files a request", le.Max), "body", "stacktraces")
}

// maxFieldErrors bounds the entries of a 422 body.
const maxFieldErrors = 100

// detail is the body of every non-validation error.
type detail struct {
	Detail string `json:"detail"`
}
