package handlers

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"errata/authn"
	"errata/store"
	"errata/store/storetest"
)

// apiFuzzRoute is a route that FuzzAPI sends requests to: every route that
// reads a body, a query or a free-form path value. In path, {} is where
// the fuzzed segment goes, escaped as clients escape it; ?{} takes it as the
// raw query string.
type apiFuzzRoute struct {
	method, path, contentType string
	html                      bool // answers with a page, not JSON
	download                  bool // may answer 200 with a file's bytes
}

// apiFuzzRoutes are the routes of FuzzAPI; its route argument is an index
// into them, so add new ones at the end.
var apiFuzzRoutes = []apiFuzzRoute{
	{method: "POST", path: "/api/0/organizations/acme/releases/", contentType: "application/json"},
	{method: "POST", path: "/api/0/projects/acme/web/releases/", contentType: "application/json"},
	{method: "PUT", path: "/api/0/organizations/acme/releases/{}/", contentType: "application/json"},
	{method: "PUT", path: "/api/0/projects/acme/web/releases/{}/", contentType: "application/json"},
	{method: "POST", path: "/api/0/organizations/acme/releases/{}/deploys/", contentType: "application/json"},
	{method: "PUT", path: "/api/0/projects/acme/web/environments/{}/", contentType: "application/json"},
	{method: "PUT", path: "/api/0/users/{}/", contentType: "application/json"},
	{method: "POST", path: "/api/0/users/{}/emails/", contentType: "application/json"},
	{method: "PUT", path: "/api/0/users/{}/emails/", contentType: "application/json"},
	{method: "DELETE", path: "/api/0/users/{}/emails/", contentType: "application/json"},
	{method: "POST", path: "/api/0/users/{}/emails/confirm/", contentType: "application/json"},
	{method: "PUT", path: "/api/0/users/{}/notifications/", contentType: "application/json"},
	{method: "POST", path: "/api/0/generate-recovery-codes/", contentType: "application/json"},
	{method: "POST", path: "/api/0/auth/email/verify/", contentType: "application/json"},
	{method: "POST", path: "/api/0/organizations/acme/releases/{}/assemble/", contentType: "application/json"},
	{method: "POST", path: "/api/0/organizations/acme/artifactbundle/assemble/", contentType: "application/json"},
	{method: "POST", path: "/api/0/organizations/acme/releases/{}/files/", contentType: "multipart/form-data; boundary=fuzz"},
	{method: "POST", path: "/api/0/organizations/acme/chunk-upload/", contentType: "multipart/form-data; boundary=fuzz"},
	{method: "GET", path: "/api/0/organizations/acme/releases/?{}"},
	{method: "GET", path: "/api/0/projects/acme/web/releases/{}/"},
	{method: "GET", path: "/api/0/organizations/acme/releases/{}/deploys/"},
	{method: "GET", path: "/api/0/projects/acme/web/environments/?{}"},
	{method: "GET", path: "/api/0/organizations/acme/releases/1.0/files/{}/"},
	{method: "GET", path: "/profile/confirm-email/{}/", html: true},
	{method: "POST", path: "/profile/confirm-email/{}/", contentType: "application/x-www-form-urlencoded", html: true},
	{method: "POST", path: "/api/0/projects/acme/web/files/difs/assemble/", contentType: "application/json"},
	{method: "GET", path: "/api/0/projects/acme/web/files/dsyms/?{}", download: true},
	{method: "POST", path: "/api/0/projects/acme/web/files/dsyms/", contentType: "multipart/form-data; boundary=fuzz"},
	{method: "DELETE", path: "/api/0/projects/acme/web/files/dsyms/?{}"},
	{method: "GET", path: "/api/0/projects/acme/web/files/dsyms/unknown/?{}"},
	{method: "POST", path: "/api/0/projects/acme/web/files/proguard-artifact-releases", contentType: "application/json"},
	{method: "GET", path: "/api/0/projects/acme/web/files/proguard-artifact-releases?{}"},
	{method: "PUT", path: "/api/0/organizations/scratch/", contentType: "application/json"},
	{method: "POST", path: "/api/0/organizations/acme/projects/", contentType: "application/json"},
	{method: "PUT", path: "/api/0/projects/acme/scratch/", contentType: "application/json"},
	{method: "GET", path: "/api/0/projects/acme/web/environments/{}/"},
	{method: "GET", path: "/api/0/organizations/acme/repos/{}/commits/"},
	{method: "PUT", path: "/api/0/organizations/acme/releases/1.0/files/{}/", contentType: "application/json"},
	// The filters of the lists Sentry's published schema documents.
	{method: "GET", path: "/api/0/organizations/?{}"},
	{method: "GET", path: "/api/0/organizations/acme/?{}"},
	{method: "GET", path: "/api/0/organizations/acme/projects/?{}"},
	{method: "GET", path: "/api/0/projects/acme/web/releases/?{}"},
	{method: "GET", path: "/api/0/organizations/acme/releases/1.0/?{}"},
	{method: "GET", path: "/api/0/organizations/acme/releases/1.0/files/?{}"},
	{method: "GET", path: "/api/0/projects/acme/web/releases/1.0/files/?{}"},
	{method: "GET", path: "/api/0/organizations/acme/repos/?{}"},
	{method: "POST", path: "/api/0/projects/acme/web/symbolicate-js/", contentType: "application/json"},
	{method: "POST", path: "/api/0/projects/acme/web/symbolicate-jvm/", contentType: "application/json"},
	// Native resolution (docs/resolution.md).
	{method: "POST", path: "/api/0/projects/acme/web/symbolicate/", contentType: "application/json"},
	// Members and invitations (docs/members.md).
	{method: "POST", path: "/api/0/organizations/acme/members/", contentType: "application/json"},
	{method: "PUT", path: "/api/0/organizations/acme/members/{}/", contentType: "application/json"},
	{method: "GET", path: "/api/0/organizations/acme/members/?{}"},
	{method: "GET", path: "/api/0/accept-invite/acme/1/{}/"},
	// A new organization (its creator is no superuser: every body is refused
	// or invalid, never a 5xx).
	{method: "POST", path: "/api/0/organizations/", contentType: "application/json"},
}

// FuzzAPI sends arbitrary requests to the real handler on a real database
// (DATABASE_URL, as every handler test): route picks one of apiFuzzRoutes,
// segment fills its path value or query, body is the request body. Whatever
// they are, the answer is not a 5xx, and a JSON route answers JSON of the
// contract: {"detail": "..."} or a 422 list for errors.
func FuzzAPI(f *testing.F) {
	st, _ := storetest.NewWithURL(f)
	ctx := context.Background()
	if _, err := st.CreateUser(ctx, "owner@acme.io", "Owner"); err != nil {
		f.Fatal(err)
	}
	if _, err := st.CreateOrganization(ctx, "acme", "Acme", "owner@acme.io"); err != nil {
		f.Fatal(err)
	}
	if _, err := st.CreateProject(ctx, store.Operator, "acme", store.NewProject{Slug: "web", Name: "Web"}); err != nil {
		f.Fatal(err)
	}
	// What the organization and project updates may change, so that the
	// routes above keep their records.
	if _, err := st.CreateOrganization(ctx, "scratch", "Scratch", "owner@acme.io"); err != nil {
		f.Fatal(err)
	}
	if _, err := st.CreateProject(ctx, store.Operator, "acme", store.NewProject{Slug: "scratch", Name: "Scratch"}); err != nil {
		f.Fatal(err)
	}
	tok, hash := authn.NewToken()
	if _, err := st.CreateToken(ctx, "owner@acme.io", hash, authn.Scopes, "fuzz"); err != nil {
		f.Fatal(err)
	}
	log := slog.New(slog.NewJSONHandler(io.Discard, nil))
	d := Deps{Store: st, Auth: &authn.Authenticator{Store: st}, Log: log, Now: time.Now,
		SecretKey: "fuzz-secret", RecoverySeeds: authn.NewPendingSeeds(300*time.Second, time.Now)}
	h := serve(d, routes(d))
	send := func(method, target, contentType string, body []byte) *httptest.ResponseRecorder {
		r := httptest.NewRequest(method, "http://errata.test/", bytes.NewReader(body))
		if u, err := url.Parse(target); err == nil {
			r.URL = u
		} else {
			r.URL = &url.URL{Path: "/"}
		}
		r.Header.Set("Authorization", "Bearer "+tok)
		if contentType != "" {
			r.Header.Set("Content-Type", contentType)
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return w
	}
	// A release with a deploy (and so an environment), and recovery codes
	// waiting for confirmation.
	for _, req := range []struct{ method, path, body string }{
		{"POST", "/api/0/organizations/acme/releases/", `{"version": "1.0", "projects": ["web"]}`},
		{"POST", "/api/0/organizations/acme/releases/1.0/deploys/", `{"environment": "production"}`},
		{"GET", "/api/0/generate-recovery-codes/", ""},
	} {
		if w := send(req.method, req.path, "application/json", []byte(req.body)); w.Code >= 300 {
			f.Fatalf("%s %s: %d %s", req.method, req.path, w.Code, w.Body)
		}
	}

	f.Fuzz(func(t *testing.T, route uint8, segment string, body []byte) {
		rt := apiFuzzRoutes[int(route)%len(apiFuzzRoutes)]
		target := strings.Replace(rt.path, "?{}", "?"+segment, 1)
		target = strings.Replace(target, "{}", url.PathEscape(segment), 1)
		w := send(rt.method, target, rt.contentType, body)
		if w.Code >= 500 {
			t.Fatalf("%s %s: %d %s", rt.method, target, w.Code, w.Body)
		}
		checkContractAnswer(t, rt, target, w)
	})
}

// checkContractAnswer checks the content type and body of an answer.
func checkContractAnswer(t *testing.T, rt apiFuzzRoute, target string, w *httptest.ResponseRecorder) {
	t.Helper()
	ct := w.Header().Get("Content-Type")
	switch {
	case w.Code >= 300 && w.Code < 400:
		return // the mux redirects paths that are not clean
	case w.Code == http.StatusNoContent:
		if w.Body.Len() != 0 {
			t.Errorf("%s %s: 204 with a body %q", rt.method, target, w.Body)
		}
		return
	case rt.download && w.Code == http.StatusOK && ct == "application/octet-stream":
		return
	case rt.html:
		if ct != "text/html; charset=utf-8" && ct != "application/json" {
			t.Errorf("%s %s: %d with Content-Type %q", rt.method, target, w.Code, ct)
		}
		return
	case ct != "application/json":
		t.Fatalf("%s %s: %d with Content-Type %q: %s", rt.method, target, w.Code, ct, w.Body)
	}
	if w.Code < 400 {
		if !json.Valid(w.Body.Bytes()) {
			t.Errorf("%s %s: %d with a body that is not JSON: %s", rt.method, target, w.Code, w.Body)
		}
		return
	}
	var e struct {
		Detail json.RawMessage `json:"detail"`
	}
	var msg string
	var list []struct {
		Type string `json:"type"`
		Loc  []any  `json:"loc"`
		Msg  string `json:"msg"`
	}
	err := json.Unmarshal(w.Body.Bytes(), &e)
	switch {
	case err != nil:
		t.Errorf("%s %s: %d with a body that is not JSON: %s", rt.method, target, w.Code, w.Body)
	case w.Code == http.StatusUnprocessableEntity:
		if json.Unmarshal(e.Detail, &list) != nil || len(list) == 0 {
			t.Errorf("%s %s: 422 without a list of errors: %s", rt.method, target, w.Body)
		}
		for _, fe := range list {
			if fe.Type == "" || fe.Msg == "" || len(fe.Loc) == 0 ||
				(fe.Loc[0] != "body" && fe.Loc[0] != "query" && fe.Loc[0] != "path") {
				t.Errorf("%s %s: 422 entry %+v", rt.method, target, fe)
			}
		}
	case json.Unmarshal(e.Detail, &msg) != nil || msg == "":
		t.Errorf("%s %s: %d without a detail message: %s", rt.method, target, w.Code, w.Body)
	}
}
