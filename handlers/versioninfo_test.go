package handlers

import (
	"encoding/json"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode"

	"github.com/google/go-cmp/cmp"
)

// sentryReleaseRef is sentry-release-parser (src/parser.rs, 1.4.0) ported
// line by line with its regular expressions, as the reference that
// versionInfoOut.parse, which does without them, is held to. It returns
// the versionInfo Sentry's serializer writes, as JSON values, or nil.
func sentryReleaseRef(release string) any {
	release = strings.TrimFunc(release, unicode.IsSpace)
	// validate_release
	if len(release) > 200 || release == "." || release == ".." || asciiEqualFold(release, "latest") ||
		!refValidAttribute.MatchString(release) {
		return nil
	}
	pkg, raw := any(nil), release
	var version map[string]any
	if m := refRelease.FindStringSubmatch(release); m != nil {
		pkg, raw = m[1], m[2]
		if !refIsBuildHash(raw) {
			version = refParseVersion(raw)
		}
	}
	var buildHash any
	if version != nil && version["buildCode"] != nil && refIsBuildHash(version["buildCode"].(string)) {
		buildHash = version["buildCode"]
	} else if refIsBuildHash(raw) {
		buildHash = raw
	}
	var description string
	switch {
	case version != nil:
		description = version["rawShort"].(string)
		if buildHash != nil {
			description += " (" + buildHash.(string)[:12] + ")"
		} else if version["buildCode"] != nil {
			description += " (" + version["buildCode"].(string) + ")"
		}
	case buildHash != nil:
		description = buildHash.(string)[:12]
	case pkg != nil:
		description = pkg.(string) + "@" + raw
	default:
		description = raw
	}
	v := map[string]any{"raw": raw}
	if version != nil {
		for _, k := range []string{"major", "minor", "patch", "pre", "buildCode", "components"} {
			v[k] = version[k]
		}
	}
	return map[string]any{"package": pkg, "version": v, "description": description, "buildHash": buildHash}
}

var (
	refRelease        = regexp.MustCompile(`^(@?[^@]+)@(.+?)$`)
	refValidAttribute = regexp.MustCompile(`^[^\\/\r\n\t\x7f\x00-\x1f]*\z`)
	refHex            = regexp.MustCompile(`^[a-fA-F0-9]+$`)
	refVersion        = regexp.MustCompile(`^(?P<major>[0-9][0-9]*)` +
		`(?:\.(?P<minor>[0-9][0-9]*))?` +
		`(?:\.(?P<patch>[0-9][0-9]*))?` +
		`(?:\.(?P<revision>[0-9][0-9]*))?` +
		`(?:(?P<prerelease>(?:-|[a-z])(?:0|[1-9][0-9]*|[0-9]*[a-zA-Z-][0-9a-zA-Z-]*)?` +
		`(?:\.(?:0|[1-9][0-9]*|[0-9]*[a-zA-Z-][0-9a-zA-Z-]*))*))?` +
		`(?:\+(?P<build_code>[0-9a-zA-Z-]+(?:\.[0-9a-zA-Z-]+)*))?$`)
)

func asciiEqualFold(a, b string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := 0; i < len(a); i++ {
		x, y := a[i], b[i]
		if 'A' <= x && x <= 'Z' {
			x += 'a' - 'A'
		}
		if 'A' <= y && y <= 'Z' {
			y += 'a' - 'A'
		}
		if x != y {
			return false
		}
	}
	return true
}

func refIsBuildHash(s string) bool {
	switch len(s) {
	case 12, 16, 20, 32, 40, 64:
		return refHex.MatchString(s)
	}
	return false
}

// refParseVersion is Version::parse: the parsed fields as JSON values and
// rawShort, or nil.
func refParseVersion(s string) map[string]any {
	idx := refVersion.FindStringSubmatchIndex(s)
	if idx == nil {
		return nil
	}
	group := func(i int) (string, bool) {
		if idx[2*i] < 0 {
			return "", false
		}
		return s[idx[2*i]:idx[2*i+1]], true
	}
	components := 1
	for i := 2; i <= 4; i++ {
		if _, ok := group(i); ok {
			components++
		}
	}
	pre, hasPre := group(5)
	if components == 1 && hasPre && !strings.HasPrefix(pre, "-") {
		return nil
	}
	num := func(i int) uint64 {
		g, _ := group(i)
		n, err := strconv.ParseUint(g, 10, 64)
		if err != nil {
			return 0
		}
		return n
	}
	out := map[string]any{"major": num(1), "minor": num(2), "patch": num(3), "components": components,
		"pre": nil, "buildCode": nil, "rawShort": s}
	pre = strings.TrimPrefix(pre, "-")
	if pre != "" {
		out["pre"] = pre
	}
	if code, ok := group(6); ok {
		out["rawShort"] = s[:idx[12]-1]
		if code != "" {
			out["buildCode"] = code
		}
	}
	return out
}

// versionInfoJSON is what the API writes for v, decoded: encoding/json's
// and the hand-written encoder's bytes, which must agree.
func versionInfoJSON(t *testing.T, v *versionInfoOut) any {
	t.Helper()
	if v == nil {
		return nil
	}
	want, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	if got := v.appendJSON(nil); string(got) != string(want) {
		t.Fatalf("appendJSON %s, encoding/json %s", got, want)
	}
	var out any
	dec := json.NewDecoder(strings.NewReader(string(want)))
	dec.UseNumber()
	if err := dec.Decode(&out); err != nil {
		t.Fatal(err)
	}
	return normalizeNumbers(out)
}

// normalizeNumbers turns json.Numbers into uint64 or int, as the
// reference writes them.
func normalizeNumbers(v any) any {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			x[k] = normalizeNumbers(e)
		}
	case []any:
		for i, e := range x {
			x[i] = normalizeNumbers(e)
		}
	case json.Number:
		if n, err := strconv.ParseUint(string(x), 10, 64); err == nil {
			return n
		}
	}
	return v
}

func checkVersionInfo(t *testing.T, release string) {
	t.Helper()
	// The reference's answer as JSON writes it (invalid UTF-8 becomes
	// U+FFFD), read back as the answer is.
	b, err := json.Marshal(sentryReleaseRef(release))
	if err != nil {
		t.Fatal(err)
	}
	var want any
	dec := json.NewDecoder(strings.NewReader(string(b)))
	dec.UseNumber()
	if err := dec.Decode(&want); err != nil {
		t.Fatal(err)
	}
	want = normalizeNumbers(want)
	got := versionInfoJSON(t, parseReleaseVersion(release))
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("versionInfo of %q (-reference +errata):\n%s", release, diff)
	}
}

// TestVersionInfo checks the versionInfo of the releases of
// sentry-release-parser's own tests (tests/test_serde.rs snapshots and
// tests/test_parser.rs), written out as Sentry's serializer writes them,
// and that the reference port agrees on each.
func TestVersionInfo(t *testing.T) {
	tests := []struct {
		release string
		want    string // JSON; "null" for none
	}{
		{"@foo.bar.baz--blah@1.2.3-dev+BUILD-code", `{"package":"@foo.bar.baz--blah","version":{"raw":"1.2.3-dev+BUILD-code","major":1,"minor":2,"patch":3,"pre":"dev","buildCode":"BUILD-code","components":3},"description":"1.2.3-dev (BUILD-code)","buildHash":null}`},
		{"foo.bar.baz.App@1.0+20200101100", `{"package":"foo.bar.baz.App","version":{"raw":"1.0+20200101100","major":1,"minor":0,"patch":0,"pre":null,"buildCode":"20200101100","components":2},"description":"1.0 (20200101100)","buildHash":null}`},
		{"foo.bar.baz.App@1.0+1.0.200", `{"package":"foo.bar.baz.App","version":{"raw":"1.0+1.0.200","major":1,"minor":0,"patch":0,"pre":null,"buildCode":"1.0.200","components":2},"description":"1.0 (1.0.200)","buildHash":null}`},
		{"085240e737828d8326719bf97730188e927e49ca", `{"package":null,"version":{"raw":"085240e737828d8326719bf97730188e927e49ca"},"description":"085240e73782","buildHash":"085240e737828d8326719bf97730188e927e49ca"}`},
		{"package@085240e737828d8326719bf97730188e927e49ca", `{"package":"package","version":{"raw":"085240e737828d8326719bf97730188e927e49ca"},"description":"085240e73782","buildHash":"085240e737828d8326719bf97730188e927e49ca"}`},
		{"com.foogame.FooGame@7211+7211", `{"package":"com.foogame.FooGame","version":{"raw":"7211+7211","major":7211,"minor":0,"patch":0,"pre":null,"buildCode":"7211","components":1},"description":"7211 (7211)","buildHash":null}`},
		{"some-api@2020.05.26-01.38.42", `{"package":"some-api","version":{"raw":"2020.05.26-01.38.42"},"description":"some-api@2020.05.26-01.38.42","buildHash":null}`},
		{"some-api@2020.2-1.2.3", `{"package":"some-api","version":{"raw":"2020.2-1.2.3","major":2020,"minor":2,"patch":0,"pre":"1.2.3","buildCode":null,"components":2},"description":"2020.2-1.2.3","buildHash":null}`},
		{"some-api@1.0alpha2", `{"package":"some-api","version":{"raw":"1.0alpha2","major":1,"minor":0,"patch":0,"pre":"alpha2","buildCode":null,"components":2},"description":"1.0alpha2","buildHash":null}`},
		{"some-api@1.0.0.0", `{"package":"some-api","version":{"raw":"1.0.0.0","major":1,"minor":0,"patch":0,"pre":null,"buildCode":null,"components":4},"description":"1.0.0.0","buildHash":null}`},
		{"foo@01.02.003.4-alpha+1234", `{"package":"foo","version":{"raw":"01.02.003.4-alpha+1234","major":1,"minor":2,"patch":3,"pre":"alpha","buildCode":"1234","components":4},"description":"01.02.003.4-alpha (1234)","buildHash":null}`},
		{"foo@20210505090610352561", `{"package":"foo","version":{"raw":"20210505090610352561"},"description":"202105050906","buildHash":"20210505090610352561"}`},
		{"foo@", `{"package":null,"version":{"raw":"foo@"},"description":"foo@","buildHash":null}`},
		{"hackweek@6f85d2f", `{"package":"hackweek","version":{"raw":"6f85d2f"},"description":"hackweek@6f85d2f","buildHash":null}`},
		{"bla-internal@0.0.0.4bfe251b96", `{"package":"bla-internal","version":{"raw":"0.0.0.4bfe251b96","major":0,"minor":0,"patch":0,"pre":"bfe251b96","buildCode":null,"components":4},"description":"0.0.0.4bfe251b96","buildHash":null}`},
		{"@foo.bar.baz--blah@1.0a+a86d127c4b2f23a0a862620280427dcc01c78676", `{"package":"@foo.bar.baz--blah","version":{"raw":"1.0a+a86d127c4b2f23a0a862620280427dcc01c78676","major":1,"minor":0,"patch":0,"pre":"a","buildCode":"a86d127c4b2f23a0a862620280427dcc01c78676","components":2},"description":"1.0a (a86d127c4b2f)","buildHash":"a86d127c4b2f23a0a862620280427dcc01c78676"}`},
		// A version without a package is not parsed, as in Sentry.
		{"1.0.0", `{"package":null,"version":{"raw":"1.0.0"},"description":"1.0.0","buildHash":null}`},
		// A single component takes a pre-release only after a dash.
		{"app@1a1", `{"package":"app","version":{"raw":"1a1"},"description":"app@1a1","buildHash":null}`},
		{"app@1-a1", `{"package":"app","version":{"raw":"1-a1","major":1,"minor":0,"patch":0,"pre":"a1","buildCode":null,"components":1},"description":"1-a1","buildHash":null}`},
		// Numbers too large for 64 bits are 0, as Rust's unwrap_or_default.
		{"app@99999999999999999999.1", `{"package":"app","version":{"raw":"99999999999999999999.1","major":0,"minor":1,"patch":0,"pre":null,"buildCode":null,"components":2},"description":"99999999999999999999.1","buildHash":null}`},
		// Trimmed first; names Sentry's parser refuses have none.
		{"  app@2.0 ", `{"package":"app","version":{"raw":"2.0","major":2,"minor":0,"patch":0,"pre":null,"buildCode":null,"components":2},"description":"2.0","buildHash":null}`},
		{"LATEST", `null`},
		{"a\x7fb", `null`},
		{"a\x01b", `null`},
		{strings.Repeat("é", 101), `null`}, // 202 bytes
	}
	for _, tt := range tests {
		t.Run(tt.release, func(t *testing.T) {
			var want any
			dec := json.NewDecoder(strings.NewReader(tt.want))
			dec.UseNumber()
			if err := dec.Decode(&want); err != nil {
				t.Fatal(err)
			}
			want = normalizeNumbers(want)
			if diff := cmp.Diff(want, versionInfoJSON(t, parseReleaseVersion(tt.release))); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
			checkVersionInfo(t, tt.release)
		})
	}
}

// FuzzVersionInfo holds versionInfoOut.parse to the regular-expression
// port of sentry-release-parser, and its hand-written JSON to
// encoding/json's, for any release name.
func FuzzVersionInfo(f *testing.F) {
	for _, s := range []string{"@foo.bar.baz--blah@1.2.3-dev+BUILD-code", "a@1.0-.5", "a@1.0--x", "a@1.0-+5",
		"a@1.0-01", "a@1.0-0.0", "a@1.2.3.4.5", "a@1.x", "a@1.0+a..b", "@@x", "@a@b@c", "x@0.0.0.4bfe251b96",
		"p@1.0a+a86d127c4b2f", "p@abcdef012345+1", "\u2028p@1\u00a0", "é@1.ü"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, release string) {
		checkVersionInfo(t, release)
	})
}
