package js

import (
	"sync"
	"sync/atomic"

	"errata/handlers/appendjson"
	"errata/handlers/symbolication"
	"errata/worker/dif/sourcemap"
)

// mapEntry is a parsed source map as the MapCache holds it, with the
// sources of its frames as answers spell them, for the first URLs the map
// was found under: a warm request over a bundle of a thousand modules
// joins no URL and escapes no name of a file again.
type mapEntry struct {
	m     *sourcemap.Map
	mu    sync.Mutex
	views []*frameSources // at most maxMapViews
	// contexts are the sources the map carries with the index of their
	// lines, made on first use (by Position.SourceID); contextBytes is
	// what they all take once made, charged from the start.
	contexts     []atomic.Pointer[symbolication.Source]
	contextBytes int64
}

// maxMapViews is how many URLs of one map keep their sources in the cache
// (a map is found under one URL but when the same file is stored twice).
const maxMapViews = 2

// newMapEntry wraps m for the cache.
func newMapEntry(m *sourcemap.Map) *mapEntry {
	jm := &mapEntry{m: m, contexts: make([]atomic.Pointer[symbolication.Source], m.NumSources())}
	jm.contextBytes = int64(len(jm.contexts)) * 8
	m.EachContent(func(_ int, text string) { jm.contextBytes += symbolication.IndexSize(len(text)) })
	return jm
}

// file is the file of frames resolved through jm, found under mapURL, by
// debug id or release (how).
func (jm *mapEntry) file(mapURL, how, bundle string) *jsFile {
	f := newJSFile(jm.m, jm.sources(mapURL), mapURL, how, bundle)
	f.entry = jm
	return f
}

// context returns source id of the map, whose text the map carries, with
// the index of its lines: made once, by the first request that shows it.
func (jm *mapEntry) context(id int, text string) *symbolication.Source {
	if s := jm.contexts[id].Load(); s != nil {
		return s
	}
	s := symbolication.NewSource(text)
	jm.contexts[id].Store(s)
	return s
}

// viewBudget is the most bytes one view of m's sources holds: its slots and
// the sources it keeps, a quarter of the map's own size (and 64 KiB for
// small maps) beside them. Sources past it are made again by each request.
func viewBudget(m *sourcemap.Map) int64 {
	return int64(m.NumSources())*8 + int64(m.Size())/4 + 64<<10
}

// cacheSize is what the cache is charged for jm: the map, the budget of
// its views and the indexes of the sources it carries.
func (jm *mapEntry) cacheSize() int64 {
	return int64(jm.m.Size()) + maxMapViews*viewBudget(jm.m) + jm.contextBytes
}

// sources returns the view of jm's sources for mapURL: kept with the map
// for the first maxMapViews URLs, a request's own beyond.
func (jm *mapEntry) sources(mapURL string) *frameSources {
	jm.mu.Lock()
	defer jm.mu.Unlock()
	for _, v := range jm.views {
		if v.mapURL == mapURL {
			return v
		}
	}
	if len(jm.views) == maxMapViews {
		return localSources(mapURL)
	}
	v := &frameSources{mapURL: mapURL, slots: make([]atomic.Pointer[frameSource], jm.m.NumSources())}
	v.left.Store(viewBudget(jm.m) - int64(len(v.slots))*8)
	jm.views = append(jm.views, v)
	return v
}

// frameSources are the sources of a map as the frames resolved through it
// answer them, resolved against mapURL, the URL the map was found under.
// A view the cache keeps (slots) is shared by concurrent requests and
// fills as they find sources, within its budget of bytes; a request's own
// (local) is filled by that request only.
type frameSources struct {
	mapURL string
	slots  []atomic.Pointer[frameSource] // by Position.SourceID
	left   atomic.Int64                  // bytes slots may still take
	local  map[int]*frameSource
}

// localSources is a view of one request.
func localSources(mapURL string) *frameSources {
	return &frameSources{mapURL: mapURL, local: map[int]*frameSource{}}
}

// frameSource is a source of a resolved frame: its URL (the map's name of
// it resolved against the map's URL), its abs_path and filename as the
// answer's frame writes them (that URL, and the map's name cleaned by
// sourceFilename, each cut to symbolication.MaxNameBytes), and the JSON of
// both.
type frameSource struct {
	url           string // where its original source is looked for
	abs, filename string
	json          []byte // "filename":…,"abs_path":…
}

// get returns the source numbered id in the map, which names it source.
func (v *frameSources) get(id int, source string) *frameSource { return v.find(id, source, nil) }

// find is get keeping in own, for a request, the sources the view has no
// room for, so that a source of a long URL is joined once a request, not
// once a frame.
func (v *frameSources) find(id int, source string, own map[int]*frameSource) *frameSource {
	if v.slots != nil {
		if s := v.slots[id].Load(); s != nil {
			return s
		}
		if s, ok := own[id]; ok {
			return s
		}
	} else if s, ok := v.local[id]; ok {
		return s
	}
	abs := joinSourceURL(v.mapURL, source)
	s := &frameSource{url: abs, abs: symbolication.CutName(abs), filename: symbolication.CutName(sourceFilename(source))}
	s.json = append(s.json, `"filename":`...)
	s.json = appendjson.String(s.json, s.filename)
	s.json = append(s.json, `,"abs_path":`...)
	s.json = appendjson.String(s.json, s.abs)
	if v.slots == nil {
		v.local[id] = s
		return s
	}
	// Concurrent requests may make the same source: the last one stays,
	// each is charged.
	if v.left.Add(-int64(len(s.url)+len(s.abs)+len(s.filename)+cap(s.json)+64)) >= 0 {
		v.slots[id].Store(s)
	} else if own != nil {
		own[id] = s
	}
	return s
}
