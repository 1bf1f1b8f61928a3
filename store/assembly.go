package store

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"

	"github.com/jackc/pgx/v5"
)

// AssembleJobKind is the kind of the jobs that assemble uploaded chunks into
// release files.
const AssembleJobKind = "assemble"

// assembleMaxAttempts bounds the runs of one assembly. Bundle errors end it
// at once; the attempts are for failures that can pass, like chunks that the
// spec's endpoint was told about before they arrived.
const assembleMaxAttempts = 5

// bundleInUse is true when a file of the organization $2 with the checksum
// $3 is still used by a release file or an artifact bundle: what an
// assembly of that bundle made is still there.
const bundleInUse = `EXISTS (SELECT 1 FROM files f WHERE f.organization_id = $2 AND f.sha1 = $3 AND (
	EXISTS (SELECT 1 FROM release_files rf WHERE rf.file_id = f.id)
	OR EXISTS (SELECT 1 FROM artifact_bundles ab WHERE ab.file_id = f.id)))`

// renewBundle marks the files of organization $1 with checksum $2 (what
// assemblies of that bundle made) as used now, as an upload does.
const renewBundle = `
	UPDATE files SET date_used = now()
	WHERE organization_id = $1 AND sha1 = $2 AND date_used < now() - interval '1 second'`

// AssemblyJob is the payload of an assemble job: everything it needs,
// fixed when the request was accepted.
type AssemblyJob struct {
	OrganizationID int64   `json:"organizationId"`
	OrgSlug        string  `json:"orgSlug"`
	Version        *string `json:"version"` // nil: the manifest names the release
	Dist           *string `json:"dist"`
	// Projects are slugs that a release created by the assembly is linked to.
	Projects []string `json:"projects"`
	Checksum string   `json:"checksum"`
	Chunks   []string `json:"chunks"`
	// WaitForChunks is set by the spec's endpoint, which is called without
	// a check of the chunks: missing ones are retried rather than final.
	WaitForChunks bool `json:"waitForChunks"`
}

// uniqueKey names the job of one request: the same request twice is one
// job.
func (j AssemblyJob) uniqueKey() string {
	b, _ := json.Marshal(j) // plain fields always encode
	sum := sha256.Sum256(b)
	return AssembleJobKind + ":" + hex.EncodeToString(sum[:])
}

// AssemblyRequest is what a caller asks to assemble.
type AssemblyRequest struct {
	Version  *string
	Dist     *string
	Projects []string
	Checksum string
	Chunks   []string
}

// AssemblyStatus is what a caller can see of an assembly: the chunks its
// organization lacks (then nothing was enqueued) or the state of its job.
type AssemblyStatus struct {
	MissingChunks []string
	Job           *JobStatus
}

// EnqueueReleaseAssembly enqueues the assembly of the chunks of req in the
// organization orgSlug that userID belongs to, for the release version. It
// does not look at the chunks: the job waits a while for missing ones. An
// earlier identical request that ended in error is run again.
func (s *Store) EnqueueReleaseAssembly(ctx context.Context, userID int64, orgSlug, version string, req AssemblyRequest) error {
	return s.inOrgTurn(ctx, userID, orgSlug, func(tx pgx.Tx, org int64) error {
		job := AssemblyJob{
			OrganizationID: org, OrgSlug: orgSlug, Version: &version,
			Projects: []string{}, Checksum: req.Checksum, Chunks: req.Chunks,
			WaitForChunks: true,
		}
		id, added, err := enqueueJob(ctx, tx, org, AssembleJobKind, job.uniqueKey(), job, assembleMaxAttempts)
		if err != nil {
			return err
		}
		tag, err := tx.Exec(ctx, `
			UPDATE jobs SET state = 'queued', attempts = 0, run_at = now(),
				last_error = NULL, date_updated = now()
			WHERE id = $1 AND (state = 'error' OR (state = 'done' AND NOT `+bundleInUse+`))`,
			id, org, req.Checksum)
		if err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, renewBundle, org, req.Checksum); err != nil {
			return err
		}
		if added || tag.RowsAffected() > 0 {
			return s.checkJobLimit(ctx, tx, org)
		}
		return nil
	})
}

// AssembleArtifactBundle enqueues the assembly of the chunks of req in the
// organization orgSlug that userID belongs to, once the organization has
// all of them, and reports where it stands. Asking again for the same
// request reports on the same job.
func (s *Store) AssembleArtifactBundle(ctx context.Context, userID int64, orgSlug string, req AssemblyRequest) (AssemblyStatus, error) {
	var st AssemblyStatus
	err := s.inOrgTurn(ctx, userID, orgSlug, func(tx pgx.Tx, org int64) error {
		var err error
		st.MissingChunks, err = missingChunks(ctx, tx, org, req.Chunks)
		if err != nil || len(st.MissingChunks) > 0 {
			return err
		}
		projects := req.Projects
		if projects == nil {
			projects = []string{}
		}
		job := AssemblyJob{
			OrganizationID: org, OrgSlug: orgSlug, Version: req.Version, Dist: req.Dist,
			Projects: projects, Checksum: req.Checksum, Chunks: req.Chunks,
		}
		id, added, err := enqueueJob(ctx, tx, org, AssembleJobKind, job.uniqueKey(), job, assembleMaxAttempts)
		if err != nil {
			return err
		}
		// A finished assembly whose bundle nothing uses any more (its
		// files were deleted since: sentry-cli files delete --all, then
		// the same upload) runs again.
		tag, err := tx.Exec(ctx, `
			UPDATE jobs SET state = 'queued', attempts = 0, run_at = now(), last_error = NULL, date_updated = now()
			WHERE id = $1 AND state = 'done' AND NOT `+bundleInUse, id, org, req.Checksum)
		if err != nil {
			return err
		}
		// What a finished assembly made is used again: retention must
		// not remove a bundle the answer confirms.
		if _, err := tx.Exec(ctx, renewBundle, org, req.Checksum); err != nil {
			return err
		}
		if added || tag.RowsAffected() > 0 {
			if err := s.checkJobLimit(ctx, tx, org); err != nil {
				return err
			}
		}
		st.Job = &JobStatus{}
		return tx.QueryRow(ctx, `
			SELECT id, state, last_error FROM jobs WHERE id = $1`, id).
			Scan(&st.Job.ID, &st.Job.State, &st.Job.LastError)
	})
	return st, err
}

// ensureRelease returns the id of the release version of organization
// orgID, creating it when missing, and links it to those of projects that
// are projects of the organization.
//
// TODO(releases): share with the release store of the releases issue.
func ensureRelease(ctx context.Context, q querier, orgID int64, version string, projects []string) (int64, error) {
	var id int64
	err := q.QueryRow(ctx, `
		INSERT INTO releases (organization_id, version) VALUES ($1, $2)
		ON CONFLICT (organization_id, version) DO UPDATE SET version = EXCLUDED.version
		RETURNING id`, orgID, version).Scan(&id)
	if err != nil {
		return 0, err
	}
	_, err = q.Exec(ctx, `
		INSERT INTO release_projects (release_id, project_id)
		SELECT $1, p.id FROM projects p WHERE p.organization_id = $2 AND (p.slug = ANY($3) OR p.id::text = ANY($3))
		ON CONFLICT DO NOTHING`, id, orgID, projects)
	return id, err
}
