package store

import (
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"
)

// The rules for the names a release and its files are stored under live
// here, next to the columns they protect, because both the API (request
// bodies and paths) and the assembly worker (bundle manifests) check them
// and must agree.

// MaxVersionLength is the longest release version, in characters.
const MaxVersionLength = 200

// CheckReleaseVersion returns what is wrong with a release version, or nil.
// The rules are Sentry's: 1 to 200 characters, no line break, tab, slash or
// backslash, and not ".", ".." or "latest" in any case, nor blank, once
// trimmed; and PostgreSQL's: valid UTF-8 without NUL.
func CheckReleaseVersion(v string) error {
	switch {
	case !utf8.ValidString(v):
		return errors.New("it is not valid UTF-8")
	case strings.TrimSpace(v) == "":
		return errors.New("it is blank")
	case utf8.RuneCountInString(v) > MaxVersionLength:
		return fmt.Errorf("it is longer than %d characters", MaxVersionLength)
	case strings.ContainsAny(v, "\r\n\f\t/\\\x00"):
		return errors.New("it contains a slash, a backslash or a control character")
	}
	switch strings.ToLower(strings.TrimSpace(v)) {
	case ".", "..", "latest":
		return errors.New("it is reserved")
	}
	return nil
}

// MaxDistLength is the longest dist of a release file, in characters
// (Sentry's limit).
const MaxDistLength = 64

// CheckDist returns what is wrong with the dist of a release file, or nil.
// The empty dist is no dist.
func CheckDist(d string) error {
	switch {
	case !utf8.ValidString(d) || strings.ContainsRune(d, 0):
		return errors.New("it is not valid UTF-8 text")
	case utf8.RuneCountInString(d) > MaxDistLength:
		return fmt.Errorf("it is longer than %d characters", MaxDistLength)
	}
	return nil
}
