package pages

import (
	"net/http"
)

// project is a project of the API's GET organizations/{org}/projects/.
type orgProject struct {
	Slug          string    `json:"slug"`
	Name          string    `json:"name"`
	Teams         []orgTeam `json:"teams"`
	LatestRelease *struct {
		Version string `json:"version"`
	} `json:"latestRelease"`
}

// projectsView is the projects page.
type projectsView struct {
	Org      orgDetail
	Projects orgProjects
	Pager    Pager
	// MayCreate shows the form that creates a project; Name and Slug are
	// its fields, kept when the API refused it.
	MayCreate  bool
	Name, Slug string
}

// Projects serves /organizations/{organization_slug}/projects/: the
// organization's projects, each with links to its releases and debug
// files, and a form that creates one by its name (and slug, else made
// from the name).
func (p *Pages) Projects(v *Visit) error {
	var view projectsView
	var notice, problem string
	if v.R.Method == http.MethodPost {
		view.Name, view.Slug = v.Form("name"), v.Form("slug")
		body := map[string]string{"name": view.Name}
		if view.Slug != "" {
			body["slug"] = view.Slug
		}
		var created orgProject
		_, err := v.Call("POST", orgAPI(v)+"projects/", body, &created)
		if problem, err = refusal(err); err != nil {
			return err
		}
		if problem == "" {
			notice = "Created the project " + created.Name + " (" + created.Slug + ")."
			view.Name, view.Slug = "", ""
		}
	}
	o, err := readOrg(v)
	if err != nil {
		return err
	}
	view.Org, view.MayCreate = o, o.may("project:write", "project:admin")
	if view.Pager, err = v.List(orgAPI(v)+"projects/", &view.Projects); err != nil {
		return err
	}
	page := orgView("Projects", o, view)
	page.Error, page.Notice = problem, notice
	return v.RenderStatus(formStatus(problem), "org_projects.html", page)
}
