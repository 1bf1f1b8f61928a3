package handlers

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"

	"errata/store"
)

// versionRule is the contract's rule for release versions, written out on
// its own: 1 to 200 characters of valid UTF-8 without NUL (PostgreSQL
// cannot store either), no CR, LF, FF, tab, slash or backslash, and once
// trimmed of white space neither empty nor ".", ".." or "latest" in any
// case.
func versionRule(v string) bool {
	if n := utf8.RuneCountInString(v); !utf8.ValidString(v) || n < 1 || n > 200 {
		return false
	}
	if strings.ContainsAny(v, "\r\n\f\t/\\\x00") {
		return false
	}
	t := strings.TrimSpace(v)
	return t != "" && t != "." && t != ".." && strings.ToLower(t) != "latest"
}

// FuzzReleaseVersion checks that every place that judges a release version
// agrees with the contract's rule: bodies and paths (validVersion,
// pathVersion) and the assembly worker (store.CheckReleaseVersion, which
// worker.checkManifest calls), and that a valid version travels through a
// request path, escaped as clients escape it, to the handler unchanged.
func FuzzReleaseVersion(f *testing.F) {
	f.Add("1.0.0")
	const pattern = "GET /api/0/organizations/{organization_slug}/releases/{version}/{$}"
	f.Fuzz(func(t *testing.T, v string) {
		want := versionRule(v)
		if got := validVersion(v); got != want {
			t.Errorf("validVersion(%q) = %v, the rule says %v", v, got, want)
		}
		err := store.CheckReleaseVersion(v)
		if (err == nil) != want {
			t.Errorf("store.CheckReleaseVersion(%q) = %v, the rule says %v", v, err, want)
		}
		if err != nil && (err.Error() == "" || !utf8.ValidString(err.Error()) || strings.ContainsRune(err.Error(), 0)) {
			t.Errorf("store.CheckReleaseVersion(%q) = %q, not a message a job can record", v, err)
		}

		r := httptest.NewRequest("GET", "/", nil)
		r.SetPathValue("version", v)
		got, err := pathVersion(r)
		switch {
		case want && (err != nil || got != v):
			t.Errorf("pathVersion(%q) = %q, %v", v, got, err)
		case !want:
			status, body := errorResponse(err)
			wantBody := map[string]any{"detail": validationError{{valueErr, []any{"path", "version"}, "Invalid release version"}}}
			if diff := cmp.Diff(wantBody, body); status != http.StatusUnprocessableEntity || diff != "" {
				t.Errorf("pathVersion(%q): status %d, body (-want +got):\n%s", v, status, diff)
			}
		}

		if !want {
			return
		}
		mux := http.NewServeMux()
		seen := "(not routed)"
		mux.HandleFunc(pattern, func(w http.ResponseWriter, r *http.Request) { seen = r.PathValue("version") })
		req := httptest.NewRequest("GET", "http://errata.test/api/0/organizations/acme/releases/"+url.PathEscape(v)+"/", nil)
		mux.ServeHTTP(httptest.NewRecorder(), req)
		if seen != v {
			t.Errorf("version %q reached the handler as %q", v, seen)
		}
	})
}
