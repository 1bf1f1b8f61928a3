package handlers

import (
	"bytes"
	"compress/flate"
	"context"
	"crypto/sha1"
	"encoding/json"
	"fmt"
	"hash/crc32"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"

	"errata/handlers/symbolication"
	"errata/worker/dif/diftest"
)

// TestSymbolicateJSMapLargerThanTheCache: a map of 300 KB that parses to
// 7 MB, over the 1 MiB the cache takes of one entry, answers
// malformed_sourcemap, and the refusal is kept by the map's SHA-1: the
// second request finds it in the cache and parses nothing (it was parsed
// again by every request, 10 to 25 times its size each time).
func TestSymbolicateJSMapLargerThanTheCache(t *testing.T) {
	f := newSymbolicateJSFixture(t)
	files := map[string]string{
		"big.js":     "f()\n//# sourceMappingURL=big.js.map\n",
		"big.js.map": `{"version":3,"sources":["a.js"],"names":[],"mappings":"AAAA` + strings.Repeat(";", 300_000) + `"}`,
	}
	for name, data := range files {
		body, ct := multipartBody(t, [][2]string{{"name", "~/static/" + name}}, []filePart{{"file", name, []byte(data)}})
		if r := f.doMultipart("POST", "/api/0/projects/acme/web/releases/1.0/files/", f.tok, body, ct); r.status != http.StatusCreated {
			t.Fatalf("upload %s: %d %s", name, r.status, r.body)
		}
	}
	body := map[string]any{"stacktraces": []any{map[string]any{"frames": []any{jsFrame("https://app.example/static/big.js", 1, 1, "f")}}}, "release": "1.0"}
	for i := range 2 {
		_, _, hitsBefore := f.cache.Stats()
		r := f.do("POST", "/api/0/projects/acme/web/symbolicate-js/", f.tok, body)
		if r.status != http.StatusOK || !strings.Contains(string(r.body), `"type":"malformed_sourcemap"`) {
			t.Fatalf("request %d: %d %s, want the map malformed", i+1, r.status, r.body)
		}
		_, used, hits := f.cache.Stats()
		if used > 1<<20 {
			t.Errorf("request %d: the cache holds %d bytes, over its 1 MiB", i+1, used)
		}
		if i == 1 && hits-hitsBefore != 2 {
			t.Errorf("the second request found %d of the reference and the map's refusal in the cache, want 2: the map was parsed again", hits-hitsBefore)
		}
	}
}

// TestSymbolicateJVMMappingLargerThanTheCache: a mapping whose index
// holds more than the 1 MiB the cache takes of one entry is malformed,
// and the refusal is kept by its SHA-1: the second request parses
// nothing.
func TestSymbolicateJVMMappingLargerThanTheCache(t *testing.T) {
	f := newSymbolicateJSFixture(t)
	var mapping strings.Builder
	for i := range 10_000 {
		fmt.Fprintf(&mapping, "c.C%d -> c%d:\n    1:1:void m():1:1 -> a\n", i, i)
	}
	tok := f.token("dev@acme.io", "project:releases", "project:write")
	upload := zipUpload(t, "proguard/"+matrixProguardUUID+".txt", mapping.String())
	if r := f.doMultipart("POST", "/api/0/projects/acme/web/files/dsyms/", tok, upload.data, upload.contentType); r.status != http.StatusCreated {
		t.Fatalf("upload: %d %s", r.status, r.body)
	}
	body := map[string]any{
		"stacktraces": []any{map[string]any{"frames": []any{map[string]any{"module": "c5", "function": "a", "lineno": 1}}}},
		"modules":     []any{map[string]any{"type": "proguard", "uuid": matrixProguardUUID}},
	}
	for i := range 2 {
		r := f.do("POST", "/api/0/projects/acme/web/symbolicate-jvm/", f.tok, body)
		if r.status != http.StatusOK || !strings.Contains(string(r.body), `"type":"malformed"`) {
			t.Fatalf("request %d: %d %s, want the mapping malformed", i+1, r.status, r.body)
		}
	}
	if _, used, hits := f.cache.Stats(); hits != 1 || used > 1<<20 {
		t.Errorf("%d cache hits and %d bytes held, want the second request's hit on the refusal within 1 MiB", hits, used)
	}
}

// TestBudgetCountsWhatIsHeld: a request's budget takes charges up to its
// bound and refuses the one past it, counting nothing for it.
func TestBudgetCountsWhatIsHeld(t *testing.T) {
	b := symbolication.NewBudget(t.Context(), 100)
	if err := b.Charge(60); err != nil {
		t.Fatal(err)
	}
	err := b.Charge(41)
	if le, ok := err.(*symbolication.LimitError); !ok || le.Limit != symbolication.HeldBytes || b.Held() != 60 || b.Left() != 40 {
		t.Errorf("a charge past the budget: %v, %d held, %d left", err, b.Held(), b.Left())
	}
	if err := b.Charge(40); err != nil || b.Left() != 0 {
		t.Errorf("a charge up to the budget: %v, %d left", err, b.Left())
	}
}

// TestAcquireWorkAnswers503: a request that finds no slot of its
// organization within workSlotWait is answered 503 with Retry-After, and
// one whose client left stops waiting with its context's error.
func TestAcquireWorkAnswers503(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		slots := symbolication.NewSlots[string](1, 4)
		held, err := slots.Acquire(t.Context(), "acme", nil)
		if err != nil {
			t.Fatal(err)
		}
		defer held()
		r := httptest.NewRequest("GET", "/", nil)
		_, err = acquireWork(r, slots, "acme", "resolutions")
		if status, _ := errorResponse(err); status != http.StatusServiceUnavailable || retryAfter(err) != workRetryAfter {
			t.Errorf("no slot in time: %v (%d), Retry-After %d", err, status, retryAfter(err))
		}
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		if _, err := acquireWork(r.WithContext(ctx), slots, "acme", "resolutions"); err != context.Canceled {
			t.Errorf("a client that left: %v", err)
		}
		if release, err := acquireWork(r, slots, "other", "resolutions"); err != nil {
			t.Errorf("another organization: %v", err)
		} else {
			release()
		}
	})
}

// TestSymbolicateNativeHeldBudget: of two modules whose Breakpad files
// each parse to 39 MB, the second would take the request past the
// 64 MiB it may hold (the default cache's bound): its frames and its file
// are malformed, beyond the budget, and the first still resolves (the
// request held both, and as many more as it named).
func TestSymbolicateNativeHeldBudget(t *testing.T) {
	a := newTestAPI(t)
	a.user("owner@example.com")
	a.org("acme", "owner@example.com")
	a.project("acme", "web")
	var modules, frames []map[string]any
	for i := range 2 {
		sym, debugID := diftest.BreakpadModule(i, 800_000)
		body, ct := dsymsZip(t, map[string][]byte{fmt.Sprintf("m%d.sym", i): sym})
		if r := a.doMultipart("POST", "/api/0/projects/acme/web/files/dsyms/", a.token("owner@example.com"), body, ct); r.status != http.StatusCreated {
			t.Fatalf("upload %d: %d %s", i, r.status, r.body)
		}
		base := 0x10000000 * (i + 1)
		modules = append(modules, map[string]any{"type": "elf", "debug_id": debugID,
			"image_addr": fmt.Sprintf("0x%x", base), "image_size": 0x10000000})
		frames = append(frames, map[string]any{"instruction_addr": fmt.Sprintf("0x%x", base+0x1000)})
	}
	r := a.do("POST", symbolicatePath, a.token("owner@example.com", "project:read"),
		map[string]any{"modules": modules, "stacktraces": []map[string]any{{"frames": frames}}})
	var out struct {
		Stacktraces []struct {
			Frames []struct {
				Status string `json:"status"`
			} `json:"frames"`
		} `json:"stacktraces"`
		Modules []struct {
			DebugStatus string `json:"debug_status"`
			DebugReason string `json:"debug_reason"`
		} `json:"modules"`
	}
	if r.status != http.StatusOK || json.Unmarshal(r.body, &out) != nil || len(out.Modules) != 2 || len(out.Stacktraces) != 1 {
		t.Fatalf("%d %.500s", r.status, r.body)
	}
	var got []string
	for i, m := range out.Modules {
		got = append(got, m.DebugStatus+" "+m.DebugReason+" "+out.Stacktraces[0].Frames[i].Status)
	}
	want := []string{"found  symbolicated", "malformed the request's budget of parsed files is spent malformed"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("modules and frames (-want +got):\n%s", diff)
	}
}

// discardResponse is a ResponseWriter that keeps nothing of the body.
type discardResponse struct{ h http.Header }

func (d discardResponse) Header() http.Header         { return d.h }
func (d discardResponse) Write(p []byte) (int, error) { return len(p), nil }
func (d discardResponse) WriteHeader(int)             {}

// TestInflatedSourceHoldsItsWindow: a 16 MiB deflated source is checked
// and served whole allocating less than a MiB (it was inflated into one
// buffer of its size, 12 requests at once held 1,967 MB), and its ranges,
// a seek backwards included, read what the source holds there.
func TestInflatedSourceHoldsItsWindow(t *testing.T) {
	var text bytes.Buffer
	for i := 0; text.Len() < 16<<20; i++ {
		fmt.Fprintf(&text, "line %d of the source\n", i)
	}
	var deflated bytes.Buffer
	zw, _ := flate.NewWriter(&deflated, flate.BestSpeed)
	zw.Write(text.Bytes())
	zw.Close()
	src := &inflatedSource{deflated: io.NewSectionReader(bytes.NewReader(deflated.Bytes()), 0, int64(deflated.Len())), size: int64(text.Len())}
	defer src.close()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	sum, crc, n, err := src.check()
	http.ServeContent(discardResponse{http.Header{}}, httptest.NewRequest("GET", "/", nil), "", time.Time{}, src)
	runtime.ReadMemStats(&after)
	want := sha1.Sum(text.Bytes())
	if err != nil || n != int64(text.Len()) || crc != crc32.ChecksumIEEE(text.Bytes()) || !bytes.Equal(sum, want[:]) {
		t.Fatalf("check: %v, %d bytes, CRC %x, SHA-1 %x", err, n, crc, sum)
	}
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 1<<20 {
		t.Errorf("checking and serving a source of %d bytes allocated %d", text.Len(), alloc)
	}
	for _, r := range [][2]int64{{10 << 20, 100}, {5, 20}, {int64(text.Len()) - 7, 7}} {
		if _, err := src.Seek(r[0], io.SeekStart); err != nil {
			t.Fatal(err)
		}
		got := make([]byte, r[1])
		if _, err := io.ReadFull(src, got); err != nil || !bytes.Equal(got, text.Bytes()[r[0]:r[0]+r[1]]) {
			t.Errorf("bytes %d+%d: %v %q", r[0], r[1], err, got)
		}
	}
}

// TestSlowBodiesHoldOnlyTheirOrganizationsSlots: a resolution request
// takes its organization's slot before it reads its body and one of all
// only once the body is read (acquireResolution), so that two
// organizations' slow clients, two each, hold none of the four slots of
// all: a third organization's request runs at once, and a third request
// of a busy organization still waits and is answered 503.
func TestSlowBodiesHoldOnlyTheirOrganizationsSlots(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		slots := symbolication.NewSlots[string](2, 4)
		r := httptest.NewRequest("POST", "/", nil)
		for _, org := range []string{"slow-a", "slow-a", "slow-b", "slow-b"} {
			_, release, err := acquireResolution(r, slots, org) // its body still arriving
			if err != nil {
				t.Fatalf("%s: %v", org, err)
			}
			defer release()
		}
		all, release, err := acquireResolution(r, slots, "other")
		if err != nil {
			t.Fatalf("another organization's slot: %v", err)
		}
		if err := all(); err != nil {
			t.Errorf("a slot of all for another organization: %v, want one at once", err)
		}
		release()
		if _, _, err := acquireResolution(r, slots, "slow-a"); err == nil {
			t.Errorf("a third request of an organization with two: a slot, want 503")
		} else if status, _ := errorResponse(err); status != http.StatusServiceUnavailable {
			t.Errorf("a third request of an organization with two: %v (%d), want 503", err, status)
		}
	})
}

// TestInflatedSourceServesOneRange: a request of many ranges of a
// deflated source, each going backwards, is answered the whole source in
// one inflation (serveInflated), not one inflation per range; one range
// is still served as a range.
func TestInflatedSourceServesOneRange(t *testing.T) {
	text := bytes.Repeat([]byte("a line of the source\n"), 50_000)
	var deflated bytes.Buffer
	zw, _ := flate.NewWriter(&deflated, flate.BestSpeed)
	zw.Write(text)
	zw.Close()
	serve := func(rng string) (*httptest.ResponseRecorder, int) {
		src := &inflatedSource{deflated: io.NewSectionReader(bytes.NewReader(deflated.Bytes()), 0, int64(deflated.Len())), size: int64(len(text))}
		defer src.close()
		r := httptest.NewRequest("GET", "/", nil)
		r.Header.Set("Range", rng)
		w := httptest.NewRecorder()
		w.Header().Set("Content-Type", "text/plain") // as setSymbolHeaders sets it: no sniffing
		serveInflated(w, r, time.Time{}, src)
		return w, src.restarts
	}
	var many strings.Builder
	many.WriteString("bytes=")
	for i := range 200 {
		if i > 0 {
			many.WriteString(",")
		}
		fmt.Fprintf(&many, "%d-%d", len(text)-1-i, len(text)-1-i) // each before the last
	}
	w, restarts := serve(many.String())
	if w.Code != http.StatusOK || !bytes.Equal(w.Body.Bytes(), text) || restarts != 1 {
		t.Errorf("200 ranges going backwards: %d, %d bytes, %d inflations; want 200, the source, 1", w.Code, w.Body.Len(), restarts)
	}
	w, restarts = serve("bytes=7-12")
	if w.Code != http.StatusPartialContent || !bytes.Equal(w.Body.Bytes(), text[7:13]) || restarts != 1 {
		t.Errorf("one range: %d %q, %d inflations; want 206, 1", w.Code, w.Body.Bytes(), restarts)
	}
}
