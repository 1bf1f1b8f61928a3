package handlers

import (
	"encoding/json"
	"errors"
	"net/http"
	"regexp"
	"strings"

	"errata/store"
)

// The management of projects without the admin CLI: create through the
// organization (errata has no teams, through which Sentry creates them),
// update and delete.

// Sentry's limits of a project's slug and name: a new project's name is at
// most 50 characters, a renamed one's 200.
const (
	maxProjectSlug       = 100
	maxNewProjectName    = 50
	maxProjectUpdateName = 200
)

// platformPattern is what a project's platform may be: the form of
// Sentry's platform ids ("javascript", "python-django", "apple-ios").
var platformPattern = regexp.MustCompile(`^[a-z][a-z0-9-]{0,63}$`)

// readPlatform validates an optional platform: null and "" are none.
func readPlatform(o opt[string]) (*string, error) {
	if !o.Set || o.Null || o.V == "" {
		return nil, nil
	}
	if !platformPattern.MatchString(o.V) {
		return nil, invalid(valueErr, "Invalid platform", "body", "platform")
	}
	return &o.V, nil
}

// projectSlugFromName is the slug Sentry makes of a project's name when
// none is sent: lowercase, runs of other characters turned into one "-".
func projectSlugFromName(name string) string {
	var b strings.Builder
	dash := false
	for _, c := range strings.ToLower(name) {
		if c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_' {
			if dash && b.Len() > 0 {
				b.WriteByte('-')
			}
			b.WriteRune(c)
			dash = false
		} else {
			dash = true
		}
	}
	s := b.String()
	if len(s) > maxProjectSlug {
		s = strings.TrimRight(s[:maxProjectSlug], "-")
	}
	return s
}

// projectCreateIn is the body of a project create (Sentry's
// createOrganizationProject).
type projectCreateIn struct {
	Name     opt[string] `json:"name"`
	Slug     opt[string] `json:"slug"`
	Platform opt[string] `json:"platform"`
	// DefaultRules asks Sentry to create its default alert rule; errata
	// has no alert rules, so only false (create none) is true to it.
	DefaultRules opt[bool] `json:"defaultRules"`
}

// newProject validates the body.
func (in projectCreateIn) newProject() (store.NewProject, error) {
	var np store.NewProject
	switch {
	case !in.Name.Set:
		return np, invalid(missing, "Field required", "body", "name")
	case in.Name.Null:
		return np, invalid(typeError, "Input should be a valid string", "body", "name")
	}
	if err := checkDisplayName(in.Name.V, maxNewProjectName, "body", "name"); err != nil {
		return np, err
	}
	np.Name = in.Name.V
	if in.Slug.Set && !in.Slug.Null && in.Slug.V != "" {
		np.Slug = in.Slug.V
	} else {
		np.Slug = projectSlugFromName(in.Name.V)
	}
	if err := checkNewSlug(np.Slug, maxProjectSlug, "body", "slug"); err != nil {
		return np, err
	}
	if in.DefaultRules.Set && !in.DefaultRules.Null && in.DefaultRules.V {
		return np, invalid(valueErr, "errata has no alert rules: only false is accepted", "body", "default_rules")
	}
	var err error
	np.Platform, err = readPlatform(in.Platform)
	return np, err
}

// errProjectSlugTaken is Sentry's answer to a slug the organization has.
func errProjectSlugTaken(cause error) error {
	return &apiError{status: http.StatusConflict, detail: "A project with this slug already exists", cause: cause}
}

// handleProjectCreate serves POST organizations/{org}/projects/: a new
// project of the organization, 201 with the project as GET answers it.
func handleProjectCreate(d Deps) apiFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		org, err := pathSlug(r, "organization_slug")
		if err != nil {
			return err
		}
		var in projectCreateIn
		if err := decodeJSON(w, r, &in); err != nil {
			return err
		}
		np, err := in.newProject()
		if err != nil {
			return err
		}
		p, err := d.Store.CreateProject(r.Context(), store.Member(caller(r).UserID), org, np)
		if errors.Is(err, store.ErrConflict) {
			return errProjectSlugTaken(err)
		}
		if err != nil {
			return err
		}
		writeJSON(w, r, d.Log, http.StatusCreated, newProjectJSON(p, caller(r).Scopes))
		return nil
	}
}

// projectUnstored are the fields of Sentry's project update that errata
// has no place for: sending one is a 422 naming it.
var projectUnstored = []string{
	"isBookmarked", "subjectPrefix", "subjectTemplate", "resolveAge", "highlightContext",
	"highlightTags", "enableAutoReleaseCreation", "scmSourceContextEnabled",
}

// projectUpdateIn is the body of a project update: the fields errata
// stores, and every key for refuseUnstored.
type projectUpdateIn struct {
	Name     opt[string] `json:"name"`
	Slug     opt[string] `json:"slug"`
	Platform opt[string] `json:"platform"`
	keys     bodyKeys
}

func (in *projectUpdateIn) UnmarshalJSON(b []byte) error {
	type fields projectUpdateIn // without this method
	if err := json.Unmarshal(b, (*fields)(in)); err != nil {
		return err
	}
	return json.Unmarshal(b, &in.keys)
}

// update validates the body and returns the change it asks for.
func (in projectUpdateIn) update() (store.ProjectUpdate, error) {
	var u store.ProjectUpdate
	if err := in.keys.refuseUnstored(projectUnstored); err != nil {
		return u, err
	}
	if in.Name.Set {
		if in.Name.Null {
			return u, invalid(typeError, "Input should be a valid string", "body", "name")
		}
		if err := checkDisplayName(in.Name.V, maxProjectUpdateName, "body", "name"); err != nil {
			return u, err
		}
		u.Name = &in.Name.V
	}
	if in.Slug.Set {
		if in.Slug.Null {
			return u, invalid(typeError, "Input should be a valid string", "body", "slug")
		}
		if err := checkNewSlug(in.Slug.V, maxProjectSlug, "body", "slug"); err != nil {
			return u, err
		}
		u.Slug = &in.Slug.V
	}
	if in.Platform.Set {
		platform, err := readPlatform(in.Platform)
		if err != nil {
			return u, err
		}
		u.SetPlatform, u.Platform = true, platform
	}
	return u, nil
}

// handleProjectUpdate serves PUT projects/{org}/{project}/: it renames the
// project, changes its slug or its platform, and answers the project as
// GET does.
func handleProjectUpdate(d Deps) apiFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		org, project, err := orgProjectSlugs(r)
		if err != nil {
			return err
		}
		var in projectUpdateIn
		if err := decodeJSON(w, r, &in); err != nil {
			return err
		}
		u, err := in.update()
		if err != nil {
			return err
		}
		p, err := d.Store.UpdateProject(r.Context(), caller(r).UserID, org, project, u)
		if errors.Is(err, store.ErrConflict) {
			return errProjectSlugTaken(err)
		}
		if err != nil {
			return err
		}
		// Answered as GET answers it, under its new slug.
		p, err = d.Store.Project(r.Context(), caller(r).UserID, org, p.Slug)
		if err != nil {
			return err
		}
		writeJSON(w, r, d.Log, http.StatusOK, projectDetailJSON{projectJSON: newProjectJSON(p, caller(r).Scopes),
			Organization: newOrganizationJSON(p.Organization, publicBase(r, d.PublicURL))})
		return nil
	}
}

// handleProjectDelete serves DELETE projects/{org}/{project}/: the project
// goes at once, with its links to releases, environments and artifact
// bundles and its debug files (Sentry schedules the deletion; errata has
// nothing slow to remove: the bytes are the collector's).
func handleProjectDelete(d Deps) apiFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		org, project, err := orgProjectSlugs(r)
		if err != nil {
			return err
		}
		if err := d.Store.DeleteProject(r.Context(), caller(r).UserID, org, project); err != nil {
			return err
		}
		noContent(w)
		return nil
	}
}

// handleProjectEnvironment serves GET
// projects/{org}/{project}/environments/{name}/: one environment of the
// project, hidden or not, as the project's list writes it.
func handleProjectEnvironment(d Deps) apiFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		org, project, err := orgProjectSlugs(r)
		if err != nil {
			return err
		}
		name := r.PathValue("name")
		if !validEnvironmentName(name) {
			return invalid(valueErr, "Invalid environment name", "path", "name")
		}
		link, err := d.Store.ProjectEnvironment(r.Context(), caller(r).UserID, org, project, name)
		if err != nil {
			return err
		}
		writeJSON(w, r, d.Log, http.StatusOK, newEnvironmentLinkOut(link))
		return nil
	}
}
