package store

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
)

// A release list is 50 rows of 22 columns, the hottest read errata serves.
// Scanned the ordinary way (pgx's Scan into strings, *string, *time.Time
// and []string), a row cost about 30 allocations: one per string, one per
// pointer and array element, one per escaping destination. releaseRow
// scans the row into destinations built once, reads the text columns as
// the bytes pgx received (textCol) and the arrays from the raw row
// (readArray), and then builds the Release with all its text in one
// string, and its optional values, projects and data in chunks that the
// rows of a list share (take).

// textCol is a text, json or jsonb column as the bytes pgx received,
// without a string: nil is NULL. It is valid only until the next row,
// so it is read inside ScanRow.
type textCol []byte

// ScanBytes implements pgtype.BytesScanner.
func (c *textCol) ScanBytes(v []byte) error {
	*c = v
	return nil
}

// errShortArray is readArray's error for an array cut short.
var errShortArray = errors.New("array: too short")

// readArray reads a one-dimensional array in PostgreSQL's binary format
// (array_send: the number of dimensions, a flag for NULLs, the element
// type, each dimension's length and lower bound, then each element as its
// length, -1 for NULL, and its bytes) into elems, reusing their storage.
// A NULL array (src nil) is empty; a NULL element is nil. It returns the
// element type's OID. pgx decodes arrays through interfaces and allocates
// their dimensions; a release row has three.
func readArray(elems []textCol, src []byte) ([]textCol, uint32, error) {
	elems = elems[:0]
	if src == nil {
		return elems, 0, nil
	}
	if len(src) < 12 {
		return elems, 0, errShortArray
	}
	dims, oid := int32(binary.BigEndian.Uint32(src)), binary.BigEndian.Uint32(src[8:])
	switch {
	case dims == 0:
		return elems, oid, nil
	case dims != 1:
		return elems, oid, fmt.Errorf("array: %d dimensions, not 1", dims)
	case len(src) < 20:
		return elems, oid, errShortArray
	}
	n := int32(binary.BigEndian.Uint32(src[12:]))
	src = src[20:]
	for range n {
		if len(src) < 4 {
			return elems, oid, errShortArray
		}
		size := int32(binary.BigEndian.Uint32(src))
		src = src[4:]
		if size < 0 {
			elems = append(elems, nil)
			continue
		}
		if int(size) > len(src) {
			return elems, oid, errShortArray
		}
		elems = append(elems, textCol(src[:size:size]))
		src = src[size:]
	}
	return elems, oid, nil
}

// rawArray reads the array column i of rows, which pgx receives in binary
// format, as it does with its statement cache (pgx's default mode, which
// the store uses); a column that is not named name or comes in text
// format, or elements of a type not in oids, are an error.
func rawArray(elems []textCol, rows pgx.Rows, i int, name string, oids ...uint32) ([]textCol, error) {
	fd := rows.FieldDescriptions()[i]
	if fd.Name != name || fd.Format != pgtype.BinaryFormatCode {
		return elems, fmt.Errorf("column %d: %q in format %d, want %q in binary format", i, fd.Name, fd.Format, name)
	}
	elems, oid, err := readArray(elems, rows.RawValues()[i])
	if err != nil || len(elems) == 0 || slices.Contains(oids, oid) {
		return elems, err
	}
	return elems, fmt.Errorf("column %q: elements of type %d", name, oid)
}

// timeCol is a nullable timestamptz column; infinity is an error, as it
// is for pgx's *time.Time.
type timeCol struct{ pgtype.Timestamptz }

// ptr returns the time in box, or nil for NULL.
func (c *timeCol) ptr(box *time.Time) (*time.Time, error) {
	if !c.Valid {
		return nil, nil
	}
	if c.InfinityModifier != pgtype.Finite {
		return nil, errors.New("cannot scan an infinite timestamp into a time")
	}
	*box = c.Time
	return box, nil
}

// releaseRow reads rows of releaseSelect: releaseRow.ScanRow scans one
// into release. One releaseRow serves every row of a list.
type releaseRow struct {
	id                                      int64
	version, ref, url, data, status         textCol
	dateCreated                             time.Time
	dateReleased, dateStarted               timeCol
	projectIDs, projectSlugs, projectNames  []textCol // see rawArray
	projectPlatforms                        []textCol
	deployCount                             int64
	deployID                                pgtype.Int8
	deployEnv, deployName, deployURL        textCol
	deployStarted, deployFinished, deployAt timeCol
	commitCount                             int64
	lastCommit, owner                       textCol

	dest    []any    // the fields above, in releaseSelect's order
	text    []byte   // the row's text, before it becomes one string
	ends    []int    // where each text column ends in text
	strs    []string // the row's strings
	release Release  // the last row read

	// Chunks that the releases of a list share (see take), sized for
	// the rows expected.
	rows     int
	boxes    []releaseBox
	projects []ReleaseProject
	bytes    []byte
}

// The array columns of releaseSelect, which releaseRow reads itself.
const (
	colProjectIDs   = 9
	colProjectSlugs = 10
	colProjectNames = 11
	// colProjectPlatforms holds '' for a project without a platform.
	colProjectPlatforms = 12
)

// newReleaseRow returns a releaseRow for a statement of about rows rows.
func newReleaseRow(rows int) *releaseRow {
	row := &releaseRow{rows: rows, text: make([]byte, 0, 256), ends: make([]int, 0, 16)}
	row.dest = []any{&row.id, &row.version, &row.ref, &row.url, &row.data, &row.dateCreated,
		&row.dateReleased, &row.dateStarted, &row.status,
		nil, nil, nil, nil, // colProjectIDs, colProjectSlugs, colProjectNames, colProjectPlatforms
		&row.deployCount, &row.deployID, &row.deployEnv, &row.deployName, &row.deployURL,
		&row.deployStarted, &row.deployFinished, &row.deployAt,
		&row.commitCount, &row.lastCommit, &row.owner}
	return row
}

// releaseBox holds what the pointers of one Release point to, so that
// they cost no allocation of their own.
type releaseBox struct {
	ref, url, deployName, deployURL  string
	released, started, deployStarted time.Time
	deploy                           Deploy
}

// take returns n elements of the chunk *slab, capped so that an append
// to them copies; when the chunk has no room left it starts a new one of
// size elements (or n). Its elements are zero: a chunk is never reused,
// only left to the collector with the releases that point into it.
func take[T any](slab *[]T, n, size int) []T {
	s := *slab
	if cap(s)-len(s) < n {
		s = make([]T, 0, max(n, size))
	}
	*slab = s[:len(s)+n]
	return s[len(s) : len(s)+n : len(s)+n]
}

// ScanRow implements pgx.RowScanner: it reads the row into row.release
// while the bytes of its columns are still valid.
func (row *releaseRow) ScanRow(rows pgx.Rows) error {
	if err := rows.Scan(row.dest...); err != nil {
		return err
	}
	var err error
	if row.projectIDs, err = rawArray(row.projectIDs, rows, colProjectIDs, "ids", pgtype.Int8OID); err != nil {
		return err
	}
	if row.projectSlugs, err = rawArray(row.projectSlugs, rows, colProjectSlugs, "slugs", pgtype.TextOID, pgtype.VarcharOID); err != nil {
		return err
	}
	if row.projectNames, err = rawArray(row.projectNames, rows, colProjectNames, "names", pgtype.TextOID, pgtype.VarcharOID); err != nil {
		return err
	}
	if row.projectPlatforms, err = rawArray(row.projectPlatforms, rows, colProjectPlatforms, "platforms", pgtype.TextOID, pgtype.VarcharOID); err != nil {
		return err
	}
	row.release = Release{}
	r := &row.release
	r.ID, r.DateCreated = row.id, row.dateCreated
	r.DeployCount, r.CommitCount = int(row.deployCount), int(row.commitCount)
	if row.data != nil {
		r.Data = json.RawMessage(take(&row.bytes, len(row.data), 64*row.rows))
		copy(r.Data, row.data)
	}

	// Every text column of the row becomes one string, sliced.
	ids, slugs, names, platforms := row.projectIDs, row.projectSlugs, row.projectNames, row.projectPlatforms
	if len(slugs) != len(ids) || len(names) != len(ids) || len(platforms) != len(ids) {
		return fmt.Errorf("release %d: %d project ids, %d slugs, %d names, %d platforms", r.ID, len(ids), len(slugs), len(names), len(platforms))
	}
	row.text, row.ends = row.text[:0], row.ends[:0]
	for _, c := range []textCol{row.version, row.status, row.ref, row.url, row.deployEnv, row.deployName, row.deployURL} {
		row.addText(c)
	}
	for i := range ids {
		row.addText(slugs[i])
		row.addText(names[i])
		row.addText(platforms[i])
	}
	s := row.strings()
	r.Version, r.Status = s[0], s[1]
	r.Projects = take(&row.projects, len(ids), 2*row.rows)
	for i, id := range ids {
		if len(id) != 8 {
			return fmt.Errorf("release %d: a project id of %d bytes", r.ID, len(id))
		}
		r.Projects[i] = ReleaseProject{ID: int64(binary.BigEndian.Uint64(id)), Slug: s[7+3*i], Name: s[8+3*i], Platform: s[9+3*i]}
	}

	// The optional values share a box, when there is any.
	if row.ref == nil && row.url == nil && !row.dateReleased.Valid && !row.dateStarted.Valid && !row.deployID.Valid {
		return row.readLastCommit()
	}
	box := &take(&row.boxes, 1, row.rows)[0]
	box.ref, box.url, box.deployName, box.deployURL = s[2], s[3], s[5], s[6]
	if row.ref != nil {
		r.Ref = &box.ref
	}
	if row.url != nil {
		r.URL = &box.url
	}
	if r.DateReleased, err = row.dateReleased.ptr(&box.released); err != nil {
		return err
	}
	if r.DateStarted, err = row.dateStarted.ptr(&box.started); err != nil {
		return err
	}
	if row.deployID.Valid {
		d := &box.deploy
		d.ID, d.Environment = row.deployID.Int64, s[4]
		if row.deployName != nil {
			d.Name = &box.deployName
		}
		if row.deployURL != nil {
			d.URL = &box.deployURL
		}
		if d.DateStarted, err = row.deployStarted.ptr(&box.deployStarted); err != nil {
			return err
		}
		finished, err := row.deployFinished.ptr(&d.DateFinished)
		if err != nil {
			return err
		}
		created, err := row.deployAt.ptr(&d.DateCreated)
		if err != nil {
			return err
		}
		if finished == nil || created == nil || row.deployEnv == nil {
			return fmt.Errorf("release %d: deploy %d without environment or dates", r.ID, d.ID)
		}
		r.LastDeploy = d
	}
	return row.readLastCommit()
}

// readLastCommit reads the last commit and owner columns, for the few
// releases that have them.
func (row *releaseRow) readLastCommit() error {
	if row.owner != nil {
		if err := row.release.readOwner(row.owner); err != nil {
			return err
		}
	}
	if row.lastCommit == nil {
		return nil
	}
	return row.release.readLastCommit(row.lastCommit)
}

// addText appends a text column to the row's text.
func (row *releaseRow) addText(c textCol) {
	row.text = append(row.text, c...)
	row.ends = append(row.ends, len(row.text))
}

// strings returns the text columns added since the row began, in their
// order, as substrings of one string.
func (row *releaseRow) strings() []string {
	all := string(row.text)
	row.strs = row.strs[:0]
	start := 0
	for _, end := range row.ends {
		row.strs = append(row.strs, all[start:end])
		start = end
	}
	return row.strs
}
