package allauth

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"unicode/utf8"
)

// maxBody bounds a request body: every input of this API is a few short
// strings (a password is at most 1,024 characters).
const maxBody = 16 << 10

// errMalformed is a body that is not one JSON object of the route's
// fields: 400.
var errMalformed = invalid("invalid", "The request body is not valid JSON.", "")

// decode reads r's JSON body into dst (a pointer to a struct of strings
// and lists), at most maxBody bytes: more is 413, a body that is not
// valid UTF-8 JSON of dst's shape a 400.
func decode(r *http.Request, dst any) error {
	body, err := io.ReadAll(io.LimitReader(r.Body, maxBody+1))
	if err != nil {
		return &apiError{status: http.StatusBadRequest, cause: err}
	}
	if len(body) > maxBody {
		return status(http.StatusRequestEntityTooLarge)
	}
	return decodeJSON(body, dst)
}

// decodeJSON is decode's parse of body: one JSON object, valid UTF-8 (never
// replaced silently), the types of dst's fields; unknown fields are
// ignored, as allauth does.
func decodeJSON(body []byte, dst any) error {
	if !utf8.Valid(body) {
		return errMalformed
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	if err := dec.Decode(dst); err != nil {
		if te, ok := errors.AsType[*json.UnmarshalTypeError](err); ok && te.Field != "" {
			return invalid("invalid", "Enter a valid value.", te.Field)
		}
		return errMalformed
	}
	if _, err := dec.Token(); err != io.EOF {
		return errMalformed
	}
	return nil
}

// maxEmail is the longest address errata takes (RFC 5321's path).
const maxEmail = 254

// checkEmail returns the 400 of an address that cannot be one: empty
// (required), too long, without text on both sides of an @, or holding a NUL or a control
// character, which no address has and PostgreSQL's text cannot hold.
func checkEmail(email, param string) error {
	local, domain, _ := strings.Cut(email, "@")
	switch {
	case email == "":
		return invalid("required", "This field is required.", param)
	case len(email) > maxEmail, local == "", domain == "",
		strings.ContainsFunc(email, func(r rune) bool { return r < 0x20 || r == 0x7f }):
		return invalid("invalid", "Enter a valid email address.", param)
	}
	return nil
}
