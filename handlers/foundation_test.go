package handlers

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"errata/store"
)

// echoInput is a body with fields of several types, for the decoding tests.
type echoInput struct {
	Name     opt[string]       `json:"name"`
	IsHidden opt[bool]         `json:"isHidden"`
	Count    int               `json:"count"`
	Data     map[string]string `json:"data"`
}

// testRoutes are routes that exist only in these tests, to reach the
// adapter, the decoder and the pagination of every real route.
func testRoutes(t *testing.T, a **testAPI) []route {
	return []route{
		{"POST /api/0/test/echo/{$}", projectReleases, func(w http.ResponseWriter, r *http.Request) error {
			var in echoInput
			if err := decodeJSON(w, r, &in); err != nil {
				return err
			}
			writeJSON(w, r, (*a).lg, http.StatusOK, map[string]any{
				"name": in.Name.ptr(), "nameSet": in.Name.Set, "isHidden": in.IsHidden.ptr(),
				"count": in.Count, "data": in.Data,
			})
			return nil
		}},
	}
}

func newFoundationAPI(t *testing.T) (*testAPI, string) {
	var a *testAPI
	a = newTestAPI(t, testRoutes(t, &a)...)
	a.user("owner@example.com")
	a.org("acme", "owner@example.com")
	return a, a.token("owner@example.com", "project:releases")
}

func TestAuthentication(t *testing.T) {
	a, tok := newFoundationAPI(t)
	other := a.token("owner@example.com", "org:read")
	tests := []struct {
		name   string
		header string
		status int
		want   string
	}{
		{"no credential is 401", "", 401, `{"detail":"Unauthorized"}`},
		{"unknown token is 401", "Bearer sntryu_" + strings.Repeat("ab", 32), 401, `{"detail":"Unauthorized"}`},
		{"malformed token is 401", "Bearer nonsense", 401, `{"detail":"Unauthorized"}`},
		{"upper-case hex is 401", "Bearer " + strings.ToUpper(tok), 401, `{"detail":"Unauthorized"}`},
		{"other scheme is 401", "Basic " + tok, 401, `{"detail":"Unauthorized"}`},
		{"token without the scope is 403", "Bearer " + other, 403, `{"detail":"Permission denied"}`},
		{"token with the scope passes", "Bearer " + tok, 200, `{"name":"x","nameSet":true,"isHidden":null,"count":0,"data":null}`},
		{"scheme in any case passes", "bEaReR " + tok, 200, `{"name":"x","nameSet":true,"isHidden":null,"count":0,"data":null}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			// The body is invalid for the 401 and 403 cases too: authentication
			// and scopes come before validation.
			for _, body := range []string{`{"name":"x"}`, `{"count":"nope"}`} {
				req, _ := http.NewRequest("POST", a.srv.URL+"/api/0/test/echo/", strings.NewReader(body))
				if tc.header != "" {
					req.Header.Set("Authorization", tc.header)
				}
				res, err := a.srv.Client().Do(req)
				if err != nil {
					t.Fatal(err)
				}
				b, _ := io.ReadAll(res.Body)
				res.Body.Close()
				r := response{status: res.StatusCode, header: res.Header, body: b}
				if tc.status == 200 && body != `{"name":"x"}` {
					r.expect(t, 422, nil)
					continue
				}
				r.expect(t, tc.status, tc.want)
			}
		})
	}
}

func TestInactiveUsersTokenIsUnauthorized(t *testing.T) {
	a, tok := newFoundationAPI(t)
	a.exec(`UPDATE users SET is_active = false WHERE email = 'owner@example.com'`)
	a.do("GET", "/api/0/", tok, nil).expect(t, 401, `{"detail":"Unauthorized"}`)
}

func TestIndex(t *testing.T) {
	a, tok := newFoundationAPI(t)
	t.Run("without a token user and auth are null", func(t *testing.T) {
		a.do("GET", "/api/0/", "", nil).expect(t, 200, `{"version":"0","user":null,"auth":null}`)
	})
	t.Run("with a token it names the user and scopes", func(t *testing.T) {
		a.do("GET", "/api/0/", tok, nil).expect(t, 200,
			`{"version":"0","user":{"id":"1","email":"owner@example.com","name":"owner"},"auth":{"scopes":["project:releases"]}}`)
	})
	t.Run("with a bad token it is 401", func(t *testing.T) {
		a.do("GET", "/api/0/", "sntryu_"+strings.Repeat("0", 64), nil).expect(t, 401, `{"detail":"Unauthorized"}`)
	})
}

func TestMuxAnswersInJSON(t *testing.T) {
	a, tok := newFoundationAPI(t)
	t.Run("unknown path is a JSON 404", func(t *testing.T) {
		a.do("GET", "/api/0/nothing/here/", tok, nil).expect(t, 404, `{"detail":"Not Found"}`)
	})
	t.Run("path without its trailing slash is a JSON 404", func(t *testing.T) {
		a.do("GET", "/api/0/test/environments", tok, nil).expect(t, 404, `{"detail":"Not Found"}`)
	})
	t.Run("unknown path of the sign-in API is its envelope's 404", func(t *testing.T) {
		a.do("GET", "/_allauth/app/v1/nothing", "", nil).expect(t, 404, `{"status":404}`)
	})
	t.Run("wrong method is a JSON 405 with Allow", func(t *testing.T) {
		r := a.do("DELETE", "/api/0/", tok, nil)
		r.expect(t, 405, `{"detail":"Method Not Allowed"}`)
		if got := r.header.Get("Allow"); got != "GET, HEAD" {
			t.Errorf("Allow = %q, want %q", got, "GET, HEAD")
		}
	})
	t.Run("probes need no token", func(t *testing.T) {
		a.do("GET", "/healthz", "", nil).expect(t, 200, `{"status":"ok"}`)
		a.do("GET", "/readyz", "", nil).expect(t, 200, `{"status":"ok"}`)
	})
}

func TestDecodeJSON(t *testing.T) {
	a, tok := newFoundationAPI(t)
	tests := []struct {
		name   string
		body   string
		status int
		want   string
	}{
		{"camelCase keys decode", `{"name":"a","isHidden":true,"count":2,"data":{"k_1":"v"}}`, 200,
			`{"name":"a","nameSet":true,"isHidden":true,"count":2,"data":{"k_1":"v"}}`},
		{"snake_case keys decode and nested data is left alone", `{"is_hidden":false,"data":{"snake_key":"v"}}`, 200,
			`{"name":null,"nameSet":false,"isHidden":false,"count":0,"data":{"snake_key":"v"}}`},
		{"null is present but empty", `{"name":null}`, 200,
			`{"name":null,"nameSet":true,"isHidden":null,"count":0,"data":null}`},
		{"unknown keys are ignored", `{"whatever":[1,2],"count":1}`, 200,
			`{"name":null,"nameSet":false,"isHidden":null,"count":1,"data":null}`},
		{"broken JSON is 400", `{"name":`, 400, `{"detail":"Cannot parse request body"}`},
		{"trailing garbage is 400", `{"name":"a"} x`, 400, `{"detail":"Cannot parse request body"}`},
		{"empty body is 400", ``, 400, `{"detail":"Cannot parse request body"}`},
		{"wrong type is 422 at the field", `{"isHidden":"yes"}`, 422, ""},
		{"array body is 422 at the body", `[1]`, 422,
			`{"detail":[{"type":"type_error","loc":["body"],"msg":"Input should be an object"}]}`},
		{"null body is 422", `null`, 422,
			`{"detail":[{"type":"type_error","loc":["body"],"msg":"Input should be an object"}]}`},
		{"body over 1 MiB is 413", `{"name":"` + strings.Repeat("x", 1<<20) + `"}`, 413, `{"detail":"Request body too large"}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := a.do("POST", "/api/0/test/echo/", tok, tc.body)
			if tc.want != "" {
				r.expect(t, tc.status, tc.want)
				return
			}
			r.expect(t, tc.status, nil)
			got := r.json(t).(map[string]any)["detail"].([]any)[0].(map[string]any)
			if got["type"] != "type_error" || len(got["loc"].([]any)) != 2 || got["loc"].([]any)[1] != "isHidden" {
				t.Errorf("422 entry = %v, want type_error at [body isHidden]", got)
			}
		})
	}
}

func TestReadPage(t *testing.T) {
	key := store.Key{Created: timeBase, ID: 42}
	tests := []struct {
		name  string
		query string
		want  store.Page
		err   string
	}{
		{"defaults", "", store.Page{Limit: 50}, ""},
		{"limit is read", "limit=7", store.Page{Limit: 7}, ""},
		{"per_page is read", "per_page=9", store.Page{Limit: 9}, ""},
		{"limit is clamped low", "limit=0", store.Page{Limit: 1}, ""},
		{"limit is clamped high", "limit=1000", store.Page{Limit: 100}, ""},
		{"next cursor", "cursor=" + encodeCursor(key, false), store.Page{Limit: 50, After: &key}, ""},
		{"previous cursor", "cursor=" + encodeCursor(key, true), store.Page{Limit: 50, Before: &key}, ""},
		{"non-integer limit", "limit=ten", store.Page{}, `[{"type":"type_error","loc":["query","limit"],"msg":"Input should be a valid integer"}]`},
		{"garbage cursor", "cursor=nonsense", store.Page{}, `[{"type":"value_error","loc":["query","cursor"],"msg":"Invalid cursor"}]`},
		{"cursor of another version", "cursor=djI6bjoxOjE", store.Page{}, `[{"type":"value_error","loc":["query","cursor"],"msg":"Invalid cursor"}]`},
		{"overlong cursor", "cursor=" + strings.Repeat("A", 200), store.Page{}, `[{"type":"value_error","loc":["query","cursor"],"msg":"Invalid cursor"}]`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			page, err := readPage(httptest.NewRequest("GET", "/x/?"+tc.query, nil))
			if tc.err != "" {
				b, _ := json.Marshal(err)
				if string(b) != tc.err {
					t.Fatalf("error = %s, want %s", b, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, page, cmp.Comparer(func(a, b time.Time) bool { return a.Equal(b) })); diff != "" {
				t.Errorf("page (-want +got):\n%s", diff)
			}
		})
	}
}

var timeBase = time.Date(2026, 1, 2, 3, 4, 5, 123456000, time.UTC)

// linkEntry is one entry of a Link header.
type linkEntry struct {
	url     string
	results bool
	cursor  string
}

// parseLink reads Sentry's Link header into its previous and next entries.
func parseLink(t *testing.T, h string) map[string]linkEntry {
	t.Helper()
	re := regexp.MustCompile(`<([^>]*)>; rel="(previous|next)"; results="(true|false)"; cursor="([^"]*)"`)
	m := re.FindAllStringSubmatch(h, -1)
	if len(m) != 2 {
		t.Fatalf("Link header %q does not have a previous and a next entry", h)
	}
	out := map[string]linkEntry{}
	for _, e := range m {
		out[e[2]] = linkEntry{url: e[1], results: e[3] == "true", cursor: e[4]}
	}
	return out
}

func TestPaginationOverHTTP(t *testing.T) {
	a, _ := newFoundationAPI(t)
	a.project("acme", "web")
	tok := a.token("owner@example.com", "project:releases")
	for i := range 7 {
		a.do("POST", "/api/0/organizations/acme/releases/", tok,
			map[string]any{"version": fmt.Sprintf("v%d", i), "projects": []string{"web"}}).expect(t, 201, nil)
	}
	// Three creation times for seven rows: ids break the ties.
	a.exec(`UPDATE releases SET date_created = $1::timestamptz + make_interval(secs => id % 3)`, timeBase)
	// Newest first: created desc, id desc (ids 1..7 are v0..v6).
	want := []any{"v4", "v1", "v6", "v3", "v0", "v5", "v2"}

	walk := func(t *testing.T, path string, rel string) ([]any, []map[string]linkEntry) {
		var got []any
		var links []map[string]linkEntry
		for range 10 {
			r := a.do("GET", path, tok, nil)
			r.expect(t, 200, nil)
			if r.header.Get("X-Hits") != "7" || r.header.Get("X-Max-Hits") != "1000" {
				t.Fatalf("X-Hits %q, X-Max-Hits %q", r.header.Get("X-Hits"), r.header.Get("X-Max-Hits"))
			}
			var page []any
			for _, rel := range r.json(t).([]any) {
				page = append(page, rel.(map[string]any)["version"])
			}
			l := parseLink(t, r.header.Get("Link"))
			links = append(links, l)
			if rel == "next" {
				got = append(got, page...)
			} else {
				got = append(page, got...)
			}
			if !l[rel].results {
				return got, links
			}
			if !strings.HasPrefix(l[rel].url, a.srv.URL+"/api/0/organizations/acme/releases/?") {
				t.Fatalf("Link URL %q is not the request's URL", l[rel].url)
			}
			path = strings.TrimPrefix(l[rel].url, a.srv.URL)
		}
		t.Fatal("more pages than rows")
		return nil, nil
	}
	for _, limit := range []int{1, 2, 3, 7, 50} {
		t.Run(fmt.Sprintf("limit %d visits every row once, newest first, both ways", limit), func(t *testing.T) {
			got, links := walk(t, fmt.Sprintf("/api/0/organizations/acme/releases/?limit=%d", limit), "next")
			if diff := cmp.Diff(want, got); diff != "" {
				t.Fatalf("forward (-want +got):\n%s", diff)
			}
			if links[0]["previous"].results {
				t.Error("the first page says it has a previous page")
			}
			last := links[len(links)-1]
			if len(links) == 1 {
				return
			}
			back, _ := walk(t, strings.TrimPrefix(last["previous"].url, a.srv.URL), "previous")
			lastLen := len(want) - (len(links)-1)*limit
			if diff := cmp.Diff(want[:len(want)-lastLen], back); diff != "" {
				t.Fatalf("backward (-want +got):\n%s", diff)
			}
		})
	}
}

// TestPathValuesThatAreNoText: an organization or project slug whose text
// PostgreSQL cannot hold (NUL, invalid UTF-8) is pathSlug's 422 on every
// route, an open one included, never a 500 from the statement that would
// have received it; another path value is its handler's 4xx.
func TestPathValuesThatAreNoText(t *testing.T) {
	a := newTestAPI(t)
	a.user("owner@acme.example")
	a.org("acme", "owner@acme.example")
	a.project("acme", "web")
	tok := a.token("owner@acme.example", "org:read", "member:read", "project:read")
	token := strings.Repeat("A", 43)
	slug := func(name string) string { return invalidBody("value_error", []string{"path", name}, "Invalid slug") }
	for _, c := range []struct{ method, path, token, want string }{
		{"GET", "/api/0/accept-invite/%00/1/" + token + "/", "", slug("organization_slug")},
		{"POST", "/api/0/accept-invite/ac%FFme/1/" + token + "/", "", slug("organization_slug")},
		{"GET", "/api/0/organizations/%00/members/", tok, slug("organization_slug")},
		{"GET", "/api/0/projects/acme/w%00eb/members/", tok, slug("project_slug")},
	} {
		a.do(c.method, c.path, c.token, nil).expect(t, http.StatusUnprocessableEntity, c.want)
	}
	if res := a.do("GET", "/api/0/organizations/acme/members/%FF/", tok, nil); res.status < 400 || res.status >= 500 {
		t.Errorf("a member id of invalid UTF-8: %d %s", res.status, res.body)
	}
}

// TestDirectRoutePathsThatAreNoText: the debuginfod and symbol-server
// routes refuse an organization that is no text before any statement.
func TestDirectRoutePathsThatAreNoText(t *testing.T) {
	a := newTestAPI(t)
	a.user("owner@acme.example")
	a.org("acme", "owner@acme.example")
	tok := a.token("owner@acme.example", "project:read")
	for _, path := range []string{"/debuginfod/%00/buildid/00ff/debuginfo", "/symbols/ac%FFme/a.pdb/0011/a.pdb"} {
		if res := a.do("GET", path, tok, nil); res.status != http.StatusBadRequest {
			t.Errorf("%s: %d %s, want 400", path, res.status, res.body)
		}
	}
}
