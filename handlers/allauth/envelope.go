package allauth

import (
	"bytes"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"strconv"

	"errata/authn"
	"errata/store"
)

// envelope is every answer of the API: allauth's status, data, meta and
// errors.
type envelope struct {
	Status int          `json:"status"`
	Data   any          `json:"data,omitempty"`
	Meta   any          `json:"meta,omitempty"`
	Errors []fieldError `json:"errors,omitempty"`
}

// fieldError is one entry of an answer's errors: a message for a person,
// a code for a program, and the input it is about.
type fieldError struct {
	Message string `json:"message"`
	Code    string `json:"code"`
	Param   string `json:"param,omitempty"`
}

// apiError is an error answer: its status and, for a 400, its errors;
// cause, when set, goes to the log only.
type apiError struct {
	status     int
	errors     []fieldError
	retryAfter int // seconds, when positive
	cause      error
}

func (e *apiError) Error() string {
	msg := "allauth: " + strconv.Itoa(e.status)
	if len(e.errors) > 0 {
		msg += " " + e.errors[0].Code
	}
	if e.cause != nil {
		msg += ": " + e.cause.Error()
	}
	return msg
}

func (e *apiError) Unwrap() error { return e.cause }

// invalid is a 400 with one error about param.
func invalid(code, message, param string) error {
	return &apiError{status: http.StatusBadRequest, errors: []fieldError{{Message: message, Code: code, Param: param}}}
}

// status is an answer of status alone: {"status": N}.
func status(code int) error { return &apiError{status: code} }

// write encodes v into a buffer, then sends it with status.
func write(w http.ResponseWriter, log *slog.Logger, code int, v any) {
	var buf bytes.Buffer
	if err := json.NewEncoder(&buf).Encode(v); err != nil {
		log.Error("encode answer", "err", err)
		code, buf = http.StatusInternalServerError, *bytes.NewBufferString(`{"status":500}` + "\n")
	}
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(buf.Len()))
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	w.Write(buf.Bytes()) //nolint:errcheck // the client went away
}

// writeError answers err: an apiError as it says, a database out of reach
// as 503, anything else as a 500 whose cause is logged, never shown.
func writeError(w http.ResponseWriter, r *http.Request, log *slog.Logger, err error) {
	var ae *apiError
	switch {
	case errors.As(err, &ae):
	case errors.Is(err, store.ErrUnavailable):
		ae = &apiError{status: http.StatusServiceUnavailable, retryAfter: 1, cause: err}
	case errors.Is(err, authn.ErrCSRF):
		ae = &apiError{status: http.StatusForbidden}
	default:
		ae = &apiError{status: http.StatusInternalServerError, cause: err}
	}
	if ae.status >= 500 && r.Context().Err() == nil {
		log.ErrorContext(r.Context(), "request failed", "status", ae.status, "err", err)
	}
	if ae.retryAfter > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(ae.retryAfter))
	}
	write(w, log, ae.status, envelope{Status: ae.status, Errors: ae.errors})
}
