package worker

import (
	"archive/zip"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"unicode/utf8"

	"errata/store"
	"errata/worker/dif"
)

// AssembleLimits bound what one assembly reads; zero values take the
// defaults.
type AssembleLimits struct {
	MaxBundleSize       int64 // bytes of the concatenated chunks; default 256 MiB
	MaxMembers          int64 // zip members; default 10 000
	MaxUncompressedSize int64 // bytes read out of all members; default 1 GiB
}

// Default assembly limits.
const (
	DefaultMaxBundleSize       = 256 << 20
	DefaultMaxMembers          = 10_000
	DefaultMaxUncompressedSize = 1 << 30
)

// maxManifestSize bounds manifest.json, which is decoded in memory.
const maxManifestSize = 4 << 20

// Assembler runs assemble jobs: it makes an upload's chunks into one stored
// file, the bundle (a zip, optionally behind an 8-byte SYSB header), which
// is a list of the chunks' blobs: no byte is copied. It checks the bundle
// against its manifest and the limits and indexes it: each manifest entry
// becomes a release file, or a debug-id entry, that points into the bundle.
// Members are read through the zip reader, never extracted by name.
type Assembler struct {
	Store  *store.Store
	Log    *slog.Logger
	Limits AssembleLimits
}

// bundleError is what is wrong with an upload. Its message is written for
// the client that uploaded it; retrying cannot change it.
type bundleError struct{ msg string }

func (e bundleError) Error() string { return e.msg }

func badBundle(format string, args ...any) error {
	return Permanent(bundleError{fmt.Sprintf(format, args...)})
}

// notAZip is the error of a bundle that is not a zip archive.
const notAZip = "The bundle is not a zip archive"

// errMissingChunks is the error of an assembly whose chunks are not all
// uploaded yet.
var errMissingChunks = bundleError{"Some chunks of the bundle are missing: upload them first"}

// manifest is the manifest.json of a bundle.
type manifest struct {
	Org     string                   `json:"org"`
	DebugID *string                  `json:"debug_id"`
	Release *string                  `json:"release"`
	Dist    *string                  `json:"dist"`
	Files   map[string]manifestEntry `json:"files"`
}

type manifestEntry struct {
	URL     string            `json:"url"`
	Type    string            `json:"type"`
	Headers map[string]string `json:"headers"`
}

// Run assembles the upload described by payload (a store.AssemblyJob). Its
// errors are safe to show to the client: causes that are not the bundle's
// fault go to the log.
func (a *Assembler) Run(ctx context.Context, payload json.RawMessage) (err error) {
	defer func() {
		if p := recover(); p != nil {
			a.Log.Error("assemble: panic", "panic", p)
			err = errors.New("Internal error while assembling the bundle")
		}
	}()
	err = a.assemble(ctx, payload)
	if err == nil {
		return nil
	}
	if _, ok := errors.AsType[bundleError](err); ok {
		return err
	}
	a.Log.Warn("assemble: failed", "err", err)
	return errors.New("Internal error while assembling the bundle")
}

func (a *Assembler) limits() AssembleLimits {
	l := a.Limits
	if l.MaxBundleSize <= 0 {
		l.MaxBundleSize = DefaultMaxBundleSize
	}
	if l.MaxMembers <= 0 {
		l.MaxMembers = DefaultMaxMembers
	}
	if l.MaxUncompressedSize <= 0 {
		l.MaxUncompressedSize = DefaultMaxUncompressedSize
	}
	return l
}

func (a *Assembler) assemble(ctx context.Context, payload json.RawMessage) error {
	var job store.AssemblyJob
	if err := json.Unmarshal(payload, &job); err != nil {
		return Permanent(fmt.Errorf("assemble payload: %w", err))
	}
	limits := a.limits()
	if len(job.Chunks) == 0 {
		return badBundle("The upload has no chunks")
	}

	// The bundle becomes a file made of the chunks, never copied. Its zip
	// directory is read first, from its end; then one pass over its bytes
	// checks its checksum and, beside it, hashes each member.
	file, err := a.Store.PrepareFile(ctx, job.OrganizationID, job.Checksum, job.Chunks,
		store.FileOptions{MaxSize: limits.MaxBundleSize})
	switch {
	case errors.Is(err, store.ErrMissingChunks) && job.WaitForChunks:
		return errMissingChunks // retried: the chunks may still come
	case errors.Is(err, store.ErrMissingChunks):
		return Permanent(errMissingChunks)
	case errors.Is(err, store.ErrFileTooLarge):
		return badBundle("The bundle is larger than the limit of %d bytes", limits.MaxBundleSize)
	case err != nil:
		return err
	}
	zr, zipStart, err := openBundle(a.Store.ReadPendingFile(ctx, file), file.Size, limits.MaxMembers)
	if err == nil {
		_, err = checkMembers(zr, limits.MaxMembers)
	}
	if err != nil {
		// A checksum mismatch explains a bundle that is not a zip best;
		// a zip over the limits is refused without reading it.
		if be, ok := errors.AsType[bundleError](err); ok && be.msg == notAZip {
			if _, verr := a.Store.VerifyFile(ctx, file, nil); verr != nil {
				return a.verifyError(verr)
			}
		}
		return err
	}
	budget := &readBudget{left: limits.MaxUncompressedSize, limit: limits.MaxUncompressedSize}
	ms := newMemberStream(zr, zipStart, budget)
	defer ms.abort()
	if file, err = a.Store.VerifyFile(ctx, file, ms); err != nil {
		return a.verifyError(err)
	}
	seen, err := ms.finish()
	if err != nil {
		return err
	}
	m, err := manifestOf(ms)
	if err != nil {
		return err
	}
	bt, err := checkManifest(m, ms.byName, job)
	if err != nil {
		return err
	}
	bundle := store.Bundle{
		OrganizationID: job.OrganizationID, File: file, BundleID: bt.bundleID,
		Version: bt.version, Dist: bt.dist, Projects: job.Projects,
	}
	for _, p := range bt.paths {
		e, sm := m.Files[p], seen[p]
		bundle.Files = append(bundle.Files, store.BundleFile{
			Path: p, URL: e.URL, Type: e.Type, DebugID: debugIDOf(e.Headers), Headers: e.Headers,
			Start: sm.start, CSize: sm.csize, Method: int16(ms.byName[p].Method), Size: sm.size, SHA1: sm.sha1,
		})
	}
	return a.Store.SaveBundle(ctx, bundle)
}

// verifyError is the answer to a failed VerifyFile.
func (a *Assembler) verifyError(err error) error {
	var sumErr *store.ChecksumError
	switch {
	case errors.As(err, &sumErr):
		return badBundle("Checksum mismatch: the chunks hash to %s, not %s", sumErr.Got, sumErr.Want)
	case errors.Is(err, store.ErrMissingChunks):
		return Permanent(errMissingChunks)
	}
	return err
}

// debugIDOf returns the debug id of a manifest entry's headers, in the
// canonical form of a UUID, or nil.
func debugIDOf(headers map[string]string) *string {
	for k, v := range headers {
		if strings.EqualFold(k, "debug-id") || strings.EqualFold(k, "debug_id") {
			if id, ok := canonicalDebugID(v); ok {
				return &id
			}
		}
	}
	return nil
}

// canonicalDebugID returns s, a UUID with or without hyphens (and with an
// optional appendix, as native debug ids have), as a lower-case hyphenated
// UUID.
func canonicalDebugID(s string) (string, bool) {
	hexDigits := strings.ToLower(strings.ReplaceAll(s, "-", ""))
	if len(hexDigits) > 32 {
		hexDigits = hexDigits[:32]
	}
	if len(hexDigits) != 32 || strings.Trim(hexDigits, "0123456789abcdef") != "" {
		return "", false
	}
	return hexDigits[:8] + "-" + hexDigits[8:12] + "-" + hexDigits[12:16] + "-" + hexDigits[16:20] + "-" + hexDigits[20:], true
}

// bundleTarget is what a checked bundle fills: the release (nil for a
// bundle indexed only by debug ids), the dist of its files, the manifest's
// member paths in order and the bundle's id.
type bundleTarget struct {
	version  *string
	dist     *string
	paths    []string
	bundleID string
}

// checkManifest checks the manifest m of a bundle with members against the
// job: its organization and release, and every entry, before any is
// stored. Values that the database cannot hold are the bundle's fault too.
func checkManifest(m manifest, members map[string]*zip.File, job store.AssemblyJob) (bundleTarget, error) {
	var bt bundleTarget
	if m.Org != job.OrgSlug {
		return bt, badBundle("The manifest's organization %q is not %q", clip(m.Org), job.OrgSlug)
	}
	version := job.Version
	if version != nil && *version == "" {
		version = nil
	}
	if m.Release != nil && *m.Release == "" {
		m.Release = nil
	}
	switch {
	case m.Release != nil && version != nil && *m.Release != *version:
		return bt, badBundle("The manifest's release %q is not %q", clip(*m.Release), clip(*version))
	case version == nil && m.Release != nil:
		version = m.Release
	}
	debugIDs := false
	for _, e := range m.Files {
		debugIDs = debugIDs || debugIDOf(e.Headers) != nil
	}
	switch {
	case version == nil && !debugIDs:
		return bt, badBundle("The bundle names no release and none of its files has a debug id: pass a release version")
	case version == nil && len(job.Projects) == 0:
		return bt, badBundle("A bundle without a release belongs to projects: name at least one")
	}
	if version != nil {
		if err := store.CheckReleaseVersion(*version); err != nil {
			return bt, badBundle("Invalid release version: %v", err)
		}
	}
	bt.version = version
	bt.bundleID = job.Checksum
	if m.DebugID != nil {
		id, ok := canonicalDebugID(*m.DebugID)
		if !ok {
			return bt, badBundle("The manifest's debug_id %q is not a UUID", clip(*m.DebugID))
		}
		bt.bundleID = id
	}
	bt.dist = job.Dist
	if m.Dist != nil {
		bt.dist = m.Dist
	}
	if bt.dist != nil && *bt.dist == "" {
		bt.dist = nil
	}
	if bt.dist != nil {
		if err := store.CheckDist(*bt.dist); err != nil {
			return bt, badBundle("Invalid dist %q: %v", clip(*bt.dist), err)
		}
	}
	bt.paths = slices.Sorted(maps.Keys(m.Files))
	for _, p := range bt.paths {
		e := m.Files[p]
		if unsafeName(p) {
			return bt, badBundle("The manifest names an unsafe member %q", clip(p))
		}
		if members[p] == nil {
			return bt, badBundle("The manifest lists %q, which the bundle lacks", clip(p))
		}
		if e.URL == "" || len(e.URL) > 1024 || !utf8.ValidString(e.URL) || strings.ContainsRune(e.URL, 0) {
			return bt, badBundle("The manifest entry %q has no valid url", clip(p))
		}
		for k, v := range e.Headers {
			if strings.ContainsRune(k, 0) || strings.ContainsRune(v, 0) {
				return bt, badBundle("The manifest entry %q has a header with a NUL character", clip(p))
			}
		}
	}
	return bt, nil
}

// openBundle opens the bundle of size bytes in r: a zip, optionally after
// an 8-byte header that starts with SYSB. It returns where the zip starts.
// The zip's directory is checked against maxMembers before archive/zip
// reads it (see checkZipDirectory).
func openBundle(r io.ReaderAt, size, maxMembers int64) (*zip.Reader, int64, error) {
	var offset int64
	magic := make([]byte, 4)
	if _, err := r.ReadAt(magic, 0); err == nil && bytes.Equal(magic, []byte("SYSB")) {
		offset = 8
	}
	if size < offset {
		return nil, 0, badBundle(notAZip)
	}
	section := io.NewSectionReader(r, offset, size-offset)
	if err := checkZipDirectory(section, size-offset, maxMembers); err != nil {
		return nil, 0, err
	}
	zr, err := zip.NewReader(section, size-offset)
	if err != nil && !errors.Is(err, zip.ErrInsecurePath) {
		return nil, 0, badBundle(notAZip)
	}
	if zr == nil {
		return nil, 0, badBundle(notAZip)
	}
	return zr, offset, nil
}

// checkMembers checks the members' count and names and returns them by
// name.
func checkMembers(zr *zip.Reader, maxMembers int64) (map[string]*zip.File, error) {
	if int64(len(zr.File)) > maxMembers {
		return nil, badBundle("The bundle has %d members, more than the limit of %d", len(zr.File), maxMembers)
	}
	members := make(map[string]*zip.File, len(zr.File))
	for _, zf := range zr.File {
		if unsafeName(zf.Name) {
			return nil, badBundle("The bundle has a member with an unsafe name %q", clip(zf.Name))
		}
		if members[zf.Name] != nil {
			return nil, badBundle("The bundle has two members named %q", clip(zf.Name))
		}
		members[zf.Name] = zf
	}
	return members, nil
}

// unsafeName reports whether a member name is absolute, has a drive or
// a `..` element, or is not plain text.
func unsafeName(name string) bool {
	if name == "" || !utf8.ValidString(name) || strings.ContainsRune(name, 0) {
		return true
	}
	if strings.HasPrefix(name, "/") || strings.HasPrefix(name, `\`) {
		return true
	}
	if len(name) >= 2 && name[1] == ':' {
		return true // C:foo, a Windows drive
	}
	for _, elem := range strings.FieldsFunc(name, func(r rune) bool { return r == '/' || r == '\\' }) {
		if elem == ".." {
			return true
		}
	}
	return false
}

// readBudget counts the bytes a bundle's members uncompress to, whatever
// their headers claim, so that a zip bomb stops at the limit.
type readBudget struct {
	left  int64
	limit int64
}

// take counts n more bytes, or fails when they are over the limit.
func (b *readBudget) take(n int) error {
	if int64(n) > b.left {
		return badBundle("The bundle uncompresses to more than the limit of %d bytes", b.limit)
	}
	b.left -= int64(n)
	return nil
}

// clip shortens client text quoted in an error.
func clip(s string) string {
	if len(s) <= 100 {
		return s
	}
	return s[:100] + "..."
}

// checkZipDirectory is dif.CheckZipDirectory, whose complaints are the
// bundle's fault.
func checkZipDirectory(r io.ReaderAt, size, maxMembers int64) error {
	err := dif.CheckZipDirectory(r, size, maxMembers)
	if ze, ok := errors.AsType[*dif.ZipError](err); ok {
		return badBundle("%s", ze.Msg)
	}
	return err
}
