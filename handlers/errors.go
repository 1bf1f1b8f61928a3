package handlers

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"strings"

	"errata/authn"
	"errata/handlers/symbolication"
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
	switch {
	case status >= 500 && errors.Is(err, context.Canceled) && r.Context().Err() != nil:
		// The client went away; nobody reads this answer.
		log.InfoContext(r.Context(), "request canceled", "err", err)
	case status >= 500:
		log.ErrorContext(r.Context(), "request failed", "status", status, "err", err)
	}
	writeJSON(w, r, log, status, body)
}

// errorResponse maps err to a status and a body; it is the one table from
// error kinds to statuses.
func errorResponse(err error) (int, any) {
	var ae *apiError
	var ve validationError
	var le *symbolication.LimitError
	var ie *symbolication.InvalidError
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
	case errors.Is(err, store.ErrNotFound):
		return http.StatusNotFound, detail{"Not Found"}
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
	}
	return invalid(valueErr, fmt.Sprintf("At most %d distinct files a request", le.Max), "body", "stacktraces")
}

// maxFieldErrors bounds the entries of a 422 body.
const maxFieldErrors = 100

// detail is the body of every non-validation error.
type detail struct {
	Detail string `json:"detail"`
}
