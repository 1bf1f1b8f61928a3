package js

import (
	"errors"
	"strings"
	"testing"

	"errata/handlers/symbolication"
	"errata/worker/dif/sourcemap"
)

// longNamesResolver is a resolver of frames of file abs, whose map (found
// under mapURL) names its one source and its one name by long.
func longNamesResolver(t *testing.T, abs, mapURL, long string, frames int) *resolver {
	t.Helper()
	m, err := sourcemap.Parse([]byte(`{"version":3,"sources":["` + long + `.js"],"names":["` + long + `"],"mappings":"AAAAA"}`))
	if err != nil {
		t.Fatal(err)
	}
	line, col := int64(1), int64(1)
	st := StacktraceIn{Frames: make([]FrameIn, frames)}
	for i := range st.Frames {
		st.Frames[i] = FrameIn{AbsPath: &abs, Lineno: &line, Colno: &col}
	}
	noContext := false
	req := &Request{Traces: []StacktraceIn{st}, Stacktraces: []byte("[]")}
	req.Options.ApplySourceContext = &noContext
	return &resolver{e: &Engine{}, req: req, files: map[string]*jsFile{abs: newJSFile(m, nil, mapURL, "release", "")},
		budget: symbolication.NewBudget(t.Context(), symbolication.DefaultMapCacheBytes)}
}

// TestAnswerNamesCut: a map whose name and source are 256 KiB answers each
// frame's function, abs_path, filename and sourcemap cut to
// symbolication.MaxNameBytes, so 100 frames answer about 400 KiB, not
// the 77 MiB of the names repeated whole.
func TestAnswerNamesCut(t *testing.T) {
	long := strings.Repeat("n", 256<<10)
	rs := longNamesResolver(t, "https://app.example/app.min.js", "https://app.example/"+long+".map", long, 100)
	out, err := rs.resolve()
	if err != nil {
		t.Fatal(err)
	}
	for i, f := range out.Stacktraces[0].Frames {
		for what, s := range map[string]*string{"function": f.Function, "abs_path": f.AbsPath, "filename": f.Filename, "sourcemap": f.Data.Sourcemap} {
			if i == 0 && what == "function" {
				continue // the first frame has no caller to name it
			}
			if s == nil || len(*s) > symbolication.MaxNameBytes || !strings.HasSuffix(*s, symbolication.NameCut) {
				t.Fatalf("frame %d: %s of %d bytes, want cut to %d", i, what, len(deref(s)), symbolication.MaxNameBytes)
			}
		}
	}
	b, _ := out.AppendJSON(nil)
	if len(b) > 100*(4*symbolication.MaxNameBytes+frameJSON) {
		t.Errorf("the answer of 100 frames is %d bytes, want at most %d", len(b), 100*(4*symbolication.MaxNameBytes+frameJSON))
	}
}

// TestAnswerRefusedPastTheCap: 10,000 frames each answering names of
// symbolication.MaxNameBytes pass symbolication.MaxAnswerBytes: the
// request is a LimitError of AnswerBytes, before any answer is written;
// 1,000 of them fit.
func TestAnswerRefusedPastTheCap(t *testing.T) {
	long := strings.Repeat("n", 256<<10)
	for _, tc := range []struct {
		frames  int
		refused bool
	}{{1_000, false}, {symbolication.MaxFrames, true}} {
		rs := longNamesResolver(t, "https://app.example/app.min.js", "https://app.example/"+long+".map", long, tc.frames)
		_, err := rs.resolve()
		var le *symbolication.LimitError
		if refused := errors.As(err, &le) && le.Limit == symbolication.AnswerBytes; refused != tc.refused || !refused && err != nil {
			t.Errorf("%d frames: %v, want refused %v", tc.frames, err, tc.refused)
		}
	}
}
