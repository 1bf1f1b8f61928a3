package handlers

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"errata/authn"
	"errata/store"
	"errata/store/storetest"
)

// TestReadStatements counts the statements that release reads run, through
// the store's OnStatement hook, once the token cache is warm: a release
// get is one statement (membership, release, projects, deploy count and
// last deploy), a list two (the page, with membership in its WHERE, and
// the capped count, which also checks membership), sent in one round trip.
// A foreign organization gets its 404 from the same statements.
func TestReadStatements(t *testing.T) {
	f := newRelFixture(t)
	f.release(t, "1.0.0", "web", "api")
	f.release(t, "2.0.0", "web")
	f.do("POST", "/api/0/organizations/acme/releases/1.0.0/deploys/", f.tok,
		`{"environment": "production"}`).expect(t, http.StatusCreated, nil)

	rec := &storetest.Recorder{}
	st, err := store.Open(context.Background(), store.Config{URL: f.db, OnStatement: rec.Hook})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(st.Close)
	d := Deps{Store: st, Auth: &authn.Authenticator{Store: st, CacheFor: time.Hour},
		Log: slog.New(slog.NewJSONHandler(io.Discard, nil)), Now: time.Now, SecretKey: "test-secret"}
	h := serve(d, routes(d))

	for _, tc := range []struct {
		name, path, token  string
		status, statements int
	}{
		{"organization release get", "/api/0/organizations/acme/releases/1.0.0/", f.tok, 200, 1},
		{"project release get", "/api/0/projects/acme/api/releases/1.0.0/", f.tok, 200, 1},
		{"release get of a foreign organization", "/api/0/organizations/acme/releases/1.0.0/", f.outside, 404, 1},
		{"organization release list", "/api/0/organizations/acme/releases/", f.tok, 200, 2},
		{"organization release list, second page", "/api/0/organizations/acme/releases/?limit=1&cursor=" +
			encodeCursor(store.Key{Created: time.Now().Add(time.Hour), ID: 1 << 40}, false), f.tok, 200, 2},
		{"project release list", "/api/0/projects/acme/web/releases/", f.tok, 200, 2},
		{"release list of a foreign organization", "/api/0/organizations/acme/releases/", f.outside, 404, 2},
		{"release list of a foreign project", "/api/0/projects/acme/web/releases/", f.outside, 404, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			call := func() *httptest.ResponseRecorder {
				req := httptest.NewRequest("GET", tc.path, nil)
				req.Header.Set("Authorization", "Bearer "+tc.token)
				w := httptest.NewRecorder()
				h.ServeHTTP(w, req)
				return w
			}
			call() // warms the token cache
			var w *httptest.ResponseRecorder
			stmts := rec.Record(func() { w = call() })
			if w.Code != tc.status {
				t.Fatalf("GET %s: %d %s", tc.path, w.Code, w.Body)
			}
			// The answer is the one the test server, without a token
			// cache, gives.
			want := f.do("GET", tc.path, tc.token, nil)
			if diff := cmp.Diff(string(want.body), w.Body.String()); diff != "" {
				t.Errorf("body (-test server +recording server):\n%s", diff)
			}
			if len(stmts) != tc.statements {
				var sqls []string
				for _, s := range stmts {
					sqls = append(sqls, s.SQL)
				}
				t.Errorf("%d statements, want %d:\n%s", len(stmts), tc.statements, sqls)
			}
		})
	}
}
