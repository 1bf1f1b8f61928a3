package pages

import (
	"net/url"
	"slices"
	"strconv"
)

// debugFile is a debug information file of a project, as the page shows
// it (docs/debug-files.md).
type debugFile struct {
	ObjectName  string  `json:"objectName"`
	DebugID     string  `json:"debugId"`
	CodeID      *string `json:"codeId"`
	CPUName     string  `json:"cpuName"`
	SymbolType  string  `json:"symbolType"`
	Size        int64   `json:"size"`
	DateCreated string  `json:"dateCreated"`
	Data        struct {
		Type *string `json:"type"`
	} `json:"data"`
}

// debugFilesView is the debug files page: the project chosen, the
// projects to choose from, and a page of the project's files.
type debugFilesView struct {
	Projects []string
	Project  string
	Files    []debugFile
	Pager    Pager
}

// DebugFiles serves /organizations/{organization_slug}/debug-files/: the
// debug files of the project ?project= (the organization's first project
// when none is chosen), paginated as the API is.
func (p *Pages) DebugFiles(v *Visit) error {
	org := v.R.PathValue("organization_slug")
	var projects []organization // slug and name
	if _, err := v.Call("GET", "/api/0/organizations/"+url.PathEscape(org)+"/projects/?per_page="+
		strconv.Itoa(detailLimit), nil, &projects); err != nil {
		return err
	}
	view := debugFilesView{Project: v.R.URL.Query().Get("project")}
	for _, pr := range projects {
		view.Projects = append(view.Projects, pr.Slug)
	}
	if view.Project == "" && len(projects) > 0 {
		view.Project = projects[0].Slug
	}
	if view.Project != "" && !slices.Contains(view.Projects, view.Project) {
		// A project beyond the first page of the list, or none of the
		// organization's: the API says which.
		view.Projects = append(view.Projects, view.Project)
	}
	if view.Project != "" {
		pager, err := v.List("/api/0/projects/"+url.PathEscape(org)+"/"+url.PathEscape(view.Project)+"/files/dsyms/", &view.Files)
		if err != nil {
			return err
		}
		view.Pager = pager
	}
	return v.Render("debugfiles.html", View{Title: "Debug files", Org: org, Data: view})
}
