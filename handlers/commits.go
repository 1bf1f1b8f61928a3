package handlers

import (
	"encoding/json"
	"errors"
	"net/http"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"errata/store"
)

// Repositories and commits: sentry-cli's repos list and releases
// set-commits, and the commit fields of a release (Sentry's shapes).

// repositoryProvider is the provider object of a repository.
type repositoryProvider struct {
	ID   string `json:"id"`
	Name string `json:"name"`
}

// repositoryOut is a repository as Sentry writes it. errata has no
// integrations, so integrationId and externalSlug are null.
type repositoryOut struct {
	ID            string             `json:"id"`
	Name          string             `json:"name"`
	URL           *string            `json:"url"`
	Provider      repositoryProvider `json:"provider"`
	Status        string             `json:"status"`
	DateCreated   jsonTime           `json:"dateCreated"`
	IntegrationID *string            `json:"integrationId"`
	ExternalSlug  *string            `json:"externalSlug"`
}

func newRepositoryOut(r store.Repository) repositoryOut {
	provider := repositoryProvider{ID: "unknown", Name: "Unknown Provider"}
	if r.Provider != nil {
		provider = repositoryProvider{ID: *r.Provider, Name: store.RepositoryProviders[*r.Provider]}
	}
	return repositoryOut{
		ID: strconv.FormatInt(r.ID, 10), Name: r.Name, URL: r.URL, Provider: provider,
		Status: "active", DateCreated: jsonTime(r.DateCreated),
	}
}

// authorOut is a commit's author; errata does not match authors to users.
type authorOut struct {
	Name  *string `json:"name"`
	Email string  `json:"email"`
}

// commitOut is a commit as Sentry writes it.
type commitOut struct {
	ID          string        `json:"id"`
	Message     *string       `json:"message"`
	DateCreated jsonTime      `json:"dateCreated"`
	Author      *authorOut    `json:"author"`
	Repository  repositoryOut `json:"repository"`
}

func newCommitOut(c store.Commit) commitOut {
	out := commitOut{ID: c.Key, Message: c.Message, DateCreated: jsonTime(c.DateAdded),
		Repository: newRepositoryOut(c.Repository)}
	if c.Author != nil {
		out.Author = &authorOut{Name: c.Author.Name, Email: c.Author.Email}
	}
	return out
}

// releaseCommitOut is a commit of a release list: Sentry's commit with
// the releases that hold it. errata knows no pull requests (null, as
// Sentry writes a commit without one) and suspects no commits ("").
type releaseCommitOut struct {
	commitOut
	PullRequest       *struct{}          `json:"pullRequest"`
	Releases          []commitReleaseOut `json:"releases"`
	SuspectCommitType string             `json:"suspectCommitType"`
}

// commitReleaseOut is a release that holds a commit.
type commitReleaseOut struct {
	Version      string    `json:"version"`
	ShortVersion string    `json:"shortVersion"`
	Ref          *string   `json:"ref"`
	URL          *string   `json:"url"`
	DateReleased *jsonTime `json:"dateReleased"`
	DateCreated  jsonTime  `json:"dateCreated"`
}

func newReleaseCommitOut(c store.Commit) releaseCommitOut {
	out := releaseCommitOut{commitOut: newCommitOut(c), Releases: make([]commitReleaseOut, len(c.Releases))}
	for i, r := range c.Releases {
		out.Releases[i] = commitReleaseOut{Version: r.Version, ShortVersion: r.Version, Ref: r.Ref, URL: r.URL,
			DateReleased: (*jsonTime)(r.DateReleased), DateCreated: jsonTime(r.DateCreated)}
	}
	return out
}

// The limits of Sentry's serializers for commits and refs.
const (
	maxCommitID        = 64
	maxRepositoryName  = 200
	maxAuthorName      = 128
	maxAuthorEmail     = 75
	maxPatchPath       = 255
	commitRangeDivider = ".."
)

// commitIn is a commit of a release body, as sentry-cli sends it (its
// keys are snake_case, as in Sentry's API).
type commitIn struct {
	ID          opt[string]            `json:"id"`
	Repository  opt[string]            `json:"repository"`
	Message     opt[string]            `json:"message"`
	AuthorName  opt[string]            `json:"author_name"`
	AuthorEmail opt[string]            `json:"author_email"`
	Timestamp   opt[string]            `json:"timestamp"`
	PatchSet    opt[[]json.RawMessage] `json:"patch_set"`
}

// patchIn is a file of a commit's patch set.
type patchIn struct {
	Path opt[string] `json:"path"`
	Type opt[string] `json:"type"`
}

// refIn names a repository's head commit (sentry-cli's set-commits
// --auto and --commit); commit may be a range "previous..head".
type refIn struct {
	Repository     opt[string] `json:"repository"`
	Commit         opt[string] `json:"commit"`
	PreviousCommit opt[string] `json:"previousCommit"`
}

// headCommitIn is the older spelling of a ref.
type headCommitIn struct {
	Repository opt[string] `json:"repository"`
	CurrentID  opt[string] `json:"currentId"`
	PreviousID opt[string] `json:"previousId"`
}

// releaseCommitsIn are the commit fields of a release body.
type releaseCommitsIn struct {
	Commits     opt[[]json.RawMessage] `json:"commits"`
	Refs        opt[[]json.RawMessage] `json:"refs"`
	HeadCommits opt[[]json.RawMessage] `json:"headCommits"`
}

// commitsInput validates the commit fields of a body.
func (in releaseCommitsIn) commitsInput() (store.ReleaseCommitsInput, error) {
	var out store.ReleaseCommitsInput
	if in.Commits.Set && !in.Commits.Null {
		commits := make([]store.CommitInput, len(in.Commits.V))
		for i, raw := range in.Commits.V {
			c, err := parseCommit(raw, "body", "commits", i)
			if err != nil {
				return out, err
			}
			commits[i] = c
		}
		out.Commits = &commits
	}
	var refs []store.RefInput
	set := false
	for _, list := range []struct {
		name string
		v    opt[[]json.RawMessage]
	}{{"refs", in.Refs}, {"headCommits", in.HeadCommits}} {
		if !list.v.Set || list.v.Null {
			continue
		}
		set = true
		for i, raw := range list.v.V {
			ref, err := parseRef(raw, list.name == "headCommits", "body", list.name, i)
			if err != nil {
				return out, err
			}
			refs = append(refs, ref)
		}
	}
	if set {
		out.Refs = &refs
	}
	return out, nil
}

// decodeItem decodes one object of a list in a body into dst; loc is where
// it sits.
func decodeItem(raw json.RawMessage, dst any, loc ...any) error {
	if len(raw) == 0 || raw[0] != '{' {
		return invalid(typeError, "Input should be an object", loc...)
	}
	if err := json.Unmarshal(raw, dst); err != nil {
		if te, ok := errors.AsType[*json.UnmarshalTypeError](err); ok {
			return invalid(typeError, "Input should be a valid "+jsonKind(te.Type), at(loc, te.Field)...)
		}
		return invalid(typeError, "Input has the wrong type", loc...)
	}
	if path, found := nulPath(reflect.ValueOf(dst)); found {
		// PostgreSQL's text cannot hold the NUL character.
		return invalid(valueErr, "Input should not contain NUL characters", at(loc, path...)...)
	}
	return nil
}

func at(loc []any, more ...any) []any { return append(slices.Clone(loc), more...) }

// parseCommit validates one commit of a body.
func parseCommit(raw json.RawMessage, loc ...any) (store.CommitInput, error) {
	var in commitIn
	var c store.CommitInput
	if err := decodeItem(raw, &in, loc...); err != nil {
		return c, err
	}
	id, err := text(in.ID, true, maxCommitID, at(loc, "id")...)
	if err != nil {
		return c, err
	}
	c.ID = *id
	repo, err := text(in.Repository, false, maxRepositoryName, at(loc, "repository")...)
	if err != nil {
		return c, err
	}
	if repo != nil {
		c.Repository = *repo
	}
	if c.Message, err = text(in.Message, false, 0, at(loc, "message")...); err != nil {
		return c, err
	}
	if c.AuthorName, err = text(in.AuthorName, false, maxAuthorName, at(loc, "author_name")...); err != nil {
		return c, err
	}
	if c.AuthorEmail, err = text(in.AuthorEmail, false, maxAuthorEmail, at(loc, "author_email")...); err != nil {
		return c, err
	}
	if c.AuthorEmail != nil && *c.AuthorEmail == "" {
		c.AuthorEmail = nil
	}
	if c.Timestamp, err = parseTime(in.Timestamp, "timestamp"); err != nil {
		return c, invalid(typeError, "Input should be a valid datetime", at(loc, "timestamp")...)
	}
	if in.PatchSet.Set && !in.PatchSet.Null {
		for i, raw := range in.PatchSet.V {
			var p patchIn
			ploc := at(loc, "patch_set", i)
			if err := decodeItem(raw, &p, ploc...); err != nil {
				return c, err
			}
			path, err := text(p.Path, true, maxPatchPath, at(ploc, "path")...)
			if err != nil {
				return c, err
			}
			if !p.Type.Set || p.Type.Null || !slices.Contains([]string{"A", "M", "D"}, p.Type.V) {
				return c, invalid(valueErr, "Input should be 'A', 'M' or 'D'", at(ploc, "type")...)
			}
			c.PatchSet = append(c.PatchSet, store.FileChange{Path: *path, Type: p.Type.V})
		}
	}
	return c, nil
}

// parseRef validates one ref (or, legacy, one head commit) of a body. A
// commit "previous..head" is a range, as Sentry reads it.
func parseRef(raw json.RawMessage, legacy bool, loc ...any) (store.RefInput, error) {
	var in refIn
	var ref store.RefInput
	commitKey, previousKey := "commit", "previousCommit"
	if legacy {
		var h headCommitIn
		if err := decodeItem(raw, &h, loc...); err != nil {
			return ref, err
		}
		in = refIn{Repository: h.Repository, Commit: h.CurrentID, PreviousCommit: h.PreviousID}
		commitKey, previousKey = "currentId", "previousId"
	} else if err := decodeItem(raw, &in, loc...); err != nil {
		return ref, err
	}
	repo, err := text(in.Repository, true, maxRepositoryName, at(loc, "repository")...)
	if err != nil {
		return ref, err
	}
	ref.Repository = *repo
	commit, err := text(in.Commit, true, 0, at(loc, commitKey)...)
	if err != nil {
		return ref, err
	}
	if previous, head, ok := strings.Cut(*commit, commitRangeDivider); ok {
		in.PreviousCommit = opt[string]{Set: true, V: previous}
		commit = &head
	}
	if *commit == "" || utf8.RuneCountInString(*commit) > maxCommitID {
		return ref, invalid(valueErr, "Input should be a commit of 1 to 64 characters", at(loc, commitKey)...)
	}
	ref.Commit = *commit
	if ref.PreviousCommit, err = text(in.PreviousCommit, false, maxCommitID, at(loc, previousKey)...); err != nil {
		return ref, err
	}
	if ref.PreviousCommit != nil && *ref.PreviousCommit == "" {
		ref.PreviousCommit = nil
	}
	return ref, nil
}

// commitsError turns a ref to a repository the organization lacks into
// the contract's 422, as Sentry answers it (400 there).
func commitsError(err error) error {
	if errors.Is(err, store.ErrUnknownRepository) {
		name := strings.TrimPrefix(err.Error(), store.ErrUnknownRepository.Error()+": ")
		return invalid(valueErr, "Invalid repository names: "+name, "body", "refs")
	}
	return err
}

// repositoryIn is the body of a new repository.
type repositoryIn struct {
	Name     opt[string] `json:"name"`
	URL      opt[string] `json:"url"`
	Provider opt[string] `json:"provider"`
}

// repositoryInput validates a new repository.
func (in repositoryIn) repositoryInput() (store.RepositoryInput, error) {
	var repo store.RepositoryInput
	name, err := text(in.Name, true, maxRepositoryName, "body", "name")
	if err != nil {
		return repo, err
	}
	repo.Name = *name
	if repo.URL, err = text(in.URL, false, 0, "body", "url"); err != nil {
		return repo, err
	}
	if repo.URL != nil && !validRepositoryURL(*repo.URL) {
		return repo, invalid(valueErr, "Input should be an http, https, ssh or git URL", "body", "url")
	}
	if in.Provider.Set && !in.Provider.Null {
		if _, ok := store.RepositoryProviders[in.Provider.V]; !ok {
			return repo, invalid(valueErr, "Input should be a known provider: "+strings.Join(providerIDs(), ", "), "body", "provider")
		}
		repo.Provider = &in.Provider.V
	}
	return repo, nil
}

var errRepositoryExists = &apiError{status: http.StatusConflict, detail: "A repository with that name already exists"}

// handleRepositories serves GET organizations/{org}/repos/: the
// organization's repositories, newest first; ?query= keeps those whose
// name contains it. Sentry's ?status= takes active (the default, and all
// errata's repositories are active) or another status, which none has;
// ?integration_id= keeps none either, and ?expand= is refused.
func handleRepositories(d Deps) apiFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		org, err := pathSlug(r, "organization_slug")
		if err != nil {
			return err
		}
		page, err := readPage(r)
		if err != nil {
			return err
		}
		q := r.URL.Query()
		status := q.Get("status")
		switch status {
		case "", "active":
		case "deleted", "unmigratable", "disabled", "hidden":
		default:
			return invalid(valueErr, "Input should be 'active', 'disabled', 'hidden', 'deleted' or 'unmigratable'", "query", "status")
		}
		if q.Has("expand") {
			// Sentry's expand=settings adds code review settings, which
			// errata has none of.
			return invalid(valueErr, "errata has no repository fields to expand", "query", "expand")
		}
		repos, info, err := d.Store.Repositories(r.Context(), caller(r).UserID, org, q.Get("query"), page)
		if err != nil {
			return err
		}
		out := make([]repositoryOut, 0, len(repos))
		// No repository of errata's comes from an integration: a filter
		// by integration keeps none, as it keeps none in Sentry.
		if (status == "" || status == "active") && !q.Has("integration_id") {
			for _, repo := range repos {
				out = append(out, newRepositoryOut(repo))
			}
		} else {
			info = store.PageInfo{}
		}
		setPageHeaders(w, r, d.PublicURL, info)
		writeJSON(w, r, d.Log, http.StatusOK, out)
		return nil
	}
}

// handleRepositoryCreate serves POST organizations/{org}/repos/: a
// repository named by sentry-cli's set-commits, with the url and provider
// that set-commits --auto matches against the local git remotes.
func handleRepositoryCreate(d Deps) apiFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		org, err := pathSlug(r, "organization_slug")
		if err != nil {
			return err
		}
		var in repositoryIn
		if err := decodeJSON(w, r, &in); err != nil {
			return err
		}
		repo, err := in.repositoryInput()
		if err != nil {
			return err
		}
		created, err := d.Store.CreateRepository(r.Context(), caller(r).UserID, org, repo)
		if errors.Is(err, store.ErrConflict) {
			return errRepositoryExists
		}
		if err != nil {
			return err
		}
		writeJSON(w, r, d.Log, http.StatusCreated, newRepositoryOut(created))
		return nil
	}
}

// validRepositoryURL accepts the URLs git remotes have.
func validRepositoryURL(u string) bool {
	for _, scheme := range []string{"https://", "http://", "ssh://", "git://", "git@"} {
		if strings.HasPrefix(u, scheme) && len(u) > len(scheme) && len(u) <= 2000 {
			return true
		}
	}
	return false
}

func providerIDs() []string {
	var ids []string
	for id := range store.RepositoryProviders {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

// handleReleaseCommits serves GET releases/{version}/commits/ on the
// organization and project routes: the release's commits, newest first.
func handleReleaseCommits(d Deps) apiFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		org, project, version, err := releasePath(r)
		if err != nil {
			return err
		}
		page, err := readPage(r)
		if err != nil {
			return err
		}
		commits, info, err := d.Store.ReleaseCommits(r.Context(), caller(r).UserID, org, project, version, page)
		if err != nil {
			return err
		}
		writeCommitPage(w, r, d, commits, info)
		return nil
	}
}

// writeCommitPage answers a page of commits in the shape of a release's
// commit list, with its pagination headers.
func writeCommitPage(w http.ResponseWriter, r *http.Request, d Deps, commits []store.Commit, info store.PageInfo) {
	out := make([]releaseCommitOut, len(commits))
	for i, c := range commits {
		out[i] = newReleaseCommitOut(c)
	}
	setPageHeaders(w, r, d.PublicURL, info)
	writeJSON(w, r, d.Log, http.StatusOK, out)
}

// fileChangeOut is a file changed by a release's commit, as Sentry's
// commitfiles list writes it.
type fileChangeOut struct {
	ID            string     `json:"id"`
	OrgID         int64      `json:"orgId"`
	Author        *authorOut `json:"author"`
	CommitMessage *string    `json:"commitMessage"`
	Filename      string     `json:"filename"`
	Type          string     `json:"type"`
	RepoName      string     `json:"repoName"`
}

// handleReleaseFileChanges serves GET
// organizations/{org}/releases/{version}/commitfiles/: the files changed
// by the release's commits, newest commit first; ?repo_name= (repeated)
// keeps those of the named repositories.
func handleReleaseFileChanges(d Deps) apiFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		org, _, version, err := releasePath(r)
		if err != nil {
			return err
		}
		page, err := readPage(r)
		if err != nil {
			return err
		}
		repos := r.URL.Query()["repo_name"]
		for _, name := range repos {
			if utf8.RuneCountInString(name) > maxRepositoryName {
				return invalid(valueErr, "Expected a repository name of at most 200 characters", "query", "repo_name")
			}
		}
		changes, info, err := d.Store.ReleaseFileChanges(r.Context(), caller(r).UserID, org, version, repos, page)
		if err != nil {
			return err
		}
		out := make([]fileChangeOut, len(changes))
		for i, fc := range changes {
			c := newCommitOut(fc.Commit)
			out[i] = fileChangeOut{ID: strconv.FormatInt(fc.ID, 10), OrgID: fc.OrgID, Author: c.Author,
				CommitMessage: c.Message, Filename: fc.Filename, Type: fc.Type, RepoName: c.Repository.Name}
		}
		setPageHeaders(w, r, d.PublicURL, info)
		writeJSON(w, r, d.Log, http.StatusOK, out)
		return nil
	}
}

// handlePreviousWithCommits serves GET
// organizations/{org}/releases/{version}/previous-with-commits/: the
// latest earlier release with commits that shares a project with this
// one, or {} when there is none (sentry-cli's set-commits --local starts
// from its last commit).
func handlePreviousWithCommits(d Deps) apiFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		org, _, version, err := releasePath(r)
		if err != nil {
			return err
		}
		rel, found, err := d.Store.PreviousReleaseWithCommits(r.Context(), caller(r).UserID, org, version)
		if err != nil {
			return err
		}
		if !found {
			writeJSON(w, r, d.Log, http.StatusOK, struct{}{})
			return nil
		}
		writeJSON(w, r, d.Log, http.StatusOK, newReleaseOut(rel))
		return nil
	}
}
