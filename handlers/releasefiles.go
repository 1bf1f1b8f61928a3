package handlers

import (
	"errors"
	"io"
	"net/http"
	"path"
	"strconv"
	"strings"

	"errata/store"
)

// releaseFileScope reads the organization, optional project and version of
// a release-file path.
func releaseFileScope(r *http.Request) (store.ReleaseFileScope, error) {
	sc := store.ReleaseFileScope{UserID: caller(r).UserID}
	var err error
	sc.OrgSlug, sc.ProjectSlug, sc.Version, err = releasePath(r)
	return sc, err
}

// releaseFileJSON is a release file as the API writes it.
type releaseFileJSON struct {
	ID          string            `json:"id"`
	Name        string            `json:"name"`
	Dist        *string           `json:"dist"`
	Headers     map[string]string `json:"headers"`
	Size        int64             `json:"size"`
	SHA1        string            `json:"sha1"`
	DateCreated jsonTime          `json:"dateCreated"`
}

func newReleaseFileJSON(rf store.ReleaseFile) releaseFileJSON {
	headers := rf.Headers
	if headers == nil {
		headers = map[string]string{}
	}
	return releaseFileJSON{
		ID: strconv.FormatInt(rf.ID, 10), Name: rf.Name, Dist: rf.Dist, Headers: headers,
		Size: rf.Size, SHA1: rf.SHA1, DateCreated: jsonTime(rf.DateCreated),
	}
}

// handleReleaseFileList serves GET organizations/{org}/releases/{version}/files/
// and GET projects/{org}/{project}/releases/{version}/files/: a page of the
// release's files, newest first.
func handleReleaseFileList(d Deps) apiFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		sc, err := releaseFileScope(r)
		if err != nil {
			return err
		}
		page, err := readPage(r)
		if err != nil {
			return err
		}
		f, err := releaseFileFilter(r)
		if err != nil {
			return err
		}
		files, info, err := d.Store.ReleaseFiles(r.Context(), sc, f, page)
		if err != nil {
			return err
		}
		out := make([]releaseFileJSON, 0, len(files))
		for _, rf := range files {
			out = append(out, newReleaseFileJSON(rf))
		}
		setPageHeaders(w, r, d.PublicURL, info)
		writeJSON(w, r, d.Log, http.StatusOK, out)
		return nil
	}
}

// releaseFileFilter reads the filters of a release file list, as Sentry
// takes them: ?query= (repeatable) keeps the files whose name contains one
// of them, and ?checksum= (repeatable, what sentry-cli sends to skip the
// files it has uploaded) those with one of these SHA-1s.
func releaseFileFilter(r *http.Request) (store.ReleaseFileFilter, error) {
	var f store.ReleaseFileFilter
	q := r.URL.Query()
	for _, name := range []string{"query", "checksum"} {
		if len(q[name]) > maxLimit*10 {
			return f, invalid(valueErr, "Too many values", "query", name)
		}
	}
	for _, name := range q["query"] {
		if len(name) > 1024 || !isText(name) {
			return f, invalid(valueErr, "Invalid query", "query", "query")
		}
		if name != "" {
			f.Names = append(f.Names, name)
		}
	}
	for _, sum := range q["checksum"] {
		sum = strings.ToLower(sum)
		if len(sum) != 40 || strings.Trim(sum, "0123456789abcdef") != "" {
			return f, invalid(valueErr, "Expected a SHA-1 in hex", "query", "checksum")
		}
		f.Checksums = append(f.Checksums, sum)
	}
	return f, nil
}

// handleReleaseFileGet serves GET organizations/{org}/releases/{version}/files/{file_id}/
// and its project twin: the file's record, or with ?download=1 its bytes.
func handleReleaseFileGet(d Deps) apiFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		sc, err := releaseFileScope(r)
		if err != nil {
			return err
		}
		id, err := pathFileID(r)
		if err != nil {
			return err
		}
		if download := r.URL.Query().Get("download"); download == "1" || download == "true" {
			return downloadReleaseFile(w, r, d, sc, id)
		}
		rf, err := d.Store.ReleaseFile(r.Context(), sc, id)
		if err != nil {
			return err
		}
		writeJSON(w, r, d.Log, http.StatusOK, newReleaseFileJSON(rf))
		return nil
	}
}

// downloadReleaseFile streams a release file's bytes.
func downloadReleaseFile(w http.ResponseWriter, r *http.Request, d Deps, sc store.ReleaseFileScope, id int64) error {
	return streamAttachment(w, r, d, func(start attachmentStart) error {
		return d.Store.WriteReleaseFile(r.Context(), sc, id, func(rf store.ReleaseFile) io.Writer {
			return start(rf.Size, path.Base(rf.Name))
		})
	})
}

// handleReleaseFileDelete serves DELETE organizations/{org}/releases/{version}/files/{file_id}/
// and its project twin.
func handleReleaseFileDelete(d Deps) apiFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		sc, err := releaseFileScope(r)
		if err != nil {
			return err
		}
		id, err := pathFileID(r)
		if err != nil {
			return err
		}
		if err := d.Store.DeleteReleaseFile(r.Context(), sc, id); err != nil {
			return err
		}
		noContent(w)
		return nil
	}
}

// handleReleaseFileUpload serves POST organizations/{org}/releases/{version}/files/
// and its project twin: one file sent as multipart fields file, name, dist
// and repeatable header "Key:Value".
func handleReleaseFileUpload(d Deps) apiFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		sc, err := releaseFileScope(r)
		if err != nil {
			return err
		}
		limit := maxBundleSize(d) + 1<<20 // the file and the other fields
		if r.ContentLength > limit {
			return errTooLarge // before reading any of it
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
		nf := store.NewReleaseFile{Name: r.FormValue("name"), Headers: map[string]string{}}
		if nf.Name == "" {
			nf.Name = fhs[0].Filename
		}
		if nf.Name == "" || len(nf.Name) > 1024 || !isText(nf.Name) {
			return invalid(valueErr, "A name of 1 to 1024 characters is required", "body", "name")
		}
		if dist := r.FormValue("dist"); dist != "" {
			if err := store.CheckDist(dist); err != nil {
				return invalid(valueErr, "Invalid dist: "+err.Error(), "body", "dist")
			}
			nf.Dist = &dist
		}
		for _, hv := range r.MultipartForm.Value["header"] {
			k, v, ok := strings.Cut(hv, ":")
			k, v = strings.TrimSpace(k), strings.TrimSpace(v)
			if !ok || k == "" || !isText(k) || !isText(v) {
				return invalid(valueErr, "A header is Key:Value", "body", "header")
			}
			nf.Headers[k] = v
		}
		content, err := fhs[0].Open()
		if err != nil {
			return err
		}
		defer content.Close()
		rf, err := d.Store.CreateReleaseFile(r.Context(), sc, nf, content)
		if errors.Is(err, store.ErrConflict) {
			return &apiError{status: http.StatusConflict, detail: "A file with that name already exists"}
		}
		if err != nil {
			return err
		}
		writeJSON(w, r, d.Log, http.StatusCreated, newReleaseFileJSON(rf))
		return nil
	}
}

// handleSourceMapsDelete serves DELETE projects/{org}/{project}/files/source-maps/?name=
// and its organization twin: every file of the release name (sentry-cli 2's
// `files delete --all`).
func handleSourceMapsDelete(d Deps) apiFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		org, project, err := releaseSlugs(r)
		if err != nil {
			return err
		}
		version := r.URL.Query().Get("name")
		if !validVersion(version) {
			return invalid(valueErr, "Invalid release version", "query", "name")
		}
		if _, err := d.Store.DeleteReleaseFiles(r.Context(), caller(r).UserID, org, project, version); err != nil {
			return err
		}
		noContent(w)
		return nil
	}
}
