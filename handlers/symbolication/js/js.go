package js

import (
	"context"
	"encoding/json"
	"errors"

	"errata/handlers/appendjson"
	"errata/handlers/symbolication"
	"errata/store"
	"errata/worker/dif/jsscope"
	"errata/worker/dif/sourcemap"
)

// maxMinifiedBytes is the largest minified file read for its
// sourceMappingURL.
const maxMinifiedBytes = 32 << 20

// Request is a JavaScript resolution request: the body of the route
// symbolicate-js/, in symbolicator's snake_case keys.
type Request struct {
	// Stacktraces is decoded into Traces after the body, and echoed as
	// raw_stacktraces.
	Stacktraces json.RawMessage `json:"stacktraces"`
	Traces      []StacktraceIn  `json:"-"`
	Modules     []Module        `json:"modules"`
	Release     *string         `json:"release"`
	Dist        *string         `json:"dist"`
	Options     struct {
		ApplySourceContext *bool   `json:"apply_source_context"`
		FrameOrder         *string `json:"frame_order"`
	} `json:"options"`
}

// Module names the debug id of a minified file (CodeFile).
type Module struct {
	Type     *string `json:"type"`
	CodeFile *string `json:"code_file"`
	DebugID  *string `json:"debug_id"`
}

// StacktraceIn is a stack trace of the request.
type StacktraceIn struct {
	Frames []FrameIn `json:"frames"`
}

// FrameIn is a frame of the request.
type FrameIn struct {
	AbsPath  *string `json:"abs_path"`
	Lineno   *int64  `json:"lineno"`
	Colno    *int64  `json:"colno"`
	Function *string `json:"function"`
}

// FrameOut is a frame of the answer, in symbolicator's keys.
type FrameOut struct {
	Function      *string   `json:"function"`
	Filename      *string   `json:"filename"`
	AbsPath       *string   `json:"abs_path"`
	Lineno        *int64    `json:"lineno"`
	Colno         *int64    `json:"colno"`
	PreContext    []string  `json:"pre_context"`
	ContextLine   *string   `json:"context_line"`
	PostContext   []string  `json:"post_context"`
	OriginalIndex int       `json:"original_index"`
	Data          FrameData `json:"data"`
	// source, when the frame was resolved, is its source, whose JSON
	// stands for Filename and AbsPath.
	source *frameSource

	// InApp is false for a frame whose source the map's ignoreList
	// names, unset otherwise.
	InApp *bool `json:"in_app,omitempty"`
}

// FrameData says how a frame was resolved.
type FrameData struct {
	Symbolicated bool    `json:"symbolicated"`
	ResolvedWith *string `json:"resolved_with"`
	Sourcemap    *string `json:"sourcemap"`
	// json, when set, is the JSON of ResolvedWith and Sourcemap, their
	// file's.
	json []byte
}

// Error is the error type of an abs_path whose frames were not resolved.
type Error struct {
	AbsPath string `json:"abs_path"`
	Type    string `json:"type"`
}

// StacktraceOut is a stack trace of the answer.
type StacktraceOut struct {
	Frames []FrameOut `json:"frames"`
}

// Response is the answer of a JavaScript resolution.
type Response struct {
	Stacktraces    []StacktraceOut `json:"stacktraces"`
	RawStacktraces json.RawMessage `json:"raw_stacktraces"`
	Errors         []Error         `json:"errors"`
}

// Engine resolves JavaScript requests through the artifact bundles and
// release files the store holds, keeping what it parsed in Cache (nil
// keeps nothing).
type Engine struct {
	Store *store.Store
	Cache *symbolication.MapCache
}

// Symbolicate answers req, a request of project sc whose Traces are
// decoded and whose values are checked: each frame resolved through the
// map of its minified file, found by the debug id of its module, then
// among the files of the request's release by URL, with the source
// context of its line unless the request turns it off. A frame that
// cannot be resolved keeps its values and adds its file's error type to
// the answer's errors. The project must be visible to sc's user
// (store.ErrNotFound); a request beyond its budget of bytes or files is a
// *symbolication.LimitError.
func (e *Engine) Symbolicate(ctx context.Context, sc store.ProjectScope, req *Request) (*Response, error) {
	rs := &resolver{e: e, ctx: ctx, sc: sc, req: req, files: map[string]*jsFile{},
		budget: symbolication.NewBudget(ctx, e.Cache.EntryBound())}
	out, err := rs.resolve()
	if err != nil {
		return nil, err
	}
	// Every lookup filters by membership: a request that found a stored
	// file can see the project. One that found none asks, so that another
	// organization's project is not found whatever the body holds.
	if !rs.visible {
		if _, err := e.Store.Project(ctx, sc.UserID, sc.OrgSlug, sc.ProjectSlug); err != nil {
			return nil, err
		}
	}
	out.RawStacktraces = req.Stacktraces
	return out, nil
}

// jsFile is what a request learnt of one abs_path: the map that resolves
// it, or the error type of its frames.
type jsFile struct {
	m            *sourcemap.Map
	mapURL       string // as frames answer it: cut to symbolication.MaxNameBytes
	resolvedWith string
	errType      string
	// data is what the data of its frames say of it: resolvedWith and
	// mapURL, and their JSON.
	data FrameData
	// sources are the map's sources as frames answer them, resolved
	// against mapURL.
	sources *frameSources
	// bundle is the artifact bundle of a map found by debug id, where
	// original sources are looked for; "" for a release's map.
	bundle string
	// texts memoizes the stored original sources by abs_path.
	texts map[string]*symbolication.Source
	// own memoizes the sources its cached view has no room for.
	own map[int]*frameSource
	// entry is the cache's entry of m, which keeps the sources m carries
	// with the index of their lines; nil for a file of a test.
	entry *mapEntry
	// script is the stored script of a file without its map
	// (missing_sourcemap), whose own lines its frames show as context;
	// scriptText is its text once read, scriptRead whether it was.
	script     *store.SourceFile
	scriptText *symbolication.Source
	scriptRead bool
	// minified is the stored minified file whose map is m, as the lookup
	// found it, read for its scopes (scopes.go); nil when none is stored.
	// scopes is the index of its scopes once made, scopesRead whether it
	// was.
	minified   *store.SourceFile
	scopes     *jsscope.Index
	scopesRead bool
}

// newJSFile is the file of frames resolved through m, found under mapURL
// (sources, the view of m's sources for it, or nil for a request's own),
// by debug id or release (how).
func newJSFile(m *sourcemap.Map, sources *frameSources, mapURL, how, bundle string) *jsFile {
	if sources == nil {
		sources = localSources(mapURL)
	}
	f := &jsFile{m: m, mapURL: symbolication.CutName(mapURL), resolvedWith: how, bundle: bundle, sources: sources}
	f.data = FrameData{ResolvedWith: &f.resolvedWith, Sourcemap: &f.mapURL}
	f.data.json = append(f.data.json, `,"resolved_with":`...)
	f.data.json = appendjson.String(f.data.json, how)
	f.data.json = append(f.data.json, `,"sourcemap":`...)
	f.data.json = appendjson.String(f.data.json, f.mapURL)
	return f
}

// resolver resolves the frames of one request.
type resolver struct {
	e     *Engine
	ctx   context.Context
	sc    store.ProjectScope
	req   *Request
	files map[string]*jsFile
	read  int64 // bytes of stored files read
	// budget counts what the request holds of the files it parsed
	// (those the cache did not hold).
	budget *symbolication.Budget
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
	// chains memoizes the stored files that sources are (transitive.go).
	chains map[chainKey]*jsFile
}

// errReadBudget stops a request that reads more than
// symbolication.MaxReadBytes.
var errReadBudget = &symbolication.LimitError{Limit: symbolication.ReadBytes, Max: symbolication.MaxReadBytes}

func (rs *resolver) resolve() (*Response, error) {
	out := &Response{Stacktraces: []StacktraceOut{}, Errors: []Error{}}
	// The answer echoes the request's stack traces (raw_stacktraces).
	var ans symbolication.Answer
	if err := ans.Charge(len(rs.req.Stacktraces) + 64); err != nil {
		return nil, err
	}
	calleeFirst := rs.req.Options.FrameOrder != nil && *rs.req.Options.FrameOrder == "callee_first"
	withContext := rs.req.Options.ApplySourceContext == nil || *rs.req.Options.ApplySourceContext
	for _, st := range rs.req.Traces {
		n := len(st.Frames)
		frames := make([]FrameOut, n)
		names := make([]*string, n) // the map's name at each frame's position
		// What resolved frames point to, allocated once a stack trace:
		// their names, and their lines and columns.
		nameOf := make([]string, n)
		lines := make([]int64, 2*n)
		read := make([]FrameIn, n) // each frame as it was looked up, its decorations read off
		for i, f := range st.Frames {
			if err := rs.budget.Err(); err != nil {
				return nil, err // the client left
			}
			f = undecorate(f)
			read[i] = f
			o := FrameOut{Function: f.Function, AbsPath: f.AbsPath, Lineno: f.Lineno, Colno: f.Colno,
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
				if err := ans.Charge(errorJSON, abs, errType); err != nil {
					return nil, err
				}
				out.Errors = append(out.Errors, Error{AbsPath: abs, Type: errType})
			}
			if err := o.charge(&ans); err != nil {
				return nil, err
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
			name := (*string)(nil)
			if caller >= 0 && caller < len(frames) {
				name = names[caller]
			}
			if name == nil {
				// Else the function around it in the minified file.
				var err error
				if name, err = rs.scopeName(read[i]); err != nil {
					return nil, err
				}
			}
			if name != nil {
				frames[i].Function = name
				if err := ans.Charge(0, *name); err != nil {
					return nil, err
				}
			}
		}
		out.Stacktraces = append(out.Stacktraces, StacktraceOut{Frames: frames})
	}
	return out, nil
}

// Bounds of the bytes of an answer's frame and error beside their
// strings: keys, punctuation, nulls and numbers at their longest.
const (
	frameJSON = 256
	errorJSON = 32
)

// charge charges ans with o's JSON, its function but when caller naming
// replaces it.
func (o *FrameOut) charge(ans *symbolication.Answer) error {
	n := frameJSON + len(o.Data.json) + len(o.PreContext) + len(o.PostContext) + len(inAppJSON)
	if o.source != nil {
		n += len(o.source.json)
	} else {
		if err := ans.Charge(0, deref(o.Filename), deref(o.AbsPath)); err != nil {
			return err
		}
	}
	if err := ans.Charge(n, deref(o.Function), deref(o.ContextLine)); err != nil {
		return err
	}
	if err := ans.Charge(0, o.PreContext...); err != nil {
		return err
	}
	return ans.Charge(0, o.PostContext...)
}

// deref is *s, "" for nil.
func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// filename returns the filename of a frame's abs_path, once per request.
func (rs *resolver) filename(absPath string) *string {
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
func (rs *resolver) resolveFrame(f FrameIn, o *FrameOut, name *string, lineCol []int64, withContext bool) (bool, string, error) {
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
		if file.script != nil && withContext {
			if err := rs.scriptContext(file, f, o); err != nil {
				return false, "", err
			}
		}
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
	if file, p, err = rs.follow(file, p); err != nil {
		return false, "", err
	}
	if file.own == nil {
		file.own = map[int]*frameSource{}
	}
	// A position of a source without a name (null in the map's
	// sources) keeps the frame's abs_path and filename, as Sentry does.
	var src *frameSource
	if p.Source != "" {
		src = file.sources.find(p.SourceID, p.Source, file.own)
		o.source = src
		o.AbsPath, o.Filename = &src.abs, &src.filename
	}
	lineCol[0], lineCol[1] = int64(p.Line+1), int64(p.Column+1)
	o.Lineno, o.Colno = &lineCol[0], &lineCol[1]
	o.Data.Symbolicated = true
	if p.Ignored {
		o.InApp = ptr(false)
	}
	if p.HasName {
		*name = symbolication.CutName(p.Name)
	}
	if withContext {
		var text *symbolication.Source
		switch {
		case p.HasContent && file.entry != nil:
			text = file.entry.context(p.SourceID, p.Content)
		case p.HasContent:
			text = symbolication.NewSource(p.Content)
		case src == nil:
			return p.HasName, "missing_source_content", nil
		default:
			text, err = rs.storedSource(file, src.url)
			if err != nil {
				return false, "", err
			}
			if text == nil {
				return p.HasName, "missing_source_content", nil
			}
		}
		o.PreContext, o.ContextLine, o.PostContext = text.Context(p.Line, p.Column)
	}
	return p.HasName, "", nil
}

// maxSourceBytes is the largest original source read for context.
const maxSourceBytes = 8 << 20

// storedSource returns the original source abs with the index of its
// lines, for a map without sourcesContent: the file of that URL in the map's artifact
// bundle, or among the release's files; nil when none is stored.
func (rs *resolver) storedSource(file *jsFile, abs string) (*symbolication.Source, error) {
	if text, ok := file.texts[abs]; ok {
		return text, nil
	}
	text, err := rs.findSource(file, abs)
	if err != nil {
		return nil, err
	}
	if file.texts == nil {
		file.texts = map[string]*symbolication.Source{}
	}
	file.texts[abs] = text
	return text, nil
}

func (rs *resolver) findSource(file *jsFile, abs string) (*symbolication.Source, error) {
	urls := candidateURLs(abs)
	var f store.SourceFile
	var err error
	switch {
	case file.bundle != "":
		f, err = rs.e.Store.ArtifactFileByURL(rs.ctx, rs.sc, file.bundle, urls)
	case rs.req.Release != nil && *rs.req.Release != "":
		f, err = rs.e.Store.ReleaseFileByURL(rs.ctx, rs.sc, *rs.req.Release, rs.req.Dist, urls)
	default:
		return nil, nil
	}
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return rs.readSource(f, false)
}

// readSource returns the text of stored file f with the index of its
// lines, from the cache when it was read before, else read within the
// request's budget and kept there; nil for a file over maxSourceBytes,
// and, when spare, for one the request's budget has no room left for
// (else that is a *symbolication.LimitError).
func (rs *resolver) readSource(f store.SourceFile, spare bool) (*symbolication.Source, error) {
	key := "source:" + f.SHA1
	if v, ok := rs.e.Cache.Get(key); ok {
		rs.e.Cache.Touch(rs.ctx, rs.e.Store, f)
		return v.(*symbolication.Source), nil
	}
	if f.Size > maxSourceBytes {
		return nil, nil
	}
	if spare && (rs.read+f.Size > symbolication.MaxReadBytes || f.Size+symbolication.IndexSize(int(f.Size)) > rs.budget.Left()) {
		return nil, nil
	}
	data, err := rs.readFile(f, maxSourceBytes)
	if err != nil {
		return nil, err
	}
	text := symbolication.NewSource(string(data))
	if err := rs.budget.Charge(text.Size()); err != nil {
		return nil, err
	}
	rs.e.Cache.Put(key, text, text.Size()+int64(len(key)+64))
	return text, nil
}

// scriptContext sets the context of f, a frame left unresolved in a stored
// script without its map, from the script's own lines (cut around the
// column, as every context line), as Sentry shows them: the script is
// read once a request, none over maxSourceBytes, and only within what the
// request's budget has left: a frame's context is never what makes a
// request fail.
func (rs *resolver) scriptContext(file *jsFile, f FrameIn, o *FrameOut) error {
	if *f.Lineno > 1<<31 || *f.Colno > 1<<31 {
		return nil
	}
	if !file.scriptRead {
		text, err := rs.readSource(*file.script, true)
		if err != nil {
			return err
		}
		file.scriptText, file.scriptRead = text, true
	}
	if file.scriptText != nil {
		o.PreContext, o.ContextLine, o.PostContext = file.scriptText.Context(int(*f.Lineno-1), int(max(*f.Colno-1, 0)))
	}
	return nil
}

func ptr[T any](v T) *T { return &v }
