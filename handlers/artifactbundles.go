package handlers

import (
	"fmt"
	"io"
	"net/http"
	"net/url"
	"path"
	"strconv"
	"strings"

	"errata/store"
)

// pathBundleID reads the bundle_id path value: a bundle's debug id (a
// UUID) or the SHA-1 of a bundle that has none.
func pathBundleID(r *http.Request) (string, error) {
	id := r.PathValue("bundle_id")
	if !isBundleID(id) {
		return "", invalid(valueErr, "Expected a bundle id", "path", "bundle_id")
	}
	return id, nil
}

// isBundleID reports whether s can name a bundle: lower-case hex digits and
// hyphens, 32 to 40 characters.
func isBundleID(s string) bool {
	return len(s) >= 32 && len(s) <= 40 && strings.Trim(s, "0123456789abcdef-") == ""
}

// bundleAssociation is a release (and dist) a bundle belongs to.
type bundleAssociation struct {
	Release string  `json:"release"`
	Dist    *string `json:"dist"`
}

// artifactBundleJSON is an artifact bundle as Sentry's API writes it.
type artifactBundleJSON struct {
	BundleID     string              `json:"bundleId"`
	Associations []bundleAssociation `json:"associations"`
	FileCount    int                 `json:"fileCount"`
	Date         jsonTime            `json:"date"`
	DateModified jsonTime            `json:"dateModified"`
}

func newArtifactBundleJSON(b store.ArtifactBundle) artifactBundleJSON {
	out := artifactBundleJSON{
		BundleID: b.BundleID, Associations: []bundleAssociation{}, FileCount: b.FileCount,
		Date: jsonTime(b.DateCreated), DateModified: jsonTime(b.DateModified),
	}
	if b.Release != nil {
		out.Associations = append(out.Associations, bundleAssociation{Release: *b.Release, Dist: b.Dist})
	}
	return out
}

// sourceFileTypes are Sentry's codes of the manifest's file types.
var sourceFileTypes = map[string]int{"source": 1, "minified_source": 2, "source_map": 3, "indexed_ram_bundle": 4}

// artifactBundleFileJSON is a file of an artifact bundle.
type artifactBundleFileJSON struct {
	ID        string            `json:"id"`
	FilePath  string            `json:"filePath"`
	FileSize  int64             `json:"fileSize"`
	FileType  *int              `json:"fileType"`
	SourceMap *string           `json:"sourcemap"`
	DebugID   *string           `json:"debugId"`
	Headers   map[string]string `json:"headers"`
	SHA1      string            `json:"sha1"`
}

func newArtifactBundleFileJSON(f store.ArtifactBundleFile) artifactBundleFileJSON {
	out := artifactBundleFileJSON{
		ID: strconv.FormatInt(f.ID, 10), FilePath: f.URL, FileSize: f.Size,
		DebugID: f.DebugID, Headers: f.Headers, SHA1: f.SHA1,
	}
	if t, ok := sourceFileTypes[f.Type]; ok {
		out.FileType = &t
	}
	for k, v := range f.Headers {
		if strings.EqualFold(k, "sourcemap") || strings.EqualFold(k, "x-sourcemap") {
			out.SourceMap = &v
		}
	}
	return out
}

// handleArtifactBundles serves GET projects/{org}/{project}/files/artifact-bundles/:
// a page of the project's artifact bundles, newest first; ?query= keeps
// those of a release or dist, or with a bundle or debug id.
func handleArtifactBundles(d Deps) apiFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		sc, err := projectScope(r)
		if err != nil {
			return err
		}
		page, err := readPage(r)
		if err != nil {
			return err
		}
		query := strings.TrimSpace(r.URL.Query().Get("query"))
		if len(query) > 200 || !isText(query) {
			return invalid(valueErr, "Invalid query", "query", "query")
		}
		if id, ok := canonicalUUID(query); ok {
			query = id
		}
		bundles, info, err := d.Store.ArtifactBundles(r.Context(), sc, query, page)
		if err != nil {
			return err
		}
		out := make([]artifactBundleJSON, 0, len(bundles))
		for _, b := range bundles {
			out = append(out, newArtifactBundleJSON(b))
		}
		setPageHeaders(w, r, d.PublicURL, info)
		writeJSON(w, r, d.Log, http.StatusOK, out)
		return nil
	}
}

// handleArtifactBundleDelete serves DELETE projects/{org}/{project}/files/artifact-bundles/?bundleId=:
// the bundle leaves the project, and goes when no other project has it.
func handleArtifactBundleDelete(d Deps) apiFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		sc, err := projectScope(r)
		if err != nil {
			return err
		}
		id := r.URL.Query().Get("bundleId")
		if canon, ok := canonicalUUID(id); ok {
			id = canon
		}
		if !isBundleID(id) {
			return invalid(valueErr, "Expected a bundle id", "query", "bundleId")
		}
		if err := d.Store.DeleteArtifactBundle(r.Context(), sc, id); err != nil {
			return err
		}
		noContent(w)
		return nil
	}
}

// handleArtifactBundleFiles serves GET projects/{org}/{project}/artifact-bundles/{bundle_id}/files/:
// the bundle with its files.
func handleArtifactBundleFiles(d Deps) apiFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		sc, err := projectScope(r)
		if err != nil {
			return err
		}
		id, err := pathBundleID(r)
		if err != nil {
			return err
		}
		b, files, err := d.Store.ArtifactBundleFiles(r.Context(), sc, id)
		if err != nil {
			return err
		}
		out := struct {
			artifactBundleJSON
			Files []artifactBundleFileJSON `json:"files"`
		}{newArtifactBundleJSON(b), make([]artifactBundleFileJSON, 0, len(files))}
		for _, f := range files {
			out.Files = append(out.Files, newArtifactBundleFileJSON(f))
		}
		writeJSON(w, r, d.Log, http.StatusOK, out)
		return nil
	}
}

// handleArtifactBundleFile serves GET projects/{org}/{project}/artifact-bundles/{bundle_id}/files/{file_id}/:
// the file's bytes, streamed out of the bundle.
func handleArtifactBundleFile(d Deps) apiFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		sc, err := projectScope(r)
		if err != nil {
			return err
		}
		id, err := pathBundleID(r)
		if err != nil {
			return err
		}
		fileID, err := pathFileID(r)
		if err != nil {
			return err
		}
		return streamAttachment(w, r, d, func(start attachmentStart) error {
			return d.Store.WriteArtifactBundleFile(r.Context(), sc, id, fileID, func(f store.ArtifactBundleFile) io.Writer {
				return start(f.Size, path.Base(f.URL))
			})
		})
	}
}

// artifactLookupJSON is a file found by its debug id.
type artifactLookupJSON struct {
	ID           string            `json:"id"`
	Type         string            `json:"type"`
	URL          string            `json:"url"`
	AbsPath      string            `json:"abs_path"`
	ResolvedWith string            `json:"resolved_with"`
	BundleID     string            `json:"bundleId"`
	DebugID      *string           `json:"debugId"`
	Headers      map[string]string `json:"headers"`
	Size         int64             `json:"size"`
	SHA1         string            `json:"sha1"`
}

// maxLookup bounds the files one artifact lookup answers.
const maxLookup = 100

// handleArtifactLookup serves GET projects/{org}/{project}/artifact-lookup/
// as symbolicator asks it (docs/symbol-server.md): the project's files whose debug
// id is one of the repeated ?debug_id=, newest first, then with ?release=
// (and ?dist=) the files of that release and of its bundles whose URL
// contains one of the repeated ?url=, in any case; each with the URL that
// downloads it.
func handleArtifactLookup(d Deps) apiFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		sc, err := projectScope(r)
		if err != nil {
			return err
		}
		q := r.URL.Query()
		var lq store.LookupQuery
		for _, v := range q["debug_id"] {
			id, ok := canonicalUUID(v)
			if !ok {
				return invalid(valueErr, "Expected a debug id (a UUID)", "query", "debug_id")
			}
			lq.DebugIDs = append(lq.DebugIDs, id)
		}
		lq.Release = q.Get("release")
		if dist := q.Get("dist"); dist != "" {
			lq.Dist = &dist
		}
		for _, u := range q["url"] {
			if u != "" && len(u) <= 1024 {
				lq.URLs = append(lq.URLs, u)
			}
		}
		switch {
		case len(lq.DebugIDs) > maxLookup:
			return invalid(valueErr, fmt.Sprintf("At most %d debug ids", maxLookup), "query", "debug_id")
		case len(lq.URLs) > maxLookup:
			return invalid(valueErr, fmt.Sprintf("At most %d URLs", maxLookup), "query", "url")
		case len(lq.DebugIDs) == 0 && (lq.Release == "" || len(lq.URLs) == 0):
			return invalid(valueErr, "Expected a debug id (a UUID)", "query", "debug_id")
		}
		files, err := d.Store.Lookup(r.Context(), sc, lq, maxLookup)
		if err != nil {
			return err
		}
		base := publicBase(r, d.PublicURL) + "/api/0/projects/" + sc.OrgSlug + "/" + sc.ProjectSlug
		out := make([]artifactLookupJSON, 0, len(files))
		for _, f := range files {
			if f.ReleaseFileID != 0 {
				id := strconv.FormatInt(f.ReleaseFileID, 10)
				out = append(out, artifactLookupJSON{
					ID: id, Type: "file", AbsPath: f.URL, ResolvedWith: f.ResolvedWith,
					URL:     base + "/releases/" + url.PathEscape(lq.Release) + "/files/" + id + "/?download=1",
					Headers: f.Headers, Size: f.Size, SHA1: f.SHA1,
				})
				continue
			}
			id := strconv.FormatInt(f.ID, 10)
			out = append(out, artifactLookupJSON{
				ID: id, Type: "file", AbsPath: f.URL, ResolvedWith: f.ResolvedWith,
				URL:      base + "/artifact-bundles/" + f.BundleID + "/files/" + id + "/",
				BundleID: f.BundleID, DebugID: f.DebugID, Headers: f.Headers, Size: f.Size, SHA1: f.SHA1,
			})
		}
		writeJSON(w, r, d.Log, http.StatusOK, out)
		return nil
	}
}
