package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"

	"errata/store"
	"errata/store/s3"
)

// openBlobStore returns the blob store that where names ("postgres" or
// s3://BUCKET[/PREFIX], the S3_* variables coming from getenv) and the
// prefix of its keys; nil keeps the bytes in PostgreSQL. It does not
// contact the object store.
func openBlobStore(where string, getenv func(string) string) (store.BlobStore, string, error) {
	cfg, err := blobStoreConfig(where, getenv)
	if cfg == nil || err != nil {
		return nil, "", err
	}
	c, err := s3.New(*cfg)
	if err != nil {
		return nil, "", err
	}
	prefix := cfg.Prefix
	if prefix != "" {
		prefix += "/"
	}
	return c, prefix, nil
}

// blobStoreConfig reads where, as openBlobStore does: nil for PostgreSQL.
func blobStoreConfig(where string, getenv func(string) string) (*s3.Config, error) {
	if where == "" || where == "postgres" {
		return nil, nil
	}
	if !strings.HasPrefix(where, "s3://") {
		return nil, fmt.Errorf("BLOB_STORE: %q is not postgres or s3://BUCKET[/PREFIX]", where)
	}
	cfg, err := s3.ParseConfig(func(k string) string {
		if k == "BLOB_STORE" {
			return where
		}
		return getenv(k)
	})
	if err != nil {
		return nil, err
	}
	return &cfg, nil
}

// sameBlobStore reports whether the blob stores a and b name (as
// openBlobStore reads them) are the same place, however they are spelled:
// a copy from one to the other with --remove-source would remove every
// blob. The store checks again, by an object, before it removes anything.
func sameBlobStore(a, b string, getenv func(string) string) (bool, error) {
	ca, err := blobStoreConfig(a, getenv)
	if err != nil {
		return false, err
	}
	cb, err := blobStoreConfig(b, getenv)
	if err != nil {
		return false, err
	}
	if ca == nil || cb == nil {
		return ca == nil && cb == nil, nil
	}
	return ca.SameLocation(*cb), nil
}

// checkBlobStore makes sure at start that the object store's bucket exists
// and that the keys may use it. An object store that cannot be reached is
// only logged: uploads and downloads answer 503 until it is back.
func checkBlobStore(ctx context.Context, c config, log *slog.Logger) error {
	cl, ok := c.blobs.(*s3.Client)
	if !ok {
		return nil
	}
	err := cl.Check(ctx)
	var se *s3.Error
	switch {
	case errors.As(err, &se) && se.Refused():
		return fmt.Errorf("BLOB_STORE %s: %w", c.blobStore, err)
	case errors.Is(err, store.ErrUnavailable):
		log.Warn("the object store does not answer; uploads and downloads will answer 503 until it does", "blob_store", c.blobStore, "err", err)
	case err != nil:
		return fmt.Errorf("BLOB_STORE %s: %w", c.blobStore, err)
	default:
		log.Info("blobs live in an object store", "blob_store", c.blobStore)
	}
	return nil
}
