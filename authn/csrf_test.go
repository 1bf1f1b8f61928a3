package authn

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
)

func TestCheckCSRF(t *testing.T) {
	token, other := NewCSRFToken(), NewCSRFToken()
	withCookie := func(r *http.Request, v string) *http.Request {
		r.AddCookie(&http.Cookie{Name: CSRFCookieName, Value: v})
		return r
	}
	post := func(header ...string) *http.Request {
		r := httptest.NewRequest("POST", "http://errata.test/_allauth/browser/v1/auth/login", strings.NewReader("{}"))
		for i := 0; i+1 < len(header); i += 2 {
			r.Header.Set(header[i], header[i+1])
		}
		return r
	}
	form := func(field string) *http.Request {
		r := httptest.NewRequest("POST", "http://errata.test/login/", strings.NewReader(url.Values{CSRFFormField: {field}}.Encode()))
		r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		return withCookie(r, token)
	}
	cases := []struct {
		name      string
		publicURL string
		r         *http.Request
		ok        bool
	}{
		{"a safe method passes without a token", "", httptest.NewRequest("GET", "http://errata.test/", nil), true},
		{"the header equal to the cookie passes", "", withCookie(post(CSRFHeader, token), token), true},
		{"the same origin passes", "", withCookie(post(CSRFHeader, token, "Origin", "http://errata.test", "Sec-Fetch-Site", "same-origin"), token), true},
		{"PUBLIC_URL's origin passes", "https://errata.example/", withCookie(post(CSRFHeader, token, "Origin", "https://errata.example"), token), true},
		{"the form field passes", "", form(token), true},
		{"PUBLIC_URL's origin with its default port passes", "https://errata.example:443", withCookie(post(CSRFHeader, token, "Origin", "https://Errata.Example"), token), true},
		{"another port is refused", "https://errata.example", withCookie(post(CSRFHeader, token, "Origin", "https://errata.example:8443"), token), false},
		{"another scheme is refused", "https://errata.example", withCookie(post(CSRFHeader, token, "Origin", "http://errata.example"), token), false},
		{"no token is refused", "", withCookie(post(), token), false},
		{"no cookie is refused", "", post(CSRFHeader, token), false},
		{"a wrong token is refused", "", withCookie(post(CSRFHeader, other), token), false},
		{"a short cookie and header are refused", "", withCookie(post(CSRFHeader, "x"), "x"), false},
		{"a wrong form field is refused", "", form(other), false},
		{"a cross-site origin is refused with the token", "", withCookie(post(CSRFHeader, token, "Origin", "https://evil.example"), token), false},
		{"another origin than PUBLIC_URL's is refused", "https://errata.example", withCookie(post(CSRFHeader, token, "Origin", "http://errata.test"), token), false},
		{"a null origin is refused", "", withCookie(post(CSRFHeader, token, "Origin", "null"), token), false},
		{"Sec-Fetch-Site cross-site is refused with the token", "", withCookie(post(CSRFHeader, token, "Sec-Fetch-Site", "cross-site"), token), false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			a := &Authenticator{Sessions: SessionConfig{PublicURL: tc.publicURL}}
			err := a.CheckCSRF(tc.r)
			if tc.ok && err != nil {
				t.Errorf("refused: %v", err)
			}
			if !tc.ok && !errors.Is(err, ErrCSRF) {
				t.Errorf("got %v, want ErrCSRF", err)
			}
		})
	}
}

func TestCSRFCookieKeptWhenPresent(t *testing.T) {
	a := &Authenticator{}
	r := httptest.NewRequest("GET", "/", nil)
	r.AddCookie(&http.Cookie{Name: CSRFCookieName, Value: NewCSRFToken()})
	if c := a.CSRFCookie(r); c != nil {
		t.Errorf("a request with a token got a new cookie %v", c)
	}
	r = httptest.NewRequest("GET", "/", nil)
	r.AddCookie(&http.Cookie{Name: CSRFCookieName, Value: "short"})
	if c := a.CSRFCookie(r); c == nil {
		t.Error("a request with a malformed token got no new cookie")
	}
}

// FuzzSameOrigin: any Origin header is judged without panic, the same way
// whichever side it stands on, and "null" is never the server's origin.
func FuzzSameOrigin(f *testing.F) {
	f.Add("https://errata.example", "https://errata.example:443")
	f.Add("null", "http://errata.test")
	f.Add("http://[::1]:8000", "http://[::1]:8000")
	f.Add("https://user@errata.example", "https://errata.example")
	f.Fuzz(func(t *testing.T, origin, server string) {
		same := sameOrigin(origin, server)
		if same && (origin == "null" || server == "null") {
			t.Fatalf("%q is the origin of %q", origin, server)
		}
		if sameOrigin(server, origin) != same {
			t.Fatalf("sameOrigin(%q, %q) is not symmetric", origin, server)
		}
	})
}
