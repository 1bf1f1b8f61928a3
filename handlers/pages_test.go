package handlers

// The rules every page shares, held over the whole table of pageRoutes so
// that no page escapes them: the CSP header on every answer, a POST
// without its CSRF token refused, a signed-out visit redirected to
// sign-in except on the open pages, and another organization's pages 404.

import (
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"errata/authn"
	"errata/handlers/pages"
)

// pageValues are the path values the rules fill page patterns with: what
// the matrix fixture's acme holds. A page with a wildcard not listed here
// fails the test until it is added.
func pageValues(f *matrixFixture) map[string]string {
	return map[string]string{
		"organization_slug": "acme",
		"project_slug":      "web",
		"version":           "1.0.0",
		"file_id":           f.appFile["acme"],
		"member_id":         "me",
		"team_slug":         "web-team",
		"key":               "not-a-key",
		"token":             "not-a-token",
	}
}

var wildcard = regexp.MustCompile(`\{([a-z_]+)(\.\.\.)?\}`)

// pagePath fills pattern's wildcards from values; ok is false when one
// has no value.
func pagePath(pattern string, values map[string]string) (path string, missing string) {
	path = strings.TrimSuffix(pattern, "{$}")
	path = wildcard.ReplaceAllStringFunc(path, func(w string) string {
		name := wildcard.FindStringSubmatch(w)[1]
		v, ok := values[name]
		if !ok {
			missing = name
		}
		return url.PathEscape(v)
	})
	return path, missing
}

// pageRequest asks a page with the session cookie sid (none when "") and
// the CSRF cookie and field csrf (none when ""), and returns the answer
// and its body.
func pageRequest(t *testing.T, a *testAPI, method, path, sid, csrf string) (*http.Response, string) {
	t.Helper()
	var body string
	if method == http.MethodPost && csrf != "" {
		body = url.Values{authn.CSRFFormField: {csrf}}.Encode()
	}
	req, err := http.NewRequest(method, a.srv.URL+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if method == http.MethodPost {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	if sid != "" {
		req.AddCookie(&http.Cookie{Name: "errata_session", Value: sid})
	}
	if csrf != "" {
		req.AddCookie(&http.Cookie{Name: authn.CSRFCookieName, Value: csrf})
	}
	client := *a.srv.Client()
	client.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	res, err := client.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return res, string(b)
}

func TestPageRules(t *testing.T) {
	f := newMatrixFixture(t)
	sid, _ := f.startSession(t, f.victim.id)
	values := pageValues(f)
	_, rts := pageRoutes(Deps{SecretKey: testSecret, Auth: &authn.Authenticator{Store: f.st}}, http.NotFoundHandler())
	if len(rts) == 0 {
		t.Fatal("no pages")
	}
	for _, rt := range rts {
		path, missing := pagePath(rt.pattern, values)
		if missing != "" {
			t.Errorf("%s: pageValues has no value for {%s}", rt.pattern, missing)
			continue
		}
		checkCSP := func(what string, res *http.Response) {
			if got := res.Header.Get("Content-Security-Policy"); got != pages.CSP {
				t.Errorf("%s, %s: Content-Security-Policy %q, want %q", rt.pattern, what, got, pages.CSP)
			}
		}
		// Signed out.
		res, _ := pageRequest(t, f.testAPI, "GET", path, "", "")
		checkCSP("signed out", res)
		redirected := res.StatusCode == http.StatusSeeOther && strings.HasPrefix(res.Header.Get("Location"), "/?next=")
		if rt.open && redirected {
			t.Errorf("%s is open, but a signed-out visit is sent to sign-in", rt.pattern)
		}
		if !rt.open && (!redirected || res.Header.Get("Location") != "/?next="+url.QueryEscape(path)) {
			t.Errorf("%s signed out: %d %q, want 303 to /?next=%s", rt.pattern, res.StatusCode,
				res.Header.Get("Location"), url.QueryEscape(path))
		}
		// Signed in.
		res, _ = pageRequest(t, f.testAPI, "GET", path, sid, "")
		checkCSP("signed in", res)
		if strings.HasPrefix(res.Header.Get("Location"), "/?next=") || res.StatusCode >= 500 {
			t.Errorf("%s signed in: %d %q", rt.pattern, res.StatusCode, res.Header.Get("Location"))
		}
		// A POST without its CSRF token, signed in or not, and one with
		// a token that is not the cookie's.
		for _, who := range []string{"", sid} {
			res, body := pageRequest(t, f.testAPI, "POST", path, who, "")
			checkCSP("POST without CSRF", res)
			if res.StatusCode != http.StatusForbidden || !strings.Contains(body, csrfRefusal) {
				t.Errorf("%s: POST without a CSRF token (signed in: %t): %d, want 403", rt.pattern, who != "", res.StatusCode)
			}
		}
		// With its token the same POST passes the check (whatever the
		// page then makes of a form without fields), in a session of its
		// own: it may be the sign-out page's.
		own, _ := f.startSession(t, f.victim.id)
		res, body := pageRequest(t, f.testAPI, "POST", path, own, authn.NewCSRFToken())
		checkCSP("POST with CSRF", res)
		if strings.Contains(body, csrfRefusal) || res.StatusCode >= 500 {
			t.Errorf("%s: POST with its CSRF token: %d, refused as without it", rt.pattern, res.StatusCode)
		}
		// Another organization's page, by its address: 404, as the API.
		if strings.Contains(rt.pattern, "{organization_slug}") {
			other := map[string]string{}
			for k, v := range values {
				other[k] = v
			}
			other["organization_slug"] = "rival"
			other["file_id"] = f.appFile["rival"]
			rival, _ := pagePath(rt.pattern, other)
			res, _ = pageRequest(t, f.testAPI, "GET", rival, sid, "")
			checkCSP("another organization", res)
			if res.StatusCode != http.StatusNotFound {
				t.Errorf("%s of another organization: %d, want 404", rival, res.StatusCode)
			}
		}
	}
}

// TestPageFormBound: a form larger than a page reads is 413, before
// anything reads its fields.
func TestPageFormBound(t *testing.T) {
	a := newTestAPI(t)
	csrf := authn.NewCSRFToken()
	body := url.Values{authn.CSRFFormField: {csrf}, "stack": {strings.Repeat("x", 1<<20)}}.Encode()
	req, err := http.NewRequest("POST", a.srv.URL+"/", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.AddCookie(&http.Cookie{Name: authn.CSRFCookieName, Value: csrf})
	res, err := a.srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusRequestEntityTooLarge || res.Header.Get("Content-Security-Policy") != pages.CSP {
		t.Errorf("a form of 1 MiB and more: %d, want 413 with the CSP", res.StatusCode)
	}
}

// csrfRefusal is what the page of a refused form says.
const csrfRefusal = "security token did not match"
