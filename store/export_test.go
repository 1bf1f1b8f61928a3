package store

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"
)

// SetEnvironmentCreatedForTest gives environment i (in id order) the time
// base + (i mod 5) seconds, so that lists have ties in their sort key.
func (s *Store) SetEnvironmentCreatedForTest(ctx context.Context, base time.Time) error {
	_, err := s.pool.Exec(ctx, `
		UPDATE environments e SET date_created = $1::timestamptz + make_interval(secs => ((r.n - 1) % 5))
		FROM (SELECT id, row_number() OVER (ORDER BY id) AS n FROM environments) r
		WHERE r.id = e.id`, base)
	return err
}

// EnvironmentNamesForTest pages through the environment names of an
// organization with the generic list helper.
func (s *Store) EnvironmentNamesForTest(ctx context.Context, orgSlug string, page Page) ([]string, PageInfo, error) {
	return list(ctx, s.pool, listQuery{
		cols:       "e.name, e.date_created, e.id",
		from:       "FROM environments e JOIN organizations o ON o.id = e.organization_id WHERE o.slug = $1",
		args:       []any{orgSlug},
		createdCol: "e.date_created",
		idCol:      "e.id",
	}, page, func(rows pgx.Rows) (string, Key, error) {
		var name string
		var k Key
		err := rows.Scan(&name, &k.Created, &k.ID)
		return name, k, err
	})
}

// HoldConnectionForTest takes a connection of the pool, closes held, and
// gives it back once release is closed.
func (s *Store) HoldConnectionForTest(ctx context.Context, held, release chan struct{}) {
	c, err := s.pool.Acquire(ctx)
	close(held)
	if err != nil {
		return
	}
	<-release
	c.Release()
}

// TakeTurnForTest takes organization org's turn, as a request that writes
// its jobs does, and returns its release.
func (s *Store) TakeTurnForTest(ctx context.Context, org int64) (func(), error) {
	return s.turns.take(ctx, org)
}

// AcquiredConnsForTest is how many of the pool's connections are in use.
func (s *Store) AcquiredConnsForTest() int32 { return s.pool.Stat().AcquiredConns() }

// DifJobKeyForTest is the unique key of the assemble_dif job of org's chunks.
func DifJobKeyForTest(org int64, chunks []string) string { return difJobKey(org, chunks) }
