package store

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
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

// DifAssemblyJob is the payload of an assemble_dif job: the chunks of one
// organization, and the files requested as made of them. The expensive work
// (reading and hashing the chunks) is done once per organization and chunk
// list, however many checksums name that list: a checksum that is not what
// the chunks hash to ends in a checksum mismatch without another pass.
type DifAssemblyJob struct {
	OrganizationID int64        `json:"organizationId"`
	Chunks         []string     `json:"chunks"`
	Files          []DifJobFile `json:"files"`

	// The one file of a job queued by an earlier version, which keyed a
	// job by file.
	LegacyProjectID int64   `json:"projectId,omitempty"`
	LegacyName      string  `json:"name,omitempty"`
	LegacyDebugID   *string `json:"debugId,omitempty"`
	LegacyChecksum  string  `json:"checksum,omitempty"`
}

// DifJobFile is one requested file of an assemble_dif job: the project it
// is for, its name, the debug id it was uploaded with and its checksum.
type DifJobFile struct {
	ProjectID int64   `json:"projectId"`
	Name      string  `json:"name"`
	DebugID   *string `json:"debugId"`
	Checksum  string  `json:"checksum"`
	// Supersede is set when its uploader may delete debug files: only
	// then does the new file remove the older ones it covers.
	Supersede bool `json:"supersede,omitempty"`
}

// Key names f in a DifAssemblyResult.
func (f DifJobFile) Key() string {
	debugID := ""
	if f.DebugID != nil {
		debugID = *f.DebugID
	}
	b, _ := json.Marshal([]any{f.ProjectID, f.Checksum, f.Name, debugID}) // plain values always encode
	return string(b)
}

// AllFiles returns the files of j, the one file of a legacy job included.
func (j DifAssemblyJob) AllFiles() []DifJobFile {
	if len(j.Files) == 0 && j.LegacyChecksum != "" {
		return []DifJobFile{{ProjectID: j.LegacyProjectID, Name: j.LegacyName, DebugID: j.LegacyDebugID, Checksum: j.LegacyChecksum}}
	}
	return j.Files
}

// difJobKey is the unique key of the assemble_dif job of the chunks of
// organization org: one job per organization and chunk list.
func difJobKey(org int64, chunks []string) string {
	h := sha256.New()
	fmt.Fprintf(h, "%d:%s", org, strings.Join(chunks, ","))
	return DifAssembleJobKind + ":" + hex.EncodeToString(h.Sum(nil))
}

// MaxDifJobFiles bounds the files one assemble_dif job lists: requests of
// more files made of the same chunks are answered from its result once it
// has one (their checksum is the chunks' or not), without being listed.
const MaxDifJobFiles = 1000

// DifAssemblyResult is what an assemble_dif job found: the checksum of its
// chunks and, for each file (by DifJobFile.Key) that has it, nil when its
// debug files were stored, else why not.
type DifAssemblyResult struct {
	SHA1  string             `json:"sha1"`
	Files map[string]*string `json:"files"`
}

// PrepareDifAssembly checks the chunks of job (the organization owns them,
// their size is within opt) and returns the file they make, to be hashed
// with VerifyFile unless known: when the organization already has a file
// made of exactly these chunks under one of the job's checksums, that file
// is returned with its ID and known is true, and nothing needs reading.
func (s *Store) PrepareDifAssembly(ctx context.Context, job DifAssemblyJob, opt FileOptions) (pf PendingFile, known bool, err error) {
	files := job.AllFiles()
	if len(files) == 0 {
		return pf, false, errors.New("store: an assemble_dif job without files")
	}
	pf, err = s.PrepareFile(ctx, job.OrganizationID, files[0].Checksum, job.Chunks, opt)
	if err != nil {
		return pf, false, err
	}
	sums := make([]string, len(files))
	for i, f := range files {
		sums[i] = f.Checksum
	}
	err = s.pool.QueryRow(ctx, `
		SELECT f.id, f.sha1 FROM files f
		WHERE f.organization_id = $1 AND f.sha1 = ANY($2::text[])
		  AND (SELECT array_agg(fb.sha1 ORDER BY fb.position) FROM file_blobs fb WHERE fb.file_id = f.id) = $3::text[]
		ORDER BY f.id LIMIT 1`, job.OrganizationID, sums, job.Chunks).Scan(&pf.ID, &pf.SHA1)
	switch {
	case err == nil:
		return pf, true, nil
	case errors.Is(err, pgx.ErrNoRows):
		return pf, false, nil
	}
	return pf, false, wrap(err)
}

// StoredFile returns pf with the ID of the organization's file of its
// checksum made of its chunks, once one is stored; else as it is.
func (s *Store) StoredFile(ctx context.Context, pf PendingFile) (PendingFile, error) {
	chunks := make([]string, len(pf.blobs))
	for i, b := range pf.blobs {
		chunks[i] = b.sha1
	}
	f, err := s.existingFile(ctx, pf.OrganizationID, pf.SHA1, chunks)
	switch {
	case err == nil:
		pf.ID = f.ID
	case !errors.Is(err, ErrNotFound):
		return pf, err
	}
	return pf, nil
}

// RecordDifAssembly records result as what the running assemble_dif job
// of job's chunks found, and returns the files the job lists now: a
// request may have added some while it ran, which it then assembles too.
// Under a lease (WithJobLease) it writes only while the job is still the
// lease's worker's; a worker whose lease ran out records nothing and is
// given no more files.
func (s *Store) RecordDifAssembly(ctx context.Context, job DifAssemblyJob, result DifAssemblyResult) ([]DifJobFile, error) {
	lease, leased := ctx.Value(jobLeaseKey{}).(jobLease)
	var files []DifJobFile
	err := s.pool.QueryRow(ctx, `
		UPDATE jobs SET result = $2
		WHERE unique_key = $1 AND state = 'running'
		  AND (NOT $3 OR (id = $4 AND locked_by = $5))
		RETURNING COALESCE(payload->'files', '[]')`,
		difJobKey(job.OrganizationID, job.Chunks), result, leased, lease.id, lease.worker).Scan(&files)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil // a legacy job, or no longer this worker's
	}
	return files, wrap(err)
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
	// Sections is the section table of an ELF object, read when it was
	// assembled; nil for other formats.
	Sections *SectionTable
	// Sources is the index of a source bundle's sources; nil for other
	// formats.
	Sources *SourceIndex
}

// difRequeueAfter is how long an assembly that ended in error keeps its
// answer: an upload of the same file after it runs it again.
const difRequeueAfter = time.Minute

// AssembleDifs answers a debug file assembly request for the project sc
// names, one status per request, in order. A file the project has already
// (the same checksum) is ok at once, without its chunks; a file whose
// chunks the organization lacks is not_found with them; a file whose
// chunks an assembly found to hash to another checksum is an error; any
// other is assembled by the job of its organization and chunk list,
// enqueued (or given the file) in the same transaction, whose state the
// status reports. Asking again reports on the same job. It runs the same
// few statements whatever the number of files. The requests of one
// organization take turns, waiting without a connection; one that waits
// more than turnWait is ErrTurnTimeout. A request that would take the
// organization over its job limit is ErrJobLimit and changes nothing.
// A file answered ok counts as used again, as an upload would make it.
// supersede is as for SaveDebugFiles.
func (s *Store) AssembleDifs(ctx context.Context, sc ProjectScope, reqs []DifRequest, supersede bool) ([]DifStatus, error) {
	// Membership first: a request that may not see the project never
	// takes, nor waits for, the organization's turn.
	org, project, err := projectIDForMember(ctx, s.pool, sc.UserID, sc.OrgSlug, sc.ProjectSlug)
	if err != nil {
		return nil, wrap(err)
	}
	release, err := s.turns.take(ctx, org)
	if err != nil {
		return nil, err
	}
	defer release()
	var out []DifStatus
	err = s.inTx(ctx, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1, hashint8($2))`, jobsLockClass, org); err != nil {
			return err
		}
		w := difWrites{supersede: supersede}
		if out, err = difStatuses(ctx, tx, org, project, reqs, &w); err != nil {
			return err
		}
		return s.applyDifWrites(ctx, tx, org, w)
	})
	return out, err
}

// DifStatuses is AssembleDifs that only looks: it enqueues nothing and
// gives no job a file, and so takes no turn. A file that AssembleDifs
// would enqueue is reported created. It serves the answers to a request
// that AssembleDifs has already enqueued.
func (s *Store) DifStatuses(ctx context.Context, sc ProjectScope, reqs []DifRequest) ([]DifStatus, error) {
	var out []DifStatus
	err := s.read(ctx, func(q querier) error {
		org, project, err := projectIDForMember(ctx, q, sc.UserID, sc.OrgSlug, sc.ProjectSlug)
		if err != nil {
			return err
		}
		out, err = difStatuses(ctx, q, org, project, reqs, nil)
		return err
	})
	return out, err
}

// renewDebugFiles marks the files of the debug files $1 as used now, as
// an upload does (retention counts from the last use).
const renewDebugFiles = `
	UPDATE files f SET date_used = now() FROM debug_files d
	WHERE d.id = ANY($1::bigint[]) AND f.id = d.file_id AND f.date_used < now() - interval '1 second'`

// difWrites are the changes AssembleDifs makes: new jobs, existing ones
// given files (and run again when requeue), and the debug files answered
// ok, whose files are used again.
type difWrites struct {
	newKeys, newPayloads []string
	ids                  []int64
	payloads             []string
	requeue              []bool
	renew                []int64
	supersede            bool // the files given to jobs may supersede older ones
}

// difJobRow is what difStatuses reads of an assemble_dif job.
type difJobRow struct {
	id        int64
	state     string
	lastError *string
	stale     bool // ended more than difRequeueAfter ago
	result    *DifAssemblyResult
	payload   DifAssemblyJob
}

// difStatuses computes the statuses of reqs, files of project of org, in
// three statements, and a fourth for the missing chunks when w is not nil. With w not nil, it also says in w what to write so that
// every file that needs it is assembled.
func difStatuses(ctx context.Context, q querier, org, project int64, reqs []DifRequest, w *difWrites) ([]DifStatus, error) {
	out := make([]DifStatus, len(reqs))
	sums := make([]string, len(reqs))
	ids := make([]*string, len(reqs))
	for i, r := range reqs {
		out[i].MissingChunks = []string{}
		sums[i], ids[i] = r.Checksum, r.DebugID
	}
	// The project's debug file of each checksum, the one of the requested
	// debug id first.
	rows, err := q.Query(ctx, `
		SELECT DISTINCT ON (c.n) `+debugFileCols+`, c.n
		FROM unnest($2::text[], $3::text[]) WITH ORDINALITY AS c (checksum, debug_id, n)
		JOIN debug_files d ON d.project_id = $1 AND d.checksum = c.checksum
		JOIN files f ON f.id = d.file_id
		ORDER BY c.n, (d.debug_id = c.debug_id) DESC, d.id DESC`, project, sums, ids)
	if err != nil {
		return nil, err
	}
	for rows.Next() {
		var n int64
		d, err := scanDebugFile(rows, &n)
		if err != nil {
			rows.Close()
			return nil, err
		}
		out[n-1].State, out[n-1].Dif = "ok", &d
		if w != nil {
			w.renew = append(w.renew, d.ID)
		}
	}
	if rows.Close(); rows.Err() != nil {
		return nil, rows.Err()
	}
	var all []string
	for i, r := range reqs {
		switch {
		case out[i].State != "":
		case len(r.Chunks) == 0:
			detail := "The file is empty"
			out[i].State, out[i].Detail = "error", &detail
		default:
			all = append(all, r.Chunks...)
		}
	}
	if len(all) == 0 {
		return out, nil
	}
	// Only a look (w nil) serves files whose chunks were there a moment
	// ago: it does not look at them again (missingChunks also renews them).
	var missing []string
	if w != nil {
		if missing, err = missingChunks(ctx, q, org, all); err != nil {
			return nil, err
		}
	}
	lacking := make(map[string]bool, len(missing))
	for _, c := range missing {
		lacking[c] = true
	}
	// The rest, grouped by chunk list: one job each.
	groups := map[string][]int{}
	var keys []string
	for i, r := range reqs {
		if out[i].State != "" {
			continue
		}
		for _, c := range r.Chunks {
			if lacking[c] && !slices.Contains(out[i].MissingChunks, c) {
				out[i].MissingChunks = append(out[i].MissingChunks, c)
			}
		}
		if len(out[i].MissingChunks) > 0 {
			out[i].State = "not_found"
			continue
		}
		k := difJobKey(org, r.Chunks)
		if groups[k] == nil {
			keys = append(keys, k)
		}
		groups[k] = append(groups[k], i)
	}
	if len(keys) == 0 {
		return out, nil
	}
	jobs := make(map[string]*difJobRow, len(keys))
	rows, err = q.Query(ctx, `
		SELECT unique_key, id, state, last_error, date_updated < now() - make_interval(secs => $2), result,
			CASE WHEN $3 THEN payload ELSE '{}' END
		FROM jobs WHERE unique_key = ANY($1::text[])`, keys, difRequeueAfter.Seconds(), w != nil)
	if err != nil {
		return nil, err
	}
	for rows.Next() {
		var k string
		j := &difJobRow{}
		if err := rows.Scan(&k, &j.id, &j.state, &j.lastError, &j.stale, &j.result, &j.payload); err != nil {
			rows.Close()
			return nil, err
		}
		jobs[k] = j
	}
	if rows.Close(); rows.Err() != nil {
		return nil, rows.Err()
	}
	for _, k := range keys {
		var give []DifJobFile // files the job must be given
		requeue := false
		j := jobs[k]
		for _, i := range groups[k] {
			r := reqs[i]
			st := &out[i]
			f := DifJobFile{ProjectID: project, Name: r.Name, DebugID: r.DebugID, Checksum: r.Checksum, Supersede: w != nil && w.supersede}
			var hashed string
			if j != nil && j.result != nil {
				hashed = j.result.SHA1
			}
			switch {
			case j == nil:
				st.State = "created"
				give = append(give, f)
			case hashed != "" && hashed != r.Checksum:
				detail := fmt.Sprintf("Checksum mismatch: the chunks hash to %s, not %s", hashed, r.Checksum)
				st.State, st.Detail = "error", &detail
			case j.state == "queued":
				st.State = "created"
				give = append(give, f)
			case j.state == "running":
				st.State = "assembling"
				give = append(give, f)
			case j.state == "error" && !j.stale:
				st.State, st.Detail = "error", j.lastError
			case j.state == "error":
				st.State, requeue = "created", true
				give = append(give, f)
			default: // done, with the chunks' checksum
				var detail *string
				if j.result != nil {
					detail = j.result.Files[f.Key()]
				}
				if detail != nil && !j.stale {
					st.State, st.Detail = "error", detail
					continue
				}
				// Not assembled yet, or its debug files were deleted
				// since, or its error is old: it runs again.
				st.State, requeue = "created", true
				give = append(give, f)
			}
		}
		if w == nil || len(give) == 0 {
			continue
		}
		if j == nil {
			body, err := json.Marshal(DifAssemblyJob{OrganizationID: org, Chunks: reqs[groups[k][0]].Chunks, Files: give})
			if err != nil {
				return nil, err
			}
			w.newKeys, w.newPayloads = append(w.newKeys, k), append(w.newPayloads, string(body))
			continue
		}
		// The job keeps the files whose checksum may still be the
		// chunks', and takes the new ones, within MaxDifJobFiles.
		p := j.payload
		var files []DifJobFile
		have := map[string]bool{}
		for _, f := range p.AllFiles() {
			if j.result == nil || j.result.SHA1 == "" || f.Checksum == j.result.SHA1 {
				files = append(files, f)
				have[f.Key()] = true
			}
		}
		changed := len(files) != len(p.AllFiles())
		for _, f := range give {
			if !have[f.Key()] && len(files) < MaxDifJobFiles {
				files = append(files, f)
				have[f.Key()] = true
				changed = true
			}
		}
		if !changed && !requeue {
			continue
		}
		p.Files, p.LegacyChecksum = files, ""
		body, err := json.Marshal(p)
		if err != nil {
			return nil, err
		}
		w.ids, w.payloads, w.requeue = append(w.ids, j.id), append(w.payloads, string(body)), append(w.requeue, requeue)
	}
	return out, nil
}

// applyDifWrites makes the changes w says in tx, in two statements, and
// checks the organization's job limit when a job was added or is to run
// again.
func (s *Store) applyDifWrites(ctx context.Context, tx pgx.Tx, org int64, w difWrites) error {
	if len(w.renew) > 0 {
		if _, err := tx.Exec(ctx, renewDebugFiles, w.renew); err != nil {
			return err
		}
	}
	added := false
	if len(w.newKeys) > 0 {
		tag, err := tx.Exec(ctx, `
			INSERT INTO jobs (organization_id, kind, unique_key, payload, max_attempts)
			SELECT $1, $2, x.k, x.p::jsonb, $3 FROM unnest($4::text[], $5::text[]) AS x (k, p)
			ON CONFLICT (unique_key) DO NOTHING`,
			org, DifAssembleJobKind, difAssembleMaxAttempts, w.newKeys, w.newPayloads)
		if err != nil {
			return err
		}
		added = tag.RowsAffected() > 0
	}
	if len(w.ids) > 0 {
		// A job that a worker took meanwhile keeps running: it reads the
		// files it was given before it ends.
		tag, err := tx.Exec(ctx, `
			UPDATE jobs j SET payload = x.p::jsonb,
				state = CASE WHEN x.requeue AND j.state IN ('done', 'error') THEN 'queued' ELSE j.state END,
				attempts = CASE WHEN x.requeue AND j.state IN ('done', 'error') THEN 0 ELSE j.attempts END,
				run_at = CASE WHEN x.requeue AND j.state IN ('done', 'error') THEN now() ELSE j.run_at END,
				last_error = CASE WHEN x.requeue AND j.state IN ('done', 'error') THEN NULL ELSE j.last_error END,
				date_updated = now()
			FROM unnest($1::bigint[], $2::text[], $3::bool[]) AS x (id, p, requeue)
			WHERE j.id = x.id AND j.organization_id = $4`,
			w.ids, w.payloads, w.requeue, org)
		if err != nil {
			return err
		}
		added = added || (tag.RowsAffected() > 0 && slices.Contains(w.requeue, true))
	}
	if !added {
		return nil
	}
	return s.checkJobLimit(ctx, tx, org)
}

// SaveDebugFiles stores the checked file pf, uploaded as one file of
// project projectID, and one debug file per object of objs, in one
// transaction, and returns them. A debug file the project has already
// (same checksum and debug id) is kept as it is, and its file counts as
// used again. With supersede (the uploader may delete debug files), an
// older debug file with the same debug id whose features the new one
// covers is removed, as Sentry does; without, it stays.
func (s *Store) SaveDebugFiles(ctx context.Context, projectID int64, pf PendingFile, objs []DebugFileObject, supersede bool) ([]DebugFile, error) {
	defer s.lookups.forget()
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
		var sections []byte
		if o.Sections != nil {
			if sections, err = json.Marshal(o.Sections); err != nil {
				return err
			}
		}
		var sources []byte
		if o.Sources != nil {
			if sources, err = json.Marshal(o.Sources); err != nil {
				return err
			}
		}
		var id int64
		err = tx.QueryRow(ctx, `
			INSERT INTO debug_files (project_id, file_id, checksum, debug_id, code_id, object_name, cpu_name, file_format, data, sections, sources)
			SELECT $1, $2, f.sha1, $3, $4, $5, $6, $7, $8, $9, $10 FROM files f WHERE f.id = $2
			ON CONFLICT (project_id, checksum, debug_id) DO UPDATE SET debug_id = EXCLUDED.debug_id,
				sections = COALESCE(debug_files.sections, EXCLUDED.sections),
				sources = COALESCE(debug_files.sources, EXCLUDED.sources)
			RETURNING id`,
			projectID, f.ID, o.DebugID, codeID, o.ObjectName, o.CPUName, o.FileFormat, body, sections, sources).Scan(&id)
		if err != nil {
			return err
		}
		// A debug file the project had already keeps its file, which is
		// used again: an upload the server confirms must not expire the
		// next day.
		if _, err := tx.Exec(ctx, renewDebugFiles, []int64{id}); err != nil {
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
	defer s.lookups.forget()
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
	defer s.lookups.forget()
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
