package handlers

import (
	"bytes"
	"compress/flate"
	"crypto/sha1"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"net/http"
	"strconv"
	"strings"

	"errata/authn"
	"errata/store"
	"errata/worker/dif"
)

// The symbol routes (SYMBOLS.md §3, §4): debuginfod and a symbol server.
// They are dispatched before the mux, which would answer the paths that
// debuggers send (with "..", "//" or an escaped "/") with a redirect to
// another path, and their errors are short text/plain bodies.
const (
	debuginfodPrefix = "/debuginfod/"
	symbolsPrefix    = "/symbols/"
)

// Patterns of the symbol routes, as the log and the metrics name them.
const (
	patDebuginfo  = "GET /debuginfod/{organization_slug}/buildid/{id}/debuginfo"
	patExecutable = "GET /debuginfod/{organization_slug}/buildid/{id}/executable"
	patSource     = "GET /debuginfod/{organization_slug}/buildid/{id}/source/{path...}"
	patSection    = "GET /debuginfod/{organization_slug}/buildid/{id}/section/{name}"
	patSymbols    = "GET /symbols/{organization_slug}/{file}/{key}/{file2}"
	patDebuginfod = "GET /debuginfod/{path...}"
)

// symbolPatterns are the patterns the metrics count the symbol routes by.
var symbolPatterns = []string{patDebuginfo, patExecutable, patSource, patSection, patSymbols, patDebuginfod}

// symbolScopes are the scopes that read debug files (routes.go's
// releaseReader).
var symbolScopes = releaseReader.scopes

// isSymbolPath reports whether p is served by the symbol routes.
func isSymbolPath(p string) bool {
	return strings.HasPrefix(p, debuginfodPrefix) || strings.HasPrefix(p, symbolsPrefix)
}

// symbolError is an answer of the symbol routes: a status and a short
// text.
type symbolError struct {
	status int
	msg    string
}

func (e *symbolError) Error() string { return e.msg }

var (
	symNotFound     = &symbolError{http.StatusNotFound, "Not Found"}
	symUnauthorized = &symbolError{http.StatusUnauthorized, "Unauthorized"}
	symForbidden    = &symbolError{http.StatusForbidden, "Permission denied"}
)

// debuginfodRequest is a parsed debuginfod path.
type debuginfodRequest struct {
	org, buildID string // buildID in lower case
	kind         string // "debuginfo", "executable", "source" or "section"
	arg          string // the canonical source path, or the section name
}

// parseDebuginfodPath parses the path (decoded) of a debuginfod request,
// below debuginfodPrefix. A path that is none of the routes is
// symNotFound; a malformed build id or source path is a 400.
func parseDebuginfodPath(p string) (debuginfodRequest, error) {
	var q debuginfodRequest
	rest, ok := strings.CutPrefix(p, debuginfodPrefix)
	if !ok {
		return q, symNotFound
	}
	q.org, rest, ok = strings.Cut(rest, "/")
	if !ok || q.org == "" {
		return q, symNotFound
	}
	if rest, ok = strings.CutPrefix(rest, "buildid/"); !ok {
		return q, symNotFound
	}
	var id string
	if id, rest, ok = strings.Cut(rest, "/"); !ok {
		return q, symNotFound
	}
	if !isBuildID(id) {
		return q, &symbolError{http.StatusBadRequest, "The build id is not 2 to 128 hex digits"}
	}
	q.buildID = strings.ToLower(id)
	q.kind, rest, _ = strings.Cut(rest, "/")
	switch q.kind {
	case "debuginfo", "executable":
		if rest != "" || strings.HasSuffix(p, "/") {
			return q, symNotFound
		}
	case "source":
		src, err := canonicalSourcePath(rest)
		if err != nil {
			return q, err
		}
		q.arg = src
	case "section":
		if rest == "" || strings.ContainsAny(rest, "/\x00") {
			return q, symNotFound
		}
		q.arg = rest
	default:
		return q, symNotFound
	}
	return q, nil
}

// isBuildID reports whether s is hex of even length, 2 to 128 digits.
func isBuildID(s string) bool {
	if len(s) < 2 || len(s) > 128 || len(s)%2 != 0 {
		return false
	}
	_, err := hex.DecodeString(s)
	return err == nil
}

// canonicalSourcePath is the source path p (decoded, without its leading
// "/") as a manifest names it: rooted, its dot segments removed (RFC
// 3986 §5.2.4) and "//" folded. NUL or an empty path is a 400.
func canonicalSourcePath(p string) (string, error) {
	if strings.ContainsRune(p, 0) {
		return "", &symbolError{http.StatusBadRequest, "The source path holds a NUL character"}
	}
	if strings.Trim(p, "/") == "" {
		return "", &symbolError{http.StatusBadRequest, "The source path is empty"}
	}
	return dif.CanonicalSourcePath(p), nil
}

// symbolKey is a parsed symbol server path: the query that selects the
// file, and what is refused outright.
type symbolKey struct {
	org   string
	name  string // the file name the answer is named by
	query store.SymbolQuery
}

// parseSymbolPath parses the path of a symbol server request,
// {file}/{key}/{file} below symbolsPrefix and the organization, matched
// case-insensitively (SYMBOLS.md §4). A path that is no key of a stored
// format is symNotFound.
func parseSymbolPath(p string) (symbolKey, error) {
	var k symbolKey
	rest, ok := strings.CutPrefix(p, symbolsPrefix)
	if !ok {
		return k, symNotFound
	}
	parts := strings.Split(rest, "/")
	if len(parts) != 4 || parts[0] == "" {
		return k, symNotFound
	}
	k.org = parts[0]
	file, key, file2 := strings.ToLower(parts[1]), strings.ToLower(parts[2]), strings.ToLower(parts[3])
	if file == "" || key == "" || file2 == "" || strings.ContainsRune(p, 0) {
		return k, symNotFound
	}
	// Compressed variants (crash.pd_) and pointer files are not served.
	if strings.HasSuffix(file2, "_") || file2 == "file.ptr" {
		return k, symNotFound
	}
	k.name = parts[3]
	switch {
	case strings.HasSuffix(file2, ".src.zip"):
		id, ok := dif.CanonicalDebugID(key)
		if !ok || !isHex(key) || file2 != pdbStem(file)+".src.zip" {
			return k, symNotFound
		}
		k.query = store.SymbolQuery{Formats: []string{"sourcebundle"}, DebugID: id}
	case strings.HasPrefix(key, "elf-buildid-sym-"):
		id := strings.TrimPrefix(key, "elf-buildid-sym-")
		if file != "_.debug" || file2 != "_.debug" || !isBuildID(id) {
			return k, symNotFound
		}
		k.query = store.SymbolQuery{Formats: []string{"elf"}, CodeIDs: buildIDForms(id), Feature: "debug"}
	case strings.HasPrefix(key, "elf-buildid-"):
		id := strings.TrimPrefix(key, "elf-buildid-")
		if file != file2 || !isBuildID(id) {
			return k, symNotFound
		}
		k.query = store.SymbolQuery{Formats: []string{"elf"}, CodeIDs: buildIDForms(id), Types: []string{"exe", "lib"}}
	case strings.HasPrefix(key, "mach-uuid-sym-"):
		id, ok := machUUID(strings.TrimPrefix(key, "mach-uuid-sym-"))
		if file != "_.dwarf" || file2 != "_.dwarf" || !ok {
			return k, symNotFound
		}
		k.query = store.SymbolQuery{Formats: []string{"macho"}, DebugID: id, Feature: "debug"}
	case strings.HasPrefix(key, "mach-uuid-"):
		id, ok := machUUID(strings.TrimPrefix(key, "mach-uuid-"))
		if file != file2 || !ok {
			return k, symNotFound
		}
		k.query = store.SymbolQuery{Formats: []string{"macho"}, DebugID: id, Types: []string{"exe", "lib"}}
	case strings.HasSuffix(file2, ".sym"):
		id, ok := dif.CanonicalDebugID(key)
		if !ok || !isHex(key) || file2 != pdbStem(file)+".sym" {
			return k, symNotFound
		}
		k.query = store.SymbolQuery{Formats: []string{"breakpad"}, DebugID: id}
	case strings.HasSuffix(file, ".pdb"):
		if file != file2 || !isHex(key) {
			return k, symNotFound
		}
		id, ok := dif.CanonicalDebugID(strings.TrimSuffix(key, "ffffffff"))
		if len(key) != 40 || !strings.HasSuffix(key, "ffffffff") {
			id, ok = dif.CanonicalDebugID(key)
		}
		if !ok {
			return k, symNotFound
		}
		k.query = store.SymbolQuery{Formats: []string{"pdb", "portablepdb"}, DebugID: id, ObjectName: file}
	default:
		// A PE: TimeDateStamp (8 hex digits) then SizeOfImage in hex.
		if file != file2 || len(key) < 9 || len(key) > 16 || !isHex(key) {
			return k, symNotFound
		}
		k.query = store.SymbolQuery{Formats: []string{"pe"}, CodeID: key, ObjectName: file}
	}
	return k, nil
}

// pdbStem is the name of a debug file without .pdb, .exe or .dll, as a
// Breakpad file and a source bundle are named by it.
func pdbStem(name string) string {
	for _, ext := range []string{".pdb", ".exe", ".dll"} {
		if s, ok := strings.CutSuffix(name, ext); ok {
			return s
		}
	}
	return name
}

// machUUID is the debug id of a Mach-O UUID of 32 hex digits.
func machUUID(s string) (string, bool) {
	if len(s) != 32 || !isHex(s) {
		return "", false
	}
	return dif.CanonicalDebugID(s)
}

// buildIDForms are the stored build ids a key's build id may name: itself
// and, for a key of 20 bytes ending in zeros, the shorter ids it pads.
func buildIDForms(id string) []string {
	forms := []string{id}
	if len(id) == 40 {
		for n := 38; n >= 2 && id[n:n+2] == "00"; n -= 2 {
			forms = append(forms, id[:n])
		}
	}
	return forms
}

func isHex(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
			return false
		}
	}
	return s != ""
}

// debugIDOfBuildID is the debug id Sentry derives from an ELF build id:
// its first 16 bytes, zero-padded, read as a little-endian GUID.
func debugIDOfBuildID(id string) string {
	raw, _ := hex.DecodeString(id) // checked by isBuildID
	var b [16]byte
	copy(b[:], raw)
	le := []byte{b[3], b[2], b[1], b[0], b[5], b[4], b[7], b[6]}
	h := hex.EncodeToString(append(le, b[8:]...))
	return h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}

// symbolHandler serves the symbol routes.
type symbolHandler struct {
	d Deps
}

func (h symbolHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	r.Pattern = patDebuginfod
	if strings.HasPrefix(r.URL.Path, symbolsPrefix) {
		r.Pattern = patSymbols
	}
	err := h.serve(w, r)
	if err == nil {
		return
	}
	var se *symbolError
	switch {
	case errors.As(err, &se):
	case errors.Is(err, store.ErrNotFound):
		se = symNotFound
	case errors.Is(err, store.ErrUnavailable):
		se = &symbolError{http.StatusServiceUnavailable, "Service Unavailable"}
	default:
		h.d.Log.ErrorContext(r.Context(), "request failed", "status", 500, "err", err)
		se = &symbolError{http.StatusInternalServerError, "Internal Server Error"}
	}
	writeSymbolError(w, se)
}

// writeSymbolError writes e as a short text/plain answer.
func writeSymbolError(w http.ResponseWriter, e *symbolError) {
	hd := w.Header()
	for _, k := range []string{"Content-Length", "Content-Range", "Etag", "Last-Modified", "X-Debuginfod-Size", "X-Debuginfod-File", "Content-Encoding"} {
		hd.Del(k)
	}
	hd.Set("Content-Type", "text/plain; charset=utf-8")
	hd.Set("Cache-Control", "no-store")
	switch e.status {
	case http.StatusUnauthorized:
		hd.Set("WWW-Authenticate", `Basic realm="errata"`)
	case http.StatusMethodNotAllowed:
		hd.Set("Allow", "GET, HEAD")
	}
	body := e.msg + "\n"
	hd.Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(e.status)
	io.WriteString(w, body) //nolint:errcheck // the client went away
}

func (h symbolHandler) serve(w http.ResponseWriter, r *http.Request) error {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		return &symbolError{http.StatusMethodNotAllowed, "Method Not Allowed"}
	}
	c, err := h.authenticate(r)
	if err != nil {
		return err
	}
	if strings.HasPrefix(r.URL.Path, symbolsPrefix) {
		k, err := parseSymbolPath(r.URL.Path)
		if err != nil {
			return err
		}
		f, err := h.d.Store.FindSymbolFile(r.Context(), c.UserID, k.org, k.query)
		if err != nil {
			return err
		}
		return h.serveFile(w, r, f, k.name, 0, f.Size, "")
	}
	q, err := parseDebuginfodPath(r.URL.Path)
	if err != nil {
		return err
	}
	r.Pattern = map[string]string{"debuginfo": patDebuginfo, "executable": patExecutable, "source": patSource, "section": patSection}[q.kind]
	org := symbolOrg{userID: c.UserID, slug: q.org}
	switch q.kind {
	case "debuginfo":
		f, err := h.d.Store.FindSymbolFile(r.Context(), org.userID, org.slug, debuginfoQuery(q.buildID))
		if err != nil {
			return err
		}
		return h.serveFile(w, r, f, f.ObjectName, 0, f.Size, "")
	case "executable":
		f, err := h.d.Store.FindSymbolFile(r.Context(), org.userID, org.slug, executableQuery(q.buildID))
		if err != nil {
			return err
		}
		return h.serveFile(w, r, f, f.ObjectName, 0, f.Size, "")
	case "section":
		return h.serveSection(w, r, org, q)
	}
	return h.serveSource(w, r, org, q)
}

// symbolOrg is the organization a symbol request names, and its caller.
type symbolOrg struct {
	userID int64
	slug   string
}

func debuginfoQuery(id string) store.SymbolQuery {
	return store.SymbolQuery{Formats: []string{"elf"}, CodeID: id, Feature: "debug"}
}

func executableQuery(id string) store.SymbolQuery {
	return store.SymbolQuery{Formats: []string{"elf"}, CodeID: id, Types: []string{"exe", "lib"}}
}

// authenticate reads the credential of a symbol request: a Bearer token,
// or Basic whose password is a token (libcurl sends Basic for the
// user:TOKEN@host URLs that debuginfod clients are given). A caller
// without a token or with a bad one is 401, one without a reading scope
// 403.
func (h symbolHandler) authenticate(r *http.Request) (authn.Caller, error) {
	a := r.Header.Get("Authorization")
	if a == "" {
		return authn.Caller{}, symUnauthorized
	}
	if scheme, cred, ok := strings.Cut(a, " "); ok && strings.EqualFold(scheme, "Basic") {
		raw, err := base64.StdEncoding.DecodeString(strings.TrimSpace(cred))
		if err != nil {
			return authn.Caller{}, symUnauthorized
		}
		_, token, ok := strings.Cut(string(raw), ":")
		if !ok || token == "" {
			return authn.Caller{}, symUnauthorized
		}
		r2 := *r
		r2.Header = http.Header{"Authorization": {"Bearer " + token}}
		r = &r2
	}
	c, err := h.d.Auth.Authenticate(r)
	switch {
	case errors.Is(err, authn.ErrNoCredential), errors.Is(err, authn.ErrBadCredential):
		return c, symUnauthorized
	case err != nil:
		return c, err
	}
	if !c.HasAny(symbolScopes) {
		return c, symForbidden
	}
	return c, nil
}

// serveSection serves section q.arg of the debuginfo file of q's build
// id, else of its executable when the section is missing there or has no
// bytes (SHT_NOBITS). A file whose section table was beyond the budget is
// 503, so that the client fetches the whole file; a damaged section 404.
func (h symbolHandler) serveSection(w http.ResponseWriter, r *http.Request, org symbolOrg, q debuginfodRequest) error {
	found := false
	for _, sq := range []store.SymbolQuery{debuginfoQuery(q.buildID), executableQuery(q.buildID)} {
		sq.Sections = true
		f, err := h.d.Store.FindSymbolFile(r.Context(), org.userID, org.slug, sq)
		if errors.Is(err, store.ErrNotFound) {
			continue
		}
		if err != nil {
			return err
		}
		found = true
		if f.Sections == nil || f.Sections.Beyond {
			return &symbolError{http.StatusServiceUnavailable, "The section table of this file is beyond what errata reads: fetch the whole file"}
		}
		for _, s := range f.Sections.Sections {
			if s.Name != q.arg {
				continue
			}
			if s.Damaged {
				return &symbolError{http.StatusNotFound, "The section's header points outside the file"}
			}
			if s.Type == 8 /* SHT_NOBITS */ || s.Size == 0 {
				break // look in the executable
			}
			return h.serveFile(w, r, f, q.arg, int64(s.Offset), int64(s.Size), fmt.Sprintf(".%d.%d", s.Offset, s.Size))
		}
	}
	if !found {
		return symNotFound
	}
	return &symbolError{http.StatusNotFound, "No such section"}
}

// maxSourceFile bounds a deflated source, which is inflated in memory to
// serve ranges of it.
const maxSourceFile = 64 << 20

// serveSource serves the source q.arg from the source bundle of q's build
// id (by code id, else by the debug id derived from it) that holds it,
// where the index read at assembly says it lies: a stored member is
// served as a part of the bundle, a deflated one inflated (and checked
// against its CRC-32).
func (h symbolHandler) serveSource(w http.ResponseWriter, r *http.Request, org symbolOrg, q debuginfodRequest) error {
	f, err := h.d.Store.FindSymbolFile(r.Context(), org.userID, org.slug,
		store.SymbolQuery{Formats: []string{"sourcebundle"}, CodeID: q.buildID, SourcePath: q.arg})
	if errors.Is(err, store.ErrNotFound) {
		f, err = h.d.Store.FindSymbolFile(r.Context(), org.userID, org.slug,
			store.SymbolQuery{Formats: []string{"sourcebundle"}, DebugID: debugIDOfBuildID(q.buildID), SourcePath: q.arg})
	}
	if errors.Is(err, store.ErrNotFound) {
		return &symbolError{http.StatusNotFound, "No such source"}
	}
	if err != nil {
		return err
	}
	m := f.Source
	if m == nil || m.Size <= 0 {
		return symNotFound
	}
	if m.Method == 0 && m.CSize == m.Size {
		return h.serveFile(w, r, f, q.arg, m.Offset, m.Size, fmt.Sprintf(":%d", m.Offset))
	}
	if m.Method != 8 || m.Size > maxSourceFile {
		return &symbolError{http.StatusNotFound, "The source cannot be served from its bundle"}
	}
	if maxSizeExceeded(r, m.Size) {
		return &symbolError{http.StatusNotAcceptable, "The file is larger than X-DEBUGINFOD-MAXSIZE"}
	}
	fr, err := h.d.Store.OpenSymbolFile(r.Context(), f)
	if err != nil {
		return err
	}
	defer fr.Close()
	if m.Offset < 0 || m.CSize < 0 || m.Offset > fr.Size() || m.CSize > fr.Size()-m.Offset {
		return &symbolError{http.StatusNotFound, "The source is not where its bundle says"}
	}
	zr := flate.NewReader(io.NewSectionReader(fr, m.Offset, m.CSize))
	defer zr.Close()
	src, err := io.ReadAll(io.LimitReader(zr, m.Size+1))
	var corrupt flate.CorruptInputError
	switch {
	case err != nil && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.As(err, &corrupt):
		return fmt.Errorf("reading file %d: %w: %w", f.FileID, store.ErrUnavailable, err)
	case err != nil || int64(len(src)) != m.Size || crc32.ChecksumIEEE(src) != m.CRC:
		return &symbolError{http.StatusNotFound, "The source in the bundle is damaged"}
	}
	return serveBytes(w, r, q.arg, f, src)
}

// maxSizeExceeded reports whether r's X-DEBUGINFOD-MAXSIZE is less than
// size.
func maxSizeExceeded(r *http.Request, size int64) bool {
	v := r.Header.Get("X-Debuginfod-Maxsize")
	if v == "" {
		return false
	}
	n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
	return err == nil && n >= 0 && size > n
}

// setSymbolHeaders sets the headers of a served file (SYMBOLS.md §3).
func setSymbolHeaders(w http.ResponseWriter, name, etag string, size int64) {
	hd := w.Header()
	hd.Set("Content-Type", "application/octet-stream")
	hd.Set("X-Debuginfod-Size", strconv.FormatInt(size, 10))
	hd.Set("X-Debuginfod-File", headerText(name))
	hd.Set("Etag", `"`+etag+`"`)
	hd.Set("Cache-Control", "private")
}

// headerText is s with what a header value cannot hold escaped.
func headerText(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < 0x20 || c == 0x7f || c >= 0x80 || c == '%' {
			fmt.Fprintf(&b, "%%%02X", c)
			continue
		}
		b.WriteByte(c)
	}
	return b.String()
}

// serveFile serves size bytes at off of f's file (the whole file, or a
// section of it), with HEAD and Range. An empty answer is a 404, and one
// larger than the client's X-DEBUGINFOD-MAXSIZE a 406. The first byte is
// read before anything is written, so that a blob store that cannot be
// reached is a 503, not an answer cut short. etagSuffix tells a part of
// the file from the whole.
func (h symbolHandler) serveFile(w http.ResponseWriter, r *http.Request, f store.SymbolFile, name string, off, size int64, etagSuffix string) error {
	if size <= 0 {
		return symNotFound
	}
	if maxSizeExceeded(r, size) {
		return &symbolError{http.StatusNotAcceptable, "The file is larger than X-DEBUGINFOD-MAXSIZE"}
	}
	fr, err := h.d.Store.OpenSymbolFile(r.Context(), f)
	if err != nil {
		return err
	}
	defer fr.Close()
	if off < 0 || off > fr.Size() || size > fr.Size()-off {
		return &symbolError{http.StatusNotFound, "The section's header points outside the file"}
	}
	part := io.NewSectionReader(fr, off, size)
	if _, err := part.ReadAt(make([]byte, 1), 0); err != nil {
		return fmt.Errorf("reading file %d: %w", f.FileID, store.ErrUnavailable)
	}
	var content io.ReadSeeker = part
	whole, isWhole := fr.(io.ReadSeeker)
	if isWhole = isWhole && off == 0 && size == fr.Size(); isWhole {
		// The reader itself: a file of the cache's directory goes to
		// the connection with sendfile(2), from the page cache.
		content = whole
	}
	setSymbolHeaders(w, name, f.SHA1+etagSuffix, size)
	if mem, ok := fr.(interface{ Bytes() []byte }); ok && plainGet(r) {
		// From memory, the whole answer in one write: what
		// ServeContent would send, without its copy loop.
		hd := w.Header()
		hd.Set("Content-Length", strconv.FormatInt(size, 10))
		hd.Set("Last-Modified", f.DateCreated.UTC().Format(http.TimeFormat))
		hd.Set("Accept-Ranges", "bytes")
		w.WriteHeader(http.StatusOK)
		w.Write(mem.Bytes()[off : off+size]) //nolint:errcheck // the client went away
		return nil
	}
	if isWhole {
		corked(r.Context(), func() { http.ServeContent(w, r, "", f.DateCreated, content) })
		return nil
	}
	http.ServeContent(w, r, "", f.DateCreated, content)
	return nil
}

// plainGet reports whether r is a GET that ServeContent would answer
// with the whole content: no range, no condition.
func plainGet(r *http.Request) bool {
	if r.Method != http.MethodGet {
		return false
	}
	for _, k := range []string{"Range", "If-Match", "If-None-Match", "If-Modified-Since", "If-Unmodified-Since", "If-Range"} {
		if r.Header.Get(k) != "" {
			return false
		}
	}
	return true
}

// serveBytes serves src, a source read from the bundle f, as serveFile
// does; its ETag is the source's SHA-1.
func serveBytes(w http.ResponseWriter, r *http.Request, name string, f store.SymbolFile, src []byte) error {
	if len(src) == 0 {
		return symNotFound
	}
	if maxSizeExceeded(r, int64(len(src))) {
		return &symbolError{http.StatusNotAcceptable, "The file is larger than X-DEBUGINFOD-MAXSIZE"}
	}
	sum := sha1.Sum(src)
	setSymbolHeaders(w, name, hex.EncodeToString(sum[:]), int64(len(src)))
	http.ServeContent(w, r, "", f.DateCreated, bytes.NewReader(src))
	return nil
}

// patHome is the pattern of GET /, served before the mux as the symbol
// routes are (it is no API route: a short page for a person).
const patHome = "GET /{$}"

// serveHome serves GET /: a short text page naming the version, the API
// root, the OpenAPI document and the two symbol bases, for a person who
// opens the server's address.
func serveHome(w http.ResponseWriter, r *http.Request, d Deps) {
	base := publicBase(r, d.PublicURL)
	version := d.Version
	if version == "" {
		version = "unknown"
	}
	body := "errata " + version + "\n\n" +
		"API root:          " + base + "/api/0/\n" +
		"OpenAPI document:  " + base + "/api/0/openapi.json\n" +
		"debuginfod:        " + base + "/debuginfod/{organization_slug}/  (DEBUGINFOD_URLS=" +
		strings.Replace(base, "://", "://errata:TOKEN@", 1) + "/debuginfod/{organization_slug})\n" +
		"symbol server:     " + base + "/symbols/{organization_slug}/  (srv*C:\\symbols*" + base + "/symbols/{organization_slug})\n\n" +
		"Every route but this page and the probes needs a token: Authorization: Bearer TOKEN.\n"
	hd := w.Header()
	hd.Set("Content-Type", "text/plain; charset=utf-8")
	hd.Set("Content-Length", strconv.Itoa(len(body)))
	hd.Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
	if r.Method != http.MethodHead {
		io.WriteString(w, body) //nolint:errcheck // the client went away
	}
}
