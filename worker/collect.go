package worker

import (
	"context"
	"encoding/json"
	"log/slog"
	"strconv"
	"time"

	"errata/store"
)

// Collector runs collect jobs: it removes the files, blob ownerships and
// blobs that nothing used for Grace, and, with Retention, first the
// release files and bundles nobody read or wrote for that long.
type Collector struct {
	Store     *store.Store
	Log       *slog.Logger
	Grace     time.Duration
	Retention time.Duration // 0: files are kept while they are used
	// JobRetention is how long ended jobs (done or error) are kept; 0
	// keeps them.
	JobRetention time.Duration
}

// Run runs one collection.
func (c *Collector) Run(ctx context.Context, _ json.RawMessage) error {
	if c.JobRetention > 0 {
		n, err := c.Store.PruneJobs(ctx, c.JobRetention)
		if err != nil {
			return err
		}
		c.Log.Info("collect: jobs pruned", "jobs", n)
	}
	st, err := c.Store.Collect(ctx, c.Grace, c.Retention)
	c.Log.Info("collect", "expired", st.Expired, "files", st.Files, "owners", st.Owners,
		"blobs", st.Blobs, "bytes", st.Bytes, "orphan_objects", st.Orphans, "err", err)
	return err
}

// Schedule enqueues a collect job every interval until ctx ends, and wakes
// the worker with notify. Replicas that schedule at once enqueue one job an
// interval: its unique key is the interval's start.
func (c *Collector) Schedule(ctx context.Context, interval time.Duration, notify func()) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		key := store.CollectJobKind + ":" + strconv.FormatInt(time.Now().Truncate(interval).Unix(), 10)
		if _, err := c.Store.EnqueueJob(ctx, store.CollectJobKind, key, struct{}{}, 3); err != nil && ctx.Err() == nil {
			c.Log.Warn("collect: enqueue", "err", err)
		} else if notify != nil {
			notify()
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
