package pages

import (
	"net/url"
	"strconv"
	"strings"
)

func init() {
	funcs["shortDate"] = shortDate
	funcs["firstLine"] = firstLine
	funcs["shortSHA"] = shortSHA
	funcs["size"] = size
}

// The organization's releases, and one release with its files, deploys
// and commits, as the API answers them (docs/releases.md).
//
// Each page decodes only the fields it shows: encoding/json skips the
// rest of the API's answer without building it, which keeps a page of
// the list near the cost of the API's own page.

// releaseRow is a release of the list, as the page shows it.
type releaseRow struct {
	Version     string `json:"version"`
	DateCreated string `json:"dateCreated"`
	Projects    []struct {
		Slug string `json:"slug"`
	} `json:"projects"`
	DeployCount int `json:"deployCount"`
	CommitCount int `json:"commitCount"`
	LastDeploy  *struct {
		Environment string `json:"environment"`
	} `json:"lastDeploy"`
}

// releasesView is the releases page: a page of the list and its filter.
type releasesView struct {
	Releases []releaseRow
	Query    string
	Project  string
	Pager    Pager
	// Filter is the query string of the filter, which the pager's links
	// keep ("" without one).
	Filter string
}

// Releases serves /organizations/{organization_slug}/releases/: a page of
// the organization's releases, newest first, with the API's ?query= (a
// part of the version) and ?project= (a project's slug).
func (p *Pages) Releases(v *Visit) error {
	org := v.R.PathValue("organization_slug")
	q := v.R.URL.Query()
	view := releasesView{Query: strings.TrimSpace(q.Get("query")), Project: strings.TrimSpace(q.Get("project"))}
	filter := url.Values{}
	if view.Query != "" {
		filter.Set("query", view.Query)
	}
	if view.Project != "" {
		filter.Set("project", view.Project)
	}
	view.Filter = filter.Encode()
	path := "/api/0/organizations/" + url.PathEscape(org) + "/releases/"
	if view.Filter != "" {
		path += "?" + view.Filter
	}
	pager, err := v.List(path, &view.Releases)
	if err != nil {
		return err
	}
	view.Pager = pager
	return v.Render("releases.html", View{Title: "Releases", Org: org, Data: view})
}

// releaseDetail is one release, as its page shows it.
type releaseDetail struct {
	Version      string  `json:"version"`
	Ref          *string `json:"ref"`
	URL          *string `json:"url"`
	Status       string  `json:"status"`
	DateCreated  string  `json:"dateCreated"`
	DateReleased *string `json:"dateReleased"`
	Projects     []struct {
		Slug string `json:"slug"`
		Name string `json:"name"`
	} `json:"projects"`
	DeployCount int `json:"deployCount"`
	CommitCount int `json:"commitCount"`
}

// releaseFile is a file of a release.
type releaseFile struct {
	Name        string  `json:"name"`
	Dist        *string `json:"dist"`
	Size        int64   `json:"size"`
	DateCreated string  `json:"dateCreated"`
}

// deploy is a deploy of a release.
type deploy struct {
	Environment  string  `json:"environment"`
	Name         *string `json:"name"`
	URL          *string `json:"url"`
	DateFinished string  `json:"dateFinished"`
}

// commit is a commit of a release.
type commit struct {
	ID          string  `json:"id"`
	Message     *string `json:"message"`
	DateCreated string  `json:"dateCreated"`
	Author      *struct {
		Name  *string `json:"name"`
		Email string  `json:"email"`
	} `json:"author"`
	Repository struct {
		Name string `json:"name"`
	} `json:"repository"`
}

// releaseView is the page of one release.
type releaseView struct {
	Release releaseDetail
	Files   []releaseFile
	Pager   Pager // of the files
	Deploys []deploy
	Commits []commit
	// MoreDeploys and MoreCommits say that the release has more than the
	// page shows (the first page of the API's list).
	MoreDeploys, MoreCommits bool
}

// detailLimit is how many deploys and commits the page of a release
// shows: the API's largest page.
const detailLimit = 100

// Release serves /organizations/{organization_slug}/releases/{version}/:
// the release, a page of its files (paginated as the API is), and its
// latest deploys and commits. Another organization's release, or one
// that does not exist, is the API's 404.
func (p *Pages) Release(v *Visit) error {
	org := v.R.PathValue("organization_slug")
	version := v.R.PathValue("version")
	base := "/api/0/organizations/" + url.PathEscape(org) + "/releases/" + url.PathEscape(version) + "/"
	var view releaseView
	if _, err := v.Call("GET", base, nil, &view.Release); err != nil {
		return err
	}
	pager, err := v.List(base+"files/", &view.Files)
	if err != nil {
		return err
	}
	view.Pager = pager
	if _, err := v.Call("GET", base+"deploys/?per_page=100", nil, &view.Deploys); err != nil {
		return err
	}
	if _, err := v.Call("GET", base+"commits/?per_page=100", nil, &view.Commits); err != nil {
		return err
	}
	view.MoreDeploys = len(view.Deploys) >= detailLimit && view.Release.DeployCount > len(view.Deploys)
	view.MoreCommits = len(view.Commits) >= detailLimit && view.Release.CommitCount > len(view.Commits)
	return v.Render("release.html", View{Title: "Release " + view.Release.Version, Org: org, Data: view})
}

// shortDate is an API time as a person reads it: date, hour and minute,
// in UTC (the API writes "2006-01-02T15:04:05.000000Z").
func shortDate(s string) string {
	if len(s) < 16 || s[10] != 'T' {
		return s
	}
	return s[:10] + " " + s[11:16] + " UTC"
}

// firstLine is the first line of a commit message.
func firstLine(s *string) string {
	if s == nil {
		return ""
	}
	line, _, _ := strings.Cut(*s, "\n")
	return line
}

// shortSHA is a commit id as people quote it.
func shortSHA(s string) string {
	if len(s) == 40 && strings.Trim(s, "0123456789abcdef") == "" {
		return s[:12]
	}
	return s
}

// size is a file's size as a person reads it.
func size(n int64) string {
	const unit = 1024
	if n < unit {
		return strconv.FormatInt(n, 10) + " B"
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit && exp < 3; m /= unit {
		div *= unit
		exp++
	}
	return strconv.FormatFloat(float64(n)/float64(div), 'f', 1, 64) + " " + string("KMGT"[exp]) + "iB"
}
