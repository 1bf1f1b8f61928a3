package pages

import (
	"errors"
	"net/http"
	"net/url"
	"slices"
	"strconv"
)

// An organization's pages: its home with the storage it uses, its
// members and invitations, its teams and its projects. Each asks the API
// what the visitor may see there; another organization is the API's 404.

// orgDetail is the API's organization (GET organizations/{org}/) with the
// visitor's place in it.
type orgDetail struct {
	Slug    string   `json:"slug"`
	Name    string   `json:"name"`
	OrgRole string   `json:"orgRole"`
	Access  []string `json:"access"`
}

// may tells whether the visitor holds one of scopes in the organization:
// a page shows a form only to whom the API would answer it (the API still
// decides when it is sent).
func (o orgDetail) may(scopes ...string) bool {
	return slices.ContainsFunc(scopes, func(s string) bool { return slices.Contains(o.Access, s) })
}

// readOrg asks the API for the organization of the page's
// {organization_slug}.
func readOrg(v *Visit) (orgDetail, error) {
	var o orgDetail
	_, err := v.Call("GET", orgAPI(v), nil, &o)
	return o, err
}

// orgAPI is the API's path of the page's organization.
func orgAPI(v *Visit) string {
	return "/api/0/organizations/" + url.PathEscape(v.R.PathValue("organization_slug")) + "/"
}

// orgPage is the path of the page's organization's pages.
func orgPage(v *Visit) string {
	return "/organizations/" + url.PathEscape(v.R.PathValue("organization_slug")) + "/"
}

// orgView is the View of a page of organization o.
func orgView(title string, o orgDetail, data any) View {
	return View{Title: title, Org: o.Slug, OrgName: o.Name, Data: data}
}

// refusal is the message of the API's refusal of a form (4xx but 401),
// shown above the form again; any other error is returned as it is.
func refusal(err error) (string, error) {
	var ae *APIError
	if errors.As(err, &ae) && ae.Status >= 400 && ae.Status < 500 && ae.Status != http.StatusUnauthorized {
		return ae.Detail, nil
	}
	return "", err
}

// answered is what a page shows after a form that the API answered with
// err: the notice done when it succeeded, else the API's refusal as
// problem; an error that is no refusal is returned.
func answered(err error, done string) (notice, problem string, _ error) {
	if problem, err = refusal(err); err != nil || problem != "" {
		return "", problem, err
	}
	return done, "", nil
}

// storageOut is the API's GET organizations/{org}/storage/.
type storageOut struct {
	Kinds []struct {
		Kind  string `json:"kind"`
		Files int64  `json:"files"`
		Bytes int64  `json:"bytes"`
	} `json:"kinds"`
	Blobs int64  `json:"blobs"`
	Bytes int64  `json:"bytes"`
	Quota *int64 `json:"quota"`
}

// orgHomeView is the organization's home.
type orgHomeView struct {
	Org orgDetail
	// Kinds are the organization's files per kind, Stored its blobs'
	// bytes (each once) and Quota the quota, "" when there is none.
	Kinds         []storageKind
	Stored, Quota string
	Blobs         string // "3 blobs"
}

// storageKind is a line of the storage table.
type storageKind struct {
	Kind  string
	Files int64
	Size  string
}

// OrgHome serves /organizations/{organization_slug}/: the organization,
// the visitor's role in it and the storage it uses.
func (p *Pages) OrgHome(v *Visit) error {
	o, err := readOrg(v)
	if err != nil {
		return err
	}
	var st storageOut
	if _, err := v.Call("GET", orgAPI(v)+"storage/", nil, &st); err != nil {
		return err
	}
	view := orgHomeView{Org: o, Blobs: strconv.FormatInt(st.Blobs, 10) + " blobs", Stored: byteSize(st.Bytes)}
	if st.Blobs == 1 {
		view.Blobs = "1 blob"
	}
	for _, k := range st.Kinds {
		view.Kinds = append(view.Kinds, storageKind{Kind: k.Kind, Files: k.Files, Size: byteSize(k.Bytes)})
	}
	if st.Quota != nil {
		view.Quota = byteSize(*st.Quota)
	}
	return v.Render("org_home.html", orgView(o.Name, o, view))
}

// byteSize writes n bytes for a person: "12.3 MiB (12 897 484 bytes)".
func byteSize(n int64) string {
	exact := strconv.FormatInt(n, 10) + " bytes"
	if n == 1 {
		exact = "1 byte"
	}
	units := []string{"KiB", "MiB", "GiB", "TiB", "PiB"}
	if n < 1024 {
		return exact
	}
	f, unit := float64(n)/1024, units[0]
	for _, u := range units[1:] {
		if f < 1024 {
			break
		}
		f, unit = f/1024, u
	}
	return strconv.FormatFloat(f, 'f', 1, 64) + " " + unit + " (" + exact + ")"
}
