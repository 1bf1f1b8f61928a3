package native

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"errata/handlers/symbolication"
	"errata/store"
)

// TestSourceContextReadsEachBundleOnce: forty modules of one debug id
// share one source bundle; a request over a frame of each reads the
// bundle (and decodes its manifest) once, for the paths of every frame,
// and each frame gets the context of its own line.
func TestSourceContextReadsEachBundleOnce(t *testing.T) {
	var text strings.Builder
	for i := range 1000 {
		fmt.Fprintf(&text, "line %d\n", i+1)
	}
	bundles := []store.ResolutionFile{{OrgID: 1, FileID: 9}, {OrgID: 1, FileID: 10}}
	bundles[0].ID, bundles[1].ID = 70, 71
	var frames []FrameOut
	for i := range 40 {
		b := bundles[0]
		if i == 39 {
			b = bundles[1]
		}
		m := &module{bundle: &b}
		frames = append(frames,
			FrameOut{AbsPath: "./src/main.c", Lineno: 10*i + 1, mod: m},
			FrameOut{AbsPath: fmt.Sprintf("src/file%d.c", i), Lineno: 3, mod: m})
	}
	reads := map[int64][]string{}
	sts := []StacktraceOut{{Frames: frames}}
	used, err := sourceContext(context.Background(), sts, func(b *store.ResolutionFile, paths []string, budget int64) (map[string][]byte, error) {
		if _, ok := reads[b.FileID]; ok {
			t.Errorf("bundle %d read again", b.FileID)
		}
		reads[b.FileID] = paths
		if budget != maxSourceContext-int64(len(reads)-1)*symbolication.NewSource(text.String()).Size() {
			t.Errorf("bundle %d read with a budget of %d", b.FileID, budget)
		}
		return map[string][]byte{"src/main.c": []byte(text.String())}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]int64{70, 71}, used); diff != "" {
		t.Errorf("bundles used (-want +got):\n%s", diff)
	}
	if len(reads) != 2 || len(reads[9]) != 2+39 || len(reads[10]) != 3 {
		t.Errorf("reads: %v", reads)
	}
	want := symbolication.NewSource(text.String())
	for i, f := range sts[0].Frames {
		wantPre, wantLine, wantPost := want.Context(f.Lineno-1, 0)
		if f.AbsPath != "./src/main.c" {
			wantPre, wantLine, wantPost = nil, nil, nil
		}
		if !cmp.Equal(wantPre, f.PreContext) || !cmp.Equal(wantLine, f.ContextLine) || !cmp.Equal(wantPost, f.PostContext) {
			t.Errorf("frame %d: %q %v %q, want %q %v %q", i, f.PreContext, f.ContextLine, f.PostContext, wantPre, wantLine, wantPost)
		}
	}
}

// TestSourceContextEndsAtTheFilesLastLine: a bundle's file that ends with
// a newline, as C sources do, shows no empty line after its last: a frame
// on its last line has no post context, a frame one line further none at
// all. (Native context once read the newline as the start of one more,
// empty line, as strings.Split does.)
func TestSourceContextEndsAtTheFilesLastLine(t *testing.T) {
	const text = "int\nmain(void)\n{\n  return 0;\n}\n"
	b := store.ResolutionFile{OrgID: 1, FileID: 9}
	m := &module{bundle: &b}
	sts := []StacktraceOut{{Frames: []FrameOut{
		{AbsPath: "/src/main.c", Lineno: 4, mod: m},
		{AbsPath: "/src/main.c", Lineno: 5, mod: m},
		{AbsPath: "/src/main.c", Lineno: 6, mod: m},
	}}}
	_, err := sourceContext(context.Background(), sts, func(*store.ResolutionFile, []string, int64) (map[string][]byte, error) {
		return map[string][]byte{"/src/main.c": []byte(text)}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	line := func(s string) *string { return &s }
	want := []FrameOut{
		{PreContext: []string{"int", "main(void)", "{"}, ContextLine: line("  return 0;"), PostContext: []string{"}"}},
		{PreContext: []string{"int", "main(void)", "{", "  return 0;"}, ContextLine: line("}"), PostContext: []string{}},
		{},
	}
	for i, f := range sts[0].Frames {
		if !cmp.Equal(want[i].PreContext, f.PreContext) || !cmp.Equal(want[i].ContextLine, f.ContextLine) || !cmp.Equal(want[i].PostContext, f.PostContext) {
			t.Errorf("line %d: %q %v %q, want %q %v %q", f.Lineno, f.PreContext, f.ContextLine, f.PostContext,
				want[i].PreContext, want[i].ContextLine, want[i].PostContext)
		}
	}
}
