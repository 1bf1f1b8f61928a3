package pages

import (
	"html/template"
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

// releaseRow is a release of the list, as the page shows it: the raw
// JSON values of the API's answer, read as the row is written.
type releaseRow struct {
	version, dateCreated     []byte // text
	projects, lastDeploy     []byte // JSON
	deployCount, commitCount []byte // integers
}

// releaseList is a page of the API's list of releases, as the rows of
// the table (of the organization org).
type releaseList struct {
	org string
	rows
}

func (l *releaseList) decodeAPI(b []byte) error {
	l.start()
	return jsonArray(b, func(b []byte, i int) (int, error) {
		var r releaseRow
		end, err := jsonObject(b, i, func(k, v []byte) error {
			var err error
			switch string(k) {
			case "version":
				r.version, err = jsonText(v)
			case "dateCreated":
				r.dateCreated, err = jsonText(v)
			case "deployCount":
				r.deployCount, err = jsonNumber(v)
			case "commitCount":
				r.commitCount, err = jsonNumber(v)
			case "projects":
				r.projects = v
			case "lastDeploy":
				r.lastDeploy = v
			}
			return err
		})
		if err != nil {
			return 0, err
		}
		return end, l.write(r)
	})
}

// write writes the table's row of r.
func (l *releaseList) write(r releaseRow) error {
	w := &l.rows
	w.n++
	w.raw(`<tr><td><a href="/organizations/`)
	w.text(url.PathEscape(l.org))
	w.raw(`/releases/`)
	w.text(url.PathEscape(string(r.version)))
	w.raw(`/">`)
	w.bytes(r.version)
	w.raw(`</a></td><td>`)
	n := 0
	err := jsonItems(r.projects, func(p []byte) error {
		return jsonFields(p, func(k, v []byte) error {
			if string(k) != "slug" {
				return nil
			}
			slug, err := jsonText(v)
			if n > 0 {
				w.raw(", ")
			}
			n++
			w.bytes(slug)
			return err
		})
	})
	if err != nil {
		return err
	}
	w.raw(`</td><td>`)
	w.time(r.dateCreated)
	w.raw(`</td><td class="num">`)
	w.bytes(r.deployCount)
	w.raw(`</td><td>`)
	if r.lastDeploy != nil && string(r.lastDeploy) != "null" {
		err := jsonFields(r.lastDeploy, func(k, v []byte) error {
			if string(k) != "environment" {
				return nil
			}
			env, err := jsonText(v)
			w.bytes(env)
			return err
		})
		if err != nil {
			return err
		}
	}
	w.raw(`</td><td class="num">`)
	w.bytes(r.commitCount)
	w.raw("</td></tr>\n")
	return nil
}

// releasesView is the releases page: a page of the list and its filter.
type releasesView struct {
	Count   int           // of releases on the page
	Rows    template.HTML // releaseList.rows
	Query   string
	Project string
	Pager   Pager
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
	list := releaseList{org: org}
	pager, err := v.List(path, &list)
	view.Count, view.Rows, view.Pager = list.n, list.html(), pager
	if err != nil {
		return err
	}
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

// releaseFiles is a page of the API's list of a release's files, as
// the rows of the table.
type releaseFiles struct{ rows }

func (l *releaseFiles) decodeAPI(b []byte) error {
	l.start()
	return jsonArray(b, func(b []byte, i int) (int, error) {
		var name, dist, dateCreated []byte
		var n int64
		end, err := jsonObject(b, i, func(k, v []byte) error {
			var err error
			switch string(k) {
			case "name":
				name, err = jsonText(v)
			case "dist":
				dist, err = jsonText(v)
			case "dateCreated":
				dateCreated, err = jsonText(v)
			case "size":
				n, err = strconv.ParseInt(string(v), 10, 64)
			}
			return err
		})
		if err != nil {
			return 0, err
		}
		w := &l.rows
		w.n++
		w.raw(`<tr><td><code>`)
		w.bytes(name)
		w.raw(`</code></td><td>`)
		w.bytes(dist)
		w.raw(`</td><td class="num">`)
		w.text(size(n))
		w.raw(`</td><td>`)
		w.time(dateCreated)
		w.raw("</td></tr>\n")
		return end, nil
	})
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
	Files   int           // on the page
	Rows    template.HTML // of the files
	Pager   Pager         // of the files
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
	var files releaseFiles
	pager, err := v.List(base+"files/", &files)
	view.Files, view.Rows, view.Pager = files.n, files.html(), pager
	if err != nil {
		return err
	}
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
