package handlers

import (
	"net/http"
	"strconv"

	"errata/store"
)

// organizationStatus is Sentry's status object of an organization.
type organizationStatus struct {
	ID   string `json:"id"`
	Name string `json:"name"`
}

// organizationJSON is an organization as Sentry's API writes it: the
// fields sentry-cli's `organizations list` reads, and errata's answers to
// the flags it does not have (no early adoption, no 2FA requirement).
type organizationJSON struct {
	ID                       string             `json:"id"`
	Slug                     string             `json:"slug"`
	Name                     string             `json:"name"`
	DateCreated              jsonTime           `json:"dateCreated"`
	Status                   organizationStatus `json:"status"`
	IsEarlyAdopter           bool               `json:"isEarlyAdopter"`
	Require2FA               bool               `json:"require2FA"`
	RequireEmailVerification bool               `json:"requireEmailVerification"`
	Features                 []string           `json:"features"`
}

func newOrganizationJSON(o store.Organization) organizationJSON {
	return organizationJSON{
		ID: strconv.FormatInt(o.ID, 10), Slug: o.Slug, Name: o.Name, DateCreated: jsonTime(o.DateCreated),
		Status: organizationStatus{"active", "active"}, Features: []string{},
	}
}

// projectJSON is a project as Sentry's API writes it; errata has no
// teams.
type projectJSON struct {
	ID          string     `json:"id"`
	Slug        string     `json:"slug"`
	Name        string     `json:"name"`
	Platform    *string    `json:"platform"`
	DateCreated jsonTime   `json:"dateCreated"`
	Status      string     `json:"status"`
	Team        *struct{}  `json:"team"`
	Teams       []struct{} `json:"teams"`
	Features    []string   `json:"features"`
}

func newProjectJSON(p store.Project) projectJSON {
	return projectJSON{
		ID: strconv.FormatInt(p.ID, 10), Slug: p.Slug, Name: p.Name, Platform: p.Platform, DateCreated: jsonTime(p.DateCreated),
		Status: "active", Teams: []struct{}{}, Features: []string{},
	}
}

// handleOrganizations serves GET organizations/: the caller's
// organizations, newest first.
func handleOrganizations(d Deps) apiFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		page, err := readPage(r)
		if err != nil {
			return err
		}
		orgs, info, err := d.Store.Organizations(r.Context(), caller(r).UserID, page)
		if err != nil {
			return err
		}
		out := make([]organizationJSON, 0, len(orgs))
		for _, o := range orgs {
			out = append(out, newOrganizationJSON(o))
		}
		setPageHeaders(w, r, d.PublicURL, info)
		writeJSON(w, r, d.Log, http.StatusOK, out)
		return nil
	}
}

// handleOrganization serves GET organizations/{org}/.
func handleOrganization(d Deps) apiFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		slug, err := pathSlug(r, "organization_slug")
		if err != nil {
			return err
		}
		o, err := d.Store.Organization(r.Context(), caller(r).UserID, slug)
		if err != nil {
			return err
		}
		writeJSON(w, r, d.Log, http.StatusOK, newOrganizationJSON(o))
		return nil
	}
}

// handleProjects serves GET organizations/{org}/projects/: the
// organization's projects, newest first.
func handleProjects(d Deps) apiFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		slug, err := pathSlug(r, "organization_slug")
		if err != nil {
			return err
		}
		page, err := readPage(r)
		if err != nil {
			return err
		}
		projects, info, err := d.Store.Projects(r.Context(), caller(r).UserID, slug, page)
		if err != nil {
			return err
		}
		out := make([]projectJSON, 0, len(projects))
		for _, p := range projects {
			out = append(out, newProjectJSON(p))
		}
		setPageHeaders(w, r, d.PublicURL, info)
		writeJSON(w, r, d.Log, http.StatusOK, out)
		return nil
	}
}

// handleProject serves GET projects/{org}/{project}/.
func handleProject(d Deps) apiFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		org, project, err := orgProjectSlugs(r)
		if err != nil {
			return err
		}
		p, err := d.Store.Project(r.Context(), caller(r).UserID, org, project)
		if err != nil {
			return err
		}
		writeJSON(w, r, d.Log, http.StatusOK, newProjectJSON(p))
		return nil
	}
}
