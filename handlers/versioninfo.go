package handlers

import (
	"strconv"
	"strings"
	"unicode"
)

// A release's versionInfo is what Sentry's release serializer writes
// (expose_version_info in src/sentry/api/serializers/models/release.py)
// from Release.version_info, which is relay's parse_release: the crate
// sentry-release-parser (src/parser.rs, 1.4.0). versionInfoOut.parse ports
// that parser's semantics without its regular expressions (a list page
// parses 50 versions); sentryReleaseRef in versioninfo_test.go is the
// regular-expression port that FuzzVersionInfo holds it to.

// versionInfoOut is a release's versionInfo. Its pointers point into
// the value itself (pkg, parsed), so that a list page reuses one.
type versionInfoOut struct {
	Package     *string     `json:"package"`
	Version     versionOut  `json:"version"`
	Description description `json:"description"`
	BuildHash   *string     `json:"buildHash"`

	pkg    string        // what Package points to
	parsed parsedVersion // what Version.parsedVersion points to
}

// versionOut is the version part of a release: raw always, the parsed
// fields when it parses as a version.
type versionOut struct {
	Raw string `json:"raw"`
	*parsedVersion
}

// parsedVersion is a version that parses (Sentry's version_parsed).
type parsedVersion struct {
	Major      uint64  `json:"major"`
	Minor      uint64  `json:"minor"`
	Patch      uint64  `json:"patch"`
	Pre        *string `json:"pre"`
	BuildCode  *string `json:"buildCode"`
	Components int     `json:"components"`

	rawShort       string // the version before "+build"
	pre, buildCode string // what Pre and BuildCode point to
}

// parseReleaseVersion parses a release name as Sentry does; nil is
// Sentry's null, for a name that sentry-release-parser refuses.
func parseReleaseVersion(release string) *versionInfoOut {
	out := new(versionInfoOut)
	if !out.parse(release) {
		return nil
	}
	return out
}

// parse sets out to the versionInfo of release, and reports false (out
// unspecified) where Sentry's is null.
func (out *versionInfoOut) parse(release string) bool {
	if n := len(release); n == 0 || isSpaceOrMultibyte(release[0]) || isSpaceOrMultibyte(release[n-1]) {
		release = strings.TrimFunc(release, unicode.IsSpace) // Rust's str::trim
	}
	if !validSentryRelease(release) {
		return false
	}
	*out = versionInfoOut{Version: versionOut{Raw: release}}
	if pkg, raw, ok := splitPackage(release); ok {
		out.pkg = pkg
		out.Package = &out.pkg
		out.Version.Raw = raw
		if !isBuildHash(raw) && out.parsed.parse(raw) {
			out.Version.parsedVersion = &out.parsed
		}
	}
	v := out.Version.parsedVersion
	switch {
	case v != nil && v.BuildCode != nil && isBuildHash(*v.BuildCode):
		out.BuildHash = v.BuildCode
	case isBuildHash(out.Version.Raw):
		out.BuildHash = &out.Version.Raw
	}
	var shortHash string
	if out.BuildHash != nil {
		shortHash = (*out.BuildHash)[:12] // a build hash has at least 12 characters
	}
	switch {
	case v != nil:
		out.Description = description{head: v.rawShort}
		if shortHash != "" {
			out.Description.note = shortHash
		} else if v.BuildCode != nil {
			out.Description.note = *v.BuildCode
		}
	case shortHash != "":
		out.Description = description{head: shortHash}
	case out.Package != nil:
		out.Description = description{head: *out.Package, at: "@", tail: out.Version.Raw}
	default:
		out.Description = description{head: out.Version.Raw}
	}
	return true
}

// description is a versionInfo's description, kept in its parts so that
// a page of releases builds no string for it: the version with its note in
// parentheses ("1.0 (build)"), or a head and a tail joined by at ("pkg" "@"
// "raw").
type description struct {
	head, at, tail string
	note           string
}

func (d description) String() string {
	if d.note != "" {
		return d.head + " (" + d.note + ")"
	}
	return d.head + d.at + d.tail
}

// MarshalJSON writes the description as a JSON string, as appendJSON
// does.
func (d description) MarshalJSON() ([]byte, error) { return d.appendJSON(nil), nil }

// appendJSON appends the description as one JSON string, escaped as
// encoding/json escapes a string, without joining it first. Its parts meet
// at ASCII characters (the version's @, +, or the note), so escaping
// them apart escapes the whole alike.
func (d description) appendJSON(b []byte) []byte {
	b = append(b, '"')
	b = appendStringBody(b, d.head)
	if d.note != "" {
		b = append(b, " ("...)
		b = appendStringBody(b, d.note)
		return append(b, ')', '"')
	}
	b = appendStringBody(b, d.at)
	b = appendStringBody(b, d.tail)
	return append(b, '"')
}

// appendStringBody is appendString without the quotes.
func appendStringBody(b []byte, s string) []byte {
	n := len(b)
	b = appendString(b, s)
	copy(b[n:], b[n+1:len(b)-1])
	return b[:len(b)-2]
}

// validSentryRelease is the parser's validate_release: at most 200 bytes,
// not ".", ".." or "latest" (any ASCII case), and none of \ / CR LF tab
// DEL and the other control characters.
func validSentryRelease(s string) bool {
	if len(s) > 200 || s == "." || s == ".." || len(s) == 6 && strings.EqualFold(s, "latest") {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c == 0x7f || c == '\\' || c == '/' {
			return false
		}
	}
	return true
}

// splitPackage splits "package@version" as the parser's ^(@?[^@]+)@(.+?)$
// does: an optional leading @, at least one character other than @, the
// first @ after them, and a version of at least one character.
func splitPackage(s string) (pkg, version string, ok bool) {
	start := 0
	if strings.HasPrefix(s, "@") {
		start = 1
	}
	at := strings.IndexByte(s[start:], '@')
	if at < 1 || start+at+1 == len(s) {
		return "", "", false
	}
	return s[:start+at], s[start+at+1:], true
}

// isBuildHash is the parser's is_build_hash: 12, 16, 20, 32, 40 or 64 hex
// digits.
func isBuildHash(s string) bool {
	switch len(s) {
	case 12, 16, 20, 32, 40, 64:
	default:
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
			return false
		}
	}
	return true
}

// parse is the parser's Version::parse, the regular expression
//
//	^([0-9]+)(?:\.([0-9]+))?(?:\.([0-9]+))?(?:\.([0-9]+))?
//	 ((?:-|[a-z])(?:IDENT)?(?:\.IDENT)*)?(?:\+([0-9a-zA-Z-]+(?:\.[0-9a-zA-Z-]+)*))?$
//
// with IDENT = 0|[1-9][0-9]*|[0-9]*[a-zA-Z-][0-9a-zA-Z-]*, and its rule
// that a single component takes a pre-release only after a dash. Each part
// is decided by its first character, so one pass does what the expression
// does. It reports whether s is a version; v is set when it is.
func (v *parsedVersion) parse(s string) bool {
	var nums [4]string
	components := 0
	i := 0
	for components < 4 {
		start := i
		if components > 0 {
			if i >= len(s) || s[i] != '.' {
				break
			}
			start = i + 1
		}
		j := start
		for j < len(s) && isDigit(s[j]) {
			j++
		}
		if j == start {
			if components == 0 {
				return false
			}
			break // ".x": not a component, and nothing else starts with a dot
		}
		nums[components] = s[start:j]
		components++
		i = j
	}
	*v = parsedVersion{Components: components,
		Major: parseU64(nums[0]), Minor: parseU64(nums[1]), Patch: parseU64(nums[2])}
	if i < len(s) && (s[i] == '-' || 'a' <= s[i] && s[i] <= 'z') {
		end := strings.IndexByte(s[i:], '+')
		if end < 0 {
			end = len(s)
		} else {
			end += i
		}
		// The marker, then dot-separated identifiers, the first of which
		// may be empty.
		for k, rest := 0, s[i+1:end]; ; k++ {
			ident, more, found := strings.Cut(rest, ".")
			if !(k == 0 && ident == "" || validIdent(ident)) {
				return false
			}
			if !found {
				break
			}
			rest = more
		}
		if components == 1 && s[i] != '-' {
			return false
		}
		v.pre = s[i:end]
		if v.pre[0] == '-' {
			v.pre = v.pre[1:]
		}
		if v.pre != "" {
			v.Pre = &v.pre
		}
		i = end
	}
	v.rawShort = s[:i]
	if i < len(s) {
		if s[i] != '+' {
			return false
		}
		v.buildCode = s[i+1:]
		// Dot-separated parts, none empty, of letters, digits and dashes.
		prev := byte('.')
		for i := 0; i < len(v.buildCode); i++ {
			c := v.buildCode[i]
			if c == '.' && prev == '.' || c != '.' && !alnumDash[c] {
				return false
			}
			prev = c
		}
		if prev == '.' {
			return false
		}
		v.BuildCode = &v.buildCode
	}
	return true
}

// alnumDash says which bytes are ASCII letters, digits or a dash.
var alnumDash = func() (set [256]bool) {
	for c := range 256 {
		set[c] = '0' <= c && c <= '9' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || c == '-'
	}
	return set
}()

// validIdent says whether s is 0, a number without leading zeros, or
// letters, digits and dashes with at least one that is not a digit.
func validIdent(s string) bool {
	if s == "" {
		return false
	}
	digits := true
	for i := 0; i < len(s); i++ {
		if !alnumDash[s[i]] {
			return false
		}
		digits = digits && isDigit(s[i])
	}
	return !digits || s == "0" || s[0] != '0'
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

// isSpaceOrMultibyte says whether c may be (part of) white space: an ASCII
// space character, or a byte of a multi-byte character.
func isSpaceOrMultibyte(c byte) bool {
	return c == ' ' || '\t' <= c && c <= '\r' || c >= 0x80
}

// parseU64 is Rust's str::parse::<u64>().unwrap_or_default() on digits:
// 0 when the number does not fit.
func parseU64(s string) uint64 {
	n, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return 0
	}
	return n
}
