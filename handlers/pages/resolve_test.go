package pages

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// v8Trace is what Node 18 prints for an error thrown in a minified
// bundle (the app of symbolicate_test.go), with Node's own frames.
const v8Trace = `Error: unknown discount code BOGUS
    at s (https://shop.example/static/app.min.js:1:88)
    at r (https://shop.example/static/app.min.js:1:140)
    at async o.applyDiscount (https://shop.example/static/app.min.js:2:17)
    at new Cart (https://shop.example/static/app.min.js:2:301)
    at https://shop.example/static/app.min.js:3:5
    at eval (eval at run (https://shop.example/static/app.min.js:4:9), <anonymous>:1:9)
    at Array.forEach (<anonymous>)
    at Module._compile (node:internal/modules/cjs/loader:1105:14)
    at async Promise.all (index 0)
`

// firefoxTrace is an Error's stack in Firefox 115 (Safari writes the
// same form, "global code@" for the top level).
const firefoxTrace = `lookupRate@https://shop.example/static/app.min.js:1:88
discountFor@https://shop.example/static/app.min.js:1:140
@https://shop.example/static/app.min.js:3:5
run@https://shop.example/static/app.min.js line 8 > eval:1:9
global code@https://shop.example/static/app.min.js:5:1
`

// javaTrace is what the JVM prints for the obfuscated program of
// symbolicatejvm_test.go, with a cause, a suppressed exception and frames
// of the JDK 17's modules.
const javaTrace = `Exception in thread "main" java.lang.IllegalStateException: checkout failed
	at com.shop.b.a(SourceFile:1013)
	at com.shop.Main.main(SourceFile:6)
	Suppressed: java.io.IOException: closing
		at com.shop.d.close(Unknown Source)
Caused by: com.shop.c: unknown discount code BOGUS
	at com.shop.a.a(SourceFile:1014)
	at java.base/jdk.internal.reflect.NativeMethodAccessorImpl.invoke0(Native Method)
	at app//com.shop.b.a(SourceFile:1013)
	... 1 more
`

func TestParseStackTrace(t *testing.T) {
	tests := []struct {
		name, text string
		kind       string
		want       []textTrace
	}{
		{"V8", v8Trace, kindJS, []textTrace{{Message: "Error: unknown discount code BOGUS", Frames: []textFrame{
			{Function: "s", AbsPath: "https://shop.example/static/app.min.js", Line: 1, Col: 88},
			{Function: "r", AbsPath: "https://shop.example/static/app.min.js", Line: 1, Col: 140},
			{Function: "o.applyDiscount", AbsPath: "https://shop.example/static/app.min.js", Line: 2, Col: 17},
			{Function: "new Cart", AbsPath: "https://shop.example/static/app.min.js", Line: 2, Col: 301},
			{AbsPath: "https://shop.example/static/app.min.js", Line: 3, Col: 5},
			{Function: "eval", AbsPath: "https://shop.example/static/app.min.js", Line: 4, Col: 9},
			{Function: "Array.forEach", AbsPath: "<anonymous>"},
			{Function: "Module._compile", AbsPath: "node:internal/modules/cjs/loader", Line: 1105, Col: 14},
		}}}},
		{"Firefox", firefoxTrace, kindJS, []textTrace{{Frames: []textFrame{
			{Function: "lookupRate", AbsPath: "https://shop.example/static/app.min.js", Line: 1, Col: 88},
			{Function: "discountFor", AbsPath: "https://shop.example/static/app.min.js", Line: 1, Col: 140},
			{AbsPath: "https://shop.example/static/app.min.js", Line: 3, Col: 5},
			{Function: "run", AbsPath: "https://shop.example/static/app.min.js line 8 > eval", Line: 1, Col: 9},
			{Function: "global code", AbsPath: "https://shop.example/static/app.min.js", Line: 5, Col: 1},
		}}}},
		{"Java", javaTrace, kindJVM, []textTrace{
			{Exception: "java.lang.IllegalStateException", Message: "checkout failed", Frames: []textFrame{
				{Module: "com.shop.b", Function: "a", Filename: "SourceFile", Line: 1013},
				{Module: "com.shop.Main", Function: "main", Filename: "SourceFile", Line: 6},
			}},
			{Exception: "java.io.IOException", Message: "closing", Frames: []textFrame{
				{Module: "com.shop.d", Function: "close"},
			}},
			{Exception: "com.shop.c", Message: "unknown discount code BOGUS", Frames: []textFrame{
				{Module: "com.shop.a", Function: "a", Filename: "SourceFile", Line: 1014},
				{Module: "jdk.internal.reflect.NativeMethodAccessorImpl", Function: "invoke0"},
				{Module: "com.shop.b", Function: "a", Filename: "SourceFile", Line: 1013},
			}},
		}},
		{"CRLF Java without a header", "\tat a.b.c(SourceFile:3)\r\n\tat a.b.<init>(B.kt:4)\r\n", kindJVM, []textTrace{{Frames: []textFrame{
			{Module: "a.b", Function: "c", Filename: "SourceFile", Line: 3},
			{Module: "a.b", Function: "<init>", Filename: "B.kt", Line: 4},
		}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			kind, got, err := parseStackTrace(tt.text)
			if err != nil {
				t.Fatal(err)
			}
			if kind != tt.kind {
				t.Errorf("kind %q, want %q", kind, tt.kind)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("(-want +got)\n%s", diff)
			}
		})
	}
}

func TestParseStackTraceRefuses(t *testing.T) {
	for _, text := range []string{
		"", "hello", "Error: something broke\n", "at least three items\nat home",
		"email me@example.com", "java.lang.RuntimeException: no frames\n\t... 3 more",
		"at a.b(c", "at f (https://x/a.js:99999999999999999999:1)",
	} {
		if kind, got, err := parseStackTrace(text); err != errNoFrames {
			t.Errorf("%q: %s %+v %v, want no frames", text, kind, got, err)
		}
	}
}

// TestParseStackTraceBound: a text of more frames than the API takes is
// read up to one more, for the API to refuse with its own message.
func TestParseStackTraceBound(t *testing.T) {
	text := strings.Repeat("    at f (https://x/a.js:1:2)\n", maxTextFrames*2)
	_, got, err := parseStackTrace(text)
	if err != nil || len(got) != 1 || len(got[0].Frames) != maxTextFrames {
		t.Fatalf("%d traces, %v", len(got), err)
	}
	text = strings.Repeat("Caused by: a.B: x\n", maxTextFrames*2) + "\tat a.b.c(A.java:1)\n"
	if _, _, err := parseStackTrace(text); err != errNoFrames {
		t.Fatalf("causes past the bound: %v", err)
	}
}

// TestTextRequest: a Node trace is sent outermost first, with the
// release; a Java trace's exceptions split into type and module.
func TestTextRequest(t *testing.T) {
	req, err := (&Pages{}).resolveRequest(nil, "acme", "web", "1.0", v8Trace)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(req.body)
	var body struct {
		Release     string `json:"release"`
		Stacktraces []struct {
			Frames []map[string]any `json:"frames"`
		} `json:"stacktraces"`
	}
	json.Unmarshal(b, &body)
	frames := body.Stacktraces[0].Frames
	if body.Release != "1.0" || req.route != "symbolicate-js/" || !req.callerFirst ||
		frames[0]["function"] != "Module._compile" || frames[len(frames)-1]["function"] != "s" || frames[len(frames)-1]["colno"] != 88.0 {
		t.Fatalf("%s", b)
	}
	if _, ok := frames[1]["lineno"]; ok {
		t.Errorf("a frame without a position sends a line: %s", b)
	}
}

func TestJSONRequest(t *testing.T) {
	tests := []struct {
		name, text, kind string
		callerFirst      bool
	}{
		{"js", `{"stacktraces":[{"frames":[{"abs_path":"https://a/app.js","lineno":1,"colno":2}]}]}`, kindJS, true},
		{"js by module", `{"stacktraces":[],"modules":[{"type":"sourcemap","code_file":"x","debug_id":"y"}]}`, kindJS, true},
		{"jvm", `{"stacktraces":[{"frames":[{"module":"a.b","function":"c","lineno":3}]}],"modules":[{"type":"proguard","uuid":"u"}]}`, kindJVM, true},
		{"jvm frames only", `{"stacktraces":[{"frames":[{"module":"a.b","function":"c"}]}],"options":{"frame_order":"callee_first"}}`, kindJVM, false},
		{"native", `{"modules":[{"type":"elf","code_id":"ab"}],"stacktraces":[{"frames":[{"instruction_addr":"0x10"}]}]}`, kindNative, false},
		{"native by address", `{"stacktraces":[{"frames":[{"instruction_addr":16}]}],"options":{"frame_order":"caller_first"}}`, kindNative, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, err := jsonRequest([]byte(tt.text), "r1")
			if err != nil {
				t.Fatal(err)
			}
			if req.kind != tt.kind || req.callerFirst != tt.callerFirst {
				t.Errorf("kind %s callerFirst %v", req.kind, req.callerFirst)
			}
			_, hasRelease := req.body.(map[string]json.RawMessage)["release"]
			if hasRelease != (tt.kind == kindJS) {
				t.Errorf("release sent: %v", hasRelease)
			}
		})
	}
	for _, text := range []string{`{"stacktraces": 3}`, `{"a": 1}`, `{"stacktraces":[{"frames":[{}]}]}`, `{nope`} {
		if _, err := jsonRequest([]byte(text), ""); err == nil || !strings.HasPrefix(err.Error(), "The ") {
			t.Errorf("%s: %v", text, err)
		}
	}
}

// TestResultOrder: an answer outermost first is shown innermost first,
// each frame beside the frame it was sent as, with its context.
func TestResultOrder(t *testing.T) {
	req, err := (&Pages{}).resolveRequest(nil, "acme", "web", "", "Error: x\n    at s (https://a/m.js:1:5)\n    at t (https://a/m.js:1:9)\n")
	if err != nil {
		t.Fatal(err)
	}
	var ans resolveAnswer
	json.Unmarshal([]byte(`{"stacktraces":[{"frames":[
		{"function":"outer","filename":"src/a.js","abs_path":"https://a/src/a.js","lineno":3,"colno":1,"original_index":0,
		 "pre_context":["a","b"],"context_line":"c","post_context":["d"],"data":{"symbolicated":true}},
		{"function":"s","abs_path":"https://a/m.js","lineno":1,"colno":5,"original_index":1,"data":{"symbolicated":false}}]}],
		"errors":[{"abs_path":"https://a/m.js","type":"missing_sourcemap"}]}`), &ans)
	res := req.result(&ans)
	got := res.Traces[0]
	want := traceView{Title: "Stack trace 1", Message: "Error: x", Frames: []frameView{
		{Status: "missing_sourcemap", Function: "s", Where: "https://a/m.js:1:5", SentAs: "Minified", Sent: "s at https://a/m.js:1:5"},
		{Status: "resolved", Resolved: true, Function: "outer", Where: "src/a.js:3:1", AbsPath: "https://a/src/a.js",
			SentAs: "Minified", Sent: "t at https://a/m.js:1:9", Context: []contextLine{{1, "a", false}, {2, "b", false}, {3, "c", true}, {4, "d", false}}},
	}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got)\n%s", diff)
	}
}

// FuzzParseStackTrace: any text parses without panic, within the
// bound, and every frame it reads has a place.
func FuzzParseStackTrace(f *testing.F) {
	for _, s := range []string{v8Trace[:200], firefoxTrace[:120], javaTrace[:240], "at f (eval at g (", "@:1:1", "at a.b(:)", "Caused by: a.b\n\tat a.b.c(d:-1)"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		kind, traces, err := parseStackTrace(text)
		if err != nil {
			return
		}
		n := 0
		for _, tr := range traces {
			n += len(tr.Frames)
			for _, fr := range tr.Frames {
				if kind == kindJS && fr.AbsPath == "" || kind == kindJVM && (fr.Module == "" || fr.Function == "") || fr.Line < 0 || fr.Col < 0 {
					t.Fatalf("%s frame %+v", kind, fr)
				}
			}
		}
		if n == 0 || n > maxTextFrames {
			t.Fatalf("%d frames", n)
		}
	})
}
