package handlers

import (
	"archive/zip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"errata/store"
	"errata/worker/dif"
	"errata/worker/ingest"
)

// difFormats are the file formats errata stores, with the content type
// Sentry gives each.
var difFormats = map[string]string{
	"elf":           "application/x-elf-binary",
	"macho":         "application/x-mach-binary",
	"pe":            "application/x-dosexec",
	"pdb":           "application/x-ms-pdb",
	"breakpad":      "text/x-breakpad",
	"sourcebundle":  "application/x-sentry-bundle+zip",
	"proguard":      "text/x-proguard+plain",
	"dartsymbolmap": "application/x-dartsymbolmap+json",
}

// difExtensions are the extensions Sentry gives a downloaded debug file.
var difExtensions = map[string]string{
	"breakpad": ".sym", "proguard": ".txt", "pdb": ".pdb", "sourcebundle": ".src.zip",
	"dartsymbolmap": ".json",
}

// debugFileData is the data of a debug file: its type and features.
type debugFileData struct {
	Type     *string  `json:"type"`
	Features []string `json:"features"`
}

// debugFileJSON is a debug information file as Sentry's API writes it.
type debugFileJSON struct {
	ID          string            `json:"id"`
	UUID        string            `json:"uuid"`
	DebugID     string            `json:"debugId"`
	CodeID      *string           `json:"codeId"`
	CPUName     string            `json:"cpuName"`
	ObjectName  string            `json:"objectName"`
	SymbolType  string            `json:"symbolType"`
	Headers     map[string]string `json:"headers"`
	Size        int64             `json:"size"`
	SHA1        string            `json:"sha1"`
	DateCreated jsonTime          `json:"dateCreated"`
	Data        debugFileData     `json:"data"`
}

func newDebugFileJSON(d store.DebugFile) debugFileJSON {
	headers := map[string]string{}
	if ct, ok := difFormats[d.FileFormat]; ok {
		headers["Content-Type"] = ct
	}
	return debugFileJSON{
		ID: strconv.FormatInt(d.ID, 10), UUID: d.DebugID[:min(36, len(d.DebugID))], DebugID: d.DebugID,
		CodeID: d.CodeID, CPUName: d.CPUName, ObjectName: d.ObjectName, SymbolType: d.FileFormat,
		Headers: headers, Size: d.Size, SHA1: d.Checksum, DateCreated: jsonTime(d.DateCreated),
		Data: debugFileData{Type: d.Type, Features: d.Features},
	}
}

// difIn is one file of a difs/assemble body.
type difIn struct {
	Name    *string   `json:"name"`
	DebugID *string   `json:"debugId"`
	Chunks  *[]string `json:"chunks"`
}

// maxDifsPerAssemble bounds the files of one difs/assemble request.
const maxDifsPerAssemble = 1000

// maxDifChunkRefs bounds the chunks one difs/assemble request names, all
// its files together (a chunk named twice counts twice): 128 files of the
// largest size sentry-cli sends (maxFileSize in chunks of chunkSize), or
// 1000 small ones. It bounds the bytes one request can have hashed.
const maxDifChunkRefs = 4096

// readDifAssemble decodes and checks a difs/assemble body: an object from
// the checksum of each file to its name, debug id and chunks. It returns
// the checksums in order and the requests.
func readDifAssemble(w http.ResponseWriter, r *http.Request) ([]string, []store.DifRequest, error) {
	var body map[string]json.RawMessage
	if err := decodeJSON(w, r, &body); err != nil {
		return nil, nil, err
	}
	if len(body) > maxDifsPerAssemble {
		return nil, nil, invalid(valueErr, "At most 1000 files at once", "body")
	}
	checksums := slices.Sorted(maps.Keys(body))
	reqs := make([]store.DifRequest, len(checksums))
	var errs validationError
	for i, key := range checksums {
		if !isSHA1(strings.ToLower(key)) {
			errs = append(errs, fieldError{valueErr, []any{"body", key}, "Expected a SHA-1 in hex"})
			continue
		}
		var in difIn
		if err := unmarshalObject(body[key], &in, "body", key); err != nil {
			var ve validationError
			if errors.As(err, &ve) {
				errs = append(errs, ve...)
				continue
			}
			return nil, nil, err
		}
		req := store.DifRequest{Checksum: strings.ToLower(key)}
		switch {
		case in.Name == nil:
			errs = append(errs, fieldError{missing, []any{"body", key, "name"}, "Field required"})
		case *in.Name == "" || len(*in.Name) > 1024:
			errs = append(errs, fieldError{valueErr, []any{"body", key, "name"}, "A name of 1 to 1024 characters is required"})
		default:
			req.Name = *in.Name
		}
		if in.DebugID != nil && *in.DebugID != "" {
			id, ok := dif.CanonicalDebugID(*in.DebugID)
			if !ok {
				errs = append(errs, fieldError{valueErr, []any{"body", key, "debug_id"}, "Expected a debug id"})
			}
			req.DebugID = &id
		}
		if in.Chunks == nil {
			errs = append(errs, fieldError{missing, []any{"body", key, "chunks"}, "Field required"})
		} else {
			for j, c := range *in.Chunks {
				if !isSHA1(strings.ToLower(c)) {
					errs = append(errs, fieldError{valueErr, []any{"body", key, "chunks", j}, "Expected a SHA-1 in hex"})
					continue
				}
				req.Chunks = append(req.Chunks, strings.ToLower(c))
			}
		}
		reqs[i] = req
	}
	if len(errs) > 0 {
		return nil, nil, errs
	}
	refs := 0
	for _, req := range reqs {
		refs += len(req.Chunks)
	}
	if refs > maxDifChunkRefs {
		return nil, nil, invalid(valueErr, fmt.Sprintf("At most %d chunks at once, all files together", maxDifChunkRefs), "body")
	}
	for i := range checksums {
		checksums[i] = strings.ToLower(checksums[i])
	}
	return checksums, reqs, nil
}

// difStatusJSON is the answer for one file of difs/assemble.
type difStatusJSON struct {
	State         string         `json:"state"`
	MissingChunks []string       `json:"missingChunks"`
	Detail        *string        `json:"detail"`
	Dif           *debugFileJSON `json:"dif"`
}

// difHold is how long difs/assemble waits for assemblies it finds queued
// or running to end before it answers, so that a client that does not
// poll (sentry-cli without --wait) still learns how they ended.
const difHold = 3 * time.Second

// handleDifAssemble serves POST projects/{org}/{project}/files/difs/assemble/:
// for each file, ok with its debug file when the project has it already,
// not_found with the chunks still to upload, else the state of its
// assembly (created, assembling, ok or error with a detail). An assembly
// that is queued or running is waited for a moment.
func handleDifAssemble(d Deps) apiFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		sc, err := projectScope(r)
		if err != nil {
			return err
		}
		checksums, reqs, err := readDifAssemble(w, r)
		if err != nil {
			return err
		}
		deadline := time.Now().Add(difHold)
		sts, err := d.Store.AssembleDifs(r.Context(), sc, reqs, maySupersede(r))
		if err != nil {
			return err
		}
		// While assemblies are queued or running, ask again about those
		// alone: the files already answered need no second look.
		for {
			var pending []int
			for i, st := range sts {
				if st.State == "created" || st.State == "assembling" {
					pending = append(pending, i)
				}
			}
			if len(pending) == 0 || d.Jobs == nil || time.Now().After(deadline) {
				break
			}
			notifyJobs(d)
			if err := sleep(r.Context(), 100*time.Millisecond); err != nil {
				return err
			}
			again := make([]store.DifRequest, len(pending))
			for k, i := range pending {
				again[k] = reqs[i]
			}
			// Only a look: the first call enqueued what needed it.
			now, err := d.Store.DifStatuses(r.Context(), sc, again)
			if err != nil {
				return err
			}
			for k, i := range pending {
				sts[i] = now[k]
			}
		}
		out := make(map[string]difStatusJSON, len(sts))
		for i, st := range sts {
			o := difStatusJSON{State: st.State, MissingChunks: st.MissingChunks, Detail: st.Detail}
			if st.Dif != nil {
				j := newDebugFileJSON(*st.Dif)
				o.Dif = &j
			}
			out[checksums[i]] = o
		}
		writeJSON(w, r, d.Log, http.StatusOK, out)
		return nil
	}
}

// sleep waits for d or until ctx ends.
func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// handleDebugFiles serves GET projects/{org}/{project}/files/dsyms/: a page
// of the project's debug files, newest first, kept by ?query= (a debug id,
// a code id or part of an object name), ?debug_id=, ?code_id= and
// ?file_formats= (repeatable); with ?id= it downloads that file instead.
func handleDebugFiles(d Deps) apiFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		sc, err := projectScope(r)
		if err != nil {
			return err
		}
		q := r.URL.Query()
		if q.Has("id") {
			return downloadDebugFile(d, w, r, sc)
		}
		page, err := readPage(r)
		if err != nil {
			return err
		}
		var f store.DebugFileFilter
		f.Query = strings.TrimSpace(q.Get("query"))
		if len(f.Query) > 200 || !isText(f.Query) {
			return invalid(valueErr, "Invalid query", "query", "query")
		}
		if id, ok := dif.CanonicalDebugID(f.Query); ok {
			f.Query = id
		}
		if v := q.Get("debug_id"); v != "" {
			id, ok := dif.CanonicalDebugID(v)
			if !ok {
				return invalid(valueErr, "Expected a debug id", "query", "debug_id")
			}
			f.DebugID = id
		}
		if v := strings.ToLower(q.Get("code_id")); v != "" {
			if len(v) > 64 || strings.Trim(v, "0123456789abcdef") != "" {
				return invalid(valueErr, "Expected a code id in hex", "query", "code_id")
			}
			f.CodeID = v
		}
		for _, v := range q["file_formats"] {
			if _, ok := difFormats[v]; !ok {
				return invalid(valueErr, "Unknown file format", "query", "file_formats")
			}
			f.Formats = append(f.Formats, v)
		}
		// Both ids: the files of the debug id, else those of the code id
		// (Sentry's fallback, which finds a PE whose PDB age changed).
		byCode := f
		if f.DebugID != "" && f.CodeID != "" {
			f.CodeID, byCode.DebugID = "", ""
		}
		files, info, err := d.Store.DebugFiles(r.Context(), sc, f, page)
		if err == nil && len(files) == 0 && byCode.CodeID != "" && byCode.DebugID == "" && f.DebugID != "" {
			files, info, err = d.Store.DebugFiles(r.Context(), sc, byCode, page)
		}
		if err != nil {
			return err
		}
		out := make([]debugFileJSON, 0, len(files))
		for _, f := range files {
			out = append(out, newDebugFileJSON(f))
		}
		setPageHeaders(w, r, d.PublicURL, info)
		writeJSON(w, r, d.Log, http.StatusOK, out)
		return nil
	}
}

// queryID reads the id query parameter: a positive decimal.
func queryID(r *http.Request) (int64, error) {
	id, err := strconv.ParseInt(r.URL.Query().Get("id"), 10, 64)
	if err != nil || id <= 0 {
		return 0, invalid(typeError, "Input should be a valid integer", "query", "id")
	}
	return id, nil
}

// downloadDebugFile streams the debug file ?id= of the project sc names.
func downloadDebugFile(d Deps, w http.ResponseWriter, r *http.Request, sc store.ProjectScope) error {
	id, err := queryID(r)
	if err != nil {
		return err
	}
	return streamAttachment(w, r, d, func(start attachmentStart) error {
		return d.Store.WriteDebugFile(r.Context(), sc, id, func(f store.DebugFile) io.Writer {
			return start(f.Size, f.ObjectName+difExtensions[f.FileFormat])
		})
	})
}

// handleDebugFileDelete serves DELETE projects/{org}/{project}/files/dsyms/?id=.
func handleDebugFileDelete(d Deps) apiFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		sc, err := projectScope(r)
		if err != nil {
			return err
		}
		id, err := queryID(r)
		if err != nil {
			return err
		}
		if err := d.Store.DeleteDebugFile(r.Context(), sc, id); err != nil {
			return err
		}
		noContent(w)
		return nil
	}
}

// maxUnknownChecksums bounds the checksums of one files/dsyms/unknown/.
const maxUnknownChecksums = 1000

// handleDebugFilesUnknown serves GET projects/{org}/{project}/files/dsyms/unknown/?checksums=:
// those of the checksums that no debug file of the project has
// (sentry-cli 2.x asks before it uploads without chunks).
func handleDebugFilesUnknown(d Deps) apiFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		sc, err := projectScope(r)
		if err != nil {
			return err
		}
		checksums := r.URL.Query()["checksums"]
		if len(checksums) > maxUnknownChecksums {
			return invalid(valueErr, "At most 1000 checksums at once", "query", "checksums")
		}
		for i, c := range checksums {
			c = strings.ToLower(c)
			if !isSHA1(c) {
				return invalid(valueErr, "Expected a SHA-1 in hex", "query", "checksums")
			}
			checksums[i] = c
		}
		missing, err := d.Store.MissingDebugFiles(r.Context(), sc, checksums)
		if err != nil {
			return err
		}
		writeJSON(w, r, d.Log, http.StatusOK, struct {
			Missing []string `json:"missing"`
		}{missing})
		return nil
	}
}

// maxDsymMembers bounds the members of an upload to files/dsyms/.
const maxDsymMembers = 10_000

// maySupersede reports whether the caller of r may delete debug files, and
// so whether its upload may remove the older debug files it covers.
func maySupersede(r *http.Request) bool {
	return caller(r).HasAny(projectWrite.scopes)
}

// handleDebugFileUpload serves POST projects/{org}/{project}/files/dsyms/:
// a zip sent as the multipart field file (sentry-cli 2.x without chunk
// upload, and upload-proguard). Each member that is a debug file becomes
// one (or one per object), as in Sentry; other members are skipped. Every
// member is read before anything is stored, so that an upload refused for
// one member stores none. The members uncompress to at most the bundle
// size limit in all (the most a file assembled from chunks may be). The
// answer lists the debug files of the upload.
func handleDebugFileUpload(d Deps) apiFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		sc, err := projectScope(r)
		if err != nil {
			return err
		}
		if err := d.Store.CheckProject(r.Context(), sc); err != nil {
			return err
		}
		limit := maxBundleSize(d) + 1<<20
		if r.ContentLength > limit {
			return errTooLarge
		}
		r.Body = http.MaxBytesReader(w, r.Body, limit)
		if err := r.ParseMultipartForm(uploadMemory); err != nil {
			return bodyError(err)
		}
		defer r.MultipartForm.RemoveAll() //nolint:errcheck // temporary files
		fhs := r.MultipartForm.File["file"]
		if len(fhs) != 1 {
			return invalid(missing, "Field required", "body", "file")
		}
		upload, err := fhs[0].Open()
		if err != nil {
			return err
		}
		defer upload.Close()
		ra, ok := upload.(io.ReaderAt)
		if !ok {
			return errors.New("multipart file is not an io.ReaderAt")
		}
		// The directory is checked before archive/zip reads it: a small
		// upload must not describe millions of members.
		err = dif.CheckZipDirectory(ra, fhs[0].Size, maxDsymMembers)
		if _, ok := errors.AsType[*dif.ZipError](err); ok {
			return badRequest("The upload is not a zip archive of at most 10000 members")
		}
		if err != nil {
			return err
		}
		zr, err := zip.NewReader(ra, fhs[0].Size)
		if err != nil && !errors.Is(err, zip.ErrInsecurePath) {
			return badRequest("The upload is not a zip archive of at most 10000 members")
		}
		// The debug files among the members go one after the other into
		// one temporary file.
		tmp, err := os.CreateTemp("", "errata-dsym-*")
		if err != nil {
			return err
		}
		defer os.Remove(tmp.Name())
		defer tmp.Close()
		budget := maxBundleSize(d)
		var uploads []store.DebugUpload
		var end int64
		for _, zf := range zr.File {
			if zf.FileInfo().IsDir() || len(zf.Name) > 1024 || !isText(zf.Name) {
				continue // a name no debug file can be stored under
			}
			u, n, err := readDsymMember(tmp, end, zf, &budget)
			if err != nil {
				return err
			}
			if u != nil {
				uploads = append(uploads, *u)
				end += n
			}
		}
		files, err := d.Store.CreateDebugFiles(r.Context(), sc, uploads, maySupersede(r))
		if err != nil {
			return err
		}
		out := make([]debugFileJSON, len(files))
		for i, f := range files {
			out[i] = newDebugFileJSON(f)
		}
		writeJSON(w, r, d.Log, http.StatusCreated, out)
		return nil
	}
}

// readDsymMember inflates the member zf of a files/dsyms/ upload into tmp
// at offset off and reads it: a debug file is returned with its size, to
// be stored; any other member is nil, and its bytes in tmp are free again.
// budget is what the members may still uncompress to.
func readDsymMember(tmp *os.File, off int64, zf *zip.File, budget *int64) (*store.DebugUpload, int64, error) {
	rc, err := zf.Open()
	if err != nil {
		return nil, 0, badRequest("The archive has a member that cannot be read")
	}
	defer rc.Close()
	n, err := io.Copy(io.NewOffsetWriter(tmp, off), io.LimitReader(rc, *budget+1))
	if err != nil {
		return nil, 0, badRequest("The archive has a member that cannot be read")
	}
	if n > *budget {
		return nil, 0, &apiError{status: http.StatusRequestEntityTooLarge, detail: "The archive uncompresses to more than the limit"}
	}
	*budget -= n
	content := io.NewSectionReader(tmp, off, n)
	objs, err := dif.ReadUpload(content, n, zf.Name, "")
	if _, ok := errors.AsType[*dif.UploadError](err); ok {
		return nil, 0, nil // not a debug file: skipped, as Sentry does
	}
	if err != nil {
		return nil, 0, err
	}
	recs := ingest.DebugFileObjects(objs, zf.Name, content, n)
	return &store.DebugUpload{Content: content, Objects: recs}, n, nil
}

// proguardReleaseIn is the body of a proguard artifact release, as
// sentry-cli 2.x's upload-proguard --app-id sends it.
type proguardReleaseIn struct {
	ReleaseName  opt[string] `json:"releaseName"`
	ProguardUUID opt[string] `json:"proguardUuid"`
}

// maxProguardReleaseName is the longest release name of an association,
// that of a release version.
const maxProguardReleaseName = 250

// proguardUUID reads a ProGuard mapping's UUID in any case, with or
// without hyphens, in the form its debug file is listed by.
func proguardUUID(s string, loc ...any) (string, error) {
	id, ok := dif.CanonicalDebugID(s)
	if !ok || len(id) != 36 { // a UUID has no age
		return "", invalid(valueErr, "Input should be a valid UUID", loc...)
	}
	return id, nil
}

// readProguardRelease reads and checks the body of a proguard artifact
// release: the release's name and the mapping's UUID, canonical.
func readProguardRelease(w http.ResponseWriter, r *http.Request) (name, uuid string, err error) {
	var in proguardReleaseIn
	if err := decodeJSON(w, r, &in); err != nil {
		return "", "", err
	}
	n, err := text(in.ReleaseName, true, maxProguardReleaseName, "body", "release_name")
	if err != nil {
		return "", "", err
	}
	if strings.ContainsRune(*n, 0) {
		return "", "", invalid(valueErr, "Input should not contain NUL characters", "body", "release_name")
	}
	raw, err := text(in.ProguardUUID, true, 0, "body", "proguard_uuid")
	if err != nil {
		return "", "", err
	}
	uuid, err = proguardUUID(*raw, "body", "proguard_uuid")
	return *n, uuid, err
}

var errProguardReleaseExists = &apiError{status: http.StatusConflict,
	detail: "Proguard artifact release with this name in this project already exists."}

// handleProguardReleaseCreate serves POST
// projects/{org}/{project}/files/proguard-artifact-releases: the release a
// ProGuard mapping of the project was built for. sentry-cli 2.x sends it
// without the trailing slash, and takes 409 for "already made".
func handleProguardReleaseCreate(d Deps) apiFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		sc, err := projectScope(r)
		if err != nil {
			return err
		}
		name, id, err := readProguardRelease(w, r)
		if err != nil {
			return err
		}
		err = d.Store.AssociateProguardRelease(r.Context(), sc, name, id)
		switch {
		case errors.Is(err, store.ErrNoProguardMapping):
			return invalid(valueErr, "No matching proguard mapping file with this uuid found", "body", "proguard_uuid")
		case errors.Is(err, store.ErrConflict):
			return errProguardReleaseExists
		case err != nil:
			return err
		}
		writeJSON(w, r, d.Log, http.StatusCreated, map[string]string{"releaseName": name, "proguardUuid": id})
		return nil
	}
}

// handleProguardReleases serves GET
// projects/{org}/{project}/files/proguard-artifact-releases?proguard_uuid=:
// the names of the releases the mapping was built for, as Sentry writes
// them ({"releases": [...]}).
func handleProguardReleases(d Deps) apiFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		sc, err := projectScope(r)
		if err != nil {
			return err
		}
		q := r.URL.Query()
		if !q.Has("proguard_uuid") {
			return invalid(missing, "Field required", "query", "proguard_uuid")
		}
		id, err := proguardUUID(q.Get("proguard_uuid"), "query", "proguard_uuid")
		if err != nil {
			return err
		}
		names, err := d.Store.ProguardReleases(r.Context(), sc, id)
		if err != nil {
			return err
		}
		writeJSON(w, r, d.Log, http.StatusOK, map[string][]string{"releases": names})
		return nil
	}
}
