package handlers

import (
	"bytes"
	"encoding/json"
	"net/http"
	"slices"
	"testing"

	"errata/authn"
)

// twoFactorRequired is Sentry's answer to a member without TOTP in an
// organization that requires two-factor authentication.
const twoFactorRequired = `{"detail": {"code": "2fa-required",
	"message": "Organization requires two-factor authentication to be enabled", "extra": {}}}`

// enrolTOTP gives the user userID a TOTP authenticator, as enrolling
// through the sign-in API stores it.
func (a *testAPI) enrolTOTP(userID int64) {
	a.t.Helper()
	a.exec(`INSERT INTO totp_authenticators (user_id, secret_encrypted, last_step) VALUES ($1, '\x00', 0)`, userID)
}

// detailedOrganizationErrors validates body against the organization
// Sentry's document gives for updateOrganization (its detailed
// organization), without departures.
func detailedOrganizationErrors(t *testing.T, doc sentryDoc, body []byte) []string {
	t.Helper()
	op := doc.Paths["/api/0/organizations/{organization_id_or_slug}/"]["put"]
	schema := op.Responses["200"].Content["application/json"].Schema
	var v any
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		t.Fatalf("body is not JSON: %v: %s", err, body)
	}
	return schemaErrors(schema, v, "")
}

func TestOrganizationRequire2FA(t *testing.T) {
	f := newManageFixture(t)
	f.member("acme", "ben@rival.example", "member")
	put := func(token string, body any) response {
		return f.do("PUT", "/api/0/organizations/acme/", token, body)
	}

	t.Run("an owner without TOTP is 400 and changes nothing", func(t *testing.T) {
		put(f.ann, map[string]any{"require2FA": true}).expect(t, http.StatusBadRequest,
			`{"detail": "Cannot require two-factor authentication without personal two-factor enabled."}`)
		if n := f.count(`SELECT count(*) FROM organizations WHERE require_2fa`); n != 0 {
			t.Errorf("%d organizations require 2FA", n)
		}
	})
	t.Run("a member without org:write is 403", func(t *testing.T) {
		f.enrolTOTP(f.benID)
		put(f.ben, map[string]any{"require2FA": true}).expect(t, http.StatusForbidden, `{"detail": "Permission denied"}`)
	})
	t.Run("an owner with TOTP requires it, and GET shows it", func(t *testing.T) {
		f.exec(`DELETE FROM totp_authenticators WHERE user_id = $1`, f.benID)
		f.enrolTOTP(f.annID)
		res := put(f.ann, map[string]any{"require2FA": true})
		res.expect(t, http.StatusOK, nil)
		if res.field(t, "require2FA") != true {
			t.Errorf("PUT answers %s", res.body)
		}
		if got := f.do("GET", "/api/0/organizations/acme/", f.ann, nil).field(t, "require2FA"); got != true {
			t.Errorf("GET answers require2FA %v", got)
		}
	})
	t.Run("a member without TOTP is 401 2fa-required on its routes", func(t *testing.T) {
		for _, path := range []string{"/api/0/organizations/acme/", "/api/0/organizations/acme/projects/",
			"/api/0/projects/acme/web/", "/api/0/organizations/acme/releases/"} {
			f.do("GET", path, f.ben, nil).expect(t, http.StatusUnauthorized, twoFactorRequired)
		}
	})
	t.Run("and keeps its other organizations", func(t *testing.T) {
		f.do("GET", "/api/0/organizations/rival/", f.ben, nil).expect(t, http.StatusOK, nil)
	})
	t.Run("a stranger is still 404", func(t *testing.T) {
		f.user("eve@example.com")
		f.do("GET", "/api/0/organizations/acme/", f.token("eve@example.com"), nil).expect(t, http.StatusNotFound, `{"detail": "Not Found"}`)
	})
	t.Run("a member passes once it enrols", func(t *testing.T) {
		f.enrolTOTP(f.benID)
		f.do("GET", "/api/0/organizations/acme/", f.ben, nil).expect(t, http.StatusOK, nil)
	})
	t.Run("an owner turns it off", func(t *testing.T) {
		put(f.ann, map[string]any{"require2FA": false}).expect(t, http.StatusOK, nil)
		f.exec(`DELETE FROM totp_authenticators`)
		f.do("GET", "/api/0/organizations/acme/", f.ben, nil).expect(t, http.StatusOK, nil)
	})
}

func TestOrganizationDetail(t *testing.T) {
	f := newManageFixture(t)
	doc := loadSentryDocument(t)
	f.member("acme", "ben@rival.example", "admin")
	f.exec(`INSERT INTO teams (organization_id, slug, name) SELECT id, 'backend', 'Backend' FROM organizations WHERE slug = 'acme'`)
	releases := f.token("ann@acme.example", "project:releases", "project:read", "org:read", "org:write")

	t.Run("PUT answers the detailed organization of Sentry's document", func(t *testing.T) {
		res := f.do("PUT", "/api/0/organizations/acme/", f.ann, map[string]any{"name": "Acme"})
		res.expect(t, http.StatusOK, nil)
		for _, e := range detailedOrganizationErrors(t, doc, res.body) {
			t.Error(e)
		}
		var got struct {
			OrgRole     string
			Access      []string
			Projects    []struct{ Slug string }
			Teams       []struct{ Slug string }
			OrgRoleList []struct {
				ID      string
				Allowed bool
			}
		}
		json.Unmarshal(res.body, &got)
		if got.OrgRole != "owner" || !slices.Equal(got.Access, authn.RoleScopes("owner")[:len(got.Access)]) || len(got.Access) == 0 {
			t.Errorf("orgRole %q, access %v", got.OrgRole, got.Access)
		}
		if len(got.Projects) != 2 || len(got.Teams) != 1 || got.Teams[0].Slug != "backend" {
			t.Errorf("projects %v, teams %v", got.Projects, got.Teams)
		}
		if len(got.OrgRoleList) != 4 || !got.OrgRoleList[3].Allowed {
			t.Errorf("orgRoleList %+v", got.OrgRoleList)
		}
	})
	t.Run("a token's access is its scopes within its role's", func(t *testing.T) {
		res := f.do("GET", "/api/0/organizations/acme/", releases, nil)
		res.expect(t, http.StatusOK, nil)
		want := []any{"project:releases", "project:read", "org:read", "org:write"}
		if got := res.field(t, "access"); !slices.Equal(toStrings(got), toStrings(want)) {
			t.Errorf("access %v, want %v", got, want)
		}
		res = f.do("GET", "/api/0/projects/acme/web/", releases, nil)
		if got := res.field(t, "access"); !slices.Equal(toStrings(got), toStrings(want)) {
			t.Errorf("project access %v, want %v", got, want)
		}
	})
	t.Run("an admin's role and access are its own", func(t *testing.T) {
		res := f.do("GET", "/api/0/organizations/acme/", f.ben, nil)
		res.expect(t, http.StatusOK, nil)
		if res.field(t, "orgRole") != "admin" || slices.Contains(toStrings(res.field(t, "access")), "org:write") {
			t.Errorf("answer %s", res.body)
		}
		var list []struct{ Access []string }
		json.Unmarshal(f.do("GET", "/api/0/organizations/acme/projects/", f.ben, nil).body, &list)
		if len(list) != 2 || !slices.Contains(list[0].Access, "project:admin") || slices.Contains(list[0].Access, "member:admin") {
			t.Errorf("projects list access %+v", list)
		}
	})
	t.Run("an admin may not change the organization", func(t *testing.T) {
		res := f.do("PUT", "/api/0/organizations/acme/", f.ben, map[string]any{"name": "Acme"})
		res.expect(t, http.StatusForbidden, nil) // org:write is a manager's
	})
}

func toStrings(v any) []string {
	list, _ := v.([]any)
	out := make([]string, 0, len(list))
	for _, e := range list {
		s, _ := e.(string)
		out = append(out, s)
	}
	return out
}

func TestOrganizationCreate(t *testing.T) {
	f := newManageFixture(t)
	doc := loadSentryDocument(t)
	post := func(token string, body any) response {
		return f.do("POST", "/api/0/organizations/", token, body)
	}
	const notAllowed = `{"detail": "Organizations are not allowed to be created by this user."}`

	t.Run("a person who is no superuser may not (ORG_CREATION=superuser)", func(t *testing.T) {
		post(f.ann, map[string]any{"name": "Globex"}).expect(t, http.StatusUnauthorized, notAllowed)
		if n := f.count(`SELECT count(*) FROM organizations WHERE slug = 'globex'`); n != 0 {
			t.Error("the organization was created")
		}
	})
	f.exec(`UPDATE users SET is_superuser = true WHERE id = $1`, f.annID)
	t.Run("a superuser creates one and owns it", func(t *testing.T) {
		res := post(f.ann, map[string]any{"name": "Globex Corp", "agreeTerms": true})
		res.expect(t, http.StatusCreated, nil)
		for _, e := range detailedOrganizationErrors(t, doc, res.body) {
			t.Error(e)
		}
		if res.field(t, "slug") != "globex-corp" || res.field(t, "orgRole") != "owner" {
			t.Errorf("answer %s", res.body)
		}
		f.do("GET", "/api/0/organizations/globex-corp/", f.ann, nil).expect(t, http.StatusOK, nil)
		if n := f.count(`SELECT count(*) FROM memberships m JOIN organizations o ON o.id = m.organization_id
			WHERE o.slug = 'globex-corp' AND m.user_id = $1 AND m.role = 'owner'`, f.annID); n != 1 {
			t.Error("the creator is not its owner")
		}
	})
	t.Run("a taken slug is 409", func(t *testing.T) {
		post(f.ann, map[string]any{"name": "Rival", "slug": "rival"}).expect(t, http.StatusConflict,
			`{"detail": "An organization with this slug already exists"}`)
	})
	t.Run("a token of any scope creates as its person may", func(t *testing.T) {
		post(f.token("ann@acme.example", "project:releases"), map[string]any{"name": "Initech"}).expect(t, http.StatusCreated, nil)
		post(f.token("ben@rival.example", "org:admin"), map[string]any{"name": "Hooli"}).expect(t, http.StatusUnauthorized, notAllowed)
	})
	t.Run("a session creates one", func(t *testing.T) {
		s := newTokenAPI(t, f.testAPI, f.annID)
		s.session.do("POST", "/api/0/organizations/", "", map[string]any{"name": "Umbrella"}).expect(t, http.StatusCreated, nil)
	})
	for _, tc := range []struct {
		what string
		body any
		want string
	}{
		{"no name", map[string]any{"slug": "x1"}, invalidBody(missing, []string{"body", "name"}, "Field required")},
		{"a blank name", map[string]any{"name": " "}, invalidBody(valueErr, []string{"body", "name"}, "Enter a name of 1 to 64 characters")},
		{"a name that makes no slug", map[string]any{"name": "!!!"}, invalidBody(valueErr, []string{"body", "name"},
			"Enter a slug of at most 50 lowercase letters, numbers, underscores or hyphens, not only numbers")},
		{"a bad slug", map[string]any{"name": "X", "slug": "Bad Slug"}, invalidBody(valueErr, []string{"body", "slug"},
			"Enter a slug of at most 50 lowercase letters, numbers, underscores or hyphens, not only numbers")},
		{"a null agreeTerms", map[string]any{"name": "X", "agreeTerms": nil}, invalidBody(typeError, []string{"body", "agreeTerms"}, "Input should be a valid boolean")},
		{"a setting errata does not store", map[string]any{"name": "X", "defaultOrganization": true}, invalidBody(valueErr, []string{"body", "defaultOrganization"}, "errata does not store this setting")},
	} {
		t.Run(tc.what+" is 422", func(t *testing.T) {
			post(f.ann, tc.body).expect(t, http.StatusUnprocessableEntity, tc.want)
		})
	}
	t.Run("no credential is 401", func(t *testing.T) {
		post("", map[string]any{"name": "Anon"}).expect(t, http.StatusUnauthorized, nil)
	})
}

// TestOrganizationDetailProjectsNameTheirTeams: the projects of PUT
// organization's answer (the detailed organization) name their teams, as
// GET projects/ does.
func TestOrganizationDetailProjectsNameTheirTeams(t *testing.T) {
	a := newTestAPI(t)
	a.user("owner@acme.example")
	a.org("acme", "owner@acme.example")
	a.project("acme", "web")
	tok := a.token("owner@acme.example", "org:write", "org:admin", "project:write", "team:write", "team:admin")
	a.do("POST", "/api/0/organizations/acme/teams/", tok, map[string]any{"slug": "frontend"}).expect(t, http.StatusCreated, nil)
	a.do("POST", "/api/0/projects/acme/web/teams/frontend/", tok, nil).expect(t, http.StatusCreated, nil)
	res := a.do("PUT", "/api/0/organizations/acme/", tok, map[string]any{"name": "Acme"})
	res.expect(t, http.StatusOK, nil)
	var out struct {
		Projects []struct {
			Slug  string `json:"slug"`
			Teams []struct {
				Slug string `json:"slug"`
			} `json:"teams"`
		} `json:"projects"`
	}
	if err := json.Unmarshal(res.body, &out); err != nil {
		t.Fatal(err)
	}
	if len(out.Projects) != 1 || len(out.Projects[0].Teams) != 1 || out.Projects[0].Teams[0].Slug != "frontend" {
		t.Errorf("the detailed organization's projects: %s", res.body)
	}
}
