package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
)

// ELFSection is one entry of the section table of an ELF debug file, as
// the symbol routes serve it: its raw bytes are Size bytes at Offset
// (none for SHT_NOBITS). Damaged is a section whose name or bytes are not
// in the file: it is known, never served.
type ELFSection struct {
	Name    string
	Type    uint32
	Flags   uint64
	Offset  uint64
	Size    uint64
	Damaged bool
}

// SectionTable is the section table read of an ELF debug file when it was
// assembled. Beyond is set when the table could not be read within the
// readers' budget: the file is served whole, never by section.
type SectionTable struct {
	Beyond   bool
	Sections []ELFSection
}

// MarshalJSON writes t compactly: false when Beyond, else one array
// [name, type, flags, offset, size, damaged] per section.
func (t SectionTable) MarshalJSON() ([]byte, error) {
	if t.Beyond {
		return []byte("false"), nil
	}
	rows := make([][]any, len(t.Sections))
	for i, s := range t.Sections {
		damaged := 0
		if s.Damaged {
			damaged = 1
		}
		rows[i] = []any{s.Name, s.Type, s.Flags, s.Offset, s.Size, damaged}
	}
	return json.Marshal(rows)
}

// UnmarshalJSON reads what MarshalJSON writes.
func (t *SectionTable) UnmarshalJSON(b []byte) error {
	if string(b) == "false" {
		*t = SectionTable{Beyond: true}
		return nil
	}
	var raw [][]json.RawMessage
	if err := json.Unmarshal(b, &raw); err != nil {
		return err
	}
	t.Beyond, t.Sections = false, make([]ELFSection, 0, len(raw))
	for _, r := range raw {
		if len(r) != 6 {
			return errors.New("store: a section row without its six fields")
		}
		var s ELFSection
		var damaged int
		for i, v := range []any{&s.Name, &s.Type, &s.Flags, &s.Offset, &s.Size, &damaged} {
			if err := json.Unmarshal(r[i], v); err != nil {
				return fmt.Errorf("store: section row: %w", err)
			}
		}
		s.Damaged = damaged != 0
		t.Sections = append(t.Sections, s)
	}
	return nil
}

// SourceMember is where one source lies in a source bundle: CSize bytes
// at Offset of the bundle file, compressed with Method (0 stored, 8
// deflated), Size bytes once inflated, with the CRC-32 of those.
type SourceMember struct {
	Offset, CSize, Size int64
	Method              uint16
	CRC                 uint32
}

// SourceIndex is the index of a source bundle's sources, by canonical
// path, read when it was assembled. Beyond is set when it could not be
// read within the readers' budget: its sources are not served.
type SourceIndex struct {
	Beyond  bool
	Members map[string]SourceMember
}

// MarshalJSON writes x as false when Beyond, else as an object of
// [offset, compressed size, size, method, CRC-32] by path.
func (x SourceIndex) MarshalJSON() ([]byte, error) {
	if x.Beyond {
		return []byte("false"), nil
	}
	out := make(map[string][5]int64, len(x.Members))
	for p, m := range x.Members {
		out[p] = m.row()
	}
	return json.Marshal(out)
}

func (m SourceMember) row() [5]int64 {
	return [5]int64{m.Offset, m.CSize, m.Size, int64(m.Method), int64(m.CRC)}
}

// sourceMemberOf reads a row that row writes.
func sourceMemberOf(r [5]int64) SourceMember {
	return SourceMember{Offset: r[0], CSize: r[1], Size: r[2], Method: uint16(r[3]), CRC: uint32(r[4])}
}

// SymbolFile is a debug file that a symbol route serves: its record, the
// stored file behind it (with its blob index, read in the same query) and,
// for an ELF file when SymbolQuery.Sections asked for it, its section
// table (nil when not read).
type SymbolFile struct {
	DebugFile
	OrganizationID int64
	FileID         int64
	SHA1           string
	Sections       *SectionTable
	// Source is the source that SymbolQuery.SourcePath asked for.
	Source *SourceMember
	blobs  []fileBlob
}

// SymbolQuery selects the debug files of an organization that a symbol
// route asks for; zero fields select all. The newest matching file wins.
type SymbolQuery struct {
	Formats []string // file formats
	CodeID  string   // lowercase hex
	// CodeIDs is a set of code ids, any of which matches (an ELF build id
	// and its zero-padded form).
	CodeIDs []string
	DebugID string // in Sentry's form
	// ObjectName is matched case-insensitively.
	ObjectName string
	Types      []string // data->>'type'
	Feature    string   // a feature the file must have
	// SourcePath selects source bundles that hold this source (a
	// canonical path), and reads where it lies.
	SourcePath string
	// Sections reads the file's section table (SymbolFile.Sections),
	// which only the section route needs: decoding it costs more than
	// the rest of a request for a whole file.
	Sections bool
}

// FindSymbolFile returns the newest debug file of the organization
// orgSlug that q selects, when the user userID is a member of it; else
// ErrNotFound (whether the organization, the membership or the file is
// missing: a symbol route answers all three alike). It is one statement,
// which also reads the file's blob index for OpenSymbolFile; its answer,
// a file or none, is remembered for SymbolLookupTime (the file is then
// shared: never to be changed).
func (s *Store) FindSymbolFile(ctx context.Context, userID int64, orgSlug string, q SymbolQuery) (SymbolFile, error) {
	key, ok := symbolLookupKey(userID, orgSlug, q)
	if !ok {
		return s.findSymbolFile(ctx, userID, orgSlug, q)
	}
	a, gen, ok := s.lookups.get(key, time.Now())
	if ok {
		return a.f, a.err
	}
	f, err := s.findSymbolFile(ctx, userID, orgSlug, q)
	if err == nil || errors.Is(err, errNoSymbolFile) {
		s.lookups.remember(key, gen, symbolLookup{f: f, err: err}, time.Now())
	}
	return f, err
}

// errNoSymbolFile is findSymbolFile's answer when no file matches.
var errNoSymbolFile = fmt.Errorf("symbol file: %w", ErrNotFound)

// findSymbolFile is FindSymbolFile's statement.
func (s *Store) findSymbolFile(ctx context.Context, userID int64, orgSlug string, q SymbolQuery) (SymbolFile, error) {
	where := []string{"true"}
	args := []any{userID, orgSlug, q.SourcePath}
	arg := func(v any) string {
		args = append(args, v)
		return fmt.Sprintf("$%d", len(args))
	}
	if len(q.Formats) > 0 {
		where = append(where, "d.file_format = ANY("+arg(q.Formats)+"::text[])")
	}
	if q.CodeID != "" {
		where = append(where, "d.code_id = "+arg(q.CodeID))
	}
	if len(q.CodeIDs) > 0 {
		where = append(where, "d.code_id = ANY("+arg(q.CodeIDs)+"::text[])")
	}
	if q.DebugID != "" {
		where = append(where, "d.debug_id = "+arg(q.DebugID))
	}
	if q.ObjectName != "" {
		where = append(where, "lower(d.object_name) = lower("+arg(q.ObjectName)+")")
	}
	if len(q.Types) > 0 {
		where = append(where, "d.data->>'type' = ANY("+arg(q.Types)+"::text[])")
	}
	if q.Feature != "" {
		where = append(where, "d.data->'features' ? "+arg(q.Feature))
	}
	if q.SourcePath != "" {
		where = append(where, "jsonb_typeof(d.sources) = 'object' AND d.sources ? $3::text")
	}
	sectionsCol := "NULL::jsonb"
	if q.Sections {
		sectionsCol = "d.sections"
	}
	var f SymbolFile
	var source *[5]int64
	var sections []byte
	var sums []string
	var starts, sizes []int64
	d, err := scanDebugFile(s.pool.QueryRow(ctx, `
		SELECT `+debugFileCols+`, o.id, d.file_id, f.sha1, `+sectionsCol+`,
			CASE WHEN jsonb_typeof(d.sources) = 'object' THEN d.sources -> $3::text END,
			ARRAY(SELECT fb.sha1 FROM file_blobs fb WHERE fb.file_id = d.file_id ORDER BY fb.position),
			ARRAY(SELECT fb.start FROM file_blobs fb WHERE fb.file_id = d.file_id ORDER BY fb.position),
			ARRAY(SELECT b.size FROM file_blobs fb JOIN blobs b ON b.sha1 = fb.sha1 WHERE fb.file_id = d.file_id ORDER BY fb.position)
		FROM organizations o
		JOIN memberships m ON m.organization_id = o.id AND m.user_id = $1
		JOIN projects p ON p.organization_id = o.id
		JOIN debug_files d ON d.project_id = p.id
		JOIN files f ON f.id = d.file_id
		WHERE o.slug = $2 AND `+strings.Join(where, " AND ")+`
		ORDER BY d.date_created DESC, d.id DESC LIMIT 1`, args...),
		&f.OrganizationID, &f.FileID, &f.SHA1, &sections, &source, &sums, &starts, &sizes)
	if errors.Is(err, pgx.ErrNoRows) {
		return f, errNoSymbolFile
	}
	if err != nil {
		return f, wrap(err)
	}
	if len(starts) != len(sums) || len(sizes) != len(sums) {
		return f, fmt.Errorf("file %d: a blob of its index is missing: %w", d.ID, ErrNotFound)
	}
	f.DebugFile = d
	if source != nil {
		m := sourceMemberOf(*source)
		f.Source = &m
	}
	for i := range sums {
		f.blobs = append(f.blobs, fileBlob{sha1: sums[i], start: starts[i], size: sizes[i]})
	}
	if sections != nil && string(sections) != "null" {
		var t SectionTable
		if err := json.Unmarshal(sections, &t); err != nil {
			return f, fmt.Errorf("debug file %d sections: %w", d.ID, err)
		}
		f.Sections = &t
	}
	return f, nil
}

// SymbolReader reads the content of a symbol file; its reader closes it.
type SymbolReader interface {
	io.ReaderAt
	io.Closer
	Size() int64
}

// ServedFileCacheStats returns the bytes and the number of the files that
// the symbol routes served and the store keeps (on disk, or in memory where
// it cannot write them), for GET /metrics.
func (s *Store) ServedFileCacheStats() (bytes int64, entries int) {
	return s.servedFiles.stats()
}

// OpenSymbolFile returns a reader of the file behind f, and records that
// it was used, as a download does, so that a file a debugger fetches every
// day never expires (at most once an hour per file; this process skips
// even the statement for a file it recorded in that hour). A file small
// enough for the cache is copied into it by the first request (through a
// small buffer, servedFileCache.fill) and then served from it: an *os.File of
// its own (an io.ReadSeeker that net/http sends with sendfile), or, where
// the cache could not write files, memory (with a Bytes method). A larger one is read from its blobs, with the blob index
// FindSymbolFile read (no query). A blob store that cannot be read is
// ErrUnavailable.
func (s *Store) OpenSymbolFile(ctx context.Context, f SymbolFile) (SymbolReader, error) {
	if s.touches.due(f.FileID, time.Now()) {
		s.touchFile(ctx, f.FileID)
	}
	fr := &FileReader{s: s, ctx: ctx, file: File{ID: f.FileID, Size: f.Size, SHA1: f.SHA1}, blobs: f.blobs}
	if !s.servedFiles.fits(f.Size) {
		return fr, nil
	}
	if kept := s.servedFiles.open(f.SHA1); kept != nil {
		return kept, nil
	}
	kept, err := s.servedFiles.fill(f.SHA1, f.Size, fr)
	if err != nil {
		return nil, fmt.Errorf("file %d: %w: %w", f.FileID, ErrUnavailable, err)
	}
	return kept, nil
}

// touchMemo remembers when this process last recorded the use of a file.
type touchMemo struct {
	mu   sync.Mutex
	last map[int64]time.Time
}

// touchMemoSize bounds the files a touchMemo remembers; past it, it
// forgets them all (a statement each costs only a round trip).
const touchMemoSize = 100_000

// due reports whether the use of file id at now should be recorded: not
// recorded by this process within the last hour.
func (m *touchMemo) due(id int64, now time.Time) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	if t, ok := m.last[id]; ok && now.Sub(t) < time.Hour {
		return false
	}
	if m.last == nil || len(m.last) >= touchMemoSize {
		m.last = map[int64]time.Time{}
	}
	m.last[id] = now
	return true
}

// LookupQuery is what symbolicator asks artifact-lookup/ for
// (docs/symbol-server.md): the files of any of DebugIDs, and, when Release is set, the
// release's files and the files of its bundles (of Dist: nil is none)
// whose URL contains one of URLs, in any case (Sentry's substring match).
type LookupQuery struct {
	DebugIDs []string // lowercase hyphenated UUIDs
	Release  string
	Dist     *string
	URLs     []string
}

// LookupFile is a file artifact-lookup/ answers: a file of an artifact
// bundle (BundleID set) or a release file (ReleaseFileID set), and how it
// was found ("debug-id" or "release").
type LookupFile struct {
	ArtifactBundleFile
	ReleaseFileID int64
	ResolvedWith  string
}

// Lookup answers q for the project sc names: the files found by debug id
// first, newest first, then those found by release and URL, at most limit
// in all, each once.
func (s *Store) Lookup(ctx context.Context, sc ProjectScope, q LookupQuery, limit int) ([]LookupFile, error) {
	if _, _, err := projectIDForMember(ctx, s.pool, sc.UserID, sc.OrgSlug, sc.ProjectSlug); err != nil {
		return nil, err
	}
	var out []LookupFile
	seen := map[int64]bool{}
	collect := func(resolved string, query string, args ...any) error {
		rows, err := s.pool.Query(ctx, query, args...)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var f LookupFile
			var isRelease bool
			if f.ArtifactBundleFile, err = scanArtifactBundleFile(rows, &isRelease); err != nil {
				return err
			}
			if isRelease {
				f.ReleaseFileID, f.ID = f.ID, 0
			}
			key := f.ID
			if isRelease {
				key = -f.ReleaseFileID
			}
			if seen[key] || len(out) >= limit {
				continue
			}
			seen[key] = true
			f.ResolvedWith = resolved
			out = append(out, f)
		}
		return rows.Err()
	}
	if len(q.DebugIDs) > 0 {
		if err := collect("debug-id", `
			SELECT `+artifactBundleFileCols+`, false`+artifactBundleJoins+`
			JOIN artifact_bundle_files abf ON abf.artifact_bundle_id = ab.id
			WHERE o.slug = $2 AND abf.debug_id = ANY($4::uuid[])
			ORDER BY ab.date_created DESC, abf.id DESC LIMIT $5`,
			sc.UserID, sc.OrgSlug, sc.ProjectSlug, q.DebugIDs, limit); err != nil {
			return nil, wrap(err)
		}
	}
	if q.Release == "" || len(q.URLs) == 0 || len(out) >= limit {
		return out, nil
	}
	// The bundles of the release and dist, then its release files.
	if err := collect("release", `
		SELECT `+artifactBundleFileCols+`, false`+artifactBundleJoins+`
		JOIN artifact_bundle_files abf ON abf.artifact_bundle_id = ab.id
		WHERE o.slug = $2 AND ab.release = $4 AND ab.dist IS NOT DISTINCT FROM $5
		  AND EXISTS (SELECT 1 FROM unnest($6::text[]) u WHERE strpos(lower(abf.url), lower(u)) > 0)
		ORDER BY ab.date_created DESC, abf.id DESC LIMIT $7`,
		sc.UserID, sc.OrgSlug, sc.ProjectSlug, q.Release, q.Dist, q.URLs, limit); err != nil {
		return nil, wrap(err)
	}
	if err := collect("release", `
		SELECT rf.id, '', rf.name, rf.name, 'release_file', NULL::text, rf.headers, COALESCE(rf.size, f.size), COALESCE(rf.sha1, f.sha1), true
		FROM release_files rf
		JOIN files f ON f.id = rf.file_id
		JOIN releases r ON r.id = rf.release_id
		JOIN organizations o ON o.id = r.organization_id
		JOIN memberships m ON m.organization_id = o.id AND m.user_id = $1
		WHERE o.slug = $2 AND r.version = $4 AND rf.dist IS NOT DISTINCT FROM $5
		  AND EXISTS (SELECT 1 FROM release_projects rp JOIN projects p ON p.id = rp.project_id
			WHERE rp.release_id = r.id AND p.slug = $3)
		  AND EXISTS (SELECT 1 FROM unnest($6::text[]) u WHERE strpos(lower(rf.name), lower(u)) > 0)
		ORDER BY rf.date_created DESC, rf.id DESC LIMIT $7`,
		sc.UserID, sc.OrgSlug, sc.ProjectSlug, q.Release, q.Dist, q.URLs, limit); err != nil {
		return nil, wrap(err)
	}
	return out, nil
}
