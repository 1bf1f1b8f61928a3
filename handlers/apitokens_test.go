package handlers

import (
	"bytes"
	"context"
	"encoding/json"
	"maps"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"errata/authn"
	"errata/store"
)

// tokenAPI is a signed-in session of one user (the app client's) on a
// test server: session sends errata's real routes each request with the
// session's X-Session-Token, through a proxy that adds it.
type tokenAPI struct {
	*testAPI
	session   *testAPI // its do sends the session, and no token
	sessionID int64    // the session's row
}

// startSession signs the user userID in, as the app client, and returns
// the session's token and row id.
func (a *testAPI) startSession(t *testing.T, userID int64) (string, int64) {
	t.Helper()
	auth := &authn.Authenticator{Store: a.st}
	id, sess, err := auth.StartSession(context.Background(), authn.NewSession{UserID: userID, Client: authn.ClientApp})
	if err != nil {
		t.Fatal(err)
	}
	return id, sess.ID
}

// newTokenAPI signs the user userID in on a's server.
func newTokenAPI(t *testing.T, a *testAPI, userID int64) *tokenAPI {
	t.Helper()
	id, sessionID := a.startSession(t, userID)
	target, err := url.Parse(a.srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	proxy := &httputil.ReverseProxy{Rewrite: func(r *httputil.ProxyRequest) {
		r.SetURL(target)
		r.Out.Header.Set(authn.SessionTokenHeader, id)
	}}
	srv := httptest.NewServer(proxy)
	t.Cleanup(srv.Close)
	return &tokenAPI{testAPI: a, session: &testAPI{t: t, st: a.st, db: a.db, srv: srv, lg: a.lg}, sessionID: sessionID}
}

// as sends a request of the session; body is JSON-encoded unless it is a
// string.
func (s *tokenAPI) as(method, path string, body any) response {
	s.t.Helper()
	return s.session.do(method, path, "", body)
}

// create makes a token of the session with body and returns the answer.
func (s *tokenAPI) create(t *testing.T, body any) map[string]any {
	t.Helper()
	res := s.as("POST", "/api/0/api-tokens/", body)
	res.expect(t, http.StatusCreated, nil)
	out := res.json(t).(map[string]any)
	if _, ok := out["token"].(string); !ok {
		t.Fatalf("the answer that makes a token has no token: %s", res.body)
	}
	return out
}

// list returns the session's tokens, the whole answer and decoded.
func (s *tokenAPI) list(t *testing.T, query string) (response, []any) {
	t.Helper()
	res := s.as("GET", "/api/0/api-tokens/"+query, nil)
	res.expect(t, http.StatusOK, nil)
	return res, res.json(t).([]any)
}

// tokenField returns a token answer's field as a string, "" when it is not one.
func tokenField(v any, name string) string {
	s, _ := v.(map[string]any)[name].(string)
	return s
}

func TestAPITokens(t *testing.T) {
	a := newTestAPI(t)
	ann := a.user("ann@example.com")
	ben := a.user("ben@example.com")
	cat := a.user("cat@example.com") // of no organization
	a.org("acme", "ann@example.com")
	a.member("acme", "ben@example.com", "member")
	s := newTokenAPI(t, a, ann)

	t.Run("a new token is shown once, with its last characters, and works", func(t *testing.T) {
		expires := time.Now().Add(time.Hour).UTC().Truncate(time.Millisecond)
		out := s.create(t, map[string]any{"name": "ci", "scopes": []string{"project:releases", "org:read", "org:read"},
			"expiresAt": expires.Format(time.RFC3339Nano)})
		tok := tokenField(out, "token")
		if !strings.HasPrefix(tok, authn.TokenPrefix) || len(tok) < 40 {
			t.Errorf("token %q: want %s and at least 40 characters", tok, authn.TokenPrefix)
		}
		want := map[string]any{"id": tokenField(out, "id"), "name": "ci", "scopes": []any{"org:read", "project:releases"},
			"dateCreated": tokenField(out, "dateCreated"), "expiresAt": expires.Format(timeLayout), "lastUsed": nil,
			"tokenLastCharacters": tok[len(tok)-4:], "token": tok}
		if diff := cmp.Diff(want, out); diff != "" {
			t.Errorf("answer (-want +got):\n%s", diff)
		}
		a.do("GET", "/api/0/", tok, nil).expect(t, http.StatusOK, map[string]any{"version": "0",
			"user": map[string]any{"id": strconv.FormatInt(ann, 10), "email": "ann@example.com", "name": "ann"},
			"auth": map[string]any{"scopes": []string{"org:read", "project:releases"}}})
		if n := a.count(`SELECT count(*) FROM mail_outbox WHERE to_address = 'ann@example.com'
			AND subject = 'A new API token was created for your account' AND text_body LIKE '%"ci", ending in ' || $1 || '%'`,
			tok[len(tok)-4:]); n != 1 {
			t.Errorf("%d security notices of the token, want 1", n)
		}
	})

	t.Run("the list shows the caller's tokens without their secrets", func(t *testing.T) {
		out := s.create(t, map[string]any{"scopes": []string{"event:read"}})
		benTok := a.token("ben@example.com")
		res, list := s.list(t, "")
		if len(list) != 2 || tokenField(list[0], "id") != tokenField(out, "id") {
			t.Fatalf("list %s: want 2 tokens, the newest %s first", res.body, tokenField(out, "id"))
		}
		want := maps.Clone(out)
		delete(want, "token")
		if diff := cmp.Diff(want, list[0]); diff != "" {
			t.Errorf("the newest token (-want +got):\n%s", diff)
		}
		if bytes.Contains(res.body, []byte(`"token"`)) || bytes.Contains(res.body, []byte(tokenField(out, "token"))) ||
			bytes.Contains(res.body, []byte(benTok[len(authn.TokenPrefix):])) {
			t.Errorf("the list shows a secret: %s", res.body)
		}
	})

	t.Run("the list is paginated", func(t *testing.T) {
		_, all := s.list(t, "")
		res, first := s.list(t, "?limit=1")
		if len(first) != 1 || tokenField(first[0], "id") != tokenField(all[0], "id") {
			t.Fatalf("first page %s, want the newest token alone", res.body)
		}
		if hits := res.header.Get("X-Hits"); hits != strconv.Itoa(len(all)) {
			t.Errorf("X-Hits %s, want %d", hits, len(all))
		}
		if !strings.Contains(res.header.Get("Link"), `rel="next"; results="true"`) {
			t.Errorf("Link %q: want a next page", res.header.Get("Link"))
		}
	})

	t.Run("a token of before its last characters were kept shows null", func(t *testing.T) {
		a.token("ann@example.com", "org:read")
		_, list := s.list(t, "")
		if last := list[0].(map[string]any); last["tokenLastCharacters"] != nil || last["name"] != "test" {
			t.Errorf("the admin CLI's token: %+v, want name test and no last characters", list[0])
		}
	})

	t.Run("a scope that no role of the caller grants is refused", func(t *testing.T) {
		bens := newTokenAPI(t, a, ben)
		bens.as("POST", "/api/0/api-tokens/", map[string]any{"scopes": []string{"project:releases", "org:admin"}}).
			expect(t, http.StatusBadRequest, `{"detail":"None of your roles grants the scope org:admin"}`)
		bens.create(t, map[string]any{"scopes": []string{"project:releases", "event:read"}})
		cats := newTokenAPI(t, a, cat)
		cats.as("POST", "/api/0/api-tokens/", map[string]any{"scopes": []string{"org:read"}}).
			expect(t, http.StatusBadRequest, `{"detail":"None of your roles grants the scope org:read"}`)
	})

	t.Run("bad input is a 4xx that names the field", func(t *testing.T) {
		before := a.count(`SELECT count(*) FROM api_tokens`)
		for _, tc := range []struct {
			name   string
			body   any
			status int
			want   string
		}{
			{"no scopes", map[string]any{"name": "x"}, 422,
				`{"detail":[{"type":"missing","loc":["body","scopes"],"msg":"Field required"}]}`},
			{"no scope", map[string]any{"scopes": []string{}}, 400,
				`{"detail":"Invalid scopes: at least one scope is required"}`},
			{"an unknown scope", map[string]any{"scopes": []string{"org:read", "org:everything"}}, 400,
				`{"detail":"Invalid scopes: unknown scope \"org:everything\""}`},
			{"a scope too long to be one", map[string]any{"scopes": []string{strings.Repeat("x", 65)}}, 422,
				`{"detail":[{"type":"value_error","loc":["body","scopes",0],"msg":"String should have at most 64 characters"}]}`},
			{"scopes not a list", map[string]any{"scopes": "org:read"}, 422,
				`{"detail":[{"type":"type_error","loc":["body","scopes"],"msg":"Input should be a valid array"}]}`},
			{"an expiry in the past", map[string]any{"scopes": []string{"org:read"}, "expiresAt": "2020-01-01T00:00:00Z"}, 400,
				`{"detail":"Expiration date must be in the future"}`},
			{"an expiry that is no date", map[string]any{"scopes": []string{"org:read"}, "expiresAt": "tomorrow"}, 422,
				`{"detail":[{"type":"type_error","loc":["body","expiresAt"],"msg":"Input should be a valid datetime"}]}`},
			{"a name too long", map[string]any{"scopes": []string{"org:read"}, "name": strings.Repeat("n", 256)}, 422,
				`{"detail":[{"type":"value_error","loc":["body","name"],"msg":"String should have at most 255 characters"}]}`},
			{"a body that does not parse", `{"scopes": [`, 400, `{"detail":"Cannot parse request body"}`},
		} {
			t.Run(tc.name, func(t *testing.T) {
				s.as("POST", "/api/0/api-tokens/", tc.body).expect(t, tc.status, tc.want)
			})
		}
		if after := a.count(`SELECT count(*) FROM api_tokens`); after != before {
			t.Errorf("%d tokens made by refused requests", after-before)
		}
	})

	t.Run("a deleted token stops working; another's is 404", func(t *testing.T) {
		out := s.create(t, map[string]any{"scopes": []string{"org:read"}})
		a.do("GET", "/api/0/organizations/", tokenField(out, "token"), nil).expect(t, http.StatusOK, nil)
		bens := newTokenAPI(t, a, ben)
		bens.as("DELETE", "/api/0/api-tokens/"+tokenField(out, "id")+"/", nil).expect(t, http.StatusNotFound, `{"detail":"Not Found"}`)
		bens.as("DELETE", "/api/0/api-tokens/", map[string]any{"tokenId": tokenField(out, "id")}).expect(t, http.StatusNotFound, nil)
		a.do("GET", "/api/0/organizations/", tokenField(out, "token"), nil).expect(t, http.StatusOK, nil)
		s.as("DELETE", "/api/0/api-tokens/"+tokenField(out, "id")+"/", nil).expect(t, http.StatusNoContent, nil)
		a.do("GET", "/api/0/organizations/", tokenField(out, "token"), nil).expect(t, http.StatusUnauthorized, `{"detail":"Unauthorized"}`)
		s.as("DELETE", "/api/0/api-tokens/"+tokenField(out, "id")+"/", nil).expect(t, http.StatusNotFound, nil)
	})

	t.Run("Sentry's delete takes the id in the body, as a string or a number", func(t *testing.T) {
		for _, asNumber := range []bool{false, true} {
			out := s.create(t, map[string]any{"scopes": []string{"org:read"}})
			var id any = tokenField(out, "id")
			if asNumber {
				id, _ = strconv.Atoi(tokenField(out, "id"))
			}
			s.as("DELETE", "/api/0/api-tokens/", map[string]any{"tokenId": id}).expect(t, http.StatusNoContent, nil)
			a.do("GET", "/api/0/organizations/", tokenField(out, "token"), nil).expect(t, http.StatusUnauthorized, nil)
		}
		invalidID := `{"detail":[{"type":"type_error","loc":["body","tokenId"],"msg":"Input should be a valid integer"}]}`
		for body, want := range map[string]string{
			`{}`:                  `{"detail":[{"type":"missing","loc":["body","tokenId"],"msg":"Field required"}]}`,
			`{"tokenId": null}`:   `{"detail":[{"type":"missing","loc":["body","tokenId"],"msg":"Field required"}]}`,
			`{"tokenId": "one"}`:  invalidID,
			`{"tokenId": 1.5}`:    invalidID,
			`{"tokenId": -3}`:     invalidID,
			`{"tokenId": [1]}`:    invalidID,
			`{"tokenId": "1e3"}`:  invalidID,
			`{"tokenId": "0x10"}`: invalidID,
		} {
			s.as("DELETE", "/api/0/api-tokens/", body).expect(t, http.StatusUnprocessableEntity, want)
		}
		s.as("DELETE", "/api/0/api-tokens/one/", nil).expect(t, http.StatusUnprocessableEntity,
			`{"detail":[{"type":"type_error","loc":["path","token_id"],"msg":"Input should be a valid integer"}]}`)
	})

	t.Run("a session that authenticated more than 5 minutes ago must reauthenticate", func(t *testing.T) {
		a.exec(`UPDATE sessions SET authenticated_at = now() - interval '5 minutes 10 seconds' WHERE id = $1`, s.sessionID)
		before := a.count(`SELECT count(*) FROM api_tokens`)
		for _, r := range []struct {
			method, path string
			body         any
		}{
			{"GET", "/api/0/api-tokens/", nil},
			{"POST", "/api/0/api-tokens/", map[string]any{"scopes": []string{"org:read"}}},
			{"DELETE", "/api/0/api-tokens/", map[string]any{"tokenId": "1"}},
			{"DELETE", "/api/0/api-tokens/1/", nil},
		} {
			s.as(r.method, r.path, r.body).expect(t, http.StatusUnauthorized, `{"detail":"Reauthentication required"}`)
		}
		if after := a.count(`SELECT count(*) FROM api_tokens`); after != before {
			t.Errorf("%d tokens made by a session that must reauthenticate", after-before)
		}
		// The session still reads the rest of the API.
		s.as("GET", "/api/0/organizations/", nil).expect(t, http.StatusOK, nil)
		a.exec(`UPDATE sessions SET authenticated_at = now() - interval '4 minutes 50 seconds' WHERE id = $1`, s.sessionID)
		s.as("GET", "/api/0/api-tokens/", nil).expect(t, http.StatusOK, nil)
	})

	t.Run("an expired token is refused and listed as it is", func(t *testing.T) {
		out := s.create(t, map[string]any{"scopes": []string{"org:read"}})
		a.do("GET", "/api/0/organizations/", tokenField(out, "token"), nil).expect(t, http.StatusOK, nil)
		a.exec(`UPDATE api_tokens SET expires_at = now() - interval '1 second' WHERE id = $1::bigint`, tokenField(out, "id"))
		a.do("GET", "/api/0/organizations/", tokenField(out, "token"), nil).expect(t, http.StatusUnauthorized, `{"detail":"Unauthorized"}`)
		_, list := s.list(t, "")
		i := slices.IndexFunc(list, func(l any) bool { return tokenField(l, "id") == tokenField(out, "id") })
		if i < 0 || tokenField(list[i], "expiresAt") == "" || tokenField(list[i], "lastUsed") == "" {
			t.Errorf("the expired token in the list: %+v; want it with its expiry and last use", list)
		}
	})
}

// TestAPITokenRoutesRefuseTokens: the api-tokens routes take a session
// only: a token, even of every scope, is 403, and so a token cannot make
// tokens; no credential is 401.
func TestAPITokenRoutesRefuseTokens(t *testing.T) {
	a := newTestAPI(t)
	a.user("ann@example.com")
	a.org("acme", "ann@example.com")
	tok := a.token("ann@example.com")
	before := a.count(`SELECT count(*) FROM api_tokens`)
	for _, r := range []struct {
		method, path string
		body         any
	}{
		{"GET", "/api/0/api-tokens/", nil},
		{"POST", "/api/0/api-tokens/", map[string]any{"scopes": []string{"org:read"}}},
		{"POST", "/api/0/api-tokens/", `{"scopes": [`},
		{"DELETE", "/api/0/api-tokens/", map[string]any{"tokenId": "1"}},
		{"DELETE", "/api/0/api-tokens/1/", nil},
	} {
		t.Run(r.method+" "+r.path, func(t *testing.T) {
			a.do(r.method, r.path, tok, r.body).expect(t, http.StatusForbidden, `{"detail":"Permission denied"}`)
			a.do(r.method, r.path, "", r.body).expect(t, http.StatusUnauthorized, `{"detail":"Unauthorized"}`)
		})
	}
	if after := a.count(`SELECT count(*) FROM api_tokens`); after != before {
		t.Errorf("a token made %d tokens", after-before)
	}
}

// FuzzDecodeTokenID: any JSON value decodes to a positive id or is refused,
// never a panic; a positive id sent as a number or a string decodes to
// itself.
func FuzzDecodeTokenID(f *testing.F) {
	for _, s := range []string{`1`, `"42"`, `-1`, `"x"`, `1.5`, `null`, `[1]`, `"9223372036854775808"`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		id, ok := decodeTokenID(json.RawMessage(raw))
		if ok && id <= 0 {
			t.Fatalf("%q decodes to %d", raw, id)
		}
		if ok {
			for _, enc := range []string{strconv.FormatInt(id, 10), strconv.Quote(strconv.FormatInt(id, 10))} {
				if back, ok := decodeTokenID(json.RawMessage(enc)); !ok || back != id {
					t.Fatalf("%s decodes to %d, %t; want %d", enc, back, ok, id)
				}
			}
		}
	})
}

// asSessionOf makes r a request of a new session of the user email, with
// no token.
func asSessionOf(t *testing.T, f *docFixture, r *docRequest, email string) int64 {
	t.Helper()
	id, sessionID := f.startSession(t, int64(f.count(`SELECT id FROM users WHERE email = $1`, email)))
	r.token = ""
	r.header = http.Header{authn.SessionTokenHeader: {id}}
	return sessionID
}

// reauthenticationRequired is the generic case of the document's
// ReauthenticationRequired: a session of ann that authenticated more than 5
// minutes ago.
func reauthenticationRequired(t *testing.T, f *docFixture, r *docRequest) {
	sessionID := asSessionOf(t, f, r, "ann@example.com")
	f.exec(`UPDATE sessions SET authenticated_at = now() - interval '6 minutes' WHERE id = $1`, sessionID)
}

// annTokenID stores a token of ann as in and returns its id.
func annTokenID(t *testing.T, f *docFixture, in store.TokenInput) string {
	t.Helper()
	_, in.Hash = authn.NewToken()
	id, err := f.st.CreateTokenByEmail(context.Background(), "ann@example.com", in)
	if err != nil {
		t.Fatal(err)
	}
	return strconv.FormatInt(id, 10)
}

// apiTokenDocCases are the cases of the api-tokens operations of the
// document: each request is a session's, ann's unless said otherwise.
var apiTokenDocCases = map[string]operationCases{
	"listApiTokens": {
		ownFixture: true, // ann's session is a sign-in
		// The newest token alone: the one of the example.
		request: func(t *testing.T, f *docFixture, r *docRequest) {
			asSessionOf(t, f, r, "ann@example.com")
			annTokenID(t, f, store.TokenInput{Name: "CI releases", Scopes: []string{"org:read", "project:releases"},
				ExpiresAt: new(time.Date(2027, 2, 19, 0, 0, 0, 0, time.UTC)), LastCharacters: "9f3a"})
			r.query.Set("limit", "1")
		},
	},
	"createApiToken": {
		request: func(t *testing.T, f *docFixture, r *docRequest) { asSessionOf(t, f, r, "ann@example.com") },
		examples: map[string]exampleCase{
			"400 unknownScope": withJSON(map[string]any{"scopes": []string{"org:everything"}}),
			"400 scopeNotGranted": func(t *testing.T, f *docFixture, r *docRequest) {
				asSessionOf(t, f, r, "ben@example.com") // a member
				r.jsonBody(map[string]any{"scopes": []string{"member:admin"}})
			},
			"400 expiryInThePast": withJSON(map[string]any{"scopes": []string{"org:read"}, "expiresAt": "2020-01-01T00:00:00Z"}),
			"422 missingScopes":   withJSON(map[string]any{"name": "CI releases"}),
			"422 invalidExpiry":   withJSON(map[string]any{"scopes": []string{"org:read"}, "expiresAt": "tomorrow"}),
		},
	},
	"deleteApiTokenById": {
		request: func(t *testing.T, f *docFixture, r *docRequest) {
			asSessionOf(t, f, r, "ann@example.com")
			r.jsonBody(map[string]any{"tokenId": annTokenID(t, f, store.TokenInput{Scopes: []string{"org:read"}})})
		},
		examples: map[string]exampleCase{
			"404":                withJSON(map[string]any{"tokenId": "999999999"}),
			"422 invalidTokenId": withJSON(map[string]any{"tokenId": "one"}),
		},
	},
	"deleteApiToken": {
		request: func(t *testing.T, f *docFixture, r *docRequest) {
			asSessionOf(t, f, r, "ann@example.com")
			r.values["token_id"] = annTokenID(t, f, store.TokenInput{Scopes: []string{"org:read"}})
		},
		examples: map[string]exampleCase{
			"404":                func(t *testing.T, f *docFixture, r *docRequest) { r.values["token_id"] = "999999999" },
			"422 invalidTokenId": func(t *testing.T, f *docFixture, r *docRequest) { r.values["token_id"] = "one" },
		},
	},
}
