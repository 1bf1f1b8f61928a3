package store

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
)

// ErrSharedPrefix is the error of an object store whose prefix another
// deployment (another database) uses: each one's collector would remove
// the other's objects as orphans.
var ErrSharedPrefix = errors.New("store: the object store's prefix belongs to another deployment")

// deploymentKey names, under the object store's prefix, the object that
// holds the id of the deployment the prefix belongs to. It is not a SHA-1,
// so the collector never takes it for a blob.
const deploymentKey = "errata-deployment"

// ClaimBlobPrefix makes the object store's prefix this deployment's: it
// writes the deployment's id there when no deployment's is, and fails with
// ErrSharedPrefix when another's is. The write is not conditional (the S3
// client has no If-None-Match): two deployments that first claim an empty
// prefix within the same moment may each read back their own id, and the
// later write wins; the loser's next claim (every collection, every start)
// then fails, before its next orphan sweep. Nothing to do when the bytes
// live in PostgreSQL.
func (s *Store) ClaimBlobPrefix(ctx context.Context) error {
	return s.claimPrefix(ctx, s)
}

// claimPrefix claims dst's prefix for the deployment of s's database.
func (s *Store) claimPrefix(ctx context.Context, dst *Store) error {
	if dst.objects == nil {
		return nil
	}
	var id string
	if err := s.pool.QueryRow(ctx, `SELECT id FROM deployment`).Scan(&id); err != nil {
		return wrap(err)
	}
	key := dst.objectPrefix + deploymentKey
	owner, err := dst.readOwner(ctx, key)
	if errors.Is(err, ErrNotFound) {
		if err := dst.objects.Put(ctx, key, strings.NewReader(id), int64(len(id))); err != nil {
			return err
		}
		owner, err = dst.readOwner(ctx, key)
	}
	if err != nil {
		return err
	}
	if owner != id {
		return fmt.Errorf("%w: %s names deployment %.40q, this database is %s", ErrSharedPrefix, key, owner, id)
	}
	return nil
}

// readOwner reads the deployment id stored at key (at most 100 bytes).
func (s *Store) readOwner(ctx context.Context, key string) (string, error) {
	rc, err := s.objects.Get(ctx, key, 0, -1)
	if err != nil {
		return "", err
	}
	defer rc.Close()
	b, err := io.ReadAll(io.LimitReader(rc, 100))
	return string(b), err
}
