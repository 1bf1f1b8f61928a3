package handlers

import (
	"net/http"
	"strings"
	"unicode/utf8"

	"errata/store"
)

// environmentOut is an environment of the organization list.
type environmentOut struct {
	ID   int64  `json:"id"`
	Name string `json:"name"`
}

// environmentLinkOut is an environment as a project sees it; id is the
// link's.
type environmentLinkOut struct {
	ID       int64  `json:"id"`
	Name     string `json:"name"`
	IsHidden bool   `json:"isHidden"`
}

func newEnvironmentLinkOut(l store.EnvironmentLink) environmentLinkOut {
	return environmentLinkOut{ID: l.ID, Name: l.Name, IsHidden: l.IsHidden}
}

// validEnvironmentName says whether s can name an environment: Sentry's
// rule, 1 to 64 characters without line breaks or slashes.
func validEnvironmentName(s string) bool {
	n := utf8.RuneCountInString(s)
	return n >= 1 && n <= 64 && utf8.ValidString(s) && !strings.ContainsAny(s, "\r\n\f/\x00")
}

// readVisibility reads the visibility query parameter; visible is the
// default.
func readVisibility(r *http.Request) (store.Visibility, error) {
	switch r.URL.Query().Get("visibility") {
	case "", "visible":
		return store.VisibleOnly, nil
	case "hidden":
		return store.HiddenOnly, nil
	case "all":
		return store.AnyVisibility, nil
	}
	return 0, invalid(valueErr, "Input should be 'all', 'hidden' or 'visible'", "query", "visibility")
}

// handleEnvironments serves GET
// /api/0/organizations/{organization_slug}/environments/: the
// organization's environments, each once, filtered by visibility.
func handleEnvironments(d Deps) apiFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		org, err := pathSlug(r, "organization_slug")
		if err != nil {
			return err
		}
		vis, err := readVisibility(r)
		if err != nil {
			return err
		}
		page, err := readPage(r)
		if err != nil {
			return err
		}
		envs, info, err := d.Store.Environments(r.Context(), caller(r).UserID, org, vis, page)
		if err != nil {
			return err
		}
		out := make([]environmentOut, len(envs))
		for i, e := range envs {
			out[i] = environmentOut{ID: e.ID, Name: e.Name}
		}
		setPageHeaders(w, r, d.PublicURL, info)
		writeJSON(w, r, d.Log, http.StatusOK, out)
		return nil
	}
}

// handleProjectEnvironments serves GET
// /api/0/projects/{organization_slug}/{project_slug}/environments/: the
// project's environment links filtered by visibility.
func handleProjectEnvironments(d Deps) apiFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		org, project, err := orgProjectSlugs(r)
		if err != nil {
			return err
		}
		vis, err := readVisibility(r)
		if err != nil {
			return err
		}
		page, err := readPage(r)
		if err != nil {
			return err
		}
		links, info, err := d.Store.ProjectEnvironments(r.Context(), caller(r).UserID, org, project, vis, page)
		if err != nil {
			return err
		}
		out := make([]environmentLinkOut, len(links))
		for i, l := range links {
			out[i] = newEnvironmentLinkOut(l)
		}
		setPageHeaders(w, r, d.PublicURL, info)
		writeJSON(w, r, d.Log, http.StatusOK, out)
		return nil
	}
}

// environmentProjectIn is the body of an environment update. A name key is
// accepted and ignored: environments are not renamed here.
type environmentProjectIn struct {
	IsHidden opt[bool] `json:"isHidden"`
}

// handleProjectEnvironmentUpdate serves PUT
// /api/0/projects/{organization_slug}/{project_slug}/environments/{name}/:
// it hides or shows the environment in the project.
func handleProjectEnvironmentUpdate(d Deps) apiFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		org, project, err := orgProjectSlugs(r)
		if err != nil {
			return err
		}
		name := r.PathValue("name")
		if !validEnvironmentName(name) {
			return invalid(valueErr, "Invalid environment name", "path", "name")
		}
		var in environmentProjectIn
		if err := decodeJSON(w, r, &in); err != nil {
			return err
		}
		switch {
		case !in.IsHidden.Set:
			return invalid(missing, "Field required", "body", "isHidden")
		case in.IsHidden.Null:
			return invalid(typeError, "Input should be a valid boolean", "body", "isHidden")
		}
		link, err := d.Store.UpdateProjectEnvironment(r.Context(), caller(r).UserID, org, project, name, in.IsHidden.V)
		if err != nil {
			return err
		}
		writeJSON(w, r, d.Log, http.StatusOK, newEnvironmentLinkOut(link))
		return nil
	}
}
