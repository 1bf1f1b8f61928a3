package store

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
)

// This file is the table throttle_events: one row per counted event (a
// failed password, a reset request...) in a bucket that authn names. The
// rules (which bucket, how many in which window) are authn's; the store
// makes a take exact among any number of replicas, by the database's clock.

// MaxThrottleBucket is the longest bucket name the table accepts.
const MaxThrottleBucket = 400

// throttleLockClass is the first key of the advisory lock that orders the
// takes of a bucket (the two-key form; commits use 1, job limits 2).
const throttleLockClass = 3

// ThrottleBucket is one bucket of a take: its name, and at most Limit
// events in the last Window.
type ThrottleBucket struct {
	Name   string
	Window time.Duration
	Limit  int
}

// TakeThrottle records one event in every bucket of buckets, or in none
// when one of them already holds its limit of events in its window. full
// is the index in buckets of the first full one, or -1 when the events
// were recorded; events are their ids then, one per bucket in order, for
// CancelThrottle.
//
// A take is exact under concurrency, in one process or many: takes of a
// bucket run one after the other under an advisory lock held to the end of
// their short transaction (locks taken in one order, so takes of several
// buckets cannot deadlock), each counting the events committed before it.
// In one process they wait for their turn before they take a connection;
// one that waits too long is ErrUnavailable.
// Of N takes at once of a bucket with room for L, exactly min(N, L) are
// recorded. Times are the database's (clock_timestamp()), so replicas
// agree on windows.
func (s *Store) TakeThrottle(ctx context.Context, buckets ...ThrottleBucket) (events []int64, full int, err error) {
	for _, b := range buckets {
		if b.Name == "" || len(b.Name) > MaxThrottleBucket || b.Window <= 0 || b.Limit < 0 {
			return nil, -1, fmt.Errorf("store: throttle bucket %.40q (window %s, limit %d) is out of bounds", b.Name, b.Window, b.Limit)
		}
	}
	if len(buckets) == 0 {
		return nil, -1, errors.New("store: a throttle take needs a bucket")
	}
	keys := make([]int32, len(buckets))
	for i, b := range buckets {
		keys[i] = throttleLockKey(b.Name)
	}
	slices.Sort(keys)
	keys = slices.Compact(keys)
	// In this process, the takes of a bucket wait for their turn without a
	// connection: a flood of attempts on one account holds one connection
	// of the pool, not all of them.
	for _, k := range keys {
		release, err := s.throttleTurns.take(ctx, int64(k))
		if errors.Is(err, ErrTurnTimeout) {
			return nil, -1, fmt.Errorf("%w: the throttle bucket's takes wait too long: %w", ErrUnavailable, err)
		}
		if err != nil {
			return nil, -1, err
		}
		defer release()
	}
	full = -1
	err = s.inTx(ctx, func(tx pgx.Tx) error {
		// The locks first, in order, then the counts: each statement of
		// the batch sees what was committed before it started, so the
		// counts see every take that held a lock before this one.
		batch := &pgx.Batch{}
		for _, k := range keys {
			batch.Queue(`SELECT pg_advisory_xact_lock($1, $2)`, throttleLockClass, k)
		}
		counts := make([]int, len(buckets))
		for i, b := range buckets {
			batch.Queue(`
				SELECT count(*) FROM (
					SELECT 1 FROM throttle_events
					WHERE bucket = $1 AND at > clock_timestamp() - make_interval(secs => $2)
					LIMIT $3) e`, b.Name, b.Window.Seconds(), b.Limit).
				QueryRow(func(row pgx.Row) error { return row.Scan(&counts[i]) })
		}
		if err := tx.SendBatch(ctx, batch).Close(); err != nil {
			return err
		}
		for i, b := range buckets {
			if counts[i] >= b.Limit {
				full = i
				return nil
			}
		}
		events = make([]int64, len(buckets))
		batch = &pgx.Batch{}
		for i, b := range buckets {
			batch.Queue(`INSERT INTO throttle_events (bucket, at) VALUES ($1, clock_timestamp()) RETURNING id`, b.Name).
				QueryRow(func(row pgx.Row) error { return row.Scan(&events[i]) })
		}
		return tx.SendBatch(ctx, batch).Close()
	})
	if err != nil {
		return nil, -1, err
	}
	return events, full, nil
}

// throttleLockKey is the second key of bucket's advisory lock: 32 bits of
// its SHA-256. Two buckets of one key only take turns.
func throttleLockKey(bucket string) int32 {
	sum := sha256.Sum256([]byte(bucket))
	return int32(binary.BigEndian.Uint32(sum[:4]))
}

// CancelThrottle removes events that TakeThrottle recorded: an attempt
// that was no failure takes its own events back, and no one else's.
// Events already swept are no error.
func (s *Store) CancelThrottle(ctx context.Context, events ...int64) error {
	if len(events) == 0 {
		return nil
	}
	_, err := s.pool.Exec(ctx, `DELETE FROM throttle_events WHERE id = ANY($1)`, events)
	return wrap(err)
}

// ThrottleCount is the number of events of bucket in the last window, by
// the database's clock.
func (s *Store) ThrottleCount(ctx context.Context, bucket string, window time.Duration) (int, error) {
	var n int
	err := s.pool.QueryRow(ctx, `
		SELECT count(*) FROM throttle_events
		WHERE bucket = $1 AND at > clock_timestamp() - make_interval(secs => $2)`,
		bucket, window.Seconds()).Scan(&n)
	return n, wrap(err)
}

// SweepThrottle removes at most batch events older than olderThan (the
// longest window of any rule) in one short statement, and returns how many
// it removed: when that is batch, more may be left for another call.
func (s *Store) SweepThrottle(ctx context.Context, olderThan time.Duration, batch int) (int, error) {
	tag, err := s.pool.Exec(ctx, `
		DELETE FROM throttle_events WHERE id IN (
			SELECT id FROM throttle_events
			WHERE at < clock_timestamp() - make_interval(secs => $1)
			LIMIT $2)`, olderThan.Seconds(), batch)
	if err != nil {
		return 0, wrap(err)
	}
	return int(tag.RowsAffected()), nil
}
