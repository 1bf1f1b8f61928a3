package js

import (
	"encoding/json"
	"os"
	"sync"
	"testing"

	"errata/worker/dif/sourcemap"
)

// parseTestMap parses the source map of sourcemap's tests.
func parseTestMap(t *testing.T) *sourcemap.Map {
	t.Helper()
	data, err := os.ReadFile("../../../worker/dif/sourcemap/testdata/app.min.js.map")
	if err != nil {
		t.Fatal(err)
	}
	m, err := sourcemap.Parse(data)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestMapEntrySourcesPerURL resolves the sources of a map found under three
// URLs: each URL answers its own abs_path and filename, the first two are
// kept with the map and the third is a request's own, and a view whose
// budget is spent still answers every source.
func TestMapEntrySourcesPerURL(t *testing.T) {
	m := parseTestMap(t)
	jm := newMapEntry(m)
	urls := []string{"~/static/app.min.js.map", "https://cdn.example/a/b/app.min.js.map", "webpack://app/./dist/app.min.js.map"}
	check := func(v *frameSources, mapURL string) {
		t.Helper()
		for id, source := range m.Sources() {
			for range 2 { // made, then kept or made again
				s := v.get(id, source)
				abs := joinSourceURL(mapURL, source)
				var frame struct {
					Filename string `json:"filename"`
					AbsPath  string `json:"abs_path"`
				}
				if err := json.Unmarshal(append(append([]byte("{"), s.json...), '}'), &frame); err != nil {
					t.Fatalf("%s %q: %v: %s", mapURL, source, err, s.json)
				}
				if s.abs != abs || s.filename != sourceFilename(source) || frame.AbsPath != abs || frame.Filename != sourceFilename(source) {
					t.Errorf("%s %q: %+v %+v, want %q %q", mapURL, source, s, frame, abs, sourceFilename(source))
				}
			}
		}
	}
	for i, u := range urls {
		v := jm.sources(u)
		if kept := v.slots != nil; kept != (i < maxMapViews) {
			t.Errorf("view %d kept: %v", i, kept)
		}
		if v2 := jm.sources(u); (v2 == v) != (i < maxMapViews) {
			t.Errorf("view %d: the second request has the first's: %v", i, v2 == v)
		}
		check(v, u)
	}
	if len(m.Sources()) < 2 || jm.views[0].slots[0].Load() == nil {
		t.Fatalf("the kept view holds nothing")
	}
	spent := jm.views[1]
	for id := range spent.slots {
		spent.slots[id].Store(nil)
	}
	spent.left.Store(0)
	check(spent, urls[1])
	for id := range spent.slots {
		if spent.slots[id].Load() != nil {
			t.Errorf("a view without budget kept source %d", id)
		}
	}
}

// TestResponseAppendsAsEncodingJSON writes answers of resolved and
// unresolved frames, with and without context, and holds them to what
// encoding/json makes of the same values.
func TestResponseAppendsAsEncodingJSON(t *testing.T) {
	m := parseTestMap(t)
	file := newJSFile(m, nil, "https://app.example/static/app.min.js.map", "release", "")
	src := file.sources.get(0, m.Sources()[0])
	line, col, abs, name := int64(12), int64(3), "https://app.example/static/app.min.js", "lookup\u2028\"Rate\""
	ctx := "  return <table>[code];\t"
	resolved := FrameOut{Function: &name, Filename: &src.filename, AbsPath: &src.abs, Lineno: &line, Colno: &col,
		PreContext: []string{}, PostContext: []string{}, OriginalIndex: 1, Data: file.data, source: src}
	resolved.Data.Symbolicated = true
	withContext := resolved
	withContext.PreContext, withContext.ContextLine, withContext.PostContext = []string{"a", "\x01b"}, &ctx, []string{"}"}
	unresolved := FrameOut{AbsPath: &abs, Lineno: &line, PreContext: []string{}, PostContext: []string{}, OriginalIndex: 2}
	located := unresolved
	located.Data = file.data
	out := &Response{
		Stacktraces:    []StacktraceOut{{Frames: []FrameOut{resolved, withContext, unresolved, located}}, {Frames: []FrameOut{}}},
		RawStacktraces: json.RawMessage(`[{"frames":[]}]`),
		Errors:         []Error{{AbsPath: abs, Type: "invalid_location"}},
	}
	got, err := out.AppendJSON(nil)
	if err != nil {
		t.Fatal(err)
	}
	want, err := json.Marshal(out)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != string(want) {
		t.Errorf("AppendJSON\n%s\nencoding/json\n%s", got, want)
	}
}

// TestMapEntrySourcesConcurrently fills a kept view from concurrent requests,
// as warm requests over one bundle do: each gets every source right (the
// race detector watches the rest).
func TestMapEntrySourcesConcurrently(t *testing.T) {
	m := parseTestMap(t)
	jm := newMapEntry(m)
	const mapURL = "~/static/app.min.js.map"
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			v := jm.sources(mapURL)
			for range 50 {
				for id, source := range m.Sources() {
					if s := v.get(id, source); s.abs != joinSourceURL(mapURL, source) {
						t.Errorf("source %d: %q", id, s.abs)
						return
					}
				}
			}
		})
	}
	wg.Wait()
	if len(jm.views) != 1 {
		t.Errorf("%d views of one URL", len(jm.views))
	}
}
