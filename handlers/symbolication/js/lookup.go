package js

import (
	"bytes"
	"encoding/base64"
	"errors"
	"net/url"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"errata/handlers/symbolication"
	"errata/store"
	"errata/worker/dif/sourcemap"
)

// file returns what the request knows of abs_path, finding its map on
// first use.
func (rs *resolver) file(absPath string) (*jsFile, error) {
	if rs.last.file != nil && absPath == rs.last.absPath {
		return rs.last.file, nil
	}
	if f, ok := rs.files[absPath]; ok {
		if absPath == rs.last.absPath {
			rs.last.file = f
		}
		return f, nil
	}
	if len(rs.files) >= symbolication.MaxFiles {
		return nil, &symbolication.LimitError{Limit: symbolication.Files, Max: symbolication.MaxFiles}
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
// among the release's files by URL. The map's sources are resolved against
// the map's URL as Sentry makes it: the script's reference resolved
// against abs_path (not the name the map is stored under), or abs_path
// itself for a map inline in its script or one found by debug id whose
// script names none.
func (rs *resolver) findFile(absPath string) (*jsFile, error) {
	bare := stripQuery(absPath)
	for _, m := range rs.req.Modules {
		if m.DebugID == nil || m.CodeFile == nil || (*m.CodeFile != absPath && stripQuery(*m.CodeFile) != bare) {
			continue
		}
		if m.Type != nil && *m.Type != "sourcemap" {
			continue
		}
		f, err := rs.findByDebugID(bare, *m.DebugID)
		if f != nil || err != nil {
			return f, err
		}
		break // nothing of that debug id: the release may have the file
	}
	if rs.req.Release == nil || *rs.req.Release == "" {
		return &jsFile{errType: "missing_source"}, nil
	}
	// The map is most often the file's URL with .map: it is looked for
	// in the same statement, and used when the file's reference names
	// it.
	guess := bare + ".map"
	files, found, err := rs.e.Store.ReleaseFilesByURL(rs.ctx, rs.sc, *rs.req.Release, rs.req.Dist, candidateURLs(absPath), candidateURLs(guess))
	if err != nil {
		return nil, err
	}
	if !found[0] {
		return &jsFile{errType: "missing_source"}, nil
	}
	src := files[0]
	ref, errType, err := rs.sourceMappingURL(src)
	if err != nil || errType != "" {
		return &jsFile{errType: errType, script: &src}, err
	}
	if isInlineMap(ref) {
		f, err := rs.parseInline(ref, src, "release", bare)
		return f.ofScript(&src), err
	}
	mapURL := joinSourceURL(bare, ref)
	mf, ok := files[1], found[1]
	if mapURL != guess {
		mf, err = rs.e.Store.ReleaseFileByURL(rs.ctx, rs.sc, *rs.req.Release, rs.req.Dist, candidateURLs(mapURL))
		ok = err == nil
		if err != nil && !errors.Is(err, store.ErrNotFound) {
			return nil, err
		}
	}
	if !ok {
		return &jsFile{errType: "missing_sourcemap", script: &src}, nil
	}
	f, err := rs.loadMap(mf, "release", mapURL)
	return f.ofScript(&src), err
}

// findByDebugID looks the map of the script of URL bare (without query
// and fragment) up among the artifact bundles by its debug id: the map of
// that debug id, else the map its script names, in the script's bundle;
// nil when no file has that debug id.
func (rs *resolver) findByDebugID(bare, debugID string) (*jsFile, error) {
	ctx := rs.ctx
	src, err := rs.e.Store.ArtifactFileByDebugID(ctx, rs.sc, debugID, "minified_source")
	hasScript := err == nil
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return nil, err
	}
	ref, refErr := "", ""
	if hasScript {
		if ref, refErr, err = rs.sourceMappingURL(src); err != nil {
			return nil, err
		}
	}
	mapURL := bare
	if ref != "" && !isInlineMap(ref) {
		mapURL = joinSourceURL(bare, ref)
	}
	var script *store.SourceFile
	if hasScript {
		script = &src
	}
	mf, err := rs.e.Store.ArtifactFileByDebugID(ctx, rs.sc, debugID, "source_map")
	if err == nil {
		f, err := rs.loadMap(mf, "debug-id", mapURL)
		return f.ofScript(script), err
	}
	if !errors.Is(err, store.ErrNotFound) {
		return nil, err
	}
	switch {
	case !hasScript:
		return nil, nil
	case refErr != "":
		return &jsFile{errType: refErr, script: &src}, nil
	case isInlineMap(ref):
		f, err := rs.parseInline(ref, src, "debug-id", bare)
		return f.ofScript(script), err
	}
	mf, err = rs.e.Store.ArtifactFileByURL(ctx, rs.sc, src.InBundle, bundledMapURLs(mapURL, src, ref))
	if errors.Is(err, store.ErrNotFound) {
		return &jsFile{errType: "missing_sourcemap", script: &src}, nil
	}
	if err != nil {
		return nil, err
	}
	f, err := rs.loadMap(mf, "debug-id", mapURL)
	return f.ofScript(script), err
}

// ofScript records script, the stored minified file whose map f was found
// for, as f's minified file (scopes.go): f, nil when f is.
func (f *jsFile) ofScript(script *store.SourceFile) *jsFile {
	if f != nil && f.m != nil {
		f.minified = script
	}
	return f
}

// bundledMap returns the map of src, a file of an artifact bundle found
// for the URL absPath, that its reference names in the same bundle: its
// URL is the reference resolved against absPath, the names of its
// sources too.
func (rs *resolver) bundledMap(src store.SourceFile, absPath string) (*jsFile, error) {
	ref, errType, err := rs.sourceMappingURL(src)
	if err != nil || errType != "" {
		return &jsFile{errType: errType}, err
	}
	if isInlineMap(ref) {
		return rs.parseInline(ref, src, "debug-id", absPath)
	}
	mapURL := joinSourceURL(absPath, ref)
	mf, err := rs.e.Store.ArtifactFileByURL(rs.ctx, rs.sc, src.InBundle, bundledMapURLs(mapURL, src, ref))
	if errors.Is(err, store.ErrNotFound) {
		return &jsFile{errType: "missing_sourcemap"}, nil
	}
	if err != nil {
		return nil, err
	}
	return rs.loadMap(mf, "debug-id", mapURL)
}

// bundledMapURLs are the names the map of src, a file of an artifact
// bundle whose reference to its map is ref, may be stored under in the
// bundle: as mapURL, the reference resolved against the URL the file was
// asked for, names it, else as the file's own stored name does (a bundle
// names its files ~/path, which need not be the frame's).
func bundledMapURLs(mapURL string, src store.SourceFile, ref string) []string {
	urls := candidateURLs(mapURL)
	if src.URL != "" {
		for _, u := range candidateURLs(joinSourceURL(src.URL, ref)) {
			if !slices.Contains(urls, u) {
				urls = append(urls, u)
			}
		}
	}
	return urls
}

// sourceMappingURL returns the reference to f's map: its Sourcemap header,
// else the sourceMappingURL comment of its last lines. No reference is the
// error type missing_sourcemap.
func (rs *resolver) sourceMappingURL(f store.SourceFile) (string, string, error) {
	rs.visible = true
	for k, v := range f.Headers {
		if strings.EqualFold(k, "sourcemap") || strings.EqualFold(k, "x-sourcemap") {
			return v, "", nil
		}
	}
	key := "sourceMappingURL:" + f.SHA1
	if v, ok := rs.e.Cache.Get(key); ok {
		rs.e.Cache.Touch(rs.ctx, rs.e.Store, f)
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
	rs.e.Cache.Put(key, u, int64(len(u)+len(key)+64))
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
// ref, a data: URL), from the cache when it was parsed before, its sources
// resolved against the script's URL; a parse counts its bytes in the
// request's budget, as reading a stored map does.
func (rs *resolver) parseInline(ref string, src store.SourceFile, how, scriptURL string) (*jsFile, error) {
	return rs.cachedMap("sourcemap-inline:"+src.SHA1, src, how, "", scriptURL, func() ([]byte, error) {
		data, _ := inlineMap(ref)
		if data == nil {
			data = []byte{} // a data: URL that does not decode: malformed, and kept so
		}
		if rs.read+int64(len(data)) > symbolication.MaxReadBytes {
			return nil, errReadBudget
		}
		rs.read += int64(len(data))
		return data, nil
	})
}

// loadMap returns the parsed map of stored file f, from the cache when it
// was parsed before, its sources resolved against mapURL.
func (rs *resolver) loadMap(f store.SourceFile, how, mapURL string) (*jsFile, error) {
	return rs.cachedMap("sourcemap:"+f.SHA1, f, how, f.InBundle, mapURL, func() ([]byte, error) {
		if f.Size > sourcemap.MaxSize {
			return nil, nil
		}
		return rs.readFile(f, sourcemap.MaxSize)
	})
}

// cachedMap returns the map the cache keeps under key, found in stored
// file f, its sources resolved against mapURL, or parses the map read
// returns (nil: a file too large) and keeps it there. The parse is bounded
// by what the cache takes of one entry and what the request may still
// hold, and charged to the request: a map larger than the cache takes is
// malformed, and kept so (its key holds false), so that no request parses
// it again; one larger than what the request has left spends its budget.
func (rs *resolver) cachedMap(key string, f store.SourceFile, how, bundle, mapURL string, read func() ([]byte, error)) (*jsFile, error) {
	rs.visible = true
	if v, ok := rs.e.Cache.Get(key); ok {
		rs.e.Cache.Touch(rs.ctx, rs.e.Store, f)
		if jm, ok := v.(*mapEntry); ok {
			return jm.file(mapURL, how, bundle), nil
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
	bound := rs.e.Cache.EntryBound()
	limit := min(bound, rs.budget.Left())
	// The map's views take up to half its size beside it (cacheSize).
	m, err := sourcemap.ParseWithin(data, int(limit*2/3))
	var jm *mapEntry
	size := int64(0)
	if err == nil {
		jm = newMapEntry(m)
		size = jm.cacheSize() + int64(len(key))
	}
	if errors.Is(err, sourcemap.ErrTooLarge) || size > limit {
		if limit < bound {
			return nil, rs.budget.Spent()
		}
		err = sourcemap.ErrTooLarge
	}
	if err != nil {
		rs.e.Cache.Put(key, false, int64(len(key)+64))
		return &jsFile{errType: "malformed_sourcemap"}, nil
	}
	if err := rs.budget.Charge(size); err != nil {
		return nil, err
	}
	rs.e.Cache.Put(key, jm, size)
	return jm.file(mapURL, how, bundle), nil
}

// readFile reads f within the request's budget of bytes.
func (rs *resolver) readFile(f store.SourceFile, limit int64) ([]byte, error) {
	if rs.read+f.Size > symbolication.MaxReadBytes {
		return nil, errReadBudget
	}
	rs.read += f.Size
	return rs.e.Store.ReadSourceFile(rs.ctx, f, limit)
}

// stripQuery returns u without its query and fragment.
func stripQuery(u string) string {
	if i := strings.IndexAny(u, "?#"); i >= 0 {
		return u[:i]
	}
	return u
}

// candidateURLs lists the names a file of URL u may be stored under, in
// Sentry's order: u without its fragment, then also without its query;
// then ~ and the path of u (its scheme and host left out, whatever they
// are: app:///main.js is stored as ~/main.js), with its query, then
// without. Names are matched whole: ~/static/a.js never serves
// /assets/static/a.js.
func candidateURLs(u string) []string {
	u, _, _ = strings.Cut(u, "#")
	out := make([]string, 0, 4)
	add := func(c string) {
		if !slices.Contains(out, c) {
			out = append(out, c)
		}
	}
	add(u)
	add(stripQuery(u))
	if p := urlPath(u); strings.HasPrefix(p, "/") {
		add("~" + p)
		add("~" + stripQuery(p))
	}
	return out
}

// urlPath is u without its scheme and host: the path of scheme://host/path,
// that of ~/path, and u itself when it names no host.
func urlPath(u string) string {
	if p, ok := strings.CutPrefix(u, "~"); ok {
		return p
	}
	if _, rest, ok := strings.Cut(u, "://"); ok {
		if i := strings.IndexByte(rest, '/'); i >= 0 {
			return rest[i:]
		}
		return ""
	}
	return u
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
// the URL of the file that names it, as a browser resolves a relative URL
// (the source map specification, ECMA-426, defers to WHATWG URL) and as
// Sentry writes the result, without escaping anything: a ref with a scheme
// (webpack://, app:///, http:) is kept as it is; a ref that starts with //
// takes base's scheme, one that starts with / its scheme and host (~ for a
// base ~/path); any other replaces base's last segment, its query and
// fragment dropped. Dot segments are removed, and empty ones: a URL's path
// never climbs above its root, a relative path keeps its leading "..".
func joinSourceURL(base, ref string) string {
	if ref == "" || hasScheme(ref) || base == "" {
		return ref
	}
	if strings.HasPrefix(ref, "//") && hasScheme(base) {
		return base[:strings.IndexByte(base, ':')+1] + ref
	}
	prefix, basePath := splitURL(stripQuery(base))
	refPath, suffix := ref, ""
	if i := strings.IndexAny(ref, "?#"); i >= 0 {
		refPath, suffix = ref[:i], ref[i:]
	}
	joined := refPath
	switch {
	case refPath == "":
		joined = basePath
	case !strings.HasPrefix(refPath, "/"):
		joined = basePath[:strings.LastIndexByte(basePath, '/')+1] + refPath
	}
	if prefix != "" && !strings.HasSuffix(prefix, ":") && !strings.HasPrefix(joined, "/") {
		joined = "/" + joined // a host or ~ is followed by an absolute path
	}
	cleaned := path.Clean(joined)
	if strings.HasSuffix(joined, "/") && cleaned != "/" {
		cleaned += "/"
	}
	return prefix + cleaned + suffix
}

// splitURL splits a URL without query and fragment into what a relative
// reference keeps of it (scheme://host, ~, scheme: or nothing) and its
// path.
func splitURL(u string) (prefix, p string) {
	if rest, ok := strings.CutPrefix(u, "~/"); ok {
		return "~", "/" + rest
	}
	if !hasScheme(u) {
		return "", u
	}
	i := strings.IndexByte(u, ':') + 1
	if !strings.HasPrefix(u[i:], "//") {
		return u[:i], u[i:]
	}
	host := u[i+2:]
	if j := strings.IndexByte(host, '/'); j >= 0 {
		return u[:i+2+j], host[j:]
	}
	return u, "/"
}

// filenameOf is the file name of an unresolved frame whose abs_path is abs:
// its path without scheme and host, and without webpack's prefix,
// namespace and leading ./.
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

// sourceFilename is the filename of a frame resolved to source, as the
// map names it (its sourceRoot applied), cleaned as Sentry cleans
// bundlers' names: webpack:///./src/a.js, webpack://app/./src/a.js and
// webpack-internal:///./src/a.js are ./src/a.js; webpack:///../lib/b.js is
// ../lib/b.js; turbopack:///[project]/app/p.tsx is app/p.tsx; a name
// holding /~/ (a bundler's alias of the project's root) is ~/ and what
// follows. Any other name is kept: ../src/app.js stays ../src/app.js.
func sourceFilename(source string) string {
	webpack := strings.HasPrefix(source, "webpack:") || strings.HasPrefix(source, "webpack-internal:")
	turbopack := strings.HasPrefix(source, "turbopack:")
	if !webpack && !turbopack {
		return source
	}
	if _, rest, ok := strings.Cut(source, "/~/"); ok {
		return "~/" + rest
	}
	if turbopack {
		rest, ok := strings.CutPrefix(source, "turbopack:///")
		if !ok {
			return source
		}
		return strings.TrimPrefix(rest, "[project]/")
	}
	if rest, ok := webpackNamespace(source); ok {
		return "./" + rest
	}
	for _, p := range []string{"webpack:///", "webpack-internal:///"} {
		if rest, ok := strings.CutPrefix(source, p); ok {
			return rest
		}
	}
	return source
}

// webpackNamespace returns what follows webpack://namespace/./ in source
// (webpack-internal:// as well), a namespace of letters, digits and _-@.
func webpackNamespace(source string) (string, bool) {
	rest, ok := strings.CutPrefix(source, "webpack://")
	if !ok {
		if rest, ok = strings.CutPrefix(source, "webpack-internal://"); !ok {
			return "", false
		}
	}
	ns, rest, ok := strings.Cut(rest, "/./")
	if !ok || ns == "" {
		return "", false
	}
	for _, c := range ns {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.ContainsRune("_-@.", c)) {
			return "", false
		}
	}
	return rest, true
}

// Frame decorations: what the text of a stack trace writes around a frame's
// URL, which a client that parsed the text itself may leave in abs_path.
// Sentry's JavaScript SDK reads them off before it sends a frame (its
// stack parsers), and symbolicator strips the one older SDKs left
// ("async "); errata strips them all before it looks a file up.
var (
	// v8EvalSite is the call site of eval in a V8 frame,
	// "eval at f (http://a/b.js:3:7), <anonymous>:1:2": the first
	// parenthesized URL, line and column, the innermost for nested evals.
	v8EvalSite = regexp.MustCompile(`\((\S*):(\d+):(\d+)\)`)
	// geckoEvalSite is the call site of eval in a Firefox frame,
	// "http://a/b.js line 3 > eval" (with " > eval line N" repeated for
	// nested evals): its URL and line, without a column.
	geckoEvalSite = regexp.MustCompile(`^(\S+) line (\d+)(?: > eval line \d+)* > eval`)
)

// undecorate returns f with its abs_path's decorations read off: V8's
// "async " (at async f (url)) and Hermes' "address at " (at f (address at
// url)) before the URL; an eval's frame, which V8 writes "eval at f
// (url:line:col), <anonymous>:l:c" and Firefox "url line N > eval", becomes
// the frame of its call site, as Sentry's SDK makes it: that URL, line and
// column (Firefox gives no column: the frame is no_column); Firefox's and
// Safari's "f@url", a function's name before a URL, loses the name (an @
// after a / or : belongs to the URL: http://user@host/, webpack://@scope/).
// V8's "new " stands before a function's name, never before a URL, and is
// not looked for. A frame without decorations is returned as it is.
func undecorate(f FrameIn) FrameIn {
	if f.AbsPath == nil {
		return f
	}
	s := *f.AbsPath
	for {
		if rest, ok := strings.CutPrefix(s, "async "); ok {
			s = rest
		} else if rest, ok := strings.CutPrefix(s, "address at "); ok {
			s = rest
		} else {
			break
		}
	}
	switch {
	case strings.HasPrefix(s, "eval at "):
		if m := v8EvalSite.FindStringSubmatch(s); m != nil {
			line, err1 := strconv.ParseInt(m[2], 10, 64)
			col, err2 := strconv.ParseInt(m[3], 10, 64)
			if err1 == nil && err2 == nil {
				s, f.Lineno, f.Colno = m[1], &line, &col
			}
		}
	case strings.Contains(s, " > eval"):
		if m := geckoEvalSite.FindStringSubmatch(s); m != nil {
			if line, err := strconv.ParseInt(m[2], 10, 64); err == nil {
				s, f.Lineno, f.Colno = m[1], &line, nil
			}
		}
	default:
		if at := strings.IndexByte(s, '@'); at >= 0 && !strings.ContainsAny(s[:at], "/:") && hasScheme(s[at+1:]) {
			s = s[at+1:]
		}
	}
	if s != *f.AbsPath {
		f.AbsPath = &s
	}
	return f
}
