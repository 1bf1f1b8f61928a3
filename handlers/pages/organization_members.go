package pages

import (
	"net/http"
	"net/url"
)

// member is a member of the API's lists (GET organizations/{org}/members/):
// a person who joined, or a pending invitation (User null).
type orgMember struct {
	ID      string `json:"id"`
	Email   string `json:"email"`
	Name    string `json:"name"`
	OrgRole string `json:"orgRole"`
	Pending bool   `json:"pending"`
	Expired bool   `json:"expired"`
	User    *struct {
		ID string `json:"id"`
	} `json:"user"`
}

// memberDetail is the API's GET organizations/{org}/members/{member_id}/:
// the member, its teams, the link of its invitation (to owners and
// managers, while it is pending) and the roles the visitor may give.
type memberDetail struct {
	orgMember
	Teams       []string  `json:"teams"`
	InviteLink  *string   `json:"invite_link"`
	IsOnlyOwner bool      `json:"isOnlyOwner"`
	OrgRoleList []orgRole `json:"orgRoleList"`
}

// orgRole is a role of the API's orgRoleList; IsAllowed tells whether the
// visitor may give it.
type orgRole struct {
	ID        string `json:"id"`
	Name      string `json:"name"`
	IsAllowed bool   `json:"isAllowed"`
}

// givable are the roles of list that the visitor may give.
func givable(list []orgRole) []orgRole {
	var out []orgRole
	for _, r := range list {
		if r.IsAllowed {
			out = append(out, r)
		}
	}
	return out
}

// membersView is the members page.
type membersView struct {
	Org     orgDetail
	Members orgMembers
	Pager   Pager
	// MeID is the visitor's membership.
	MeID string
	// Roles are the roles the visitor may give: the invite form shows
	// when there is one.
	Roles []orgRole
	// Email and Role are the invite form's, kept when the API refused it.
	Email, Role string
	// Invited is the invitation just made, and its link when the API
	// gives it (to owners and managers).
	Invited    string
	InviteLink string
}

// Members serves /organizations/{organization_slug}/members/: the
// members and pending invitations, and a form that invites an address
// with a role the visitor may give; the invitation's link shows when the
// API gives it, for installations without mail.
func (p *Pages) Members(v *Visit) error {
	view := membersView{Role: "member"}
	var notice, problem string
	if v.R.Method == http.MethodPost {
		view.Email, view.Role = v.Form("email"), v.Form("role")
		var invited orgMember
		_, err := v.Call("POST", orgAPI(v)+"members/", map[string]string{"email": view.Email, "orgRole": view.Role}, &invited)
		if problem, err = refusal(err); err != nil {
			return err
		}
		if problem == "" {
			notice = "Invited " + invited.Email + " as " + invited.OrgRole + "."
			view.Invited, view.Email, view.Role = invited.Email, "", "member"
			var detail memberDetail
			if _, err := v.Call("GET", orgAPI(v)+"members/"+url.PathEscape(invited.ID)+"/", nil, &detail); err != nil {
				return err
			}
			if detail.InviteLink != nil {
				view.InviteLink = *detail.InviteLink
			}
		}
	}
	o, err := readOrg(v)
	if err != nil {
		return err
	}
	view.Org = o
	var me memberDetail
	if _, err := v.Call("GET", orgAPI(v)+"members/me/", nil, &me); err != nil {
		return err
	}
	view.MeID, view.Roles = me.ID, givable(me.OrgRoleList)
	if view.Pager, err = v.List(orgAPI(v)+"members/", &view.Members); err != nil {
		return err
	}
	page := orgView("Members", o, view)
	page.Error, page.Notice = problem, notice
	return v.RenderStatus(formStatus(problem), "org_members.html", page)
}

// memberView is a member's page.
type memberView struct {
	Org    orgDetail
	Member memberDetail
	Roles  []orgRole
	// Self is the visitor's own membership.
	Self bool
}

// Member serves /organizations/{organization_slug}/members/{member_id}/:
// one member (or "me"), its teams and, while it is pending, its
// invitation's link (to whom the API gives it); forms change its role
// and remove it, shown to whom may ask, the API deciding.
func (p *Pages) Member(v *Visit) error {
	path := orgAPI(v) + "members/" + url.PathEscape(v.R.PathValue("member_id")) + "/"
	var notice, problem string
	if v.R.Method == http.MethodPost {
		var err error
		done := ""
		switch v.Form("action") {
		case "role":
			_, err = v.Call("PUT", path, map[string]string{"orgRole": v.Form("role")}, nil)
			done = "The role is saved."
		case "remove":
			var me memberDetail
			if _, err := v.Call("GET", orgAPI(v)+"members/me/", nil, &me); err != nil {
				return err
			}
			if _, err = v.Call("DELETE", path, nil, nil); err == nil {
				if me.ID == v.R.PathValue("member_id") || v.R.PathValue("member_id") == "me" {
					v.Redirect("/") // the visitor left the organization
				} else {
					v.Redirect(orgPage(v) + "members/")
				}
				return nil
			}
		}
		if notice, problem, err = answered(err, done); err != nil {
			return err
		}
	}
	o, err := readOrg(v)
	if err != nil {
		return err
	}
	var m memberDetail
	if _, err := v.Call("GET", path, nil, &m); err != nil {
		return err
	}
	var me memberDetail
	if _, err := v.Call("GET", orgAPI(v)+"members/me/", nil, &me); err != nil {
		return err
	}
	title := m.Email
	if m.Name != "" && m.Name != m.Email {
		title = m.Name
	}
	page := orgView(title, o, memberView{Org: o, Member: m, Roles: givable(m.OrgRoleList), Self: me.ID == m.ID})
	page.Error, page.Notice = problem, notice
	return v.RenderStatus(formStatus(problem), "org_member.html", page)
}
