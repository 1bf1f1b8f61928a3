package store

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// SourceFile is a stored file a resolution reads: a member of an artifact
// bundle found by debug id, or a release file (a whole file or a member of
// a release's bundle) found by URL.
type SourceFile struct {
	URL     string
	Headers map[string]string
	Size    int64
	SHA1    string
	// InBundle is the artifact bundle (its bundle id) of a file found by
	// debug id; "" for a release file.
	InBundle string

	orgID, fileID int64
	member        bundleMember
}

// ArtifactFileByDebugID returns the newest file whose debug id is debugID
// and whose manifest type is fileType (minified_source, source_map) among
// the artifact bundles of the project sc names. None, or a project the
// caller cannot see, is ErrNotFound.
func (s *Store) ArtifactFileByDebugID(ctx context.Context, sc ProjectScope, debugID, fileType string) (SourceFile, error) {
	var f SourceFile
	var headers []byte
	err := s.pool.QueryRow(ctx, `
		SELECT abf.url, abf.headers, abf.size, abf.sha1, ab.bundle_id, ab.organization_id, ab.file_id,
			abf.member_start, abf.member_csize, abf.member_method`+artifactBundleJoins+`
		JOIN artifact_bundle_files abf ON abf.artifact_bundle_id = ab.id
		WHERE o.slug = $2 AND abf.debug_id = $4::uuid AND abf.file_type = $5
		ORDER BY ab.date_created DESC, abf.id DESC LIMIT 1`,
		sc.UserID, sc.OrgSlug, sc.ProjectSlug, debugID, fileType).Scan(
		&f.URL, &headers, &f.Size, &f.SHA1, &f.InBundle, &f.orgID, &f.fileID,
		&f.member.start, &f.member.csize, &f.member.method)
	if err != nil {
		return f, wrap(err)
	}
	return f, decodeHeaders(headers, &f.Headers)
}

// ArtifactFileByURL returns the file named url in the artifact bundle
// bundleID of the project sc names: the map a file found by debug id names
// by URL rather than by debug id.
func (s *Store) ArtifactFileByURL(ctx context.Context, sc ProjectScope, bundleID string, urls []string) (SourceFile, error) {
	var f SourceFile
	var headers []byte
	err := s.pool.QueryRow(ctx, `
		SELECT abf.url, abf.headers, abf.size, abf.sha1, ab.bundle_id, ab.organization_id, ab.file_id,
			abf.member_start, abf.member_csize, abf.member_method`+artifactBundleJoins+`
		JOIN artifact_bundle_files abf ON abf.artifact_bundle_id = ab.id
		WHERE o.slug = $2 AND ab.bundle_id = $4 AND abf.url = ANY($5::text[])
		ORDER BY array_position($5::text[], abf.url) LIMIT 1`,
		sc.UserID, sc.OrgSlug, sc.ProjectSlug, bundleID, urls).Scan(
		&f.URL, &headers, &f.Size, &f.SHA1, &f.InBundle, &f.orgID, &f.fileID,
		&f.member.start, &f.member.csize, &f.member.method)
	if err != nil {
		return f, wrap(err)
	}
	return f, decodeHeaders(headers, &f.Headers)
}

// ReleaseFileByURL returns the first of urls found among the files of
// release version (and dist, nil for none) when the release is linked to
// the project sc names: release files and the members of the release's
// bundles. A dist that none of the release's files has is read as none,
// as Sentry reads a dist the release does not know: the files stored
// without a dist serve it. None is ErrNotFound.
func (s *Store) ReleaseFileByURL(ctx context.Context, sc ProjectScope, version string, dist *string, urls []string) (SourceFile, error) {
	files, found, err := s.ReleaseFilesByURL(ctx, sc, version, dist, urls)
	if err != nil {
		return SourceFile{}, err
	}
	if !found[0] {
		return SourceFile{}, ErrNotFound
	}
	return files[0], nil
}

// ReleaseFilesByURL is ReleaseFileByURL for several lists of URLs in one
// statement: files[i] is the first of lists[i] found, when found[i].
func (s *Store) ReleaseFilesByURL(ctx context.Context, sc ProjectScope, version string, dist *string, lists ...[]string) (files []SourceFile, found []bool, err error) {
	var urls []string
	for _, l := range lists {
		urls = append(urls, l...)
	}
	rows, err := s.pool.Query(ctx, `
		SELECT rf.name, rf.headers, rf.size, rf.sha1, r.organization_id, rf.file_id,
			rf.member_start, rf.member_csize, rf.member_method`+releaseFileFrom+`
		  AND $4 <> '' AND rf.name = ANY($6::text[])
		  AND rf.dist IS NOT DISTINCT FROM (CASE WHEN EXISTS (
			SELECT 1 FROM release_files d WHERE d.release_id = r.id AND d.dist = $5::text) THEN $5::text END)`,
		sc.UserID, sc.OrgSlug, version, sc.ProjectSlug, dist, urls)
	if err != nil {
		return nil, nil, wrap(err)
	}
	defer rows.Close()
	// A release has one file of a name and dist: a row a name.
	byURL := map[string]SourceFile{}
	for rows.Next() {
		var f SourceFile
		var headers []byte
		if err := rows.Scan(&f.URL, &headers, &f.Size, &f.SHA1, &f.orgID, &f.fileID,
			&f.member.start, &f.member.csize, &f.member.method); err != nil {
			return nil, nil, wrap(err)
		}
		if err := decodeHeaders(headers, &f.Headers); err != nil {
			return nil, nil, err
		}
		byURL[f.URL] = f
	}
	if err := rows.Err(); err != nil {
		return nil, nil, wrap(err)
	}
	files, found = make([]SourceFile, len(lists)), make([]bool, len(lists))
	for i, l := range lists {
		for _, u := range l {
			if f, ok := byURL[u]; ok {
				files[i], found[i] = f, true
				break
			}
		}
	}
	return files, found, nil
}

func decodeHeaders(data []byte, dst *map[string]string) error {
	*dst = map[string]string{}
	if err := json.Unmarshal(data, dst); err != nil {
		return fmt.Errorf("headers: %w", err)
	}
	return nil
}

// ErrSourceTooLarge is the error of ReadSourceFile for a file over its
// limit.
var ErrSourceTooLarge = errors.New("store: source file over the limit")

// ReadSourceFile returns the content of f, inflated, when it is at most
// max bytes (ErrSourceTooLarge otherwise, before reading it), and records
// that f's stored file was used, for FILE_RETENTION_DAYS.
func (s *Store) ReadSourceFile(ctx context.Context, f SourceFile, max int64) ([]byte, error) {
	if f.Size > max || f.Size < 0 {
		return nil, ErrSourceTooLarge
	}
	var buf bytes.Buffer
	buf.Grow(int(f.Size))
	err := s.writeContent(ctx, f.orgID, f.fileID, f.member, f.Size, func() io.Writer { return &buf })
	if err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// TouchSourceFile records that f's stored file was used now, as
// ReadSourceFile does, for a file whose parsed content came from a cache.
func (s *Store) TouchSourceFile(ctx context.Context, f SourceFile) {
	s.touchFile(ctx, f.fileID)
}

// ProguardMapping returns the newest ProGuard mapping whose UUID is uuid
// (lower-case, hyphenated) among the debug files of the project sc names.
// None, or a project the caller cannot see, is ErrNotFound.
func (s *Store) ProguardMapping(ctx context.Context, sc ProjectScope, uuid string) (SourceFile, error) {
	f := SourceFile{Headers: map[string]string{}}
	err := s.pool.QueryRow(ctx, `
		SELECT d.object_name, f.size, f.sha1, o.id, f.id`+debugFileFrom+`
		  AND d.debug_id = $4 AND d.file_format = 'proguard'
		ORDER BY d.date_created DESC, d.id DESC LIMIT 1`,
		sc.UserID, sc.OrgSlug, sc.ProjectSlug, uuid).Scan(&f.URL, &f.Size, &f.SHA1, &f.orgID, &f.fileID)
	return f, wrap(err)
}

// FileID is the id of the stored file that holds f (a bundle for a
// member), the file a use is recorded on.
func (f SourceFile) FileID() int64 { return f.fileID }
