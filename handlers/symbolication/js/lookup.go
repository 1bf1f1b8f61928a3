package js

import (
	"bytes"
	"encoding/base64"
	"errors"
	"net/url"
	"path"
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
// among the release's files by URL.
func (rs *resolver) findFile(absPath string) (*jsFile, error) {
	ctx := rs.ctx
	bare := stripQuery(absPath)
	for _, m := range rs.req.Modules {
		if m.DebugID == nil || m.CodeFile == nil || (*m.CodeFile != absPath && stripQuery(*m.CodeFile) != bare) {
			continue
		}
		if m.Type != nil && *m.Type != "sourcemap" {
			continue
		}
		mf, err := rs.e.Store.ArtifactFileByDebugID(ctx, rs.sc, *m.DebugID, "source_map")
		if err == nil {
			return rs.loadMap(mf, "debug-id")
		}
		if !errors.Is(err, store.ErrNotFound) {
			return nil, err
		}
		// The minified file may be there with its map named by URL.
		src, err := rs.e.Store.ArtifactFileByDebugID(ctx, rs.sc, *m.DebugID, "minified_source")
		if errors.Is(err, store.ErrNotFound) {
			break
		}
		if err != nil {
			return nil, err
		}
		return rs.bundledMap(src, absPath)
	}
	if rs.req.Release == nil || *rs.req.Release == "" {
		return &jsFile{errType: "missing_source"}, nil
	}
	// The map is most often the file's URL with .map: it is looked for
	// in the same statement, and used when the file's reference names
	// it.
	guess := bare + ".map"
	files, found, err := rs.e.Store.ReleaseFilesByURL(ctx, rs.sc, *rs.req.Release, rs.req.Dist, candidateURLs(bare), candidateURLs(guess))
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
		mf, err = rs.e.Store.ReleaseFileByURL(ctx, rs.sc, *rs.req.Release, rs.req.Dist, candidateURLs(mapURL))
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

// bundledMap returns the map of src, a file of an artifact bundle found
// for abs_path, that its reference names in the same bundle.
func (rs *resolver) bundledMap(src store.SourceFile, absPath string) (*jsFile, error) {
	ref, errType, err := rs.sourceMappingURL(src)
	if err != nil || errType != "" {
		return &jsFile{errType: errType}, err
	}
	if isInlineMap(ref) {
		return rs.parseInline(ref, src, "debug-id")
	}
	mapURL := joinSourceURL(urlOrAbs(src.URL, absPath), ref)
	mf, err := rs.e.Store.ArtifactFileByURL(rs.ctx, rs.sc, src.InBundle, candidateURLs(mapURL))
	if errors.Is(err, store.ErrNotFound) {
		return &jsFile{errType: "missing_sourcemap"}, nil
	}
	if err != nil {
		return nil, err
	}
	return rs.loadMap(mf, "debug-id")
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
// ref, a data: URL), from the cache when it was parsed before; a parse
// counts its bytes in the request's budget, as reading a stored map does.
func (rs *resolver) parseInline(ref string, src store.SourceFile, how string) (*jsFile, error) {
	return rs.cachedMap("sourcemap-inline:"+src.SHA1, src, how, "", func() ([]byte, error) {
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
// was parsed before.
func (rs *resolver) loadMap(f store.SourceFile, how string) (*jsFile, error) {
	return rs.cachedMap("sourcemap:"+f.SHA1, f, how, f.InBundle, func() ([]byte, error) {
		if f.Size > sourcemap.MaxSize {
			return nil, nil
		}
		return rs.readFile(f, sourcemap.MaxSize)
	})
}

// cachedMap returns the map the cache keeps under key, found in stored
// file f (whose URL it resolves sources against), or parses the map read
// returns (nil: a file too large) and keeps it there. The parse is bounded
// by what the cache takes of one entry and what the request may still
// hold, and charged to the request: a map larger than the cache takes is
// malformed, and kept so (its key holds false), so that no request parses
// it again; one larger than what the request has left spends its budget.
func (rs *resolver) cachedMap(key string, f store.SourceFile, how, bundle string, read func() ([]byte, error)) (*jsFile, error) {
	rs.visible = true
	if v, ok := rs.e.Cache.Get(key); ok {
		rs.e.Cache.Touch(rs.ctx, rs.e.Store, f)
		if jm, ok := v.(*mapEntry); ok {
			return jm.file(f.URL, how, bundle), nil
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
	return jm.file(f.URL, how, bundle), nil
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
