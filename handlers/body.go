package handlers

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"reflect"
	"strings"
	"sync"
	"unicode/utf8"
)

// The bodies of the resolution routes, whose keys are symbolicator's
// snake_case: read by readBody within the limits of decodeJSON (1 MiB,
// 20,000 values) and decoded once, without decodeJSON's renaming of keys.
// decodeSnakeJSON (the native route) and decodeResolveBody (the JVM
// route; the JavaScript route's checkResolveBody and decodeResolveJSON
// behind its fast decoding) differ only in the 422s they give, each the
// route's own.

// decodeSnakeJSON reads a JSON object of at most maxBodyBytes into dst,
// whose keys are snake_case: 413 over the limit, 400 when it does not
// parse, 422 for a value of the wrong type.
func decodeSnakeJSON(w http.ResponseWriter, r *http.Request, dst any) error {
	body, err := readBody(w, r, nil)
	if err != nil {
		return err
	}
	if err := checkValues(body); err != nil {
		return err
	}
	body = bytes.TrimSpace(body)
	if len(body) == 0 || body[0] != '{' {
		return errCannotParse
	}
	if err := json.Unmarshal(body, dst); err != nil {
		if te, ok := errors.AsType[*json.UnmarshalTypeError](err); ok {
			loc := []any{"body"}
			for _, p := range strings.Split(te.Field, ".") {
				if p != "" {
					loc = append(loc, p)
				}
			}
			return invalid(typeError, "Expected "+te.Type.String()+" at "+te.Field, loc...)
		}
		return &apiError{status: http.StatusBadRequest, detail: "Cannot parse request body", cause: err}
	}
	return nil
}

// decodeResolveBody is decodeJSON for the resolution routes, whose keys
// are symbolicator's snake_case and whose bodies are read in one decoding:
// the same limits and answers (413, 408, 400 for JSON that does not parse
// or is not UTF-8, 422 for wrong types and NUL characters) without
// decodeJSON's renaming of keys, which reads a 1 MiB body of frames five
// times.
func decodeResolveBody(w http.ResponseWriter, r *http.Request, dst any) error {
	body, err := readBody(w, r, nil)
	if err != nil {
		return err
	}
	if err := checkResolveBody(body); err != nil {
		return err
	}
	return decodeResolveJSON(body, dst)
}

// checkValues refuses a body of more than maxJSONValues values.
func checkValues(body []byte) error {
	if n := jsonValues(body); n > maxJSONValues {
		return invalid(valueErr, fmt.Sprintf("The body has more than %d values", maxJSONValues), "body")
	}
	return nil
}

// checkResolveBody checks a body's values and encoding: at most
// maxJSONValues values, UTF-8.
func checkResolveBody(body []byte) error {
	if err := checkValues(body); err != nil {
		return err
	}
	if !utf8.Valid(body) {
		return errCannotParse
	}
	return nil
}

// bodyBuffers recycles the bodies symbolicate-js reads: a thousand frames
// are 100 KB.
var bodyBuffers = sync.Pool{New: func() any { return new([]byte) }}

// maxPooledBody is the largest buffer bodyBuffers keeps: a body of up to
// maxBodyBytes is read into a buffer of its size, which the pool would
// otherwise hold, one for each request served at once, for the requests
// of a thousand frames that follow.
const maxPooledBody = 256 << 10

// putBodyBuffer gives *bp back to bodyBuffers unless it grew beyond
// maxPooledBody.
func putBodyBuffer(bp *[]byte) {
	if cap(*bp) > maxPooledBody {
		return
	}
	bodyBuffers.Put(bp)
}

// maxBodyPresize is the most readBody allocates for a body before its
// bytes arrive: a Content-Length is a claim, and a client that claims
// 1 MiB and sends nothing would hold that much for each of its
// connections until the read timeout.
const maxBodyPresize = 64 << 10

// readBody reads r's body of at most maxBodyBytes into buf, which it
// grows as needed: in one read when the body says its length and that is
// at most maxBodyPresize.
func readBody(w http.ResponseWriter, r *http.Request, buf []byte) ([]byte, error) {
	if r.ContentLength > maxBodyBytes {
		return buf, errTooLarge
	}
	// One byte more than the length, for the read that finds the end.
	if need := min(int(r.ContentLength)+1, maxBodyPresize); r.ContentLength > 0 && cap(buf) < need {
		buf = make([]byte, 0, need)
	}
	body := http.MaxBytesReader(w, r.Body, maxBodyBytes)
	for {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		n, err := body.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if err == io.EOF {
			return buf, nil
		}
		if err != nil {
			return buf, bodyError(err)
		}
	}
}

// decodeResolveJSON decodes a body that checkResolveBody took into dst.
func decodeResolveJSON(body []byte, dst any) error {
	if t := bytes.TrimLeft(body, " \t\r\n"); len(t) > 0 && t[0] != '{' {
		if !json.Valid(body) {
			return errCannotParse
		}
		return invalid(typeError, "Input should be an object", "body")
	}
	if err := json.Unmarshal(body, dst); err != nil {
		if te, ok := errors.AsType[*json.UnmarshalTypeError](err); ok {
			at := append([]any{"body"}, jsonPath(reflect.TypeOf(dst), te.Field)...)
			return invalid(typeError, "Input should be a valid "+jsonKind(te.Type), at...)
		}
		return errCannotParse
	}
	// JSON can only write NUL as \u0000: a body without it has none, and
	// the walk through what it decoded to is spared.
	if bytes.Contains(body, []byte(`\u0000`)) {
		if at, found := nulPath(reflect.ValueOf(dst)); found {
			return invalid(valueErr, "Input should not contain NUL characters", append([]any{"body"}, at...)...)
		}
	}
	return nil
}

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
