package pages

import (
	"net/http"
	"net/url"
)

// team is a team of the API's lists.
type orgTeam struct {
	Slug        string `json:"slug"`
	Name        string `json:"name"`
	MemberCount int    `json:"memberCount"`
	IsMember    bool   `json:"isMember"`
	// Href is the team's page, which the page sets.
	Href string `json:"-"`
}

// teamsView is the teams page.
type teamsView struct {
	Org   orgDetail
	Teams orgTeams
	Pager Pager
	// MayCreate shows the form that creates a team; Name is its field,
	// kept when the API refused it.
	MayCreate bool
	Name      string
}

// Teams serves /organizations/{organization_slug}/teams/: the
// organization's teams, and a form that creates one by its name (then
// shown on its page).
func (p *Pages) Teams(v *Visit) error {
	var view teamsView
	var problem string
	if v.R.Method == http.MethodPost {
		view.Name = v.Form("name")
		var created orgTeam
		_, err := v.Call("POST", orgAPI(v)+"teams/", map[string]string{"name": view.Name}, &created)
		if problem, err = refusal(err); err != nil {
			return err
		}
		if problem == "" {
			v.Redirect(orgPage(v) + "teams/" + url.PathEscape(created.Slug) + "/")
			return nil
		}
	}
	o, err := readOrg(v)
	if err != nil {
		return err
	}
	view.Org, view.MayCreate = o, o.may("org:write", "org:admin", "team:write")
	if view.Pager, err = v.List(orgAPI(v)+"teams/", &view.Teams); err != nil {
		return err
	}
	for i, t := range view.Teams {
		view.Teams[i].Href = orgPage(v) + "teams/" + url.PathEscape(t.Slug) + "/"
	}
	page := orgView("Teams", o, view)
	page.Error = problem
	return v.RenderStatus(formStatus(problem), "org_teams.html", page)
}

// formStatus is the status of a page whose form the API refused with
// problem ("": none).
func formStatus(problem string) int {
	if problem != "" {
		return http.StatusBadRequest
	}
	return http.StatusOK
}

// teamMember is a member of the API's GET teams/{org}/{team}/members/.
type teamMember struct {
	orgMember
	TeamRole string `json:"teamRole"`
}

// teamProject is a project of the API's lists.
type teamProject struct {
	Slug string `json:"slug"`
	Name string `json:"name"`
}

// teamView is a team's page.
type teamView struct {
	Org      orgDetail
	Team     orgTeam
	Members  []teamMember
	Pager    Pager
	Projects []teamProject
	// Others are the organization's members and projects that the forms
	// may add (the first page of each list).
	OtherMembers  []orgMember
	OtherProjects []teamProject
	// MayManage shows the forms that add and remove other members and
	// projects; a member may still join or leave itself.
	MayManage, MayLink bool
	MeID               string
}

// Team serves /organizations/{organization_slug}/teams/{team_slug}/: the
// team's members and projects, with forms that add a member or a
// project to it and remove them.
func (p *Pages) Team(v *Visit) error {
	slug := url.PathEscape(v.R.PathValue("team_slug"))
	teamAPI := "/api/0/teams/" + url.PathEscape(v.R.PathValue("organization_slug")) + "/" + slug + "/"
	var notice, problem string
	if v.R.Method == http.MethodPost {
		var err error
		done := ""
		member := orgAPI(v) + "members/" + url.PathEscape(v.Form("member")) + "/teams/" + slug + "/"
		project := "/api/0/projects/" + url.PathEscape(v.R.PathValue("organization_slug")) + "/" +
			url.PathEscape(v.Form("project")) + "/teams/" + slug + "/"
		switch v.Form("action") {
		case "add-member":
			_, err = v.Call("POST", member, nil, nil)
			done = "The member is on the team."
		case "remove-member":
			_, err = v.Call("DELETE", member, nil, nil)
			done = "The member left the team."
		case "add-project":
			_, err = v.Call("POST", project, nil, nil)
			done = "The project is the team's."
		case "remove-project":
			_, err = v.Call("DELETE", project, nil, nil)
			done = "The project is no longer the team's."
		}
		if notice, problem, err = answered(err, done); err != nil {
			return err
		}
	}
	o, err := readOrg(v)
	if err != nil {
		return err
	}
	view := teamView{Org: o, MayManage: o.may("org:write", "org:admin", "team:admin", "member:write", "member:admin"),
		MayLink: o.may("project:write", "project:admin")}
	if _, err := v.Call("GET", teamAPI+"?collapse=organization", nil, &view.Team); err != nil {
		return err
	}
	if view.Pager, err = v.List(teamAPI+"members/", &view.Members); err != nil {
		return err
	}
	if _, err := v.Call("GET", teamAPI+"projects/", nil, &view.Projects); err != nil {
		return err
	}
	var me orgMember
	if _, err := v.Call("GET", orgAPI(v)+"members/me/", nil, &me); err != nil {
		return err
	}
	view.MeID = me.ID
	if view.MayManage {
		var all []orgMember
		if _, err := v.Call("GET", orgAPI(v)+"members/", nil, &all); err != nil {
			return err
		}
		on := map[string]bool{}
		for _, m := range view.Members {
			on[m.ID] = true
		}
		for _, m := range all {
			if !on[m.ID] {
				view.OtherMembers = append(view.OtherMembers, m)
			}
		}
	}
	if view.MayLink {
		var all []teamProject
		if _, err := v.Call("GET", orgAPI(v)+"projects/", nil, &all); err != nil {
			return err
		}
		has := map[string]bool{}
		for _, p := range view.Projects {
			has[p.Slug] = true
		}
		for _, p := range all {
			if !has[p.Slug] {
				view.OtherProjects = append(view.OtherProjects, p)
			}
		}
	}
	page := orgView(view.Team.Name, o, view)
	page.Error, page.Notice = problem, notice
	return v.RenderStatus(formStatus(problem), "org_team.html", page)
}
