package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// Repository is a source repository of an organization, named by commits
// and refs. Provider is nil for a repository that commits named (Sentry's
// "unknown" provider).
type Repository struct {
	ID          int64
	Name        string
	URL         *string
	Provider    *string
	DateCreated time.Time
}

// CommitAuthor is the author of commits, known by email.
type CommitAuthor struct {
	Name  *string
	Email string
}

// Commit is a commit of a repository.
type Commit struct {
	ID         int64
	Key        string // the commit's SHA, as sent
	Message    *string
	DateAdded  time.Time
	Author     *CommitAuthor
	Repository Repository
	// Releases are the releases that hold the commit, newest first; only
	// ReleaseCommits reads them.
	Releases []CommitRelease
}

// CommitRelease is a release that holds a commit.
type CommitRelease struct {
	Version      string
	Ref          *string
	URL          *string
	DateReleased *time.Time
	DateCreated  time.Time
}

// CommitInput is a commit as sentry-cli's set-commits sends it. A nil
// Timestamp is now for a new commit and keeps an existing commit's date.
type CommitInput struct {
	ID          string
	Repository  string // "" for the organization's default repository
	Message     *string
	AuthorName  *string
	AuthorEmail *string
	Timestamp   *time.Time
	PatchSet    []FileChange
}

// FileChange is a file a commit added (A), modified (M) or deleted (D).
type FileChange struct {
	Path string
	Type string
}

// RefInput names a repository's head commit in a release and, optionally,
// the head commit of its previous release.
type RefInput struct {
	Repository     string
	Commit         string
	PreviousCommit *string
}

// ErrUnknownRepository is returned when a ref names a repository the
// organization does not have.
var ErrUnknownRepository = errors.New("store: unknown repository")

// RepositoryProviders are the providers a repository may name, with their
// display names: the ids sentry-cli's set-commits --auto recognises. errata
// reads no provider; the id tells sentry-cli which repositories it may
// match against the local git remotes.
var RepositoryProviders = map[string]string{
	"git":                            "Git",
	"github":                         "GitHub",
	"bitbucket":                      "Bitbucket",
	"visualstudio":                   "Visual Studio",
	"google":                         "Google Cloud Source Repositories",
	"integrations:github":            "GitHub",
	"integrations:github_enterprise": "GitHub Enterprise",
	"integrations:gitlab":            "GitLab",
	"integrations:bitbucket":         "Bitbucket",
	"integrations:bitbucket_server":  "Bitbucket Server",
	"integrations:vsts":              "Azure DevOps",
}

// RepositoryInput is a repository to create.
type RepositoryInput struct {
	Name     string
	URL      *string
	Provider *string
}

// CreateRepository adds a repository to the organization orgSlug, of which
// userID must be a member. A name already taken is ErrConflict.
func (s *Store) CreateRepository(ctx context.Context, userID int64, orgSlug string, in RepositoryInput) (Repository, error) {
	var repo Repository
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		org, err := orgIDForMember(ctx, tx, userID, orgSlug)
		if err != nil {
			return err
		}
		err = tx.QueryRow(ctx, `
			INSERT INTO repositories (organization_id, name, url, provider)
			VALUES ($1, $2, $3, $4)
			RETURNING id, name, url, provider, date_created`,
			org, in.Name, in.URL, in.Provider).Scan(&repo.ID, &repo.Name, &repo.URL, &repo.Provider, &repo.DateCreated)
		return wrap(err)
	})
	return repo, err
}

// Repositories lists a page of the repositories of the organization
// orgSlug, of which userID must be a member, newest first; query, when not
// empty, keeps those whose name contains it (ignoring case).
func (s *Store) Repositories(ctx context.Context, userID int64, orgSlug, query string, page Page) ([]Repository, PageInfo, error) {
	return list(ctx, s.pool, listQuery{
		cols: "r.id, r.name, r.url, r.provider, r.date_created",
		from: `FROM repositories r WHERE r.organization_id = (` + memberOrg + `)
			AND ($3 = '' OR strpos(lower(r.name), lower($3)) > 0)`,
		args:       []any{userID, orgSlug, query},
		scope:      memberOrg,
		missing:    fmt.Errorf("organization %q: %w", orgSlug, ErrNotFound),
		createdCol: "r.date_created",
		idCol:      "r.id",
	}, page, func(rows pgx.Rows) (Repository, Key, error) {
		var r Repository
		err := rows.Scan(&r.ID, &r.Name, &r.URL, &r.Provider, &r.DateCreated)
		return r, Key{Created: r.DateCreated, ID: r.ID}, err
	})
}

// commitColumns are the columns of a commit with its author and
// repository, from commitJoins; scanCommit reads them.
const (
	commitColumns = `c.id, c.key, c.message, c.date_added, a.name, a.email,
		rp.id, rp.name, rp.url, rp.provider, rp.date_created`
	commitJoins = `
		FROM commits c
		JOIN repositories rp ON rp.id = c.repository_id
		LEFT JOIN commit_authors a ON a.id = c.author_id`
)

// scanCommit reads commitColumns, and into more the columns a
// query selects after them.
func scanCommit(row pgx.Row, more ...any) (Commit, error) {
	var c Commit
	var name, email *string
	err := row.Scan(append([]any{&c.ID, &c.Key, &c.Message, &c.DateAdded, &name, &email,
		&c.Repository.ID, &c.Repository.Name, &c.Repository.URL, &c.Repository.Provider, &c.Repository.DateCreated},
		more...)...)
	if email != nil {
		c.Author = &CommitAuthor{Name: name, Email: *email}
	}
	return c, err
}

// ReleaseCommits lists a page of the commits of the release version of
// the organization orgSlug (linked to projectSlug when it is not empty),
// newest first, and in the order they were sent when their dates are
// equal: the key's id is the commit's position in the release, negated.
// userID must be a member of the organization.
func (s *Store) ReleaseCommits(ctx context.Context, userID int64, orgSlug, projectSlug, version string, page Page) ([]Commit, PageInfo, error) {
	release := `SELECT r.id FROM releases r` + releaseWhere
	return list(ctx, s.pool, listQuery{
		from: `FROM release_commits rc JOIN commits c ON c.id = rc.commit_id
			WHERE rc.release_id = (` + release + `)`,
		page: `SELECT ` + commitColumns + `, -rc."order", ` + commitReleases + commitJoins + `
			JOIN release_commits rc ON rc.commit_id = c.id
			WHERE rc.release_id = (` + release + `)`,
		args:       []any{userID, orgSlug, version, projectSlug},
		scope:      release,
		missing:    fmt.Errorf("release %q: %w", version, ErrNotFound),
		createdCol: "c.date_added",
		idCol:      `-rc."order"`,
	}, page, func(rows pgx.Rows) (Commit, Key, error) {
		var position int64
		var releases []byte
		c, err := scanCommit(rows, &position, &releases)
		if err == nil {
			err = json.Unmarshal(releases, &c.Releases)
		}
		return c, Key{Created: c.DateAdded, ID: position}, err
	})
}

// commitReleases is the column of the releases that hold the commit c, a
// JSON list newest first (release_commits_commit_idx finds them). A
// commit belongs to one organization, and so do the releases that hold it.
const commitReleases = `(SELECT coalesce(json_agg(json_build_object('version', x.version, 'ref', x.ref, 'url', x.url,
		'dateReleased', x.date_released, 'dateCreated', x.date_created) ORDER BY x.date_created DESC, x.id DESC), '[]')
	FROM release_commits y JOIN releases x ON x.id = y.release_id
	WHERE y.commit_id = c.id AND x.organization_id = c.organization_id)`

// CommitFileChange is a file changed by a commit of a release, with the
// commit it belongs to.
type CommitFileChange struct {
	ID       int64
	OrgID    int64
	Filename string
	Type     string
	Commit   Commit
}

// ReleaseFileChanges lists a page of the files changed by the commits of
// the release version of orgSlug, newest commit first; repos, when not
// empty, keeps the changes of the repositories of those names. userID must
// be a member of the organization.
func (s *Store) ReleaseFileChanges(ctx context.Context, userID int64, orgSlug, version string, repos []string, page Page) ([]CommitFileChange, PageInfo, error) {
	release := `SELECT r.id FROM releases r` + releaseWhere
	where := `
		WHERE c.id IN (SELECT rc.commit_id FROM release_commits rc WHERE rc.release_id = (` + release + `))
			AND (cardinality($5::text[]) = 0 OR rp.name = ANY ($5))`
	if repos == nil {
		repos = []string{}
	}
	return list(ctx, s.pool, listQuery{
		from: `FROM commit_file_changes fc JOIN commits c ON c.id = fc.commit_id
			JOIN repositories rp ON rp.id = c.repository_id` + where,
		page: `SELECT ` + commitColumns + `, fc.id, c.organization_id, fc.filename, fc.type` + commitJoins + `
			JOIN commit_file_changes fc ON fc.commit_id = c.id` + where,
		args:       []any{userID, orgSlug, version, "", repos},
		scope:      release,
		missing:    fmt.Errorf("release %q: %w", version, ErrNotFound),
		createdCol: "c.date_added",
		idCol:      "fc.id",
	}, page, func(rows pgx.Rows) (CommitFileChange, Key, error) {
		var fc CommitFileChange
		c, err := scanCommit(rows, &fc.ID, &fc.OrgID, &fc.Filename, &fc.Type)
		fc.Commit = c
		return fc, Key{Created: c.DateAdded, ID: fc.ID}, err
	})
}

// PreviousReleaseWithCommits returns the release with commits that came
// before the release version of orgSlug (by release date, or creation date
// when not released) and shares a project with it: where sentry-cli's
// set-commits --local starts the commits of a new release. found is false
// when there is none. userID must be a member of the organization.
func (s *Store) PreviousReleaseWithCommits(ctx context.Context, userID int64, orgSlug, version string) (rel Release, found bool, err error) {
	err = s.read(ctx, func(q querier) error {
		var id int64
		err := q.QueryRow(ctx, `SELECT r.id FROM releases r`+releaseWhere,
			userID, orgSlug, version, "").Scan(&id)
		if err != nil {
			return fmt.Errorf("release %q: %w", version, wrap(err))
		}
		var prev int64
		err = q.QueryRow(ctx, `
			SELECT p.id FROM releases r, releases p
			WHERE r.id = $1 AND p.organization_id = r.organization_id AND p.id <> r.id
				AND p.last_commit_id IS NOT NULL
				AND coalesce(p.date_released, p.date_created) <= coalesce(r.date_released, r.date_created)
				AND EXISTS (SELECT 1 FROM release_projects a JOIN release_projects b ON a.project_id = b.project_id
					WHERE a.release_id = r.id AND b.release_id = p.id)
			ORDER BY coalesce(p.date_released, p.date_created) DESC, p.id DESC
			LIMIT 1`, id).Scan(&prev)
		if errors.Is(err, pgx.ErrNoRows) {
			return nil
		}
		if err != nil {
			return wrap(err)
		}
		found = true
		rel, err = releaseByID(ctx, q, prev)
		return wrap(err)
	})
	return rel, found, err
}

// authorEmail is the email a commit's author is known by: the email sent,
// or, as Sentry does, one made from the name when only a name is sent.
// Sentry keeps 75 characters of it.
func authorEmail(c CommitInput) string {
	email := ""
	if c.AuthorEmail != nil {
		email = *c.AuthorEmail
	} else if c.AuthorName != nil && *c.AuthorName != "" {
		email = strings.ToLower(notEmailChars.ReplaceAllString(*c.AuthorName, "")) + "@localhost"
	}
	if r := []rune(email); len(r) > 75 {
		email = string(r[:75])
	}
	return email
}

var notEmailChars = regexp.MustCompile(`[^a-zA-Z0-9\-_.]`)

// defaultRepository is the repository of commits that name none, as
// Sentry names it.
func defaultRepository(org int64) string { return fmt.Sprintf("organization-%d", org) }

// setCommits replaces the commits of the release of org with commits,
// newest first by timestamp (a commit without one last), as Sentry's
// set_commits does: the repositories and authors they name are created
// when missing, known commits gain the message, author and date sent,
// their file changes are added, each repository's newest commit becomes
// its head commit when the release has none, and the release's commit
// count, last commit and authors follow. The release row must be locked.
func setCommits(ctx context.Context, tx pgx.Tx, org, release int64, commits []CommitInput) error {
	commits = slices.Clone(commits)
	slices.SortStableFunc(commits, func(a, b CommitInput) int {
		switch {
		case a.Timestamp == nil && b.Timestamp == nil:
			return 0
		case a.Timestamp == nil:
			return 1
		case b.Timestamp == nil:
			return -1
		}
		return b.Timestamp.Compare(*a.Timestamp)
	})
	for i := range commits {
		if commits[i].Repository == "" {
			commits[i].Repository = defaultRepository(org)
		}
	}
	if _, err := tx.Exec(ctx, `DELETE FROM release_commits WHERE release_id = $1`, release); err != nil {
		return err
	}
	repos, err := ensureRepositories(ctx, tx, org, commits)
	if err != nil {
		return err
	}
	authors, err := ensureAuthors(ctx, tx, org, commits)
	if err != nil {
		return err
	}

	// One row per commit: the first of a repeated commit (the newest)
	// says what it is.
	type key struct {
		repo int64
		sha  string
	}
	var (
		seen                     = map[key]int{}
		repoIDs, authorIDs       []int64
		keys                     []string
		messages                 []*string
		dates                    []*time.Time
		changeCommit             []int
		changePaths, changeTypes []string
	)
	for _, c := range commits {
		k := key{repos[c.Repository], c.ID}
		i, ok := seen[k]
		if !ok {
			i = len(keys)
			seen[k] = i
			repoIDs = append(repoIDs, k.repo)
			keys = append(keys, c.ID)
			messages = append(messages, c.Message)
			dates = append(dates, c.Timestamp)
			authorIDs = append(authorIDs, authors[authorEmail(c)]) // 0: none
		}
		for _, f := range c.PatchSet {
			changeCommit = append(changeCommit, i)
			changePaths = append(changePaths, f.Path)
			changeTypes = append(changeTypes, f.Type)
		}
	}
	// Known commits gain what is sent; then the new ones are added (and
	// every one's id returned: the no-op update of a commit that exists
	// returns it too).
	const sent = `unnest($2::bigint[], $3::text[], $4::text[], $5::bigint[], $6::timestamptz[])
		AS u (repo, key, message, author, date)`
	if _, err := tx.Exec(ctx, `
		UPDATE commits c SET
			message = coalesce(u.message, c.message),
			author_id = coalesce(nullif(u.author, 0), c.author_id),
			date_added = coalesce(u.date, c.date_added)
		FROM `+sent+`
		WHERE c.organization_id = $1 AND c.repository_id = u.repo AND c.key = u.key`,
		org, repoIDs, keys, messages, authorIDs, dates); err != nil {
		return err
	}
	rows, err := tx.Query(ctx, `
		INSERT INTO commits (organization_id, repository_id, key, message, author_id, date_added)
		SELECT $1, u.repo, u.key, u.message, nullif(u.author, 0), coalesce(u.date, now())
		FROM `+sent+`
		ON CONFLICT (repository_id, key) DO UPDATE SET key = EXCLUDED.key
		RETURNING id, repository_id, key`,
		org, repoIDs, keys, messages, authorIDs, dates)
	if err != nil {
		return err
	}
	ids := make([]int64, len(keys))
	for rows.Next() {
		var id, repo int64
		var sha string
		if err := rows.Scan(&id, &repo, &sha); err != nil {
			rows.Close()
			return err
		}
		ids[seen[key{repo, sha}]] = id
	}
	if err := rows.Err(); err != nil {
		return err
	}

	changeIDs := make([]int64, len(changeCommit))
	for j, i := range changeCommit {
		changeIDs[j] = ids[i]
	}
	order := make([]int32, len(ids))
	for i := range order {
		order[i] = int32(i)
	}
	batch := &pgx.Batch{}
	batch.Queue(`
		INSERT INTO commit_file_changes (commit_id, filename, type)
		SELECT * FROM unnest($1::bigint[], $2::text[], $3::text[])
		ON CONFLICT DO NOTHING`, changeIDs, changePaths, changeTypes)
	batch.Queue(`
		INSERT INTO release_commits (release_id, commit_id, "order")
		SELECT $1, * FROM unnest($2::bigint[], $3::int[])`, release, ids, order)
	// The newest commit of each repository is its head commit, unless
	// refs named one.
	batch.Queue(`
		INSERT INTO release_head_commits (release_id, repository_id, commit_id)
		SELECT DISTINCT ON (h.repo) $1, h.repo, h.id
		FROM unnest($2::bigint[], $3::bigint[]) WITH ORDINALITY AS h (id, repo, n)
		ORDER BY h.repo, h.n
		ON CONFLICT DO NOTHING`, release, ids, repoIDs)
	batch.Queue(releaseCommitSummary, release)
	return tx.SendBatch(ctx, batch).Close()
}

// releaseCommitSummary sets the commit count, last commit and authors of
// the release $1 from its commits.
const releaseCommitSummary = `
	UPDATE releases r SET
		commit_count = (SELECT count(*) FROM release_commits WHERE release_id = r.id),
		last_commit_id = (SELECT commit_id FROM release_commits WHERE release_id = r.id ORDER BY "order" LIMIT 1),
		authors = coalesce((SELECT array_agg(DISTINCT c.author_id ORDER BY c.author_id)
			FROM release_commits rc JOIN commits c ON c.id = rc.commit_id
			WHERE rc.release_id = r.id AND c.author_id IS NOT NULL), '{}')
	WHERE r.id = $1`

// ensureRepositories returns the ids of the repositories commits name,
// creating those the organization does not have.
func ensureRepositories(ctx context.Context, tx pgx.Tx, org int64, commits []CommitInput) (map[string]int64, error) {
	var names []string
	for _, c := range commits {
		names = append(names, c.Repository)
	}
	slices.Sort(names)
	names = slices.Compact(names)
	// The no-op update returns the repositories that exist too.
	rows, err := tx.Query(ctx, `
		INSERT INTO repositories (organization_id, name)
		SELECT $1, unnest($2::text[])
		ON CONFLICT (organization_id, name) DO UPDATE SET name = EXCLUDED.name
		RETURNING id, name`, org, names)
	if err != nil {
		return nil, err
	}
	ids := map[string]int64{}
	for rows.Next() {
		var id int64
		var name string
		if err := rows.Scan(&id, &name); err != nil {
			rows.Close()
			return nil, err
		}
		ids[name] = id
	}
	return ids, rows.Err()
}

// ensureAuthors returns the ids of the authors of commits by email,
// creating those the organization does not have and giving known ones the
// name sent (the first commit of an author says it, as in Sentry).
func ensureAuthors(ctx context.Context, tx pgx.Tx, org int64, commits []CommitInput) (map[string]int64, error) {
	var emails []string
	var names []*string
	seen := map[string]bool{}
	for _, c := range commits {
		email := authorEmail(c)
		if email == "" || seen[email] {
			continue
		}
		seen[email] = true
		emails = append(emails, email)
		names = append(names, c.AuthorName)
	}
	rows, err := tx.Query(ctx, `
		INSERT INTO commit_authors (organization_id, email, name)
		SELECT $1, * FROM unnest($2::text[], $3::text[])
		ON CONFLICT (organization_id, email) DO UPDATE SET name = EXCLUDED.name
		RETURNING id, email`, org, emails, names)
	if err != nil {
		return nil, err
	}
	ids := map[string]int64{}
	for rows.Next() {
		var id int64
		var email string
		if err := rows.Scan(&id, &email); err != nil {
			rows.Close()
			return nil, err
		}
		ids[email] = id
	}
	return ids, rows.Err()
}

// setRefs records each ref's commit as the head commit of its repository
// in the release of org (with the previous release's head, when sent),
// as Sentry's set_refs does. A repository the organization does not have
// is ErrUnknownRepository. Sentry would then fetch the commits between the
// two from the repository's provider; errata has no provider, so when no
// commits came with the refs, the release's commits become the head
// commits, the ones errata knows to be in it. The release row must be
// locked.
func setRefs(ctx context.Context, tx pgx.Tx, org, release int64, refs []RefInput, withCommits bool) error {
	names := make([]string, len(refs))
	for i, r := range refs {
		names[i] = r.Repository
	}
	rows, err := tx.Query(ctx, `SELECT id, name FROM repositories WHERE organization_id = $1 AND name = ANY($2)`, org, names)
	if err != nil {
		return err
	}
	byName := map[string]int64{}
	for rows.Next() {
		var id int64
		var name string
		if err := rows.Scan(&id, &name); err != nil {
			rows.Close()
			return err
		}
		byName[name] = id
	}
	if err := rows.Err(); err != nil {
		return err
	}
	var unknown []string
	for _, n := range names {
		if _, ok := byName[n]; !ok && !slices.Contains(unknown, n) {
			unknown = append(unknown, n)
		}
	}
	if len(unknown) > 0 {
		return fmt.Errorf("%w: %s", ErrUnknownRepository, strings.Join(unknown, ", "))
	}
	if !withCommits {
		if _, err := tx.Exec(ctx, `DELETE FROM release_commits WHERE release_id = $1`, release); err != nil {
			return err
		}
	}
	for i, r := range refs {
		repo := byName[r.Repository]
		var commit int64
		err := tx.QueryRow(ctx, `
			INSERT INTO commits (organization_id, repository_id, key) VALUES ($1, $2, $3)
			ON CONFLICT (repository_id, key) DO UPDATE SET key = EXCLUDED.key
			RETURNING id`,
			org, repo, r.Commit).Scan(&commit)
		if err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `
			INSERT INTO release_head_commits (release_id, repository_id, commit_id, previous_commit)
			VALUES ($1, $2, $3, $4)
			ON CONFLICT (release_id, repository_id) DO UPDATE SET
				commit_id = EXCLUDED.commit_id, previous_commit = EXCLUDED.previous_commit`,
			release, repo, commit, r.PreviousCommit); err != nil {
			return err
		}
		if !withCommits {
			if _, err := tx.Exec(ctx, `
				INSERT INTO release_commits (release_id, commit_id, "order") VALUES ($1, $2, $3)
				ON CONFLICT DO NOTHING`, release, commit, i); err != nil {
				return err
			}
		}
	}
	_, err = tx.Exec(ctx, releaseCommitSummary, release)
	return err
}

// ReleaseCommitsInput is what a release body says of the release's
// commits. Commits, when not nil, replaces them; Refs, when not nil, sets
// the head commits of repositories; an empty list (of either, and none
// that is not empty) clears the release's commits, as sentry-cli's
// set-commits --clear asks.
type ReleaseCommitsInput struct {
	Commits *[]CommitInput
	Refs    *[]RefInput
}

// commitsLockClass is the first key of the advisory lock that orders
// the commit writes of an organization (the two-key form, apart from the
// blobs' one-key locks).
const commitsLockClass = 1

// apply stores in into the release of org, whose row must be locked.
// Releases of one organization share repositories, authors and commits,
// which their writes would otherwise lock in the order each body lists
// them, and deadlock: the organization's writes of commits take turns.
func (in ReleaseCommitsInput) apply(ctx context.Context, tx pgx.Tx, org, release int64) error {
	if in.Commits == nil && in.Refs == nil {
		return nil
	}
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1, hashint8($2))`, commitsLockClass, org); err != nil {
		return err
	}
	var commits []CommitInput
	var refs []RefInput
	if in.Commits != nil {
		commits = *in.Commits
	}
	if in.Refs != nil {
		refs = *in.Refs
	}
	if len(commits) > 0 {
		if err := setCommits(ctx, tx, org, release, commits); err != nil {
			return err
		}
	}
	if len(refs) > 0 {
		return setRefs(ctx, tx, org, release, refs, len(commits) > 0)
	}
	if len(commits) == 0 && (in.Commits != nil || in.Refs != nil) {
		return clearCommits(ctx, tx, release)
	}
	return nil
}

// clearCommits removes the commits and head commits of the release.
func clearCommits(ctx context.Context, tx pgx.Tx, release int64) error {
	batch := &pgx.Batch{}
	batch.Queue(`DELETE FROM release_commits WHERE release_id = $1`, release)
	batch.Queue(`DELETE FROM release_head_commits WHERE release_id = $1`, release)
	batch.Queue(releaseCommitSummary, release)
	return tx.SendBatch(ctx, batch).Close()
}
