package handlers

import (
	"errors"
	"net"
	"net/http"
)

// bodyError turns a failure to read a request body into the contract's
// answer: 413 over the limit, 408 when the body did not arrive within the
// server's read timeout (READ_TIMEOUT), else 400.
func bodyError(err error) error {
	if _, ok := errors.AsType[*http.MaxBytesError](err); ok {
		return errTooLarge
	}
	if ne, ok := errors.AsType[net.Error](err); ok && ne.Timeout() {
		return &apiError{status: http.StatusRequestTimeout, detail: "Request Timeout", cause: err}
	}
	return &apiError{status: http.StatusBadRequest, detail: "Cannot parse request body", cause: err}
}

// uploadMemory is how much of a multipart upload is held in memory; the
// rest goes to temporary files.
const uploadMemory = 8 << 20
