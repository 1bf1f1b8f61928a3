package handlers

import (
	"encoding/json"
	"net/http"
	"os"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestTrimContextLine(t *testing.T) {
	line := func(n int) string {
		var b strings.Builder
		for i := range n {
			b.WriteByte('a' + byte(i%26))
		}
		return b.String()
	}
	l300 := line(300)
	for _, tc := range []struct {
		name   string
		line   string
		column int
		want   string
	}{
		{"150 bytes stay whole", line(150), 149, line(150)},
		{"the start", l300, 3, l300[:140] + " {snip}"},
		{"the middle", l300, 200, "{snip} " + l300[140:280] + " {snip}"},
		{"the end, a whole width", l300, 290, "{snip} " + l300[160:]},
		{"a column past the end", l300, 1 << 30, "{snip} " + l300[160:]},
		{"a negative column", l300, -5, l300[:140] + " {snip}"},
	} {
		if got := trimContextLine(tc.line, tc.column); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
	// Cuts fall on rune boundaries.
	wide := strings.Repeat("é", 200)
	for col := range len(wide) {
		if got := trimContextLine(wide, col); !utf8.ValidString(got) || len(got) > maxContextLine+len(" {snip}")*2 {
			t.Fatalf("column %d: %q", col, got)
		}
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
