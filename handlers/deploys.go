package handlers

import (
	"net/http"
	"strconv"

	"errata/store"
)

// deployOut is a deploy as the API writes it; like Sentry, its id is a
// string.
type deployOut struct {
	ID           string    `json:"id"`
	Environment  string    `json:"environment"`
	Name         *string   `json:"name"`
	URL          *string   `json:"url"`
	DateStarted  *jsonTime `json:"dateStarted"`
	DateFinished jsonTime  `json:"dateFinished"`
}

func newDeployOut(d store.Deploy) deployOut {
	return deployOut{
		ID:           strconv.FormatInt(d.ID, 10),
		Environment:  d.Environment,
		Name:         d.Name,
		URL:          d.URL,
		DateStarted:  (*jsonTime)(d.DateStarted), // the store's, not a copy
		DateFinished: jsonTime(d.DateFinished),
	}
}

// deployIn is the body of a new deploy.
type deployIn struct {
	Environment  opt[string]   `json:"environment"`
	Name         opt[string]   `json:"name"`
	URL          opt[string]   `json:"url"`
	DateStarted  opt[string]   `json:"dateStarted"`
	DateFinished opt[string]   `json:"dateFinished"`
	Projects     opt[[]string] `json:"projects"`
}

// deployInput validates a deploy body.
func (in deployIn) deployInput() (store.DeployInput, error) {
	var di store.DeployInput
	switch {
	case !in.Environment.Set:
		return di, invalid(missing, "Field required", "body", "environment")
	case in.Environment.Null:
		return di, invalid(typeError, "Input should be a valid string", "body", "environment")
	case !validEnvironmentName(in.Environment.V):
		return di, invalid(valueErr, "Invalid environment name", "body", "environment")
	}
	di.Environment = in.Environment.V
	di.Name, di.URL = in.Name.ptr(), in.URL.ptr()
	var err error
	if di.DateStarted, err = parseTime(in.DateStarted, "dateStarted"); err != nil {
		return di, err
	}
	if di.DateFinished, err = parseTime(in.DateFinished, "dateFinished"); err != nil {
		return di, err
	}
	di.Projects = in.Projects.V
	return di, nil
}

// handleDeployCreate serves POST
// /api/0/organizations/{organization_slug}/releases/{version}/deploys/: it
// records a deploy of the release, creating its environment when needed.
func handleDeployCreate(d Deps) apiFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		org, err := pathSlug(r, "organization_slug")
		if err != nil {
			return err
		}
		version, err := pathVersion(r)
		if err != nil {
			return err
		}
		var in deployIn
		if err := decodeJSON(w, r, &in); err != nil {
			return err
		}
		di, err := in.deployInput()
		if err != nil {
			return err
		}
		dep, err := d.Store.CreateDeploy(r.Context(), caller(r).UserID, org, version, di)
		if err != nil {
			return err
		}
		writeJSON(w, r, d.Log, http.StatusCreated, newDeployOut(dep))
		return nil
	}
}

// handleDeploys serves GET
// /api/0/organizations/{organization_slug}/releases/{version}/deploys/: the
// release's deploys, newest first.
func handleDeploys(d Deps) apiFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		org, err := pathSlug(r, "organization_slug")
		if err != nil {
			return err
		}
		version, err := pathVersion(r)
		if err != nil {
			return err
		}
		page, err := readPage(r)
		if err != nil {
			return err
		}
		deploys, info, err := d.Store.Deploys(r.Context(), caller(r).UserID, org, version, page)
		if err != nil {
			return err
		}
		out := make([]deployOut, len(deploys))
		for i, dep := range deploys {
			out[i] = newDeployOut(dep)
		}
		setPageHeaders(w, r, d.PublicURL, info)
		writeJSON(w, r, d.Log, http.StatusOK, out)
		return nil
	}
}
