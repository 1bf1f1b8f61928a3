package handlers

import (
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"errata/store"
)

// releaseOut is a release as the API writes it. Events are not tracked, so
// their fields are always empty.
type releaseOut struct {
	ID           int64               `json:"id"`
	Version      string              `json:"version"`
	ShortVersion string              `json:"shortVersion"`
	VersionInfo  *versionInfoOut     `json:"versionInfo"`
	Ref          *string             `json:"ref"`
	URL          *string             `json:"url"`
	DateCreated  jsonTime            `json:"dateCreated"`
	DateReleased *jsonTime           `json:"dateReleased"`
	DateStarted  *jsonTime           `json:"dateStarted"`
	Data         json.RawMessage     `json:"data"`
	Status       string              `json:"status"`
	NewGroups    int                 `json:"newGroups"`
	Owner        *releaseOwnerOut    `json:"owner"`
	CommitCount  int                 `json:"commitCount"`
	LastCommit   *commitOut          `json:"lastCommit"`
	Authors      []authorOut         `json:"authors"`
	DeployCount  int                 `json:"deployCount"`
	LastDeploy   *deployOut          `json:"lastDeploy"`
	FirstEvent   *jsonTime           `json:"firstEvent"`
	LastEvent    *jsonTime           `json:"lastEvent"`
	Projects     []releaseProjectOut `json:"projects"`
}

// releaseProjectOut is a project a release is linked to, with its
// platform (null when nobody set one). errata tracks no events or
// sessions: no new groups, no health data, no platforms seen in events.
type releaseProjectOut struct {
	ID            int64    `json:"id"`
	Slug          string   `json:"slug"`
	Name          string   `json:"name"`
	NewGroups     int      `json:"newGroups"`
	Platform      *string  `json:"platform"`
	Platforms     []string `json:"platforms"`
	HasHealthData bool     `json:"hasHealthData"`
}

// noPlatforms is the platforms of every project: one empty list that the
// releases share.
var noPlatforms = []string{}

// releaseOwnerOut is the owner of a release: the user, as Sentry's user
// serializer writes another member (errata's user fields, without the
// options that are the user's own).
type releaseOwnerOut struct {
	ID              string    `json:"id"`
	Name            string    `json:"name"`
	Username        string    `json:"username"`
	Email           string    `json:"email"`
	DateJoined      jsonTime  `json:"dateJoined"`
	LastLogin       *jsonTime `json:"lastLogin"`
	IsActive        bool      `json:"isActive"`
	IsSuperuser     bool      `json:"isSuperuser"`
	HasPasswordAuth bool      `json:"hasPasswordAuth"`
}

func newReleaseOwnerOut(o *store.ReleaseOwner) *releaseOwnerOut {
	if o == nil {
		return nil
	}
	return &releaseOwnerOut{ID: strconv.FormatInt(o.ID, 10), Name: o.Name, Username: o.Email, Email: o.Email,
		DateJoined: jsonTime(o.DateJoined), LastLogin: (*jsonTime)(o.LastLogin), IsActive: o.IsActive,
		IsSuperuser: o.IsSuperuser, HasPasswordAuth: o.HasPasswordAuth}
}

// newReleaseOut converts a stored release. Like Sentry, shortVersion is the
// version itself.
func newReleaseOut(rel store.Release) releaseOut {
	var deploy *deployOut
	if rel.LastDeploy != nil {
		deploy = new(deployOut)
	}
	return fillReleaseOut(rel, make([]releaseProjectOut, len(rel.Projects)), deploy, new(versionInfoOut))
}

// releasePage is a page of stored releases as the API writes it, always a
// list: each release is converted, as it is encoded, into one releaseOut
// that the page reuses, rather than the whole page copied first.
type releasePage []store.Release

func (l releasePage) appendJSON(b []byte) ([]byte, error) {
	projects := make([]releaseProjectOut, 0, 8) // never nil: "projects" is a list
	var deploy deployOut
	var info versionInfoOut
	b = append(b, '[')
	for i, rel := range l {
		if i > 0 {
			b = append(b, ',')
		}
		projects = slices.Grow(projects[:0], len(rel.Projects))[:len(rel.Projects)]
		var err error
		if b, err = fillReleaseOut(rel, projects, &deploy, &info).appendJSON(b); err != nil {
			return nil, err
		}
	}
	return append(b, ']'), nil
}

// fillReleaseOut converts rel into projects, which has the length of
// rel.Projects, deploy, which is not nil when rel has a last deploy, and
// info, its versionInfo.
func fillReleaseOut(rel store.Release, projects []releaseProjectOut, deploy *deployOut, info *versionInfoOut) releaseOut {
	out := releaseOut{
		ID:           rel.ID,
		Version:      rel.Version,
		ShortVersion: rel.Version,
		Ref:          rel.Ref,
		URL:          rel.URL,
		DateCreated:  jsonTime(rel.DateCreated),
		DateReleased: (*jsonTime)(rel.DateReleased), // the store's, not a copy
		DateStarted:  (*jsonTime)(rel.DateStarted),
		Data:         rel.Data,
		DeployCount:  rel.DeployCount,
		Status:       rel.Status,
		Projects:     projects,
		CommitCount:  rel.CommitCount,
		Authors:      make([]authorOut, len(rel.Authors)),
		Owner:        newReleaseOwnerOut(rel.Owner),
	}
	if info.parse(rel.Version) {
		out.VersionInfo = info
	}
	if rel.LastCommit != nil {
		c := newCommitOut(*rel.LastCommit)
		out.LastCommit = &c
	}
	for i, a := range rel.Authors {
		out.Authors[i] = authorOut{Name: a.Name, Email: a.Email}
	}
	if rel.LastDeploy != nil {
		*deploy = newDeployOut(*rel.LastDeploy)
		out.LastDeploy = deploy
	}
	for i, p := range rel.Projects {
		projects[i] = releaseProjectOut{ID: p.ID, Slug: p.Slug, Name: p.Name, Platforms: noPlatforms}
		if p.Platform != "" {
			projects[i].Platform = &rel.Projects[i].Platform
		}
	}
	return out
}

// validVersion applies the rules for release versions, the same for
// request bodies, paths and the assembly worker: see
// store.CheckReleaseVersion.
func validVersion(v string) bool {
	return store.CheckReleaseVersion(v) == nil
}

// releaseBaseIn is the body of a release created on a project route; the
// organization route adds projects.
type releaseBaseIn struct {
	Version      opt[string]         `json:"version"`
	Ref          opt[string]         `json:"ref"`
	URL          opt[string]         `json:"url"`
	DateReleased opt[string]         `json:"dateReleased"`
	DateStarted  opt[string]         `json:"dateStarted"`
	Data         opt[map[string]any] `json:"data"`
	Status       opt[string]         `json:"status"`
	Owner        opt[string]         `json:"owner"`
	releaseCommitsIn
}

// releaseIn is the body of a release created on the organization route.
type releaseIn struct {
	releaseBaseIn
	Projects opt[[]projectRef] `json:"projects"`
}

// projectRef names a project by slug or, as sentry-cli 3 sends it for
// `releases new -p 1`, by id: Sentry accepts both.
type projectRef string

func (p *projectRef) UnmarshalJSON(b []byte) error {
	var n json.Number
	if err := json.Unmarshal(b, &n); err == nil {
		if _, err := strconv.ParseInt(string(n), 10, 64); err == nil {
			*p = projectRef(n)
			return nil
		}
	}
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return err
	}
	*p = projectRef(s)
	return nil
}

// releaseUpdateIn is the body of a release update; only the keys present
// are assigned.
type releaseUpdateIn struct {
	Ref          opt[string]         `json:"ref"`
	URL          opt[string]         `json:"url"`
	DateReleased opt[string]         `json:"dateReleased"`
	DateStarted  opt[string]         `json:"dateStarted"`
	Data         opt[map[string]any] `json:"data"`
	Status       opt[string]         `json:"status"`
	releaseCommitsIn
}

// parseStatus reads an optional release status: open or archived; absent
// or null keeps it.
func parseStatus(o opt[string]) (*string, error) {
	if !o.Set || o.Null {
		return nil, nil
	}
	if !slices.Contains(store.ReleaseStatuses, o.V) {
		return nil, invalid(valueErr, "Input should be 'open' or 'archived'", "body", "status")
	}
	return &o.V, nil
}

// encodeData encodes a data object; nil stays nil (the empty object).
// decodeJSON has already refused NUL characters, which jsonb cannot hold.
func encodeData(o opt[map[string]any]) (json.RawMessage, error) {
	if !o.Set || o.Null {
		return nil, nil
	}
	return json.Marshal(o.V)
}

// releaseInput validates a create body.
func (in releaseBaseIn) releaseInput() (store.ReleaseInput, error) {
	var ri store.ReleaseInput
	switch {
	case !in.Version.Set:
		return ri, invalid(missing, "Field required", "body", "version")
	case in.Version.Null:
		return ri, invalid(typeError, "Input should be a valid string", "body", "version")
	case !validVersion(in.Version.V):
		return ri, invalid(valueErr, "Invalid release version", "body", "version")
	}
	ri.Version = in.Version.V
	ri.Ref, ri.URL = in.Ref.ptr(), in.URL.ptr()
	if o := in.Owner.ptr(); o != nil && *o != "" { // Sentry's UserField takes "" for none
		ri.Owner = o
	}
	var err error
	if ri.DateReleased, err = parseTime(in.DateReleased, "dateReleased"); err != nil {
		return ri, err
	}
	if ri.DateStarted, err = parseTime(in.DateStarted, "dateStarted"); err != nil {
		return ri, err
	}
	if ri.Status, err = parseStatus(in.Status); err != nil {
		return ri, err
	}
	if ri.Commits, err = in.commitsInput(); err != nil {
		return ri, err
	}
	ri.Data, err = encodeData(in.Data)
	return ri, err
}

// projectSlugs validates the projects of an organization create body.
func (in releaseIn) projectSlugs() ([]string, error) {
	switch {
	case !in.Projects.Set:
		return nil, invalid(missing, "Field required", "body", "projects")
	case in.Projects.Null:
		return nil, invalid(typeError, "Input should be a valid list", "body", "projects")
	}
	slugs := make([]string, len(in.Projects.V))
	for i, p := range in.Projects.V {
		slugs[i] = string(p)
	}
	return slugs, nil
}

// releaseUpdate validates an update body.
func (in releaseUpdateIn) releaseUpdate() (store.ReleaseUpdate, error) {
	u := store.ReleaseUpdate{
		SetRef: in.Ref.Set, Ref: in.Ref.ptr(),
		SetURL: in.URL.Set, URL: in.URL.ptr(),
		SetData:         in.Data.Set,
		SetDateReleased: in.DateReleased.Set,
		SetDateStarted:  in.DateStarted.Set,
	}
	var err error
	if u.DateReleased, err = parseTime(in.DateReleased, "dateReleased"); err != nil {
		return u, err
	}
	if u.DateStarted, err = parseTime(in.DateStarted, "dateStarted"); err != nil {
		return u, err
	}
	if u.Status, err = parseStatus(in.Status); err != nil {
		return u, err
	}
	if u.Commits, err = in.commitsInput(); err != nil {
		return u, err
	}
	u.Data, err = encodeData(in.Data)
	return u, err
}

// errNoValidProject is the contract's answer to a release that would
// belong to no project.
var errNoValidProject = invalid(valueErr, "Require at least one valid project", "body", "projects")

// errUnknownOwner answers an owner that names no member of the
// organization (Sentry's owner is a username: errata's is the email).
var errUnknownOwner = invalid(valueErr, "Unable to find user: owner should be the email of a member of the organization", "body", "owner")

// handleReleaseCreate serves POST
// /api/0/organizations/{organization_slug}/releases/: it creates the
// release (201) or links an existing one to the projects (208).
func handleReleaseCreate(d Deps) apiFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		org, err := pathSlug(r, "organization_slug")
		if err != nil {
			return err
		}
		var in releaseIn
		if err := decodeJSON(w, r, &in); err != nil {
			return err
		}
		ri, err := in.releaseInput()
		if err != nil {
			return err
		}
		projects, err := in.projectSlugs()
		if err != nil {
			return err
		}
		rel, created, err := d.Store.CreateRelease(r.Context(), caller(r).UserID, org, ri, projects)
		if errors.Is(err, store.ErrNoValidProject) {
			return errNoValidProject
		}
		if errors.Is(err, store.ErrUnknownOwner) {
			return errUnknownOwner
		}
		if err != nil {
			return commitsError(err)
		}
		status := http.StatusCreated
		if !created {
			status = http.StatusAlreadyReported
		}
		writeJSON(w, r, d.Log, status, newReleaseOut(rel))
		return nil
	}
}

// handleProjectReleaseCreate serves POST
// /api/0/projects/{organization_slug}/{project_slug}/releases/: it creates
// the release unless it exists and links it to the project; 201 either way.
func handleProjectReleaseCreate(d Deps) apiFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		org, project, err := orgProjectSlugs(r)
		if err != nil {
			return err
		}
		var in releaseBaseIn
		if err := decodeJSON(w, r, &in); err != nil {
			return err
		}
		ri, err := in.releaseInput()
		if err != nil {
			return err
		}
		rel, err := d.Store.CreateProjectRelease(r.Context(), caller(r).UserID, org, project, ri)
		if errors.Is(err, store.ErrUnknownOwner) {
			return errUnknownOwner
		}
		if err != nil {
			return commitsError(err)
		}
		writeJSON(w, r, d.Log, http.StatusCreated, newReleaseOut(rel))
		return nil
	}
}

// handleReleases serves GET /api/0/organizations/{organization_slug}/releases/
// and GET /api/0/projects/{organization_slug}/{project_slug}/releases/: the
// releases, newest first, of the organization or linked to the project,
// filtered as Sentry's lists are (releaseFilter).
func handleReleases(d Deps) apiFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		org, project, err := releaseSlugs(r)
		if err != nil {
			return err
		}
		page, err := readPage(r)
		if err != nil {
			return err
		}
		f, err := releaseFilter(r, project != "")
		if err != nil {
			return err
		}
		rels, info, err := d.Store.Releases(r.Context(), caller(r).UserID, org, project, f, page)
		if err != nil {
			return err
		}
		setPageHeaders(w, r, d.PublicURL, info)
		writeJSON(w, r, d.Log, http.StatusOK, releasePage(rels))
		return nil
	}
}

// releaseFilter reads the filters of a release list: ?status= (open
// unless it asks for archived ones, or any with "all"), ?query= (a
// substring of the version, any case), ?environment= (repeatable: the
// releases deployed to one of them) and, on the organization route,
// ?project= (repeatable, slugs or ids; -1 is every project).
func releaseFilter(r *http.Request, onProject bool) (store.ReleaseFilter, error) {
	q := r.URL.Query()
	f := store.ReleaseFilter{Status: q.Get("status"), Query: strings.TrimSpace(q.Get("query"))}
	switch f.Status {
	case "":
		f.Status = "open"
	case "open", "archived":
	case "all":
		f.Status = ""
	default:
		return f, invalid(valueErr, "Input should be 'open', 'archived' or 'all'", "query", "status")
	}
	if len(f.Query) > 200 || !isText(f.Query) {
		return f, invalid(valueErr, "Invalid query", "query", "query")
	}
	if len(q["environment"]) > maxLimit {
		return f, invalid(valueErr, "Too many environments", "query", "environment")
	}
	if len(q["project"]) > maxLimit {
		return f, invalid(valueErr, "Too many projects", "query", "project")
	}
	for _, env := range q["environment"] {
		if len(env) > 64 || !isText(env) {
			return f, invalid(valueErr, "Invalid environment", "query", "environment")
		}
		f.Environments = append(f.Environments, env)
	}
	if onProject {
		if q.Has("project") {
			return f, invalid(valueErr, "The project route lists the releases of its own project", "query", "project")
		}
		return f, nil
	}
	for _, p := range q["project"] {
		if p == "-1" {
			f.Projects = nil // every project, as none named
			break
		}
		if len(p) > 100 || !isText(p) {
			return f, invalid(valueErr, "Invalid project", "query", "project")
		}
		f.Projects = append(f.Projects, p)
	}
	return f, nil
}

// releaseDetailQuery checks the query of a release's GET. Sentry's
// ?health= and ?adoptionStages= add session data, which errata does not
// have, so only false is served; ?project= and ?project_id= add the
// project's neighbouring releases (currentProjectMeta), which errata does
// not compute. The other parameters only shape those answers, and are
// checked against the values Sentry takes.
func releaseDetailQuery(r *http.Request) error {
	q := r.URL.Query()
	for _, name := range []string{"health", "adoptionStages"} {
		if !q.Has(name) {
			continue
		}
		if on, err := strconv.ParseBool(q.Get(name)); err != nil || on {
			return invalid(valueErr, "errata has no session data: "+name+" can only be false", "query", name)
		}
	}
	for _, name := range []string{"project", "project_id"} {
		if q.Has(name) {
			return invalid(valueErr, "errata does not compute a project's neighbouring releases", "query", name)
		}
	}
	periods := []string{"14d", "1d", "1h", "24h", "2d", "30d", "48h", "7d", "90d"}
	for name, allowed := range map[string][]string{
		"summaryStatsPeriod": periods, "healthStatsPeriod": periods,
		"sort":   {"crash_free_sessions", "crash_free_users", "date", "sessions", "users"},
		"status": {"archived", "open"},
	} {
		if v := q.Get(name); q.Has(name) && !slices.Contains(allowed, v) {
			return invalid(valueErr, "Input should be one of "+strings.Join(allowed, ", "), "query", name)
		}
	}
	return nil
}

// handleRelease serves GET
// /api/0/organizations/{organization_slug}/releases/{version}/ and GET
// /api/0/projects/{organization_slug}/{project_slug}/releases/{version}/.
func handleRelease(d Deps) apiFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		org, project, version, err := releasePath(r)
		if err != nil {
			return err
		}
		if err := releaseDetailQuery(r); err != nil {
			return err
		}
		rel, err := d.Store.Release(r.Context(), caller(r).UserID, org, project, version)
		if err != nil {
			return err
		}
		writeJSON(w, r, d.Log, http.StatusOK, newReleaseOut(rel))
		return nil
	}
}

// handleReleaseUpdate serves PUT
// /api/0/organizations/{organization_slug}/releases/{version}/ and PUT
// /api/0/projects/{organization_slug}/{project_slug}/releases/{version}/:
// it assigns the keys present in the body.
func handleReleaseUpdate(d Deps) apiFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		org, project, version, err := releasePath(r)
		if err != nil {
			return err
		}
		var in releaseUpdateIn
		if err := decodeJSON(w, r, &in); err != nil {
			return err
		}
		upd, err := in.releaseUpdate()
		if err != nil {
			return err
		}
		rel, err := d.Store.UpdateRelease(r.Context(), caller(r).UserID, org, project, version, upd)
		if err != nil {
			return commitsError(err)
		}
		writeJSON(w, r, d.Log, http.StatusOK, newReleaseOut(rel))
		return nil
	}
}

// handleReleaseDelete serves DELETE
// /api/0/organizations/{organization_slug}/releases/{version}/ and DELETE
// /api/0/projects/{organization_slug}/{project_slug}/releases/{version}/:
// it removes the release (on the project route, the release linked to the
// project), with its files and deploys.
func handleReleaseDelete(d Deps) apiFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		org, project, version, err := releasePath(r)
		if err != nil {
			return err
		}
		if err := d.Store.DeleteRelease(r.Context(), caller(r).UserID, org, project, version); err != nil {
			return err
		}
		noContent(w)
		return nil
	}
}
