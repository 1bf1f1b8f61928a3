package store

import (
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
// and []string), a row costs about 30 allocations: one per string, one per
// pointer and array element, one per escaping destination. releaseRow
// scans the row into destinations built once, reads the text columns as
// the bytes pgx received (textCol, textArray), and then builds the Release
// with all its text in one string and all its optional values in one
// allocation (releaseBox).

// textCol is a text, json or jsonb column as the bytes pgx received,
// without a string: nil is NULL. It is valid only until the next row,
// so it is read inside ScanRow.
type textCol []byte

// ScanBytes implements pgtype.BytesScanner.
func (c *textCol) ScanBytes(v []byte) error {
	*c = v
	return nil
}

// textArray is a text[] column as textCols (a NULL array is empty). It
// keeps its storage from row to row.
type textArray struct{ elems []textCol }

// SetDimensions implements pgtype.ArraySetter.
func (a *textArray) SetDimensions(dims []pgtype.ArrayDimension) error {
	n, err := arrayLength(dims)
	a.elems = slices.Grow(a.elems[:0], n)[:n]
	return err
}

// ScanIndex implements pgtype.ArraySetter.
func (a *textArray) ScanIndex(i int) any { return &a.elems[i] }

// ScanIndexType implements pgtype.ArraySetter.
func (a *textArray) ScanIndexType() any { return new(textCol) }

// int64Array is a bigint[] column (a NULL array is empty). It keeps its
// storage from row to row.
type int64Array struct{ elems []int64 }

// SetDimensions implements pgtype.ArraySetter.
func (a *int64Array) SetDimensions(dims []pgtype.ArrayDimension) error {
	n, err := arrayLength(dims)
	a.elems = slices.Grow(a.elems[:0], n)[:n]
	return err
}

// ScanIndex implements pgtype.ArraySetter.
func (a *int64Array) ScanIndex(i int) any { return &a.elems[i] }

// ScanIndexType implements pgtype.ArraySetter.
func (a *int64Array) ScanIndexType() any { return new(int64) }

// arrayLength is the length of a one-dimensional array (0 for NULL).
func arrayLength(dims []pgtype.ArrayDimension) (int, error) {
	switch len(dims) {
	case 0:
		return 0, nil
	case 1:
		return int(dims[0].Length), nil
	}
	return 0, fmt.Errorf("an array of %d dimensions, not 1", len(dims))
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
	projectIDs                              int64Array
	projectSlugs, projectNames              textArray
	deployCount                             int64
	deployID                                pgtype.Int8
	deployEnv, deployName, deployURL        textCol
	deployStarted, deployFinished, deployAt timeCol
	commitCount                             int64
	lastCommit                              textCol

	dest    []any    // the fields above, in releaseSelect's order
	text    []byte   // the row's text, before it becomes one string
	ends    []int    // where each text column ends in text
	release Release  // the last row read
	strs    []string // scratch for the row's strings
}

func newReleaseRow() *releaseRow {
	row := &releaseRow{}
	row.dest = []any{&row.id, &row.version, &row.ref, &row.url, &row.data, &row.dateCreated,
		&row.dateReleased, &row.dateStarted, &row.status,
		&row.projectIDs, &row.projectSlugs, &row.projectNames,
		&row.deployCount, &row.deployID, &row.deployEnv, &row.deployName, &row.deployURL,
		&row.deployStarted, &row.deployFinished, &row.deployAt,
		&row.commitCount, &row.lastCommit}
	return row
}

// releaseBox holds what the pointers of one Release point to, so that
// they cost one allocation together.
type releaseBox struct {
	ref, url, deployName, deployURL  string
	released, started, deployStarted time.Time
	deploy                           Deploy
}

// ScanRow implements pgx.RowScanner: it reads the row into row.release
// while the bytes of its columns are still valid.
func (row *releaseRow) ScanRow(rows pgx.Rows) error {
	if err := rows.Scan(row.dest...); err != nil {
		return err
	}
	row.release = Release{}
	r := &row.release
	r.ID, r.DateCreated = row.id, row.dateCreated
	r.DeployCount, r.CommitCount = int(row.deployCount), int(row.commitCount)
	if row.data != nil {
		r.Data = append(json.RawMessage(nil), row.data...)
	}

	// Every text column of the row becomes one string, sliced.
	ids, slugs, names := row.projectIDs.elems, row.projectSlugs.elems, row.projectNames.elems
	if len(slugs) != len(ids) || len(names) != len(ids) {
		return fmt.Errorf("release %d: %d project ids, %d slugs, %d names", r.ID, len(ids), len(slugs), len(names))
	}
	row.text, row.ends = row.text[:0], row.ends[:0]
	for _, c := range []textCol{row.version, row.status, row.ref, row.url, row.deployEnv, row.deployName, row.deployURL} {
		row.addText(c)
	}
	for i := range ids {
		row.addText(slugs[i])
		row.addText(names[i])
	}
	s := row.strings()
	r.Version, r.Status = s[0], s[1]
	r.Projects = make([]ReleaseProject, len(ids))
	for i, id := range ids {
		r.Projects[i] = ReleaseProject{ID: id, Slug: s[7+2*i], Name: s[8+2*i]}
	}

	// The optional values share a box, when there is any.
	if row.ref == nil && row.url == nil && !row.dateReleased.Valid && !row.dateStarted.Valid && !row.deployID.Valid {
		return row.readLastCommit()
	}
	box := &releaseBox{ref: s[2], url: s[3], deployName: s[5], deployURL: s[6]}
	if row.ref != nil {
		r.Ref = &box.ref
	}
	if row.url != nil {
		r.URL = &box.url
	}
	var err error
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

// readLastCommit reads the last commit column, for the few releases that
// have one.
func (row *releaseRow) readLastCommit() error {
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
