package handlers

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"path"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"errata/handlers/symbolication"
	"errata/store"
	"errata/worker/dif/sourcemap"
)

// Limits of a resolution request (SYMBOLS.md §9), beside the body limit.
const (
	maxResolveFrames  = 10_000
	maxResolveModules = 1_000
	// maxResolveFiles bounds the distinct files (abs_path values) one
	// request resolves.
	maxResolveFiles = 200
	// maxMinifiedBytes is the largest minified file read for its
	// sourceMappingURL.
	maxMinifiedBytes = 32 << 20
	// maxResolveBytes bounds the bytes of stored files one request reads
	// and parses (cached files cost nothing).
	maxResolveBytes = 256 << 20
)

// jsRequest is the body of symbolicate-js/.
type jsRequest struct {
	// Stacktraces is decoded into stacktraces after the body, and echoed
	// as raw_stacktraces.
	Stacktraces json.RawMessage `json:"stacktraces"`
	stacktraces []jsStacktraceIn
	// decoded says stacktraces was filled with the body (decodeJSRequest's
	// fast path).
	decoded bool
	Modules []jsModule `json:"modules"`
	Release *string    `json:"release"`
	Dist    *string    `json:"dist"`
	Options struct {
		ApplySourceContext *bool   `json:"apply_source_context"`
		FrameOrder         *string `json:"frame_order"`
	} `json:"options"`
}

type jsModule struct {
	Type     *string `json:"type"`
	CodeFile *string `json:"code_file"`
	DebugID  *string `json:"debug_id"`
}

type jsStacktraceIn struct {
	Frames []jsFrameIn `json:"frames"`
}

type jsFrameIn struct {
	AbsPath  *string `json:"abs_path"`
	Lineno   *int64  `json:"lineno"`
	Colno    *int64  `json:"colno"`
	Function *string `json:"function"`
}

// jsFrameOut is a frame of the answer, in symbolicator's keys.
type jsFrameOut struct {
	Function      *string     `json:"function"`
	Filename      *string     `json:"filename"`
	AbsPath       *string     `json:"abs_path"`
	Lineno        *int64      `json:"lineno"`
	Colno         *int64      `json:"colno"`
	PreContext    []string    `json:"pre_context"`
	ContextLine   *string     `json:"context_line"`
	PostContext   []string    `json:"post_context"`
	OriginalIndex int         `json:"original_index"`
	Data          jsFrameData `json:"data"`
	// source, when the frame was resolved, is its source, whose JSON
	// stands for Filename and AbsPath.
	source *jsSource
}

type jsFrameData struct {
	Symbolicated bool    `json:"symbolicated"`
	ResolvedWith *string `json:"resolved_with"`
	Sourcemap    *string `json:"sourcemap"`
	// json, when set, is the JSON of ResolvedWith and Sourcemap, their
	// file's.
	json []byte
}

type jsError struct {
	AbsPath string `json:"abs_path"`
	Type    string `json:"type"`
}

type jsStacktraceOut struct {
	Frames []jsFrameOut `json:"frames"`
}

type jsResponse struct {
	Stacktraces    []jsStacktraceOut `json:"stacktraces"`
	RawStacktraces json.RawMessage   `json:"raw_stacktraces"`
	Errors         []jsError         `json:"errors"`
}

// handleSymbolicateJS serves POST projects/{org}/{project}/symbolicate-js/:
// minified JavaScript frames resolved through the project's artifact
// bundles by debug id, then the release's files by URL (SYMBOLS.md §6).
func handleSymbolicateJS(d Deps) apiFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		sc, err := projectScope(r)
		if err != nil {
			return err
		}
		bp := bodyBuffers.Get().(*[]byte)
		defer putBodyBuffer(bp)
		body, err := readBody(w, r, (*bp)[:0])
		*bp = body[:0]
		if err != nil {
			return err
		}
		// The fast decoding counts the body's values as jsonValues
		// does and takes none beyond the limit; a body it does not
		// take has the checks of readResolveBody, then encoding/json.
		var req jsRequest
		if !utf8.Valid(body) || !decodeJSRequestFast(body, &req) {
			if err := checkResolveBody(body); err != nil {
				return err
			}
			req = jsRequest{}
			if err := decodeResolveJSON(body, &req); err != nil {
				return err
			}
		}
		if err := checkJSRequest(&req); err != nil {
			return err
		}
		rs := &jsResolver{d: d, r: r, sc: sc, req: &req, files: map[string]*jsFile{}}
		out, err := rs.resolve()
		if err != nil {
			return err
		}
		// Every lookup filters by membership: a request that found a
		// stored file can see the project. One that found none asks, so
		// that another organization's project is 404 whatever the body
		// holds.
		if !rs.visible {
			if _, err := d.Store.Project(r.Context(), sc.UserID, sc.OrgSlug, sc.ProjectSlug); err != nil {
				return err
			}
		}
		out.RawStacktraces = req.Stacktraces
		writeJSON(w, r, d.Log, http.StatusOK, out)
		return nil
	}
}

// decodeResolveBody is decodeJSON for the resolution routes, whose keys
// are symbolicator's snake_case and whose bodies are read in one decoding:
// the same limits and answers (413, 408, 400 for JSON that does not parse
// or is not UTF-8, 422 for wrong types and NUL characters) without
// decodeJSON's renaming of keys, which reads a 1 MiB body of frames five
// times.
func decodeResolveBody(w http.ResponseWriter, r *http.Request, dst any) error {
	body, err := readResolveBody(w, r)
	if err != nil {
		return err
	}
	return decodeResolveJSON(body, dst)
}

// readResolveBody reads a body within the limits of decodeJSON: 1 MiB,
// 20,000 values, UTF-8.
func readResolveBody(w http.ResponseWriter, r *http.Request) ([]byte, error) {
	body, err := readBody(w, r, nil)
	if err != nil {
		return nil, err
	}
	if err := checkResolveBody(body); err != nil {
		return nil, err
	}
	return body, nil
}

// checkResolveBody checks a body's values and encoding.
func checkResolveBody(body []byte) error {
	if n := jsonValues(body); n > maxJSONValues {
		return invalid(valueErr, fmt.Sprintf("The body has more than %d values", maxJSONValues), "body")
	}
	if !utf8.Valid(body) {
		return errCannotParse
	}
	return nil
}

// bodyBuffers recycles the bodies symbolicate-js reads: a thousand frames
// are 100 KB.
var bodyBuffers = sync.Pool{New: func() any { return new([]byte) }}

// maxPooledBody is the largest buffer bodyBuffers keeps: a body of up to
// maxBodyBytes is read into a buffer of its size, which the pool would
// otherwise hold, one for each request served at once, for the requests
// of a thousand frames that follow.
const maxPooledBody = 256 << 10

// putBodyBuffer gives *bp back to bodyBuffers unless it grew beyond
// maxPooledBody.
func putBodyBuffer(bp *[]byte) {
	if cap(*bp) > maxPooledBody {
		return
	}
	bodyBuffers.Put(bp)
}

// maxBodyPresize is the most readBody allocates for a body before its
// bytes arrive: a Content-Length is a claim, and a client that claims
// 1 MiB and sends nothing would hold that much for each of its
// connections until the read timeout.
const maxBodyPresize = 64 << 10

// readBody reads r's body of at most maxBodyBytes into buf, which it
// grows as needed: in one read when the body says its length and that is
// at most maxBodyPresize.
func readBody(w http.ResponseWriter, r *http.Request, buf []byte) ([]byte, error) {
	if r.ContentLength > maxBodyBytes {
		return buf, errTooLarge
	}
	// One byte more than the length, for the read that finds the end.
	if need := min(int(r.ContentLength)+1, maxBodyPresize); r.ContentLength > 0 && cap(buf) < need {
		buf = make([]byte, 0, need)
	}
	body := http.MaxBytesReader(w, r.Body, maxBodyBytes)
	for {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		n, err := body.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if err == io.EOF {
			return buf, nil
		}
		if err != nil {
			return buf, bodyError(err)
		}
	}
}

// decodeResolveJSON decodes a body readResolveBody read into dst.
func decodeResolveJSON(body []byte, dst any) error {
	if t := bytes.TrimLeft(body, " \t\r\n"); len(t) > 0 && t[0] != '{' {
		if !json.Valid(body) {
			return errCannotParse
		}
		return invalid(typeError, "Input should be an object", "body")
	}
	if err := json.Unmarshal(body, dst); err != nil {
		if te, ok := errors.AsType[*json.UnmarshalTypeError](err); ok {
			at := append([]any{"body"}, jsonPath(reflect.TypeOf(dst), te.Field)...)
			return invalid(typeError, "Input should be a valid "+jsonKind(te.Type), at...)
		}
		return errCannotParse
	}
	// JSON can only write NUL as \u0000: a body without it has none, and
	// the walk through what it decoded to is spared.
	if bytes.Contains(body, []byte(`\u0000`)) {
		if at, found := nulPath(reflect.ValueOf(dst)); found {
			return invalid(valueErr, "Input should not contain NUL characters", append([]any{"body"}, at...)...)
		}
	}
	return nil
}

// checkJSRequest validates what the body says beyond its types.
func checkJSRequest(req *jsRequest) error {
	if len(req.Stacktraces) == 0 || string(req.Stacktraces) == "null" {
		return invalid(missing, "Field required", "body", "stacktraces")
	}
	// decodeJSRequestFast has read the frames already (strings without
	// escapes, so without NUL).
	if !req.decoded {
		if err := json.Unmarshal(req.Stacktraces, &req.stacktraces); err != nil {
			return invalid(typeError, "Expected a list of stack traces with frames", "body", "stacktraces")
		}
		if bytes.Contains(req.Stacktraces, []byte(`\u0000`)) {
			if at, found := nulPath(reflect.ValueOf(&req.stacktraces)); found {
				return invalid(valueErr, "Input should not contain NUL characters", append([]any{"body", "stacktraces"}, at...)...)
			}
		}
	}
	n := 0
	for _, st := range req.stacktraces {
		n += len(st.Frames)
	}
	if n > maxResolveFrames {
		return invalid(valueErr, fmt.Sprintf("At most %d frames a request", maxResolveFrames), "body", "stacktraces")
	}
	if len(req.Modules) > maxResolveModules {
		return invalid(valueErr, fmt.Sprintf("At most %d modules a request", maxResolveModules), "body", "modules")
	}
	for i, m := range req.Modules {
		if m.DebugID != nil {
			id, ok := canonicalUUID(*m.DebugID)
			if !ok {
				return invalid(valueErr, "Expected a UUID", "body", "modules", i, "debug_id")
			}
			*req.Modules[i].DebugID = id
		}
	}
	if o := req.Options.FrameOrder; o != nil && *o != "caller_first" && *o != "callee_first" {
		return invalid(valueErr, "Expected caller_first or callee_first", "body", "options", "frame_order")
	}
	if req.Release != nil && (len(*req.Release) > 250 || !isText(*req.Release)) {
		return invalid(valueErr, "Invalid release", "body", "release")
	}
	if req.Dist != nil && (len(*req.Dist) > 64 || !isText(*req.Dist)) {
		return invalid(valueErr, "Invalid dist", "body", "dist")
	}
	return nil
}

// jsFile is what a request learnt of one abs_path: the map that resolves
// it, or the error type of its frames.
type jsFile struct {
	m            *sourcemap.Map
	mapURL       string
	resolvedWith string
	errType      string
	// data is what the data of its frames say of it: resolvedWith and
	// mapURL, and their JSON.
	data jsFrameData
	// sources are the map's sources as frames answer them, resolved
	// against mapURL.
	sources *jsSources
	// bundle is the artifact bundle of a map found by debug id, where
	// original sources are looked for; "" for a release's map.
	bundle string
	// texts memoizes the stored original sources by abs_path.
	texts map[string]*string
}

// newJSFile is the file of frames resolved through m, found under mapURL
// (sources, the view of m's sources for it, or nil for a request's own),
// by debug id or release (how).
func newJSFile(m *sourcemap.Map, sources *jsSources, mapURL, how, bundle string) *jsFile {
	if sources == nil {
		sources = localSources(mapURL)
	}
	f := &jsFile{m: m, mapURL: mapURL, resolvedWith: how, bundle: bundle, sources: sources}
	f.data = jsFrameData{ResolvedWith: &f.resolvedWith, Sourcemap: &f.mapURL}
	f.data.json = append(f.data.json, `,"resolved_with":`...)
	f.data.json = appendString(f.data.json, how)
	f.data.json = append(f.data.json, `,"sourcemap":`...)
	f.data.json = appendString(f.data.json, mapURL)
	return f
}

// jsResolver resolves the frames of one request.
type jsResolver struct {
	d     Deps
	r     *http.Request
	sc    store.ProjectScope
	req   *jsRequest
	files map[string]*jsFile
	read  int64 // bytes of stored files read
	// filenames memoizes filenameOf for the request's abs_path values.
	filenames map[string]*string
	// last is the abs_path of the last frame, its filename and file,
	// which the next frame most often shares (the decoding gives them
	// the same string, compared without reading it).
	last struct {
		absPath  string
		filename *string
		file     *jsFile
	}
	// visible is set once a lookup found a stored file of the project.
	visible bool
}

// errResolveBudget stops a request that reads more than maxResolveBytes.
var errResolveBudget = invalid(valueErr, fmt.Sprintf("The request reads more than %d bytes of stored files", maxResolveBytes), "body", "stacktraces")

func (rs *jsResolver) resolve() (*jsResponse, error) {
	out := &jsResponse{Stacktraces: []jsStacktraceOut{}, Errors: []jsError{}}
	calleeFirst := rs.req.Options.FrameOrder != nil && *rs.req.Options.FrameOrder == "callee_first"
	withContext := rs.req.Options.ApplySourceContext == nil || *rs.req.Options.ApplySourceContext
	for _, st := range rs.req.stacktraces {
		n := len(st.Frames)
		frames := make([]jsFrameOut, n)
		names := make([]*string, n) // the map's name at each frame's position
		// What resolved frames point to, allocated once a stack trace:
		// their names, and their lines and columns.
		nameOf := make([]string, n)
		lines := make([]int64, 2*n)
		for i, f := range st.Frames {
			o := jsFrameOut{Function: f.Function, AbsPath: f.AbsPath, Lineno: f.Lineno, Colno: f.Colno,
				OriginalIndex: i, PreContext: []string{}, PostContext: []string{}}
			if f.AbsPath != nil {
				o.Filename = rs.filename(*f.AbsPath)
			}
			named, errType, err := rs.resolveFrame(f, &o, &nameOf[i], lines[2*i:2*i+2], withContext)
			if err != nil {
				return nil, err
			}
			if named {
				names[i] = &nameOf[i]
			}
			if errType != "" {
				abs := ""
				if f.AbsPath != nil {
					abs = *f.AbsPath
				}
				out.Errors = append(out.Errors, jsError{AbsPath: abs, Type: errType})
			}
			frames[i] = o
		}
		// Caller naming: a callee is named by the map's name at its
		// caller's call site.
		for i := range frames {
			if !frames[i].Data.Symbolicated {
				continue
			}
			caller := i - 1
			if calleeFirst {
				caller = i + 1
			}
			if caller >= 0 && caller < len(frames) && names[caller] != nil {
				frames[i].Function = names[caller]
			}
		}
		out.Stacktraces = append(out.Stacktraces, jsStacktraceOut{Frames: frames})
	}
	return out, nil
}

// filename returns the filename of a frame's abs_path, once per request.
func (rs *jsResolver) filename(absPath string) *string {
	if rs.last.filename != nil && absPath == rs.last.absPath {
		return rs.last.filename
	}
	if p, ok := rs.filenames[absPath]; ok {
		rs.last.absPath, rs.last.filename, rs.last.file = absPath, p, nil
		return p
	}
	p := ptr(filenameOf(absPath))
	if rs.filenames == nil {
		rs.filenames = map[string]*string{}
	}
	rs.filenames[absPath] = p
	rs.last.absPath, rs.last.filename, rs.last.file = absPath, p, nil
	return p
}

// resolveFrame fills o from the map of f's file, its line and column
// pointing into lineCol (two values); it returns the error type of a
// frame it could not resolve, and whether it set *name to the map's name
// at f.
func (rs *jsResolver) resolveFrame(f jsFrameIn, o *jsFrameOut, name *string, lineCol []int64, withContext bool) (bool, string, error) {
	if f.AbsPath == nil || *f.AbsPath == "" {
		return false, "invalid_abs_path", nil
	}
	if f.Lineno == nil || *f.Lineno < 1 {
		return false, "invalid_location", nil
	}
	if f.Colno == nil {
		return false, "no_column", nil
	}
	file, err := rs.file(*f.AbsPath)
	if err != nil {
		return false, "", err
	}
	if file.errType != "" {
		return false, file.errType, nil
	}
	o.Data = file.data
	if *f.Colno < 1 || *f.Lineno > 1<<31 || *f.Colno > 1<<31 {
		return false, "invalid_location", nil
	}
	p, ok := file.m.Lookup(int(*f.Lineno-1), int(*f.Colno-1))
	if !ok {
		return false, "invalid_location", nil
	}
	src := file.sources.get(p.SourceID, p.Source)
	o.source = src
	o.AbsPath, o.Filename = &src.abs, &src.filename
	lineCol[0], lineCol[1] = int64(p.Line+1), int64(p.Column+1)
	o.Lineno, o.Colno = &lineCol[0], &lineCol[1]
	o.Data.Symbolicated = true
	if p.HasName {
		*name = p.Name
	}
	if withContext {
		content := p.Content
		if !p.HasContent {
			text, err := rs.storedSource(file, src.abs)
			if err != nil {
				return false, "", err
			}
			if text == nil {
				return p.HasName, "missing_source_content", nil
			}
			content = *text
		}
		o.PreContext, o.ContextLine, o.PostContext = symbolication.Context(content, p.Line, p.Column, symbolication.EndsLastLine)
	}
	return p.HasName, "", nil
}

// maxSourceBytes is the largest original source read for context.
const maxSourceBytes = 8 << 20

// storedSource returns the text of the original source abs, for a map
// without sourcesContent: the file of that URL in the map's artifact
// bundle, or among the release's files; nil when none is stored.
func (rs *jsResolver) storedSource(file *jsFile, abs string) (*string, error) {
	if text, ok := file.texts[abs]; ok {
		return text, nil
	}
	text, err := rs.findSource(file, abs)
	if err != nil {
		return nil, err
	}
	if file.texts == nil {
		file.texts = map[string]*string{}
	}
	file.texts[abs] = text
	return text, nil
}

func (rs *jsResolver) findSource(file *jsFile, abs string) (*string, error) {
	ctx := rs.r.Context()
	urls := candidateURLs(stripQuery(abs))
	var f store.SourceFile
	var err error
	switch {
	case file.bundle != "":
		f, err = rs.d.Store.ArtifactFileByURL(ctx, rs.sc, file.bundle, urls)
	case rs.req.Release != nil && *rs.req.Release != "":
		f, err = rs.d.Store.ReleaseFileByURL(ctx, rs.sc, *rs.req.Release, rs.req.Dist, urls)
	default:
		return nil, nil
	}
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	key := "source:" + f.SHA1
	if v, ok := rs.d.MapCache.Get(key); ok {
		rs.d.MapCache.Touch(ctx, rs.d.Store, f)
		text := v.(string)
		return &text, nil
	}
	if f.Size > maxSourceBytes {
		return nil, nil
	}
	data, err := rs.readFile(f, maxSourceBytes)
	if err != nil {
		return nil, err
	}
	text := string(data)
	rs.d.MapCache.Put(key, text, int64(len(text)+len(key)+64))
	return &text, nil
}

func ptr[T any](v T) *T { return &v }

// file returns what the request knows of abs_path, finding its map on
// first use.
func (rs *jsResolver) file(absPath string) (*jsFile, error) {
	if rs.last.file != nil && absPath == rs.last.absPath {
		return rs.last.file, nil
	}
	if f, ok := rs.files[absPath]; ok {
		if absPath == rs.last.absPath {
			rs.last.file = f
		}
		return f, nil
	}
	if len(rs.files) >= maxResolveFiles {
		return nil, invalid(valueErr, fmt.Sprintf("At most %d distinct files a request", maxResolveFiles), "body", "stacktraces")
	}
	f, err := rs.findFile(absPath)
	if err != nil {
		return nil, err
	}
	rs.files[absPath] = f
	if absPath == rs.last.absPath {
		rs.last.file = f
	}
	return f, nil
}

// findFile looks abs_path's map up: by the debug id of its module, then
// among the release's files by URL.
func (rs *jsResolver) findFile(absPath string) (*jsFile, error) {
	ctx := rs.r.Context()
	bare := stripQuery(absPath)
	for _, m := range rs.req.Modules {
		if m.DebugID == nil || m.CodeFile == nil || (*m.CodeFile != absPath && stripQuery(*m.CodeFile) != bare) {
			continue
		}
		if m.Type != nil && *m.Type != "sourcemap" {
			continue
		}
		mf, err := rs.d.Store.ArtifactFileByDebugID(ctx, rs.sc, *m.DebugID, "source_map")
		if err == nil {
			return rs.loadMap(mf, "debug-id")
		}
		if !errors.Is(err, store.ErrNotFound) {
			return nil, err
		}
		// The minified file may be there with its map named by URL.
		src, err := rs.d.Store.ArtifactFileByDebugID(ctx, rs.sc, *m.DebugID, "minified_source")
		if errors.Is(err, store.ErrNotFound) {
			break
		}
		if err != nil {
			return nil, err
		}
		ref, errType, err := rs.sourceMappingURL(src)
		if err != nil || errType != "" {
			return &jsFile{errType: errType}, err
		}
		if isInlineMap(ref) {
			return rs.parseInline(ref, src, "debug-id")
		}
		mapURL := joinSourceURL(urlOrAbs(src.URL, absPath), ref)
		mf, err = rs.d.Store.ArtifactFileByURL(ctx, rs.sc, src.InBundle, candidateURLs(mapURL))
		if errors.Is(err, store.ErrNotFound) {
			return &jsFile{errType: "missing_sourcemap"}, nil
		}
		if err != nil {
			return nil, err
		}
		return rs.loadMap(mf, "debug-id")
	}
	if rs.req.Release == nil || *rs.req.Release == "" {
		return &jsFile{errType: "missing_source"}, nil
	}
	// The map is most often the file's URL with .map: it is looked for
	// in the same statement, and used when the file's reference names
	// it.
	guess := bare + ".map"
	files, found, err := rs.d.Store.ReleaseFilesByURL(ctx, rs.sc, *rs.req.Release, rs.req.Dist, candidateURLs(bare), candidateURLs(guess))
	if err != nil {
		return nil, err
	}
	if !found[0] {
		return &jsFile{errType: "missing_source"}, nil
	}
	src := files[0]
	ref, errType, err := rs.sourceMappingURL(src)
	if err != nil || errType != "" {
		return &jsFile{errType: errType}, err
	}
	if isInlineMap(ref) {
		return rs.parseInline(ref, src, "release")
	}
	mapURL := joinSourceURL(bare, ref)
	mf, ok := files[1], found[1]
	if mapURL != guess {
		mf, err = rs.d.Store.ReleaseFileByURL(ctx, rs.sc, *rs.req.Release, rs.req.Dist, candidateURLs(mapURL))
		ok = err == nil
		if err != nil && !errors.Is(err, store.ErrNotFound) {
			return nil, err
		}
	}
	if !ok {
		return &jsFile{errType: "missing_sourcemap"}, nil
	}
	return rs.loadMap(mf, "release")
}

// urlOrAbs is the URL a stored file stands for: its own, unless it has
// none, then the frame's.
func urlOrAbs(stored, abs string) string {
	if stored != "" {
		return stored
	}
	return abs
}

// sourceMappingURL returns the reference to f's map: its Sourcemap header,
// else the sourceMappingURL comment of its last lines. No reference is the
// error type missing_sourcemap.
func (rs *jsResolver) sourceMappingURL(f store.SourceFile) (string, string, error) {
	rs.visible = true
	for k, v := range f.Headers {
		if strings.EqualFold(k, "sourcemap") || strings.EqualFold(k, "x-sourcemap") {
			return v, "", nil
		}
	}
	key := "sourceMappingURL:" + f.SHA1
	if v, ok := rs.d.MapCache.Get(key); ok {
		rs.d.MapCache.Touch(rs.r.Context(), rs.d.Store, f)
		return v.(string), ref(v.(string)), nil
	}
	if f.Size > maxMinifiedBytes {
		return "", "missing_sourcemap", nil
	}
	data, err := rs.readFile(f, maxMinifiedBytes)
	if err != nil {
		return "", "", err
	}
	u := findSourceMappingURL(data)
	rs.d.MapCache.Put(key, u, int64(len(u)+len(key)+64))
	return u, ref(u), nil
}

// ref is the error type of a file whose map reference is u.
func ref(u string) string {
	if u == "" {
		return "missing_sourcemap"
	}
	return ""
}

// findSourceMappingURL returns the URL of the last //# sourceMappingURL=
// (or //@) comment of JavaScript data, "" when there is none.
func findSourceMappingURL(data []byte) string {
	for len(data) > 0 {
		i := bytes.LastIndexByte(data, '\n')
		line := bytes.TrimSpace(data[i+1:])
		data = data[:max(i, 0)]
		if len(line) == 0 {
			continue
		}
		for _, p := range []string{"//# sourceMappingURL=", "//@ sourceMappingURL="} {
			if bytes.HasPrefix(line, []byte(p)) {
				return string(bytes.TrimSpace(line[len(p):]))
			}
		}
		if !bytes.HasPrefix(line, []byte("//")) {
			return "" // the comment is only looked for after the code
		}
		if i < 0 {
			break
		}
	}
	return ""
}

// inlineMapPrefix starts a reference to a map inline in its file.
const inlineMapPrefix = "data:application/json"

// isInlineMap tells a reference to a map inline in its file.
func isInlineMap(ref string) bool { return strings.HasPrefix(ref, inlineMapPrefix) }

// inlineMap returns the map of a data: URL.
func inlineMap(ref string) ([]byte, bool) {
	if !isInlineMap(ref) {
		return nil, false
	}
	meta, data, ok := strings.Cut(ref[len(inlineMapPrefix):], ",")
	if !ok {
		return nil, true
	}
	if strings.HasSuffix(meta, ";base64") {
		b, err := base64.StdEncoding.DecodeString(data)
		if err != nil {
			return nil, true
		}
		return b, true
	}
	s, err := url.PathUnescape(data)
	if err != nil {
		return nil, true
	}
	return []byte(s), true
}

// parseInline returns the map inline in stored file src (its reference
// ref, a data: URL), from the cache when it was parsed before; a parse
// counts its bytes in the request's budget, as reading a stored map does.
func (rs *jsResolver) parseInline(ref string, src store.SourceFile, how string) (*jsFile, error) {
	return rs.cachedMap("sourcemap-inline:"+src.SHA1, src, how, "", func() ([]byte, error) {
		data, _ := inlineMap(ref)
		if data == nil {
			data = []byte{} // a data: URL that does not decode: malformed, and kept so
		}
		if rs.read+int64(len(data)) > maxResolveBytes {
			return nil, errResolveBudget
		}
		rs.read += int64(len(data))
		return data, nil
	})
}

// loadMap returns the parsed map of stored file f, from the cache when it
// was parsed before.
func (rs *jsResolver) loadMap(f store.SourceFile, how string) (*jsFile, error) {
	return rs.cachedMap("sourcemap:"+f.SHA1, f, how, f.InBundle, func() ([]byte, error) {
		if f.Size > sourcemap.MaxSize {
			return nil, nil
		}
		return rs.readFile(f, sourcemap.MaxSize)
	})
}

// cachedMap returns the map the cache keeps under key, found in stored
// file f (whose URL it resolves sources against), or parses the map read
// returns (nil: a file too large) and keeps it there.
func (rs *jsResolver) cachedMap(key string, f store.SourceFile, how, bundle string, read func() ([]byte, error)) (*jsFile, error) {
	rs.visible = true
	if v, ok := rs.d.MapCache.Get(key); ok {
		rs.d.MapCache.Touch(rs.r.Context(), rs.d.Store, f)
		if jm, ok := v.(*jsMap); ok {
			return newJSFile(jm.m, jm.sources(f.URL), f.URL, how, bundle), nil
		}
		return &jsFile{errType: "malformed_sourcemap"}, nil
	}
	data, err := read()
	if err != nil {
		return nil, err
	}
	if data == nil {
		return &jsFile{errType: "malformed_sourcemap"}, nil
	}
	m, err := sourcemap.Parse(data)
	if err != nil {
		rs.d.MapCache.Put(key, false, int64(len(key)+64))
		return &jsFile{errType: "malformed_sourcemap"}, nil
	}
	jm := newJSMap(m)
	rs.d.MapCache.Put(key, jm, jm.cacheSize()+int64(len(key)))
	return newJSFile(m, jm.sources(f.URL), f.URL, how, bundle), nil
}

// readFile reads f within the request's budget of bytes.
func (rs *jsResolver) readFile(f store.SourceFile, limit int64) ([]byte, error) {
	if rs.read+f.Size > maxResolveBytes {
		return nil, errResolveBudget
	}
	rs.read += f.Size
	return rs.d.Store.ReadSourceFile(rs.r.Context(), f, limit)
}

// stripQuery returns u without its query and fragment.
func stripQuery(u string) string {
	if i := strings.IndexAny(u, "?#"); i >= 0 {
		return u[:i]
	}
	return u
}

// candidateURLs lists the names a file of URL u may be stored under: u,
// then ~/path (the path of u without its scheme and host).
func candidateURLs(u string) []string {
	out := []string{u}
	if strings.HasPrefix(u, "~/") {
		return out
	}
	if p, err := url.Parse(u); err == nil && p.Host != "" && p.Path != "" {
		out = append(out, "~"+p.Path)
	}
	return out
}

// hasScheme reports whether s starts with a URL scheme (http:, webpack:).
func hasScheme(s string) bool {
	i := strings.IndexByte(s, ':')
	if i <= 0 {
		return false
	}
	for _, c := range s[:i] {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '+' || c == '-' || c == '.') {
			return false
		}
	}
	return true
}

// joinSourceURL resolves ref, a source or a map's reference, against base,
// the URL of the file that names it.
func joinSourceURL(base, ref string) string {
	if hasScheme(ref) || base == "" {
		return ref
	}
	if strings.HasPrefix(base, "~/") {
		if strings.HasPrefix(ref, "/") {
			return "~" + path.Clean(ref)
		}
		return "~" + path.Join(path.Dir(base[1:]), ref)
	}
	if b, err := url.Parse(base); err == nil && b.Scheme != "" {
		if r, err := url.Parse(ref); err == nil {
			return b.ResolveReference(r).String()
		}
	}
	if strings.HasPrefix(ref, "/") {
		return path.Clean(ref)
	}
	return path.Join(path.Dir(base), ref)
}

// filenameOf is the file name of a frame whose source is abs: its path
// without scheme and host, and without webpack's prefix, namespace and
// leading ./.
func filenameOf(abs string) string {
	for _, p := range []string{"webpack-internal://", "webpack://"} {
		if strings.HasPrefix(abs, p) {
			s := strings.TrimPrefix(abs[len(p):], "/")
			// webpack://namespace/./src/a.js: the namespace goes too.
			if i := strings.Index(s, "/./"); i >= 0 && !strings.Contains(s[:i], "/") {
				s = s[i+1:]
			}
			return strings.TrimPrefix(s, "./")
		}
	}
	if strings.HasPrefix(abs, "~/") {
		return abs[1:]
	}
	if u, err := url.Parse(abs); err == nil && u.Scheme != "" && u.Path != "" {
		return u.Path
	}
	return abs
}

// appendJSON writes the answer as encoding/json would, by hand: a
// thousand frames through reflection cost more than resolving them.
// raw_stacktraces is the request's own text, which decoding found valid.
func (out *jsResponse) appendJSON(b []byte) ([]byte, error) {
	b = append(b, `{"stacktraces":[`...)
	for i, st := range out.Stacktraces {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"frames":[`...)
		for j := range st.Frames {
			if j > 0 {
				b = append(b, ',')
			}
			b = st.Frames[j].appendJSON(b)
		}
		b = append(b, "]}"...)
	}
	b = append(b, `],"raw_stacktraces":`...)
	if len(out.RawStacktraces) == 0 {
		b = append(b, "[]"...)
	} else {
		b = append(b, out.RawStacktraces...)
	}
	b = append(b, `,"errors":[`...)
	for i, e := range out.Errors {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"abs_path":`...)
		b = appendString(b, e.AbsPath)
		b = append(b, `,"type":`...)
		b = appendString(b, e.Type)
		b = append(b, '}')
	}
	return append(b, "]}"...), nil
}

func (f *jsFrameOut) appendJSON(b []byte) []byte {
	b = append(b, `{"function":`...)
	b = appendStringPtr(b, f.Function)
	b = append(b, ',')
	if f.source != nil {
		b = append(b, f.source.json...)
	} else {
		b = append(b, `"filename":`...)
		b = appendStringPtr(b, f.Filename)
		b = append(b, `,"abs_path":`...)
		b = appendStringPtr(b, f.AbsPath)
	}
	b = append(b, `,"lineno":`...)
	b = appendIntPtr(b, f.Lineno)
	b = append(b, `,"colno":`...)
	b = appendIntPtr(b, f.Colno)
	if len(f.PreContext) == 0 && f.ContextLine == nil && len(f.PostContext) == 0 {
		b = append(b, `,"pre_context":[],"context_line":null,"post_context":[],"original_index":`...)
	} else {
		b = append(b, `,"pre_context":`...)
		b = appendStrings(b, f.PreContext)
		b = append(b, `,"context_line":`...)
		b = appendStringPtr(b, f.ContextLine)
		b = append(b, `,"post_context":`...)
		b = appendStrings(b, f.PostContext)
		b = append(b, `,"original_index":`...)
	}
	b = strconv.AppendInt(b, int64(f.OriginalIndex), 10)
	if f.Data.Symbolicated {
		b = append(b, `,"data":{"symbolicated":true`...)
	} else {
		b = append(b, `,"data":{"symbolicated":false`...)
	}
	if f.Data.json != nil {
		b = append(b, f.Data.json...)
	} else {
		b = append(b, `,"resolved_with":`...)
		b = appendStringPtr(b, f.Data.ResolvedWith)
		b = append(b, `,"sourcemap":`...)
		b = appendStringPtr(b, f.Data.Sourcemap)
	}
	return append(b, "}}"...)
}

func appendIntPtr(b []byte, n *int64) []byte {
	if n == nil {
		return append(b, "null"...)
	}
	return strconv.AppendInt(b, *n, 10)
}

func appendStrings(b []byte, ss []string) []byte {
	b = append(b, '[')
	for i, s := range ss {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendString(b, s)
	}
	return append(b, ']')
}
