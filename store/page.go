package store

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
)

// MaxHits caps the total that lists count for X-Hits.
const MaxHits = 1000

// Key is the position of a row in a list ordered newest first: its creation
// time and, to break ties, its id.
type Key struct {
	Created time.Time
	ID      int64
}

// Page asks for one page of a list ordered newest first (created desc, id
// desc). At most one of After and Before is set: After asks for the rows
// that follow a key, Before for the rows that precede it.
type Page struct {
	Limit  int
	After  *Key
	Before *Key
}

// PageInfo describes the page that a list returned.
type PageInfo struct {
	HasPrev, HasNext bool
	First, Last      Key // keys of the first and last rows; zero when empty
	Hits             int // total rows of the list, capped at MaxHits
}

// listQuery is one keyset-paginated statement: cols are selected from from,
// which ends in a WHERE clause whose placeholders take args; createdCol and
// idCol name the sort key. The count of hits selects from from too.
//
// page, when set, replaces "SELECT cols from" in the page's statement: a
// whole SELECT with the joins only the page needs, ending in from's WHERE
// clause. scope, when set, is a SELECT on the same args that returns a row
// when the list's owner exists for the caller (membership): the count
// statement checks it, and when it returns no row the list fails with
// missing. from must then carry the same condition, so that the page of a
// foreign owner is empty too.
type listQuery struct {
	cols       string
	from       string
	page       string
	args       []any
	createdCol string
	idCol      string
	scope      string
	missing    error
}

// list runs lq for page, scanning rows with scan, and counts the hits.
func list[T any](ctx context.Context, q querier, lq listQuery, page Page, scan func(pgx.Rows) (T, Key, error)) ([]T, PageInfo, error) {
	limit := max(page.Limit, 1)
	args := slices.Clone(lq.args)
	n := len(args)
	sql := "SELECT " + lq.cols + " " + lq.from
	if lq.page != "" {
		sql = lq.page
	}
	backwards := false
	switch {
	case page.After != nil:
		sql += fmt.Sprintf(" AND (%s, %s) < ($%d, $%d)", lq.createdCol, lq.idCol, n+1, n+2)
		args = append(args, page.After.Created, page.After.ID)
	case page.Before != nil:
		sql += fmt.Sprintf(" AND (%s, %s) > ($%d, $%d)", lq.createdCol, lq.idCol, n+1, n+2)
		args = append(args, page.Before.Created, page.Before.ID)
		backwards = true
	}
	if backwards {
		sql += fmt.Sprintf(" ORDER BY %s ASC, %s ASC", lq.createdCol, lq.idCol)
	} else {
		sql += fmt.Sprintf(" ORDER BY %s DESC, %s DESC", lq.createdCol, lq.idCol)
	}
	sql += fmt.Sprintf(" LIMIT %d", limit+1)

	// The page and its count go in one round trip.
	batch := &pgx.Batch{}
	batch.Queue(sql, args...)
	count := fmt.Sprintf("SELECT count(*) FROM (SELECT 1 %s LIMIT %d) hits", lq.from, MaxHits)
	if lq.scope != "" {
		count = fmt.Sprintf("SELECT EXISTS (%s), (%s)", lq.scope, count)
	}
	batch.Queue(count, lq.args...)
	br := q.SendBatch(ctx, batch)
	defer br.Close()
	rows, err := br.Query()
	if err != nil {
		return nil, PageInfo{}, wrap(err)
	}
	items := make([]T, 0, limit+1)
	keys := make([]Key, 0, limit+1)
	for rows.Next() {
		item, key, err := scan(rows)
		if err != nil {
			rows.Close()
			return nil, PageInfo{}, wrap(err)
		}
		items = append(items, item)
		keys = append(keys, key)
	}
	if err := rows.Err(); err != nil {
		return nil, PageInfo{}, wrap(err)
	}
	more := len(items) > limit
	if more {
		items, keys = items[:limit], keys[:limit]
	}
	var info PageInfo
	if backwards {
		slices.Reverse(items)
		slices.Reverse(keys)
		info.HasPrev, info.HasNext = more, true
	} else {
		info.HasPrev, info.HasNext = page.After != nil, more
	}
	if len(keys) > 0 {
		info.First, info.Last = keys[0], keys[len(keys)-1]
	}
	dest := []any{&info.Hits}
	found := true
	if lq.scope != "" {
		dest = []any{&found, &info.Hits}
	}
	if err := br.QueryRow().Scan(dest...); err != nil {
		return nil, PageInfo{}, wrap(err)
	}
	if !found {
		return nil, PageInfo{}, lq.missing
	}
	if err := br.Close(); err != nil {
		return nil, PageInfo{}, wrap(err)
	}
	return items, info, nil
}
