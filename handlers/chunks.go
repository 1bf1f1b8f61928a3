package handlers

import (
	"compress/gzip"
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"io"
	"iter"
	"mime/multipart"
	"net/http"
	"strings"

	"errata/store"
)

// Chunk upload options of the contract.
const (
	chunkSize        = 8 << 20
	chunksPerRequest = 64
	maxRequestSize   = 32 << 20
	chunkConcurrency = 4
)

// chunkUploadOptions is the answer of GET chunk-upload/. With
// artifact_bundles, sentry-cli 2.17+ uploads source maps as artifact bundles
// (artifactbundle/assemble/); with artifact_bundles_v2 it asks first which
// chunks the organization lacks and uploads only those. Older clients use
// the spec's releases/{version}/assemble/.
type chunkUploadOptions struct {
	URL              string   `json:"url"`
	ChunkSize        int      `json:"chunkSize"`
	ChunksPerRequest int      `json:"chunksPerRequest"`
	MaxRequestSize   int      `json:"maxRequestSize"`
	MaxFileSize      int64    `json:"maxFileSize"`
	Concurrency      int      `json:"concurrency"`
	HashAlgorithm    string   `json:"hashAlgorithm"`
	Compression      []string `json:"compression"`
	Accept           []string `json:"accept"`
}

// chunkAccept are the kinds of chunked uploads errata assembles, in
// Sentry's names: source maps (release files, artifact bundles) and debug
// files (debug_files: native objects; pdbs: PE images and PDBs; sources:
// source bundles; proguard: ProGuard mappings; dartsymbolmap: Dart symbol
// maps).
var chunkAccept = []string{
	"release_files", "artifact_bundles", "artifact_bundles_v2",
	"debug_files", "pdbs", "sources", "proguard", "dartsymbolmap",
}

// handleChunkUploadOptions serves GET organizations/{org}/chunk-upload/: how
// to upload chunks here.
func handleChunkUploadOptions(d Deps) apiFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		org, err := pathSlug(r, "organization_slug")
		if err != nil {
			return err
		}
		if err := d.Store.CheckChunkUpload(r.Context(), caller(r).UserID, org); err != nil {
			return err
		}
		writeJSON(w, r, d.Log, http.StatusOK, chunkUploadOptions{
			URL:              pageURL(r, d.PublicURL, ""),
			ChunkSize:        chunkSize,
			ChunksPerRequest: chunksPerRequest,
			MaxRequestSize:   maxRequestSize,
			MaxFileSize:      maxBundleSize(d),
			Concurrency:      chunkConcurrency,
			HashAlgorithm:    "sha1",
			Compression:      []string{"gzip"},
			Accept:           chunkAccept,
		})
		return nil
	}
}

// handleChunkUpload serves POST organizations/{org}/chunk-upload/: multipart
// parts named file (a chunk) or file_gzip (a gzipped chunk), each named by
// the SHA-1 hex of the chunk. Every chunk is checked before any is kept.
func handleChunkUpload(d Deps) apiFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		org, err := pathSlug(r, "organization_slug")
		if err != nil {
			return err
		}
		if r.ContentLength > maxRequestSize {
			return errTooLarge
		}
		r.Body = http.MaxBytesReader(w, r.Body, maxRequestSize)
		mr, err := r.MultipartReader()
		if err != nil {
			return &apiError{status: http.StatusBadRequest, detail: "Cannot parse request body", cause: err}
		}
		if err := d.Store.SaveChunks(r.Context(), caller(r).UserID, org, readChunks(mr)); err != nil {
			return err
		}
		writeJSON(w, r, d.Log, http.StatusOK, nil)
		return nil
	}
}

// readChunks yields the chunks of a chunk upload one at a time, checked
// against their names and the limits.
func readChunks(mr *multipart.Reader) iter.Seq2[store.Chunk, error] {
	return func(yield func(store.Chunk, error) bool) {
		count := 0
		for {
			part, err := mr.NextPart()
			if errors.Is(err, io.EOF) {
				return
			}
			if err != nil {
				yield(store.Chunk{}, bodyError(err))
				return
			}
			name := part.FormName()
			if name != "file" && name != "file_gzip" {
				continue // NextPart skips what is left of it
			}
			if count++; count > chunksPerRequest {
				yield(store.Chunk{}, badRequest("Too many chunks in one request"))
				return
			}
			c, err := readChunk(part, name == "file_gzip")
			if !yield(c, err) || err != nil {
				return
			}
		}
	}
}

// readChunk reads one chunk part and checks its SHA-1 against its name.
func readChunk(part *multipart.Part, gzipped bool) (store.Chunk, error) {
	want := strings.ToLower(part.FileName())
	if len(want) != 2*sha1.Size || strings.Trim(want, "0123456789abcdef") != "" {
		return store.Chunk{}, badRequest("A chunk's file name must be its SHA-1 hex")
	}
	var src io.Reader = part
	if gzipped {
		zr, err := gzip.NewReader(part)
		if err != nil {
			return store.Chunk{}, bodyError(err)
		}
		defer zr.Close()
		src = zr
	}
	data, err := io.ReadAll(io.LimitReader(src, chunkSize+1))
	if err != nil {
		return store.Chunk{}, bodyError(err)
	}
	if len(data) > chunkSize {
		return store.Chunk{}, badRequest("A chunk is larger than the chunk size")
	}
	sum := sha1.Sum(data)
	if hex.EncodeToString(sum[:]) != want {
		return store.Chunk{}, badRequest("A chunk does not match its SHA-1")
	}
	return store.Chunk{SHA1: want, Data: data}, nil
}
