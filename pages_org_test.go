package main

import (
	"bytes"
	"io"
	"mime/multipart"
	"net/http"
	"testing"
)

// TestPagesOrganization: an organization's pages (testdata/pages/org.mjs).
// Its owner finds the organization from the home page, reads the storage
// it uses, invites a colleague and reads the invitation's link on the
// page (no mail here), changes the role, makes a team with a member and a
// project; a member sees the members but cannot invite; another
// organization's pages, by their address, are the 404 page.
func TestPagesOrganization(t *testing.T) {
	t.Parallel()
	s := startErrata(t, map[string]string{"ORG_STORAGE_QUOTA": "1048576"})
	password := pageOrg(t, s, "olive@example.com", "acme", "Acme Corp")
	pageOrg(t, s, "rita@example.com", "rival", "Rival Inc")
	s.cli(t, "admin", "create-user", "--email", "mel@example.com")
	s.cli(t, "admin", "add-member", "--org", "acme", "--email", "mel@example.com", "--role", "member")
	setPassword(t, s, "mel@example.com")

	// A release file, so that the storage shows something.
	s.token = s.cli(t, "admin", "create-token", "--email", "olive@example.com", "--scopes", "project:releases")
	if status, body := s.api(t, "POST", "/api/0/organizations/acme/releases/",
		map[string]any{"version": "1.0.0", "projects": []string{"web"}}); status != http.StatusCreated {
		t.Fatalf("creating a release: %d %s", status, body)
	}
	var form bytes.Buffer
	mw := multipart.NewWriter(&form)
	mw.WriteField("name", "~/app.js")
	fw, _ := mw.CreateFormFile("file", "app.js")
	io.WriteString(fw, "console.log('hello from acme');\n")
	mw.Close()
	req, _ := http.NewRequest("POST", s.url+"/api/0/organizations/acme/releases/1.0.0/files/", &form)
	req.Header.Set("Authorization", "Bearer "+s.token)
	req.Header.Set("Content-Type", mw.FormDataContentType())
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusCreated {
		t.Fatalf("uploading a release file: %d", res.StatusCode)
	}

	runPageFlow(t, s, "org", map[string]any{
		"email": "olive@example.com", "password": password, "orgName": "Acme Corp",
		"member": "mel@example.com", "colleague": "cole@example.com",
	}, "")
}
