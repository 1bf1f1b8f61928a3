package handlers

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"errata/authn"
	"errata/store"
	"errata/store/storetest"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

// testAPI is errata's handler on a database of the test's own, served by a
// real HTTP server.
type testAPI struct {
	t   *testing.T
	st  *store.Store
	db  string // the database's URL
	srv *httptest.Server
	lg  *slog.Logger
}

func newTestAPI(t *testing.T, extra ...route) *testAPI {
	t.Helper()
	st, db := storetest.NewWithURL(t)
	return serveTestAPI(t, st, db, extra...)
}

// serveTestAPI serves errata's handler over st, a store of database db.
func serveTestAPI(t *testing.T, st *store.Store, db string, extra ...route) *testAPI {
	t.Helper()
	log := slog.New(slog.NewJSONHandler(io.Discard, nil))
	if testing.Verbose() {
		log = slog.New(slog.NewJSONHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	}
	d := Deps{Store: st, Auth: &authn.Authenticator{Store: st}, Log: log, Now: time.Now,
		SecretKey: "test-secret", RecoverySeeds: authn.NewPendingSeeds(300*time.Second, time.Now),
		Throttle: &authn.Throttle{Store: st}, Passwords: authn.NewHasher(0, 5*time.Second)}
	// The sign-in API too, as New serves it: the pages ask it.
	h := serve(d, append(append(routes(d), signInRoutes(d)...), extra...))
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return &testAPI{t: t, st: st, db: db, srv: srv, lg: log}
}

// exec runs SQL on the test's database.
func (a *testAPI) exec(sql string, args ...any) {
	a.t.Helper()
	storetest.Exec(a.t, a.db, sql, args...)
}

// count runs a query of one number on the test's database.
func (a *testAPI) count(sql string, args ...any) int {
	a.t.Helper()
	return storetest.Count(a.t, a.db, sql, args...)
}

// user creates a user and returns its id.
func (a *testAPI) user(email string) int64 {
	a.t.Helper()
	id, err := a.st.CreateUser(context.Background(), email, strings.Split(email, "@")[0])
	if err != nil {
		a.t.Fatalf("create user %s: %v", email, err)
	}
	return id
}

// org creates an organization owned by the user with ownerEmail.
func (a *testAPI) org(slug, ownerEmail string) int64 {
	a.t.Helper()
	id, err := a.st.CreateOrganization(context.Background(), slug, strings.ToUpper(slug), ownerEmail)
	if err != nil {
		a.t.Fatalf("create org %s: %v", slug, err)
	}
	return id
}

// project creates a project in org.
func (a *testAPI) project(org, slug string) int64 {
	a.t.Helper()
	p, err := a.st.CreateProject(context.Background(), store.Operator, org, store.NewProject{Slug: slug, Name: strings.ToUpper(slug)})
	if err != nil {
		a.t.Fatalf("create project %s/%s: %v", org, slug, err)
	}
	return p.ID
}

// member adds the user with email to org with role.
func (a *testAPI) member(org, email, role string) {
	a.t.Helper()
	if err := a.st.AddMember(context.Background(), org, email, role); err != nil {
		a.t.Fatalf("add member: %v", err)
	}
}

// token creates a token for the user with email holding scopes (all of
// them when none are given).
func (a *testAPI) token(email string, scopes ...string) string {
	a.t.Helper()
	if len(scopes) == 0 {
		scopes = authn.Scopes
	}
	tok, hash := authn.NewToken()
	if _, err := a.st.CreateToken(context.Background(), email, hash, scopes, "test"); err != nil {
		a.t.Fatalf("create token: %v", err)
	}
	return tok
}

// response is what a request got back.
type response struct {
	status int
	header http.Header
	body   []byte
}

// do sends a request; body is JSON-encoded unless it is a string or []byte.
func (a *testAPI) do(method, path, token string, body any) response {
	a.t.Helper()
	var r io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		r = strings.NewReader(b)
	case []byte:
		r = bytes.NewReader(b)
	default:
		enc, err := json.Marshal(b)
		if err != nil {
			a.t.Fatal(err)
		}
		r = bytes.NewReader(enc)
	}
	req, err := http.NewRequest(method, a.srv.URL+path, r)
	if err != nil {
		a.t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	res, err := a.srv.Client().Do(req)
	if err != nil {
		a.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		a.t.Fatal(err)
	}
	return response{status: res.StatusCode, header: res.Header, body: b}
}

// expect checks the status and, when want is not nil, the JSON body.
func (r response) expect(t *testing.T, status int, want any) {
	t.Helper()
	if r.status != status {
		t.Fatalf("status = %d, want %d; body %s", r.status, status, r.body)
	}
	if want == nil {
		return
	}
	var w any
	switch x := want.(type) {
	case string:
		if err := json.Unmarshal([]byte(x), &w); err != nil {
			t.Fatalf("bad want JSON %q: %v", x, err)
		}
	default:
		b, _ := json.Marshal(x)
		json.Unmarshal(b, &w)
	}
	if diff := cmp.Diff(w, r.json(t)); diff != "" {
		t.Errorf("body mismatch (-want +got):\n%s", diff)
	}
}

// json decodes the body.
func (r response) json(t *testing.T) any {
	t.Helper()
	if ct := r.header.Get("Content-Type"); ct != "application/json" {
		t.Fatalf("Content-Type = %q, want application/json; body %s", ct, r.body)
	}
	var v any
	if err := json.Unmarshal(r.body, &v); err != nil {
		t.Fatalf("body is not JSON: %v: %s", err, r.body)
	}
	return v
}

var timestampPattern = regexp.MustCompile(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$`)

// scrubTimes replaces every timestamp in v with "<time>" after checking that
// it has the contract's format.
func scrubTimes(v any) any {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			x[k] = scrubTimes(e)
		}
	case []any:
		for i, e := range x {
			x[i] = scrubTimes(e)
		}
	case string:
		if timestampPattern.MatchString(x) {
			return "<time>"
		}
	}
	return v
}

// golden compares the JSON body, timestamps scrubbed, with
// testdata/<name>.json; -update rewrites the file.
func (r response) golden(t *testing.T, name string) {
	t.Helper()
	got := scrubTimes(r.json(t))
	path := filepath.Join("..", "testdata", name+".json")
	if *update {
		b, _ := json.MarshalIndent(got, "", "  ")
		if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("golden file: %v (run with -update to create it)", err)
	}
	var want any
	if err := json.Unmarshal(b, &want); err != nil {
		t.Fatalf("golden file %s: %v", path, err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("%s mismatch (-want +got):\n%s", name, diff)
	}
}
