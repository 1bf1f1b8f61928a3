package store

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// DifAssembleJobKind is the kind of the jobs that assemble uploaded chunks
// into debug information files.
const DifAssembleJobKind = "assemble_dif"

// difAssembleMaxAttempts bounds the runs of one debug file assembly; a file
// that is not a debug file ends it at once.
const difAssembleMaxAttempts = 3

// DifAssemblyJob is the payload of an assemble_dif job.
type DifAssemblyJob struct {
	OrganizationID int64    `json:"organizationId"`
	ProjectID      int64    `json:"projectId"`
	Name           string   `json:"name"`
	DebugID        *string  `json:"debugId"`
	Checksum       string   `json:"checksum"`
	Chunks         []string `json:"chunks"`
	// Supersede is set when the uploader may delete debug files: only
	// then does the new file remove the older ones it covers.
	Supersede bool `json:"supersede,omitempty"`
}

func (j DifAssemblyJob) uniqueKey() string {
	b, _ := json.Marshal(j) // plain fields always encode
	sum := sha256.Sum256(b)
	return DifAssembleJobKind + ":" + hex.EncodeToString(sum[:])
}

// DifRequest is one file of a debug file assembly request: its checksum,
// name, the debug id the client read from it (nil: none), and its chunks.
type DifRequest struct {
	Checksum string
	Name     string
	DebugID  *string
	Chunks   []string
}

// DifStatus is where the assembly of one file stands, in Sentry's states:
// not_found (with the chunks the organization lacks), created, assembling,
// ok (with the debug file) or error (with a detail).
type DifStatus struct {
	State         string
	MissingChunks []string
	Detail        *string
	Dif           *DebugFile
}

// DebugFile is a debug information file of a project: one object of an
// uploaded file.
type DebugFile struct {
	ID          int64
	Checksum    string
	DebugID     string
	CodeID      *string
	ObjectName  string
	CPUName     string
	FileFormat  string
	Type        *string
	Features    []string
	Size        int64
	DateCreated time.Time
}

// DebugFileObject is what a reader found in an uploaded file: one object.
type DebugFileObject struct {
	DebugID    string
	CodeID     string
	ObjectName string
	CPUName    string
	FileFormat string
	Type       string
	Features   []string
}

// difRequeueAfter is how long an assembly that ended in error keeps its
// answer: an upload of the same file after it runs it again.
const difRequeueAfter = time.Minute

// AssembleDifs answers a debug file assembly request for the project sc
// names, one status per request, in order. A file the project has already
// (the same checksum) is ok at once, without its chunks; a file whose
// chunks the organization lacks is not_found with them; any other is
// assembled by a job, enqueued in the same transaction, whose state the
// status reports. Asking again reports on the same job. supersede is as
// for SaveDebugFiles.
func (s *Store) AssembleDifs(ctx context.Context, sc ProjectScope, reqs []DifRequest, supersede bool) ([]DifStatus, error) {
	out := make([]DifStatus, len(reqs))
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		org, project, err := projectIDForMember(ctx, tx, sc.UserID, sc.OrgSlug, sc.ProjectSlug)
		if err != nil {
			return err
		}
		for i, req := range reqs {
			st := &out[i]
			st.MissingChunks = []string{}
			dif, err := scanDebugFile(tx.QueryRow(ctx, `
				SELECT `+debugFileCols+` FROM debug_files d JOIN files f ON f.id = d.file_id
				WHERE d.project_id = $1 AND d.checksum = $2
				ORDER BY (d.debug_id = $3) DESC, d.id DESC LIMIT 1`, project, req.Checksum, req.DebugID))
			if err == nil {
				// Confirmed as stored: its file is used again, so that
				// retention does not remove what was just answered ok.
				if _, err := tx.Exec(ctx, renewDebugFile, dif.ID); err != nil {
					return err
				}
				st.State, st.Dif = "ok", &dif
				continue
			}
			if !errors.Is(err, pgx.ErrNoRows) {
				return err
			}
			if len(req.Chunks) == 0 {
				detail := "The file is empty"
				st.State, st.Detail = "error", &detail
				continue
			}
			missing, err := missingChunks(ctx, tx, org, req.Chunks)
			if err != nil {
				return err
			}
			if len(missing) > 0 {
				st.State, st.MissingChunks = "not_found", missing
				continue
			}
			job := DifAssemblyJob{
				OrganizationID: org, ProjectID: project, Name: req.Name, DebugID: req.DebugID,
				Checksum: req.Checksum, Chunks: req.Chunks, Supersede: supersede,
			}
			id, err := enqueueJob(ctx, tx, DifAssembleJobKind, job.uniqueKey(), job, difAssembleMaxAttempts)
			if err != nil {
				return err
			}
			// A finished assembly whose files were deleted since, or one
			// that failed a while ago, runs again.
			var state string
			var lastError *string
			err = tx.QueryRow(ctx, `
				WITH requeued AS (
					UPDATE jobs SET state = 'queued', attempts = 0, run_at = now(), last_error = NULL, date_updated = now()
					WHERE id = $1 AND (state = 'done' OR (state = 'error' AND date_updated < now() - make_interval(secs => $2)))
					RETURNING state, last_error)
				SELECT state, last_error FROM requeued
				UNION ALL SELECT state, last_error FROM jobs WHERE id = $1 AND NOT EXISTS (SELECT 1 FROM requeued)`,
				id, difRequeueAfter.Seconds()).Scan(&state, &lastError)
			if err != nil {
				return err
			}
			switch state {
			case "queued":
				st.State = "created"
			case "running":
				st.State = "assembling"
			default:
				st.State, st.Detail = "error", lastError
			}
		}
		return nil
	})
	return out, err
}

// renewDebugFile marks the file of debug file $1 as used now, as an upload
// does (retention counts from the last use).
const renewDebugFile = `
	UPDATE files f SET date_used = now() FROM debug_files d
	WHERE d.id = $1 AND f.id = d.file_id AND f.date_used < now() - interval '1 second'`

// SaveDebugFiles stores the checked file pf, uploaded as one file of
// project projectID, and one debug file per object of objs, in one
// transaction, and returns them. A debug file the project has already
// (same checksum and debug id) is kept as it is, and its file counts as
// used again. With supersede (the uploader may delete debug files), an
// older debug file with the same debug id whose features the new one
// covers is removed, as Sentry does; without, it stays.
func (s *Store) SaveDebugFiles(ctx context.Context, projectID int64, pf PendingFile, objs []DebugFileObject, supersede bool) ([]DebugFile, error) {
	var out []DebugFile
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		out = nil
		f, err := storeFile(ctx, tx, pf)
		if err != nil {
			return err
		}
		return saveDebugFileRows(ctx, tx, projectID, f, objs, supersede, &out)
	})
	return out, err
}

func saveDebugFileRows(ctx context.Context, tx pgx.Tx, projectID int64, f File, objs []DebugFileObject, supersede bool, out *[]DebugFile) error {
	for _, o := range objs {
		features := o.Features
		if features == nil {
			features = []string{}
		}
		data := map[string]any{"features": features}
		if o.Type != "" {
			data["type"] = o.Type
		}
		body, err := json.Marshal(data)
		if err != nil {
			return err
		}
		var codeID *string
		if o.CodeID != "" {
			codeID = &o.CodeID
		}
		var id int64
		err = tx.QueryRow(ctx, `
			INSERT INTO debug_files (project_id, file_id, checksum, debug_id, code_id, object_name, cpu_name, file_format, data)
			SELECT $1, $2, f.sha1, $3, $4, $5, $6, $7, $8 FROM files f WHERE f.id = $2
			ON CONFLICT (project_id, checksum, debug_id) DO UPDATE SET debug_id = EXCLUDED.debug_id
			RETURNING id`,
			projectID, f.ID, o.DebugID, codeID, o.ObjectName, o.CPUName, o.FileFormat, body).Scan(&id)
		if err != nil {
			return err
		}
		// A debug file the project had already keeps its file, which is
		// used again: an upload the server confirms must not expire the
		// next day.
		if _, err := tx.Exec(ctx, renewDebugFile, id); err != nil {
			return err
		}
		if supersede {
			if _, err := tx.Exec(ctx, `
				DELETE FROM debug_files d
				WHERE d.project_id = $1 AND d.debug_id = $2 AND d.id <> $3 AND d.id < $3
				  AND $4::jsonb @> COALESCE(d.data->'features', '[]'::jsonb)`,
				projectID, o.DebugID, id, mustJSON(features)); err != nil {
				return err
			}
		}
		d, err := scanDebugFile(tx.QueryRow(ctx, `
			SELECT `+debugFileCols+` FROM debug_files d JOIN files f ON f.id = d.file_id WHERE d.id = $1`, id))
		if err != nil {
			return err
		}
		*out = append(*out, d)
	}
	return nil
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v) // strings always encode
	return string(b)
}

// DebugUpload is one file of a debug file upload that comes whole: its
// content, already read and checked, and the objects found in it.
type DebugUpload struct {
	Content io.ReadSeeker
	Objects []DebugFileObject
}

// CreateDebugFiles stores each upload as a file of the organization of the
// project sc names, with one debug file of the project per object, and
// returns the debug files: all of them, or none when it fails. The
// storage quota is checked for all the uploads together before anything
// is stored; files stored before a later failure are referenced by no
// debug file, and the collector removes them. supersede is as for
// SaveDebugFiles. It serves uploads that come whole rather than in chunks
// (sentry-cli 2.x's files/dsyms/).
func (s *Store) CreateDebugFiles(ctx context.Context, sc ProjectScope, uploads []DebugUpload, supersede bool) ([]DebugFile, error) {
	orgID, projectID, err := projectIDForMember(ctx, s.pool, sc.UserID, sc.OrgSlug, sc.ProjectSlug)
	if err != nil {
		return nil, err
	}
	contents := make([]io.ReadSeeker, len(uploads))
	for i, u := range uploads {
		contents[i] = u.Content
	}
	if err := s.CheckQuota(ctx, orgID, contents...); err != nil {
		return nil, err
	}
	files := make([]File, len(uploads))
	for i, u := range uploads {
		if files[i], err = s.createFile(ctx, orgID, u.Content); err != nil {
			return nil, err
		}
	}
	var out []DebugFile
	err = s.inTx(ctx, func(tx pgx.Tx) error {
		out = []DebugFile{}
		for i, u := range uploads {
			stored, err := storeFile(ctx, tx, PendingFile{File: files[i], OrganizationID: orgID})
			if err != nil {
				return err
			}
			if stored.ID != files[i].ID {
				return fmt.Errorf("file %d was collected meanwhile: %w", files[i].ID, ErrMissingChunks)
			}
			if err := saveDebugFileRows(ctx, tx, projectID, stored, u.Objects, supersede, &out); err != nil {
				return err
			}
		}
		return nil
	})
	return out, err
}

// CheckProject reports ErrNotFound unless the caller of sc can see its
// project: an upload checks it before it reads a body.
func (s *Store) CheckProject(ctx context.Context, sc ProjectScope) error {
	_, _, err := projectIDForMember(ctx, s.pool, sc.UserID, sc.OrgSlug, sc.ProjectSlug)
	return err
}

const debugFileCols = `d.id, d.checksum, d.debug_id, d.code_id, d.object_name, d.cpu_name, d.file_format,
	d.data, f.size, d.date_created`

func scanDebugFile(row pgx.Row, extra ...any) (DebugFile, error) {
	var d DebugFile
	var data []byte
	err := row.Scan(append([]any{&d.ID, &d.Checksum, &d.DebugID, &d.CodeID, &d.ObjectName, &d.CPUName,
		&d.FileFormat, &data, &d.Size, &d.DateCreated}, extra...)...)
	if err != nil {
		return d, err
	}
	var m struct {
		Type     *string  `json:"type"`
		Features []string `json:"features"`
	}
	if err := json.Unmarshal(data, &m); err != nil {
		return d, fmt.Errorf("debug file %d data: %w", d.ID, err)
	}
	d.Type, d.Features = m.Type, m.Features
	if d.Features == nil {
		d.Features = []string{}
	}
	return d, nil
}

// debugFileFrom selects the debug files of a project scope; its
// placeholders are $1 user, $2 organization slug, $3 project slug.
const debugFileFrom = `
	FROM debug_files d
	JOIN files f ON f.id = d.file_id
	JOIN projects p ON p.id = d.project_id AND p.slug = $3
	JOIN organizations o ON o.id = p.organization_id AND o.slug = $2
	JOIN memberships m ON m.organization_id = o.id AND m.user_id = $1
	WHERE true`

// DebugFileFilter narrows a list of debug files; zero values keep all.
type DebugFileFilter struct {
	// Query keeps files whose debug id or code id is Query, or whose object
	// name contains it (in any case).
	Query   string
	DebugID string   // in Sentry's form
	CodeID  string   // lowercase
	Formats []string // file formats
}

// DebugFiles lists a page of the debug files of the project sc names,
// newest first. A project the caller cannot see is ErrNotFound.
func (s *Store) DebugFiles(ctx context.Context, sc ProjectScope, filter DebugFileFilter, page Page) ([]DebugFile, PageInfo, error) {
	from := debugFileFrom
	args := []any{sc.UserID, sc.OrgSlug, sc.ProjectSlug}
	arg := func(v any) string {
		args = append(args, v)
		return fmt.Sprintf("$%d", len(args))
	}
	if filter.Query != "" {
		q := arg(filter.Query)
		from += ` AND (d.debug_id = lower(` + q + `) OR left(d.debug_id, 36) = lower(` + q + `)
			OR d.code_id = lower(` + q + `) OR strpos(lower(d.object_name), lower(` + q + `)) > 0)`
	}
	if filter.DebugID != "" {
		from += ` AND d.debug_id = ` + arg(filter.DebugID)
	}
	if filter.CodeID != "" {
		from += ` AND d.code_id = ` + arg(filter.CodeID)
	}
	if len(filter.Formats) > 0 {
		from += ` AND d.file_format = ANY(` + arg(filter.Formats) + `)`
	}
	return list(ctx, s.pool, listQuery{
		cols: debugFileCols, from: from, args: args,
		// The count tells a project the caller cannot see from an
		// empty one, in the page's round trip.
		scope:      memberProject,
		missing:    fmt.Errorf("project %q/%q: %w", sc.OrgSlug, sc.ProjectSlug, ErrNotFound),
		createdCol: "d.date_created", idCol: "d.id",
	}, page, func(rows pgx.Rows) (DebugFile, Key, error) {
		d, err := scanDebugFile(rows)
		return d, Key{Created: d.DateCreated, ID: d.ID}, err
	})
}

// MissingDebugFiles returns, sorted and without repeats, those of
// checksums (lowercase SHA-1 hex) that no debug file of the project sc
// names has.
func (s *Store) MissingDebugFiles(ctx context.Context, sc ProjectScope, checksums []string) ([]string, error) {
	_, project, err := projectIDForMember(ctx, s.pool, sc.UserID, sc.OrgSlug, sc.ProjectSlug)
	if err != nil {
		return nil, err
	}
	rows, err := s.pool.Query(ctx, `
		SELECT DISTINCT c FROM unnest($2::text[]) AS c
		WHERE NOT EXISTS (SELECT 1 FROM debug_files d WHERE d.project_id = $1 AND d.checksum = c)
		ORDER BY c`, project, checksums)
	if err != nil {
		return nil, wrap(err)
	}
	missing, err := pgx.CollectRows(rows, pgx.RowTo[string])
	return missing, wrap(err)
}

// WriteDebugFile streams the content of debug file id of the project sc
// names to the writer start returns, like WriteReleaseFile.
func (s *Store) WriteDebugFile(ctx context.Context, sc ProjectScope, id int64, start func(DebugFile) io.Writer) error {
	var orgID, fileID int64
	d, err := scanDebugFile(s.pool.QueryRow(ctx, `
		SELECT `+debugFileCols+`, o.id, d.file_id`+debugFileFrom+` AND d.id = $4`,
		sc.UserID, sc.OrgSlug, sc.ProjectSlug, id), &orgID, &fileID)
	if err != nil {
		return wrap(err)
	}
	return s.writeContent(ctx, orgID, fileID, bundleMember{}, d.Size, func() io.Writer { return start(d) })
}

// unmappedProguardReleases is the common table expression that removes,
// with the debug files of the expression gone (id, project_id, debug_id)
// that a statement deletes, the proguard artifact releases that no other
// ProGuard mapping of their project and UUID keeps: the releases of a
// mapping go with its last debug file, deleted or expired.
const unmappedProguardReleases = `unmapped AS (
			DELETE FROM proguard_artifact_releases a USING gone g
			WHERE a.project_id = g.project_id AND a.proguard_uuid = g.debug_id
			  AND NOT EXISTS (SELECT 1 FROM debug_files d
				WHERE d.project_id = g.project_id AND d.debug_id = g.debug_id
				  AND d.file_format = 'proguard' AND d.id NOT IN (SELECT id FROM gone)))`

// DeleteDebugFile removes debug file id of the project sc names. Its
// content goes when the collector finds nothing else uses it. Nothing
// removed is ErrNotFound.
func (s *Store) DeleteDebugFile(ctx context.Context, sc ProjectScope, id int64) error {
	var deleted bool
	err := s.pool.QueryRow(ctx, `
		WITH gone AS (
			DELETE FROM debug_files x USING projects p, organizations o, memberships m
			WHERE x.id = $4 AND p.id = x.project_id AND p.slug = $3
			  AND o.id = p.organization_id AND o.slug = $2
			  AND m.organization_id = o.id AND m.user_id = $1
			RETURNING x.id, x.project_id, x.debug_id),
		`+unmappedProguardReleases+`
		SELECT EXISTS (SELECT 1 FROM gone)`,
		sc.UserID, sc.OrgSlug, sc.ProjectSlug, id).Scan(&deleted)
	if err != nil {
		return wrap(err)
	}
	if !deleted {
		return fmt.Errorf("debug file %d: %w", id, ErrNotFound)
	}
	return nil
}

// ObjectNameOf is the object name Sentry gives a debug file uploaded under
// name: its base name, without the .sym of a Breakpad file;
// "proguard-mapping" for a ProGuard mapping.
func ObjectNameOf(name, format string) string {
	base := name[strings.LastIndexAny(name, `/\`)+1:]
	switch format {
	case "proguard":
		return "proguard-mapping"
	case "breakpad":
		return strings.TrimSuffix(base, ".sym")
	}
	return base
}

// ErrNoProguardMapping is the answer to an association with a ProGuard
// UUID that no mapping of the project has.
var ErrNoProguardMapping = errors.New("store: no ProGuard mapping with this UUID")

// AssociateProguardRelease records that the ProGuard mapping uuid (lowercase,
// hyphenated) of the project sc names was built for the release
// releaseName (sentry-cli 2.x's upload-proguard --app-id). A project
// without that mapping is ErrNoProguardMapping; an association already
// made is ErrConflict.
func (s *Store) AssociateProguardRelease(ctx context.Context, sc ProjectScope, releaseName, uuid string) error {
	_, project, err := projectIDForMember(ctx, s.pool, sc.UserID, sc.OrgSlug, sc.ProjectSlug)
	if err != nil {
		return err
	}
	var mapped, inserted bool
	err = s.pool.QueryRow(ctx, `
		WITH mapping AS (
			SELECT EXISTS (SELECT 1 FROM debug_files
				WHERE project_id = $1 AND debug_id = $3 AND file_format = 'proguard') AS ok),
		ins AS (
			INSERT INTO proguard_artifact_releases (project_id, release_name, proguard_uuid)
			SELECT $1, $2, $3 FROM mapping WHERE ok
			ON CONFLICT DO NOTHING
			RETURNING 1)
		SELECT (SELECT ok FROM mapping), EXISTS (SELECT 1 FROM ins)`,
		project, releaseName, uuid).Scan(&mapped, &inserted)
	switch {
	case err != nil:
		return wrap(err)
	case !mapped:
		return ErrNoProguardMapping
	case !inserted:
		return fmt.Errorf("proguard artifact release %q of %s: %w", releaseName, uuid, ErrConflict)
	}
	return nil
}

// ProguardReleases returns the names of the releases the ProGuard mapping
// uuid of the project sc names was built for, in the order they were
// associated.
func (s *Store) ProguardReleases(ctx context.Context, sc ProjectScope, uuid string) ([]string, error) {
	_, project, err := projectIDForMember(ctx, s.pool, sc.UserID, sc.OrgSlug, sc.ProjectSlug)
	if err != nil {
		return nil, err
	}
	rows, err := s.pool.Query(ctx, `
		SELECT release_name FROM proguard_artifact_releases
		WHERE project_id = $1 AND proguard_uuid = $2
		ORDER BY id LIMIT $3`, project, uuid, MaxHits)
	if err != nil {
		return nil, wrap(err)
	}
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	return names, wrap(err)
}
