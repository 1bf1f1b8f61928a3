// Package s3 is a blob store in a bucket of an S3-compatible object store
// (AWS S3, MinIO, versitygw, Ceph RGW, Cloudflare R2...), written against
// the standard library: requests are signed with AWS Signature Version 4
// (sigv4.go, checked against AWS's published test vectors), the bucket is
// addressed in the path or in the host name, objects are streamed up with
// a known length and read with ranges, and lists page with continuation
// tokens.
//
// Client satisfies store.BlobStore. It keeps no state but its connections:
// what exists is what the bucket holds. A server that cannot be reached,
// or answers 5xx after the bounded retries, is an error that wraps
// store.ErrUnavailable; a missing object wraps store.ErrNotFound. Errors
// and the Config's printed forms never carry the secret key.
//
// It must not know about blobs, rows or organizations: the store decides
// which keys exist and when they go.
package s3
