package main

import (
	"bytes"
	"mime/multipart"
	"net/http"
	"net/url"
	"strconv"
	"testing"
)

// pageVersion is the release whose version a path must escape: "?", "#",
// "%", "&", "+", a space and markup (a version holds no "/": the API
// refuses one, as Sentry does).
const pageVersion = "2.0 beta+x?#%&<b>"

// TestPagesReleases: a person finds the organization's releases, pages
// through them, opens one with its files, deploys and commits, finds a
// project's debug files, and gets 404 for another organization's release
// (testdata/pages/releases.mjs).
func TestPagesReleases(t *testing.T) {
	t.Parallel()
	s := startErrata(t, nil)
	password := pageOrg(t, s, "rhea@example.com", "acme", "Acme Corp")
	s.cli(t, "admin", "create-project", "--org", "acme", "--slug", "api")
	pageOrg(t, s, "rival@example.com", "rival", "Rival Ltd")
	const scopes = "project:releases,project:read,project:write,org:read"

	s.token = s.cli(t, "admin", "create-token", "--email", "rival@example.com", "--scopes", scopes)
	pageRelease(t, s, "rival", "9.9.9")

	s.token = s.cli(t, "admin", "create-token", "--email", "rhea@example.com", "--scopes", scopes)
	// More releases than a page of the API's list (50).
	for i := range 51 {
		pageRelease(t, s, "acme", "1.0."+strconv.Itoa(i))
	}
	pageRelease(t, s, "acme", pageVersion)
	rel := "/api/0/organizations/acme/releases/" + url.PathEscape(pageVersion) + "/"

	var file bytes.Buffer
	mw := multipart.NewWriter(&file)
	mw.WriteField("name", "~/app.min.js")
	w, _ := mw.CreateFormFile("file", "app.min.js")
	w.Write([]byte("function a(){}\n"))
	mw.Close()
	if r := send(http.DefaultClient, s, "POST", rel+"files/", mw.FormDataContentType(), &file); r.err != nil || r.status != http.StatusCreated {
		t.Fatalf("upload a release file: %v %d %s", r.err, r.status, r.body)
	}
	if status, body := s.api(t, "POST", rel+"deploys/", map[string]any{"environment": "production", "name": "Friday"}); status != http.StatusCreated {
		t.Fatalf("deploy: %d %s", status, body)
	}
	if status, body := s.api(t, "PUT", rel, map[string]any{"commits": []map[string]any{{
		"id": "c0ffee1234567890c0ffee1234567890c0ffee12", "repository": "acme/web",
		"author_name": "Dev Eloper", "author_email": "dev@example.com", "message": "Fix the checkout\n\nLong story."}}}); status != http.StatusOK {
		t.Fatalf("set commits: %d %s", status, body)
	}

	const moduleID = "33221100554477668899AABBCCDDEEFF1"
	var dif bytes.Buffer
	mw = multipart.NewWriter(&dif)
	w, _ = mw.CreateFormFile("file", "debug.zip")
	w.Write(zipOf(t, "hello.sym", []byte("MODULE Linux x86_64 "+moduleID+" hello\nFILE 0 hello.c\n")))
	mw.Close()
	if r := send(http.DefaultClient, s, "POST", "/api/0/projects/acme/web/files/dsyms/", mw.FormDataContentType(), &dif); r.err != nil || r.status != http.StatusCreated {
		t.Fatalf("upload a debug file: %v %d %s", r.err, r.status, r.body)
	}

	runPageFlow(t, s, "releases", map[string]any{
		"email": "rhea@example.com", "password": password, "org": "acme", "orgName": "Acme Corp",
		"version": pageVersion, "releases": 52, "file": "~/app.min.js", "environment": "production",
		"commit": "Fix the checkout", "author": "Dev Eloper", "debugFile": "hello",
		"debugID": "33221100-5544-7766-8899-aabbccddeeff-1", "rivalRelease": "/organizations/rival/releases/9.9.9/",
	}, "")
}

// pageRelease creates the release version of project web in org, with
// the server's token.
func pageRelease(t *testing.T, s *errataServer, org, version string) {
	t.Helper()
	status, body := s.api(t, "POST", "/api/0/organizations/"+org+"/releases/", map[string]any{
		"version": version, "projects": []string{"web"}})
	if status != http.StatusCreated {
		t.Fatalf("create release %s of %s: %d %s", version, org, status, body)
	}
}
