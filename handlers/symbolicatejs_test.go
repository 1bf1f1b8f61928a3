package handlers

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"errata/authn"
	"errata/handlers/symbolication"
	jsengine "errata/handlers/symbolication/js"
	"errata/store/storetest"
)

// symbolicateJSFixture serves errata with a parsed-file cache, and a
// release 1.0 of acme/web holding the esbuild build of the sourcemap
// package's testdata as ~/static/app.min.js and its map.
type symbolicateJSFixture struct {
	*testAPI
	cache *symbolication.MapCache
	tok   string
}

func newSymbolicateJSFixture(t *testing.T) symbolicateJSFixture {
	t.Helper()
	return newSymbolicateJSFixtureCache(t, 1<<20)
}

// newSymbolicateJSFixtureCache is newSymbolicateJSFixture with a cache of
// cacheBytes.
func newSymbolicateJSFixtureCache(t *testing.T, cacheBytes int64) symbolicateJSFixture {
	t.Helper()
	st, db := storetest.NewWithURL(t)
	cache := symbolication.NewMapCache(cacheBytes)
	d := Deps{Store: st, Auth: &authn.Authenticator{Store: st}, Log: discardLog(), Now: time.Now,
		SecretKey: "test-secret", RecoverySeeds: authn.NewPendingSeeds(300*time.Second, time.Now), MapCache: cache}
	srv := httptest.NewServer(serve(d, routes(d)))
	t.Cleanup(srv.Close)
	a := &testAPI{t: t, st: st, db: db, srv: srv, lg: d.Log}
	a.user("dev@acme.io")
	a.org("acme", "dev@acme.io")
	a.project("acme", "web")
	tok := a.token("dev@acme.io", "project:read", "project:releases")
	if r := a.do("POST", "/api/0/projects/acme/web/releases/", tok, map[string]any{"version": "1.0"}); r.status != http.StatusCreated {
		t.Fatalf("create release: %d %s", r.status, r.body)
	}
	for _, name := range []string{"app.min.js", "app.min.js.map"} {
		data, err := os.ReadFile("../worker/dif/sourcemap/testdata/" + name)
		if err != nil {
			t.Fatal(err)
		}
		body, ct := multipartBody(t, [][2]string{{"name", "~/static/" + name}}, []filePart{{"file", name, data}})
		if r := a.doMultipart("POST", "/api/0/projects/acme/web/releases/1.0/files/", tok, body, ct); r.status != http.StatusCreated {
			t.Fatalf("upload %s: %d %s", name, r.status, r.body)
		}
	}
	return symbolicateJSFixture{testAPI: a, cache: cache, tok: tok}
}

func discardLog() *slog.Logger { return slog.New(slog.NewJSONHandler(io.Discard, nil)) }

// jsFrame is a frame of a request.
func jsFrame(absPath string, line, col int, function string) map[string]any {
	return map[string]any{"abs_path": absPath, "lineno": line, "colno": col, "function": function}
}

const appURL = "https://app.example/static/app.min.js"

// TestSymbolicateJSResolvesReleaseFiles resolves the frames node printed
// for the minified app (testdata of worker/dif/sourcemap), caller first,
// and frames that cannot be resolved, each with its error type.
func TestSymbolicateJSResolvesReleaseFiles(t *testing.T) {
	f := newSymbolicateJSFixture(t)
	body := map[string]any{
		"stacktraces": []any{map[string]any{"frames": []any{
			jsFrame(appURL, 1, 449, "u"),
			jsFrame(appURL+"?v=2#top", 1, 378, "e"),
			jsFrame(appURL, 1, 272, "r.applyDiscount"),
			jsFrame(appURL, 1, 50, "i"),
			jsFrame(appURL, 1, 88, "s"),
			jsFrame("https://app.example/static/other.js", 1, 1, "x"),
			jsFrame(appURL, 9, 1, "y"),
			map[string]any{"abs_path": appURL, "lineno": 1},
			map[string]any{"lineno": 1, "colno": 1},
		}}},
		"release": "1.0",
		"options": map[string]any{"apply_source_context": false},
	}
	r := f.do("POST", "/api/0/projects/acme/web/symbolicate-js/", f.tok, body)
	if r.status != http.StatusOK {
		t.Fatalf("%d %s", r.status, r.body)
	}
	var got struct {
		Stacktraces []struct {
			Frames []struct {
				Function *string `json:"function"`
				Filename *string `json:"filename"`
				AbsPath  *string `json:"abs_path"`
				Lineno   *int    `json:"lineno"`
				Colno    *int    `json:"colno"`
				Data     struct {
					Symbolicated bool    `json:"symbolicated"`
					ResolvedWith *string `json:"resolved_with"`
				} `json:"data"`
			} `json:"frames"`
		} `json:"stacktraces"`
		Errors []jsengine.Error `json:"errors"`
	}
	if err := json.Unmarshal(r.body, &got); err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, fr := range got.Stacktraces[0].Frames {
		s := func(p *string) string {
			if p == nil {
				return "-"
			}
			return *p
		}
		n := func(p *int) string {
			if p == nil {
				return "-"
			}
			return fmt.Sprint(*p)
		}
		lines = append(lines, fmt.Sprintf("%s %s %s:%s:%s %v %s", s(fr.Function), s(fr.Filename), s(fr.AbsPath), n(fr.Lineno), n(fr.Colno), fr.Data.Symbolicated, s(fr.Data.ResolvedWith)))
	}
	// The unminified app printed main.js:11:17 in main, main.js:5:15 in
	// checkout, cart.js:17:18 in Cart.applyDiscount, discount.js:4:16 in
	// discountFor and discount.js:10:11 in lookupRate. The frames no
	// caller names (main, and Cart.applyDiscount, whose call site has no
	// name in the map) are named after the function around them in the
	// minified file.
	want := []string{
		"main ../src/main.js https://app.example/src/main.js:11:17 true release",
		"checkout ../src/main.js https://app.example/src/main.js:5:15 true release",
		"Cart.applyDiscount ../src/cart.js https://app.example/src/cart.js:17:18 true release",
		"discountFor ../src/discount.js https://app.example/src/discount.js:4:16 true release",
		"lookupRate ../src/discount.js https://app.example/src/discount.js:10:11 true release",
		"x /static/other.js https://app.example/static/other.js:1:1 false -",
		"y /static/app.min.js https://app.example/static/app.min.js:9:1 false release",
		"- /static/app.min.js https://app.example/static/app.min.js:1:- false -",
		"- - -:1:1 false -",
	}
	if diff := cmp.Diff(want, lines); diff != "" {
		t.Errorf("frames (-want +got):\n%s", diff)
	}
	wantErrors := []jsengine.Error{
		{AbsPath: "https://app.example/static/other.js", Type: "missing_source"},
		{AbsPath: appURL, Type: "invalid_location"},
		{AbsPath: appURL, Type: "no_column"},
		{AbsPath: "", Type: "invalid_abs_path"},
	}
	if diff := cmp.Diff(wantErrors, got.Errors); diff != "" {
		t.Errorf("errors (-want +got):\n%s", diff)
	}
}

// TestSymbolicateJSParsesOnce asks twice over the same files: the second
// request finds the map, the script's sourceMappingURL and the index of
// its scopes (the frame has no caller) in the cache, and each request
// counts the stored files as used.
func TestSymbolicateJSParsesOnce(t *testing.T) {
	f := newSymbolicateJSFixture(t)
	body := map[string]any{"stacktraces": []any{map[string]any{"frames": []any{jsFrame(appURL, 1, 88, "s")}}}, "release": "1.0"}
	f.exec(`UPDATE files SET date_used = now() - interval '10 days'`)
	first := f.do("POST", "/api/0/projects/acme/web/symbolicate-js/", f.tok, body)
	entries, used, hits := f.cache.Stats()
	if first.status != http.StatusOK || entries != 3 || used <= 0 || hits != 0 {
		t.Fatalf("first request: %d %s; cache %d entries %d bytes %d hits", first.status, first.body, entries, used, hits)
	}
	if n := f.count(`SELECT count(*) FROM files WHERE date_used < now() - interval '1 day'`); n != 0 {
		t.Errorf("%d files not counted as used by the first request", n)
	}
	f.exec(`UPDATE files SET date_used = now() - interval '10 days'`)
	second := f.do("POST", "/api/0/projects/acme/web/symbolicate-js/", f.tok, body)
	if entries2, _, hits := f.cache.Stats(); entries2 != entries || hits != 3 {
		t.Errorf("second request: cache %d entries %d hits, want %d and 3", entries2, hits, entries)
	}
	if string(second.body) != string(first.body) {
		t.Errorf("second answer %s, first %s", second.body, first.body)
	}
	if n := f.count(`SELECT count(*) FROM files WHERE date_used < now() - interval '1 day'`); n != 0 {
		t.Errorf("%d files not counted as used by the cached request", n)
	}
}

// TestSymbolicateJSLimits takes 1,000 frames a request and refuses what is
// over the body limit or malformed with the contract's 4xx.
func TestSymbolicateJSLimits(t *testing.T) {
	f := newSymbolicateJSFixture(t)
	var frames []any
	for i := 0; i < 1000; i++ {
		frames = append(frames, jsFrame(appURL, 1, 1+i%500, "f"))
	}
	r := f.do("POST", "/api/0/projects/acme/web/symbolicate-js/", f.tok,
		map[string]any{"stacktraces": []any{map[string]any{"frames": frames}}, "release": "1.0"})
	if r.status != http.StatusOK {
		t.Fatalf("1,000 frames: %d %s", r.status, r.body)
	}
	for _, tc := range []struct {
		name   string
		body   any
		status int
	}{
		{"over 1 MiB", map[string]any{"stacktraces": []any{}, "pad": strings.Repeat("x", 1<<20)}, http.StatusRequestEntityTooLarge},
		{"no stacktraces", map[string]any{"release": "1.0"}, http.StatusUnprocessableEntity},
		{"frames of the wrong type", map[string]any{"stacktraces": []any{map[string]any{"frames": []any{map[string]any{"lineno": "1"}}}}}, http.StatusUnprocessableEntity},
		{"a debug id that is not a UUID", map[string]any{"stacktraces": []any{}, "modules": []any{map[string]any{"debug_id": "x"}}}, http.StatusUnprocessableEntity},
		{"an unknown frame order", map[string]any{"stacktraces": []any{}, "options": map[string]any{"frame_order": "up"}}, http.StatusUnprocessableEntity},
		{"a NUL in a frame", map[string]any{"stacktraces": []any{map[string]any{"frames": []any{jsFrame(appURL+"\x00", 1, 1, "f")}}}, "release": "1.0"}, http.StatusUnprocessableEntity},
		{"a NUL in the release", map[string]any{"stacktraces": []any{}, "release": "1.0\x00"}, http.StatusUnprocessableEntity},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if r := f.do("POST", "/api/0/projects/acme/web/symbolicate-js/", f.tok, tc.body); r.status != tc.status {
				t.Errorf("%d %s, want %d", r.status, r.body, tc.status)
			}
		})
	}
}

// TestSymbolicateJSContextFromStoredSources reads the context of a map
// without sourcesContent from the original source stored in the release;
// a source that is not stored is missing_source_content.
func TestSymbolicateJSContextFromStoredSources(t *testing.T) {
	f := newSymbolicateJSFixture(t)
	data, err := os.ReadFile("../worker/dif/sourcemap/testdata/app.min.js.map")
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	json.Unmarshal(data, &m)
	contents := m["sourcesContent"].([]any)
	delete(m, "sourcesContent")
	bare, _ := json.Marshal(m)
	upload := func(name string, data []byte) {
		body, ct := multipartBody(t, [][2]string{{"name", name}}, []filePart{{"file", "f", data}})
		if r := f.doMultipart("POST", "/api/0/projects/acme/web/releases/2.0/files/", f.tok, body, ct); r.status != http.StatusCreated {
			t.Fatalf("upload %s: %d %s", name, r.status, r.body)
		}
	}
	if r := f.do("POST", "/api/0/projects/acme/web/releases/", f.tok, map[string]any{"version": "2.0"}); r.status != http.StatusCreated {
		t.Fatalf("create release: %d %s", r.status, r.body)
	}
	js, _ := os.ReadFile("../worker/dif/sourcemap/testdata/app.min.js")
	upload("~/static/app.min.js", js)
	upload("~/static/app.min.js.map", bare)
	upload("~/src/discount.js", []byte(contents[0].(string))) // sources[0] is ../src/discount.js
	body := map[string]any{"stacktraces": []any{map[string]any{"frames": []any{
		jsFrame(appURL, 1, 449, "u"), // main.js: not stored
		jsFrame(appURL, 1, 88, "s"),  // discount.js:10
	}}}, "release": "2.0"}
	r := f.do("POST", "/api/0/projects/acme/web/symbolicate-js/", f.tok, body)
	var got struct {
		Stacktraces []struct {
			Frames []struct {
				PreContext  []string `json:"pre_context"`
				ContextLine *string  `json:"context_line"`
				PostContext []string `json:"post_context"`
			} `json:"frames"`
		} `json:"stacktraces"`
		Errors []jsengine.Error `json:"errors"`
	}
	if err := json.Unmarshal(r.body, &got); err != nil || r.status != http.StatusOK {
		t.Fatalf("%d %s", r.status, r.body)
	}
	fr := got.Stacktraces[0].Frames[1]
	want := []string{"  return rate;", "}", "", "function lookupRate(code) {", "  if (!(code in table)) {"}
	if fr.ContextLine == nil || *fr.ContextLine != `    throw new Error("unknown discount code " + code);` ||
		!cmp.Equal(fr.PreContext, want) || !cmp.Equal(fr.PostContext, []string{"  }", "  return table[code];", "}"}) {
		t.Errorf("context %q / %v / %q", fr.PreContext, fr.ContextLine, fr.PostContext)
	}
	if diff := cmp.Diff([]jsengine.Error{{AbsPath: appURL, Type: "missing_source_content"}}, got.Errors); diff != "" {
		t.Errorf("errors (-want +got):\n%s", diff)
	}
}

// TestSymbolicateJSCalleeFirst names frames by their caller read in the
// order asked for.
func TestSymbolicateJSCalleeFirst(t *testing.T) {
	f := newSymbolicateJSFixture(t)
	body := map[string]any{
		"stacktraces": []any{map[string]any{"frames": []any{
			jsFrame(appURL, 1, 88, "s"), jsFrame(appURL, 1, 50, "i"), jsFrame(appURL, 1, 272, "r.applyDiscount"),
			jsFrame(appURL, 1, 378, "e"), jsFrame(appURL, 1, 449, "u"),
		}}},
		"release": "1.0",
		"options": map[string]any{"frame_order": "callee_first", "apply_source_context": false},
	}
	r := f.do("POST", "/api/0/projects/acme/web/symbolicate-js/", f.tok, body)
	var got struct {
		Stacktraces []struct {
			Frames []struct {
				Function string `json:"function"`
			} `json:"frames"`
		} `json:"stacktraces"`
	}
	if err := json.Unmarshal(r.body, &got); err != nil || r.status != http.StatusOK {
		t.Fatalf("%d %s", r.status, r.body)
	}
	var names []string
	for _, fr := range got.Stacktraces[0].Frames {
		names = append(names, fr.Function)
	}
	if diff := cmp.Diff([]string{"lookupRate", "discountFor", "Cart.applyDiscount", "checkout", "main"}, names); diff != "" {
		t.Errorf("functions (-want +got):\n%s", diff)
	}
}

// TestSymbolicateJSMapNamedOtherwise stores scripts whose reference names
// another map than their URL with .map, which is stored too with another
// bundle's map: the reference's map resolves them, or none when it is not
// stored.
func TestSymbolicateJSMapNamedOtherwise(t *testing.T) {
	f := newSymbolicateJSFixture(t)
	read := func(name string) []byte {
		data, err := os.ReadFile("../worker/dif/sourcemap/testdata/" + name)
		if err != nil {
			t.Fatal(err)
		}
		return data
	}
	upload := func(name string, data []byte) {
		body, ct := multipartBody(t, [][2]string{{"name", name}}, []filePart{{"file", "f", data}})
		if r := f.doMultipart("POST", "/api/0/projects/acme/web/releases/1.0/files/", f.tok, body, ct); r.status != http.StatusCreated {
			t.Fatalf("upload %s: %d %s", name, r.status, r.body)
		}
	}
	js := strings.Replace(string(read("app.min.js")), "sourceMappingURL=app.min.js.map", "sourceMappingURL=maps/%s", 1)
	upload("~/static/named.min.js", []byte(fmt.Sprintf(js, "named.map")))
	upload("~/static/maps/named.map", read("app.min.js.map"))
	upload("~/static/named.min.js.map", read("app.terser.js.map"))
	upload("~/static/unnamed.min.js", []byte(fmt.Sprintf(js, "unnamed.map")))
	upload("~/static/unnamed.min.js.map", read("app.min.js.map"))
	frames := []any{
		jsFrame(appURL, 1, 88, "s"),
		jsFrame("https://app.example/static/named.min.js", 1, 88, "s"),
		jsFrame("https://app.example/static/unnamed.min.js", 1, 88, "s"),
	}
	r := f.do("POST", "/api/0/projects/acme/web/symbolicate-js/", f.tok,
		map[string]any{"stacktraces": []any{map[string]any{"frames": frames}}, "release": "1.0"})
	if r.status != http.StatusOK {
		t.Fatalf("%d %s", r.status, r.body)
	}
	var got struct {
		Stacktraces []struct {
			Frames []map[string]any `json:"frames"`
		} `json:"stacktraces"`
		Errors []jsengine.Error `json:"errors"`
	}
	if err := json.Unmarshal(r.body, &got); err != nil {
		t.Fatal(err)
	}
	fr := got.Stacktraces[0].Frames
	if fr[0]["data"].(map[string]any)["symbolicated"] != true {
		t.Fatalf("the fixture's frame: %v", fr[0])
	}
	named := fr[1]
	if named["data"].(map[string]any)["sourcemap"] != "https://app.example/static/maps/named.map" {
		t.Errorf("named.min.js resolved through %v", named["data"])
	}
	// Its sources are named from the map's folder, its URL the one the
	// script's reference makes of abs_path.
	if named["abs_path"] != "https://app.example/static/src/discount.js" || fr[0]["abs_path"] != "https://app.example/src/discount.js" {
		t.Errorf("abs_path %v through maps/named.map, %v through app.min.js.map", named["abs_path"], fr[0]["abs_path"])
	}
	for _, k := range []string{"lineno", "colno", "context_line", "function"} {
		if fmt.Sprint(named[k]) != fmt.Sprint(fr[0][k]) {
			t.Errorf("named.min.js %s: %v, want %v as through app.min.js.map", k, named[k], fr[0][k])
		}
	}
	want := []jsengine.Error{{AbsPath: "https://app.example/static/unnamed.min.js", Type: "missing_sourcemap"}}
	if diff := cmp.Diff(want, got.Errors); diff != "" {
		t.Errorf("errors (-want +got):\n%s", diff)
	}
}

// TestSymbolicateJSInlineMapsParsedOnce resolves frames of one minified
// file whose map is inline (a data: URL of 2 MiB) under 200 URLs that
// differ by their query: the map is parsed by the first request and kept
// in the cache, each URL finding it there (it was parsed again for each,
// 400 MiB in one request beyond its budget of bytes).
func TestSymbolicateJSInlineMapsParsedOnce(t *testing.T) {
	f := newSymbolicateJSFixtureCache(t, 64<<20)
	sm, err := json.Marshal(map[string]any{"version": 3, "sources": []string{"a.js"}, "mappings": "AAAA",
		"sourcesContent": []string{strings.Repeat("x", 2<<20)}})
	if err != nil {
		t.Fatal(err)
	}
	js := []byte("f()\n//# sourceMappingURL=data:application/json;base64," + base64.StdEncoding.EncodeToString(sm) + "\n")
	body, ct := multipartBody(t, [][2]string{{"name", "~/static/inline.js"}}, []filePart{{"file", "inline.js", js}})
	if r := f.doMultipart("POST", "/api/0/projects/acme/web/releases/1.0/files/", f.tok, body, ct); r.status != http.StatusCreated {
		t.Fatalf("upload: %d %s", r.status, r.body)
	}
	const url = "https://app.example/static/inline.js"
	request := func(n int) map[string]any {
		var frames []any
		for i := range n {
			frames = append(frames, jsFrame(fmt.Sprintf("%s?v=%d", url, i), 1, 1, "f"))
		}
		return map[string]any{"stacktraces": []any{map[string]any{"frames": frames}}, "release": "1.0",
			"options": map[string]any{"apply_source_context": false}}
	}
	if r := f.do("POST", "/api/0/projects/acme/web/symbolicate-js/", f.tok, request(1)); r.status != http.StatusOK || !strings.Contains(string(r.body), `"symbolicated":true`) {
		t.Fatalf("one frame: %d %s", r.status, r.body)
	}
	_, _, before := f.cache.Stats()
	r := f.do("POST", "/api/0/projects/acme/web/symbolicate-js/", f.tok, request(symbolication.MaxFiles))
	if r.status != http.StatusOK || strings.Contains(string(r.body), `"symbolicated":false`) {
		t.Fatalf("%d URLs of the file: %d %.300s", symbolication.MaxFiles, r.status, r.body)
	}
	// Each URL finds the file's reference, its map and the index of its
	// scopes (no frame has a caller that names it) in the cache.
	if _, _, hits := f.cache.Stats(); hits-before != 3*symbolication.MaxFiles {
		t.Errorf("%d URLs of the file: %d cache hits, want %d", symbolication.MaxFiles, hits-before, 3*symbolication.MaxFiles)
	}
}

// TestSymbolicateJSTrimsLongContextLines: a stored source whose lines are
// thousands of bytes long gives context lines cut around the frame's
// column, not the whole lines (a one-line file would repeat in every frame).
func TestSymbolicateJSTrimsLongContextLines(t *testing.T) {
	f := newSymbolicateJSFixture(t)
	data, err := os.ReadFile("../worker/dif/sourcemap/testdata/app.min.js.map")
	if err != nil {
		t.Fatal(err)
	}
	// The map without sourcesContent, and discount.js stored with each
	// line ending in 5,000 spaces.
	bare := strings.Replace(string(data), `"sourcesContent"`, `"unusedContent"`, 1)
	if r := f.do("POST", "/api/0/projects/acme/web/releases/", f.tok, map[string]any{"version": "3.0"}); r.status != http.StatusCreated {
		t.Fatalf("create release: %d %s", r.status, r.body)
	}
	js, _ := os.ReadFile("../worker/dif/sourcemap/testdata/app.min.js")
	source := `    throw new Error("unknown discount code " + code);`
	long := strings.Repeat("\n"+source+strings.Repeat(" ", 5000), 20)
	for name, content := range map[string][]byte{"~/static/app.min.js": js, "~/static/app.min.js.map": []byte(bare), "~/src/discount.js": []byte(long)} {
		body, ct := multipartBody(t, [][2]string{{"name", name}}, []filePart{{"file", "f", content}})
		if r := f.doMultipart("POST", "/api/0/projects/acme/web/releases/3.0/files/", f.tok, body, ct); r.status != http.StatusCreated {
			t.Fatalf("upload %s: %d %s", name, r.status, r.body)
		}
	}
	body := map[string]any{"stacktraces": []any{map[string]any{"frames": []any{jsFrame(appURL, 1, 88, "s")}}}, "release": "3.0"}
	r := f.do("POST", "/api/0/projects/acme/web/symbolicate-js/", f.tok, body)
	if r.status != http.StatusOK || len(r.body) > 4096 {
		t.Fatalf("%d, %d bytes: %.300s", r.status, len(r.body), r.body)
	}
	// discount.js:10:11 in the map: the 0-based column 10 keeps the
	// line's first 140 bytes.
	line, _ := json.Marshal((source + strings.Repeat(" ", 140))[:140] + " {snip}")
	if want := `"context_line":` + string(line); !strings.Contains(string(r.body), want) {
		t.Errorf("answer %s\nwant it to hold %s", r.body, want)
	}
}

// TestSymbolicateJSScriptContextWithinBudget stores three scripts without
// a map, each nearly half of what a request may hold: frames in each are
// missing_sourcemap, the first two show their script's lines, and the
// third, which the request has no room left to read, shows none rather
// than failing the request.
func TestSymbolicateJSScriptContextWithinBudget(t *testing.T) {
	f := newSymbolicateJSFixtureCache(t, 1<<20)
	script := []byte(strings.Repeat("f();\n", 400<<10/5))
	var frames []any
	for _, name := range []string{"a.js", "b.js", "c.js"} {
		body, ct := multipartBody(t, [][2]string{{"name", "~/static/" + name}}, []filePart{{"file", name, append([]byte("// "+name+"\n"), script...)}})
		if r := f.doMultipart("POST", "/api/0/projects/acme/web/releases/1.0/files/", f.tok, body, ct); r.status != http.StatusCreated {
			t.Fatalf("upload %s: %d %s", name, r.status, r.body)
		}
		frames = append(frames, jsFrame("https://app.example/static/"+name, 3, 1, "f"))
	}
	r := f.do("POST", "/api/0/projects/acme/web/symbolicate-js/", f.tok,
		map[string]any{"stacktraces": []any{map[string]any{"frames": frames}}, "release": "1.0"})
	if r.status != http.StatusOK {
		t.Fatalf("%d %s", r.status, r.body)
	}
	var got jsengine.Response
	if err := json.Unmarshal(r.body, &got); err != nil {
		t.Fatal(err)
	}
	var shown []string
	for _, fr := range got.Stacktraces[0].Frames {
		shown = append(shown, fmt.Sprint(fr.PreContext, fr.ContextLine != nil))
	}
	want := []string{"[// a.js f();] true", "[// b.js f();] true", "[] false"}
	if diff := cmp.Diff(want, shown); diff != "" {
		t.Errorf("context (-want +got):\n%s", diff)
	}
	if len(got.Errors) != 3 || got.Errors[2].Type != "missing_sourcemap" {
		t.Errorf("errors %+v", got.Errors)
	}
}
