package store

import (
	"context"
	"crypto/rand"
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
)

// MigrateStats is what MigrateBlobs did.
type MigrateStats struct {
	Copied  int64 // blobs copied and checked
	Present int64 // blobs the destination held already, with the right bytes
	Removed int64 // blobs whose bytes were removed from the source
	Bytes   int64 // the bytes copied
}

// ErrBadBlob is the error of a blob whose stored bytes do not hash to its
// name.
var ErrBadBlob = errors.New("store: blob bytes do not match their SHA-1")

// MigrateBlobs copies the bytes of every blob, in SHA-1 order, from where
// this store keeps them to the blob store to under prefix (nil: PostgreSQL's
// blob_data), and checks each copy by reading it back and hashing it. It is
// resumable: a blob the destination holds already with the right bytes is
// not copied again, so a run that stopped is simply run again. With
// removeSource, the source's bytes of each blob go once its copy is
// checked and committed. Each blob is copied under its advisory lock, so
// the collector cannot remove it half-way; an upload that a server still
// configured with the old store accepts during the run lands in the old
// store, which is why docs/storage.md asks for the servers to be stopped (or
// for a second run once they are).
//
// progress, when not nil, is called after each blob.
func (s *Store) MigrateBlobs(ctx context.Context, to BlobStore, prefix string, removeSource bool, progress func(sha1 string, st MigrateStats)) (MigrateStats, error) {
	var st MigrateStats
	dst := &Store{pool: s.pool, objects: to, objectPrefix: prefix}
	if s.objects == nil && dst.objects == nil {
		return st, errors.New("the blobs are in PostgreSQL already")
	}
	if err := s.checkOtherStore(ctx, dst); err != nil {
		return st, err
	}
	if err := s.claimPrefix(ctx, dst); err != nil {
		return st, err
	}
	after := ""
	for {
		rows, err := s.pool.Query(ctx, `SELECT sha1 FROM blobs WHERE sha1 > $1 ORDER BY sha1 LIMIT 1000`, after)
		if err != nil {
			return st, wrap(err)
		}
		sha1s, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			return st, wrap(err)
		}
		for _, sha1 := range sha1s {
			if err := s.migrateBlob(ctx, dst, sha1, removeSource, &st); err != nil {
				return st, fmt.Errorf("blob %s: %w", sha1, err)
			}
			if progress != nil {
				progress(sha1, st)
			}
			after = sha1
		}
		if len(sha1s) < 1000 {
			if removeSource && s.objects != nil {
				// Every blob left the object store: so does this
				// deployment's claim on its prefix.
				if err := s.objects.Delete(ctx, s.objectPrefix+deploymentKey); err != nil {
					return st, err
				}
			}
			return st, nil
		}
	}
}

// ErrSameStore is the error of a migration whose destination is the
// store the blobs are in: copying each blob onto itself and removing the
// source would remove every blob.
var ErrSameStore = errors.New("store: the destination is where the blobs are")

// checkOtherStore fails with ErrSameStore when dst keeps its objects where
// s does, whatever the two were called: it writes an object of a random
// name to dst and looks for it in s. Two object stores only, since
// PostgreSQL's blob_data is one place.
func (s *Store) checkOtherStore(ctx context.Context, dst *Store) error {
	if s.objects == nil || dst.objects == nil {
		return nil
	}
	b := make([]byte, 16)
	rand.Read(b)
	name := "errata-migration-probe-" + hex.EncodeToString(b)
	if err := dst.objects.Put(ctx, dst.objectPrefix+name, strings.NewReader(name), int64(len(name))); err != nil {
		return fmt.Errorf("writing to the destination: %w", err)
	}
	defer dst.objects.Delete(context.WithoutCancel(ctx), dst.objectPrefix+name) //nolint:errcheck // a probe left behind is harmless
	_, err := s.objects.Stat(ctx, s.objectPrefix+name)
	switch {
	case err == nil:
		return ErrSameStore
	case errors.Is(err, ErrNotFound):
		return nil
	}
	return fmt.Errorf("reading the source: %w", err)
}

// migrateBlob copies blob sha1 to dst, checked, unless dst has it already.
func (s *Store) migrateBlob(ctx context.Context, dst *Store, sha1 string, removeSource bool, st *MigrateStats) error {
	gone := false
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, blobLockKey(sha1)); err != nil {
			return err
		}
		var exists bool
		if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM blobs WHERE sha1 = $1)`, sha1).Scan(&exists); err != nil {
			return err
		}
		if !exists {
			gone = true // collected since the list was read
			return nil
		}
		if err := checkBlobBytes(ctx, tx, dst, sha1); err == nil {
			st.Present++
			return nil
		} else if !errors.Is(err, ErrNotFound) && !errors.Is(err, ErrBadBlob) {
			return err
		}
		var data []byte
		err := s.readBlob(ctx, sha1, 0, -1, func(b []byte) error {
			data = append(data[:0], b...)
			return nil
		})
		if err != nil {
			return fmt.Errorf("reading the source: %w", err)
		}
		if sum := sha1Hex(data); sum != sha1 {
			return fmt.Errorf("the source holds bytes whose SHA-1 is %s: %w", sum, ErrBadBlob)
		}
		if err := dst.putBlob(ctx, tx, Chunk{SHA1: sha1, Data: data}); err != nil {
			return fmt.Errorf("writing the copy: %w", err)
		}
		if err := checkBlobBytes(ctx, tx, dst, sha1); err != nil {
			return fmt.Errorf("checking the copy: %w", err)
		}
		st.Copied++
		st.Bytes += int64(len(data))
		return nil
	})
	if err != nil || gone || !removeSource {
		return err
	}
	// The copy is committed: only now may the source's bytes go.
	err = s.inTx(ctx, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, blobLockKey(sha1)); err != nil {
			return err
		}
		return s.deleteBlobBytes(ctx, tx, sha1)
	})
	if err == nil {
		st.Removed++
	}
	return err
}

// checkBlobBytes reads blob sha1 from where s keeps bytes (within tx for
// PostgreSQL, so that a copy not yet committed is seen) and checks their
// SHA-1: ErrNotFound when they are missing, ErrBadBlob when they differ.
func checkBlobBytes(ctx context.Context, tx pgx.Tx, s *Store, sha1 string) error {
	if s.objects == nil {
		var b []byte
		err := tx.QueryRow(ctx, `SELECT data FROM blob_data WHERE key = $1`, sha1).Scan(&b)
		if errors.Is(err, pgx.ErrNoRows) {
			return ErrNotFound
		}
		if err != nil {
			return err
		}
		if sha1Hex(b) != sha1 {
			return ErrBadBlob
		}
		return nil
	}
	return s.readBlob(ctx, sha1, 0, -1, func(b []byte) error {
		if sha1Hex(b) != sha1 {
			return ErrBadBlob
		}
		return nil
	})
}

func sha1Hex(b []byte) string {
	sum := sha1.Sum(b)
	return hex.EncodeToString(sum[:])
}
