package pages

import (
	"html/template"
	"net/url"
	"slices"
	"strconv"
)

// debugFiles is a page of the API's list of a project's debug files
// (docs/debug-files.md), as the rows of the table.
type debugFiles struct{ rows }

func (l *debugFiles) decodeAPI(b []byte) error {
	l.start()
	return jsonArray(b, func(b []byte, i int) (int, error) {
		var objectName, debugID, codeID, cpuName, symbolType, dateCreated, data []byte
		var n int64
		end, err := jsonObject(b, i, func(k, v []byte) error {
			var err error
			switch string(k) {
			case "objectName":
				objectName, err = jsonText(v)
			case "debugId":
				debugID, err = jsonText(v)
			case "codeId":
				codeID, err = jsonText(v)
			case "cpuName":
				cpuName, err = jsonText(v)
			case "symbolType":
				symbolType, err = jsonText(v)
			case "dateCreated":
				dateCreated, err = jsonText(v)
			case "data":
				data = v
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
		w.bytes(objectName)
		w.raw(`</code></td><td><code>`)
		w.bytes(debugID)
		w.raw(`</code>`)
		if codeID != nil {
			w.raw(`<p class="hint">Code ID <code>`)
			w.bytes(codeID)
			w.raw(`</code></p>`)
		}
		w.raw(`</td><td>`)
		w.bytes(symbolType)
		w.raw(`</td><td>`)
		if data != nil {
			err := jsonFields(data, func(k, v []byte) error {
				if string(k) != "type" {
					return nil
				}
				t, err := jsonText(v)
				w.bytes(t)
				return err
			})
			if err != nil {
				return 0, err
			}
		}
		w.raw(`</td><td>`)
		w.bytes(cpuName)
		w.raw(`</td><td class="num">`)
		w.text(size(n))
		w.raw(`</td><td>`)
		w.time(dateCreated)
		w.raw("</td></tr>\n")
		return end, nil
	})
}

// projectSlugs is the API's list of projects, of which the page needs
// the slugs.
type projectSlugs []string

func (l *projectSlugs) decodeAPI(b []byte) error {
	return jsonArray(b, func(b []byte, i int) (int, error) {
		return jsonObject(b, i, func(k, v []byte) error {
			if string(k) != "slug" {
				return nil
			}
			slug, err := jsonText(v)
			*l = append(*l, string(slug))
			return err
		})
	})
}

// debugFilesView is the debug files page: the project chosen, the
// projects to choose from, and a page of the project's files.
type debugFilesView struct {
	Projects []string
	Project  string
	Files    int           // on the page
	Rows     template.HTML // of the files
	Pager    Pager
}

// DebugFiles serves /organizations/{organization_slug}/debug-files/: the
// debug files of the project ?project= (the organization's first project
// when none is chosen), paginated as the API is.
func (p *Pages) DebugFiles(v *Visit) error {
	org := v.R.PathValue("organization_slug")
	var projects projectSlugs
	if _, err := v.Call("GET", "/api/0/organizations/"+url.PathEscape(org)+"/projects/?per_page="+
		strconv.Itoa(detailLimit), nil, &projects); err != nil {
		return err
	}
	view := debugFilesView{Projects: projects, Project: v.R.URL.Query().Get("project")}
	if view.Project == "" && len(projects) > 0 {
		view.Project = projects[0]
	}
	if view.Project != "" && !slices.Contains(view.Projects, view.Project) {
		// A project beyond the first page of the list, or none of the
		// organization's: the API says which.
		view.Projects = append(view.Projects, view.Project)
	}
	if view.Project != "" {
		var files debugFiles
		pager, err := v.List("/api/0/projects/"+url.PathEscape(org)+"/"+url.PathEscape(view.Project)+"/files/dsyms/", &files)
		if err != nil {
			files.html() // returns its buffer
			return err
		}
		view.Files, view.Rows, view.Pager = files.n, files.html(), pager
	}
	return v.Render("debugfiles.html", View{Title: "Debug files", Org: org, Data: view})
}
