package handlers

import (
	"archive/zip"
	"bytes"
	"context"
	"crypto/sha1"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"errata/store"
	"errata/worker/dif"
	"errata/worker/ingest"
)

// tinyBuildID is the GNU build id of worker/dif/testdata/tiny.elf, whose
// .comment section is 0x27 bytes at 0x10e (readelf -S).
const tinyBuildID = "1b0744b61e51db55ac271ee28d84d991a2cfc6fa"

// symbolFixture is acme (owner victim) and rival (owner intruder, with a
// token of every scope), acme holding tiny.elf and a Breakpad file.
type symbolFixture struct {
	*testAPI
	token, intruder, noScope string
	elf, sym, bundle         []byte
}

// tinySource and tinyHeader are the sources of the fixture's source
// bundle, deflated and stored.
const (
	tinySource = "int main(void) { return 0; }\n"
	tinyHeader = "static inline int twice(int x) { return 2 * x; }\n"
)

// sourceBundle is a source bundle as sentry-cli writes it (SYSB, a
// version, then a zip with manifest.json) for tiny.elf's build id, with
// the sources srcs (manifest path to content).
func sourceBundle(t *testing.T, srcs map[string]string) []byte {
	t.Helper()
	var buf bytes.Buffer
	buf.WriteString("SYSB\x02\x00\x00\x00")
	zw := zip.NewWriter(&buf)
	files := map[string]any{}
	for p, content := range srcs {
		name := "files/_" + p
		// .h files stored, the others deflated, as zip writers choose.
		method := zip.Deflate
		if strings.HasSuffix(p, ".h") {
			method = zip.Store
		}
		w, err := zw.CreateHeader(&zip.FileHeader{Name: name, Method: method})
		if err != nil {
			t.Fatal(err)
		}
		io.WriteString(w, content)
		files[name] = map[string]any{"type": "source", "path": p}
	}
	w, _ := zw.Create("manifest.json")
	json.NewEncoder(w).Encode(map[string]any{"debug_id": "b644071b-511e-55db-ac27-1ee28d84d991",
		"code_id": tinyBuildID, "object_name": "tiny", "arch": "x86_64", "files": files})
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

const tinySym = "MODULE Linux x86_64 B644071B1E51DB55AC271EE28D84D9910 tiny\nPUBLIC 1000 0 _start\n"

func newSymbolFixture(t *testing.T) *symbolFixture {
	t.Helper()
	return symbolFixtureOf(t, newTestAPI(t))
}

// symbolFixtureOf makes the fixture in the database that a serves.
func symbolFixtureOf(t *testing.T, a *testAPI) *symbolFixture {
	t.Helper()
	f := &symbolFixture{testAPI: a}
	victim := a.user("victim@example.com")
	a.user("intruder@example.com")
	a.org("acme", "victim@example.com")
	a.project("acme", "web")
	a.org("rival", "intruder@example.com")
	a.project("rival", "web")
	f.token = a.token("victim@example.com", "project:read")
	f.noScope = a.token("victim@example.com", "org:read")
	f.intruder = a.token("intruder@example.com")
	var err error
	if f.elf, err = os.ReadFile("../worker/dif/testdata/tiny.elf"); err != nil {
		t.Fatal(err)
	}
	f.sym = []byte(tinySym)
	f.bundle = sourceBundle(t, map[string]string{"/src dir/a+b/main.c": tinySource, "/src dir/a+b/util.h": tinyHeader})
	var uploads []store.DebugUpload
	for _, u := range []struct {
		name string
		body []byte
	}{{"tiny.elf", f.elf}, {"tiny.sym", f.sym}, {"tiny.src.zip", f.bundle}} {
		objs, err := dif.ReadUpload(bytes.NewReader(u.body), int64(len(u.body)), u.name, "")
		if err != nil {
			t.Fatal(err)
		}
		uploads = append(uploads, store.DebugUpload{Content: bytes.NewReader(u.body),
			Objects: ingest.DebugFileObjects(objs, u.name, bytes.NewReader(u.body), int64(len(u.body)))})
	}
	if _, err := a.st.CreateDebugFiles(context.Background(), store.ProjectScope{UserID: victim, OrgSlug: "acme", ProjectSlug: "web"}, uploads, false); err != nil {
		t.Fatal(err)
	}
	return f
}

// get sends method path with the header h and no redirects followed.
func (f *symbolFixture) get(method, path string, h map[string]string) response {
	f.t.Helper()
	req, err := http.NewRequest(method, f.srv.URL+path, nil)
	if err != nil {
		f.t.Fatal(err)
	}
	for k, v := range h {
		req.Header.Set(k, v)
	}
	c := *f.srv.Client()
	c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	res, err := c.Do(req)
	if err != nil {
		f.t.Fatal(err)
	}
	defer res.Body.Close()
	var b bytes.Buffer
	b.ReadFrom(res.Body)
	return response{status: res.StatusCode, header: res.Header, body: b.Bytes()}
}

func bearer(tok string) map[string]string { return map[string]string{"Authorization": "Bearer " + tok} }

// TestDebuginfodRoutes holds the debuginfod routes to docs/symbol-server.md:
// headers, HEAD, Range, 406, sections (503 beyond the budget, 404 when
// damaged), text/plain errors with WWW-Authenticate, another
// organization's files 404, paths the mux would redirect, retention.
func TestDebuginfodRoutes(t *testing.T) {
	f := newSymbolFixture(t)
	exe := "/debuginfod/acme/buildid/" + tinyBuildID + "/executable"
	sum := sha1.Sum(f.elf)

	// A file served counts as used (the first time this process serves
	// it in an hour).
	f.exec(`UPDATE files SET date_used = now() - interval '30 days'`)
	r := f.get("GET", exe, bearer(f.token))
	if n := f.count(`SELECT count(*) FROM files WHERE date_used > now() - interval '1 minute'`); n != 1 {
		t.Errorf("%d files used in the last minute after a GET, want 1", n)
	}
	if r.status != http.StatusOK || !bytes.Equal(r.body, f.elf) {
		t.Fatalf("GET executable: %d, %d bytes, want 200 and tiny.elf", r.status, len(r.body))
	}
	for k, want := range map[string]string{
		"Content-Type": "application/octet-stream", "Content-Length": "1000", "X-Debuginfod-Size": "1000",
		"X-Debuginfod-File": "tiny.elf", "Etag": `"` + hex.EncodeToString(sum[:]) + `"`, "Cache-Control": "private",
	} {
		if got := r.header.Get(k); got != want {
			t.Errorf("GET executable: %s %q, want %q", k, got, want)
		}
	}
	if _, err := http.ParseTime(r.header.Get("Last-Modified")); err != nil {
		t.Errorf("GET executable: Last-Modified %q: %v", r.header.Get("Last-Modified"), err)
	}
	// The same in any case of the build id, and with Basic.
	basic := map[string]string{"Authorization": "Basic " + b64("gdb:"+f.token)}
	if r := f.get("GET", "/debuginfod/acme/buildid/"+strings.ToUpper(tinyBuildID)+"/executable", basic); r.status != http.StatusOK || !bytes.Equal(r.body, f.elf) {
		t.Errorf("GET executable with Basic and an upper-case id: %d", r.status)
	}
	if r := f.get("HEAD", exe, bearer(f.token)); r.status != http.StatusOK || len(r.body) != 0 || r.header.Get("Content-Length") != "1000" {
		t.Errorf("HEAD executable: %d, %d bytes, Content-Length %q", r.status, len(r.body), r.header.Get("Content-Length"))
	}
	h := bearer(f.token)
	h["Range"] = "bytes=1-3"
	if r := f.get("GET", exe, h); r.status != http.StatusPartialContent || string(r.body) != "ELF" {
		t.Errorf("GET executable with a range: %d %q, want 206 ELF", r.status, r.body)
	}
	h = bearer(f.token)
	h["X-DEBUGINFOD-MAXSIZE"] = "999"
	if r := f.get("GET", exe, h); r.status != http.StatusNotAcceptable {
		t.Errorf("GET executable with X-DEBUGINFOD-MAXSIZE 999: %d, want 406", r.status)
	}
	h["X-DEBUGINFOD-MAXSIZE"] = "1000"
	if r := f.get("GET", exe, h); r.status != http.StatusOK {
		t.Errorf("GET executable with X-DEBUGINFOD-MAXSIZE 1000: %d, want 200", r.status)
	}

	// Sources, deflated and stored in the bundle, with ranges.
	src := "/debuginfod/acme/buildid/" + tinyBuildID + "/source/src%20dir//a+b/./util.h"
	if r := f.get("GET", src, bearer(f.token)); r.status != http.StatusOK || string(r.body) != tinyHeader ||
		r.header.Get("Content-Length") != fmt.Sprint(len(tinyHeader)) {
		t.Errorf("GET a stored source: %d %q", r.status, r.body)
	}
	h = bearer(f.token)
	h["Range"] = "bytes=7-12"
	if r := f.get("GET", src, h); r.status != http.StatusPartialContent || string(r.body) != tinyHeader[7:13] {
		t.Errorf("GET a range of a stored source: %d %q", r.status, r.body)
	}
	if r := f.get("GET", strings.Replace(src, "util.h", "main.c", 1), h); r.status != http.StatusPartialContent || string(r.body) != tinySource[7:13] {
		t.Errorf("GET a range of a deflated source: %d %q", r.status, r.body)
	}
	if r := f.get("HEAD", strings.Replace(src, "util.h", "main.c", 1), bearer(f.token)); r.status != http.StatusOK || len(r.body) != 0 ||
		r.header.Get("Content-Length") != fmt.Sprint(len(tinySource)) {
		t.Errorf("HEAD a deflated source: %d %v", r.status, r.header)
	}
	if r := f.get("GET", strings.Replace(src, "util.h", "other.h", 1), bearer(f.token)); r.status != http.StatusNotFound {
		t.Errorf("GET a source the bundle does not hold: %d", r.status)
	}

	comment := "/debuginfod/acme/buildid/" + tinyBuildID + "/section/.comment"
	if r := f.get("GET", comment, bearer(f.token)); r.status != http.StatusOK || !bytes.Equal(r.body, f.elf[0x10e:0x10e+0x27]) {
		t.Errorf("GET section .comment: %d %q", r.status, r.body)
	}

	for _, c := range []struct {
		name, method, path string
		h                  map[string]string
		status             int
	}{
		{"no credential", "GET", exe, nil, 401},
		{"a wrong token", "GET", exe, bearer("sntrys_nothing"), 401},
		{"a wrong Basic password", "GET", exe, map[string]string{"Authorization": "Basic " + b64("gdb:nothing")}, 401},
		{"no reading scope", "GET", exe, bearer(f.noScope), 403},
		{"another organization's member", "GET", exe, bearer(f.intruder), 404},
		{"the intruder's own organization", "GET", strings.Replace(exe, "/acme/", "/rival/", 1), bearer(f.intruder), 404},
		{"an unknown organization", "GET", strings.Replace(exe, "/acme/", "/nobody/", 1), bearer(f.token), 404},
		{"a build id of odd length", "GET", "/debuginfod/acme/buildid/abc/executable", bearer(f.token), 400},
		{"a build id not hex", "GET", "/debuginfod/acme/buildid/xyzz/executable", bearer(f.token), 400},
		{"no debuginfo (no DWARF)", "GET", "/debuginfod/acme/buildid/" + tinyBuildID + "/debuginfo", bearer(f.token), 404},
		{"an unknown section", "GET", "/debuginfod/acme/buildid/" + tinyBuildID + "/section/.nothing", bearer(f.token), 404},
		{"an unknown route", "GET", "/debuginfod/acme/buildid/" + tinyBuildID + "/other", bearer(f.token), 404},
		{"a POST", "POST", exe, bearer(f.token), 405},
		// Paths that the mux would answer with a redirect.
		{"a source path with ..", "GET", "/debuginfod/acme/buildid/" + tinyBuildID + "/source/src/sub/../a.c", bearer(f.token), 404},
		{"a source path with //", "GET", "/debuginfod/acme/buildid/" + tinyBuildID + "/source//src//a.c", bearer(f.token), 404},
		{"a source path with NUL", "GET", "/debuginfod/acme/buildid/" + tinyBuildID + "/source/a%00.c", bearer(f.token), 400},
		{"an empty organization", "GET", "/debuginfod//buildid/" + tinyBuildID + "/executable", bearer(f.token), 404},
	} {
		r := f.get(c.method, c.path, c.h)
		if r.status != c.status {
			t.Errorf("%s: %s %s: %d %q, want %d", c.name, c.method, c.path, r.status, r.body, c.status)
			continue
		}
		if ct := r.header.Get("Content-Type"); !strings.HasPrefix(ct, "text/plain") || len(r.body) == 0 || len(r.body) > 200 {
			t.Errorf("%s: %d answer %q of type %q, want a short text/plain body", c.name, r.status, r.body, ct)
		}
		if c.status == 401 && r.header.Get("WWW-Authenticate") != `Basic realm="errata"` {
			t.Errorf("%s: WWW-Authenticate %q", c.name, r.header.Get("WWW-Authenticate"))
		}
	}

	// A damaged section header: 404; a table beyond the budget: 503.
	f.exec(`UPDATE debug_files SET sections = jsonb_set(sections, '{3,5}', '1') WHERE file_format = 'elf'`)
	if r := f.get("GET", comment, bearer(f.token)); r.status != http.StatusNotFound {
		t.Errorf("GET a damaged section: %d, want 404", r.status)
	}
	f.exec(`UPDATE debug_files SET sections = 'false' WHERE file_format = 'elf'`)
	if r := f.get("GET", comment, bearer(f.token)); r.status != http.StatusServiceUnavailable {
		t.Errorf("GET a section of a table beyond the budget: %d, want 503", r.status)
	}
	if r := f.get("GET", exe, bearer(f.token)); r.status != http.StatusOK {
		t.Errorf("GET the whole file of a table beyond the budget: %d, want 200", r.status)
	}

}

// TestSymbolLookupsSeeChanges: a symbol route remembers what it found,
// or did not, for store.SymbolLookupTime; the server that deletes or
// stores a debug file answers accordingly at once, another replica (a
// store of its own on the same database) within that time.
func TestSymbolLookupsSeeChanges(t *testing.T) {
	f := newSymbolFixture(t)
	ctx := context.Background()
	st, err := store.Open(ctx, store.Config{URL: f.db})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(st.Close)
	replica := serveTestAPI(t, st, f.db)
	exe := "/debuginfod/acme/buildid/" + tinyBuildID + "/executable"
	status := func(a *testAPI) int {
		t.Helper()
		req, _ := http.NewRequest("GET", a.srv.URL+exe, nil)
		req.Header.Set("Authorization", "Bearer "+f.token)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, res.Body)
		res.Body.Close()
		return res.StatusCode
	}
	// seenBy checks that the first request the replica gets once the
	// lookup time has passed since the change answers want. The replica's
	// last lookup was made before the change, so it is trusted until
	// before then; a slow machine only lets more time pass, so the check
	// asserts an order, not a wall time.
	seenBy := func(a *testAPI, want int, since time.Time) {
		t.Helper()
		time.Sleep(time.Until(since.Add(store.SymbolLookupTime + 10*time.Millisecond)))
		if got := status(a); got != want {
			t.Fatalf("the replica answers %d %s after the change, want %d", got, time.Since(since), want)
		}
	}
	if a, b := status(f.testAPI), status(replica); a != http.StatusOK || b != http.StatusOK {
		t.Fatalf("GET executable: %d and %d, want 200 from both", a, b)
	}

	victim := int64(f.count(`SELECT id FROM users WHERE email = 'victim@example.com'`))
	sc := store.ProjectScope{UserID: victim, OrgSlug: "acme", ProjectSlug: "web"}
	id := f.count(`SELECT id FROM debug_files WHERE object_name = 'tiny.elf'`)
	if err := f.st.DeleteDebugFile(ctx, sc, int64(id)); err != nil {
		t.Fatal(err)
	}
	deleted := time.Now()
	if got := status(f.testAPI); got != http.StatusNotFound {
		t.Errorf("the server that deleted it answers %d, want 404 at once", got)
	}
	seenBy(replica, http.StatusNotFound, deleted)

	objs, err := dif.ReadUpload(bytes.NewReader(f.elf), int64(len(f.elf)), "tiny.elf", "")
	if err != nil {
		t.Fatal(err)
	}
	upload := store.DebugUpload{Content: bytes.NewReader(f.elf),
		Objects: ingest.DebugFileObjects(objs, "tiny.elf", bytes.NewReader(f.elf), int64(len(f.elf)))}
	if _, err := f.st.CreateDebugFiles(ctx, sc, []store.DebugUpload{upload}, false); err != nil {
		t.Fatal(err)
	}
	stored := time.Now()
	if got := status(f.testAPI); got != http.StatusOK {
		t.Errorf("the server that stored it answers %d, want 200 at once", got)
	}
	seenBy(replica, http.StatusOK, stored)
}

// TestSymbolServerKeys reads the ELF and Breakpad files of the fixture
// by their symbol server keys, in upper and lower case; the compressed
// variants and other organizations are 404.
func TestSymbolServerKeys(t *testing.T) {
	f := newSymbolFixture(t)
	for _, c := range []struct {
		path   string
		want   []byte
		status int
	}{
		{"tiny.elf/elf-buildid-" + tinyBuildID + "/tiny.elf", f.elf, 200},
		{"tiny/B644071B1E51DB55AC271EE28D84D9910/tiny.sym", f.sym, 200},
		{"tiny/b644071b1e51db55ac271ee28d84d9910/tiny.sym", f.sym, 200},
		{"_.debug/elf-buildid-sym-" + tinyBuildID + "/_.debug", nil, 404}, // no DWARF
		{"tiny.elf/elf-buildid-" + tinyBuildID + "/tiny.el_", nil, 404},
		{"tiny.elf/elf-buildid-" + tinyBuildID + "/file.ptr", nil, 404},
		{"tiny.elf/elf-buildid-" + tinyBuildID, nil, 404},
		{"crash.pdb/222D986FDE9D56714C4C44205044422E1/crash.pdb", nil, 404},
	} {
		for _, p := range []string{c.path, strings.ToUpper(c.path), strings.ToLower(c.path)} {
			r := f.get("GET", "/symbols/acme/"+p, bearer(f.token))
			if r.status != c.status || c.status == 200 && !bytes.Equal(r.body, c.want) {
				t.Errorf("GET /symbols/acme/%s: %d, %d bytes, want %d", p, r.status, len(r.body), c.status)
			}
			if r := f.get("GET", "/symbols/acme/"+p, bearer(f.intruder)); r.status != http.StatusNotFound {
				t.Errorf("GET /symbols/acme/%s by another organization's member: %d, want 404", p, r.status)
			}
		}
	}
	if r := f.get("GET", "/symbols/acme/tiny/B644071B1E51DB55AC271EE28D84D9910/tiny.sym", nil); r.status != 401 ||
		r.header.Get("WWW-Authenticate") != `Basic realm="errata"` {
		t.Errorf("GET a key without credentials: %d %v", r.status, r.header)
	}
}

func b64(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }

// TestDebugFilesFallBackToTheCodeID holds files/dsyms/?debug_id=&code_id=
// to Sentry's lookup (docs/symbol-server.md): the files of the debug id, else
// those of the code id.
func TestDebugFilesFallBackToTheCodeID(t *testing.T) {
	f := newSymbolFixture(t)
	list := func(q string) string {
		t.Helper()
		r := f.do("GET", "/api/0/projects/acme/web/files/dsyms/?"+q, f.token, nil)
		var out []struct{ ObjectName string }
		if r.status != http.StatusOK || json.Unmarshal(r.body, &out) != nil {
			t.Fatalf("GET files/dsyms/?%s: %d %s", q, r.status, r.body)
		}
		var names []string
		for _, d := range out {
			names = append(names, d.ObjectName)
		}
		slices.Sort(names)
		return strings.Join(names, " ")
	}
	const other = "00000000-0000-0000-0000-000000000001"
	// tiny.elf and its source bundle have both ids.
	if got := list("debug_id=" + other + "&code_id=" + tinyBuildID); got != "tiny.elf tiny.src.zip" {
		t.Errorf("an unknown debug id and the code id: %v, want tiny.elf and its bundle by their code id", got)
	}
	if got := list("debug_id=b644071b-511e-55db-ac27-1ee28d84d991&code_id=00ff"); got != "tiny.elf tiny.src.zip" {
		t.Errorf("the debug id and another code id: %v, want tiny.elf and its bundle by their debug id", got)
	}
	if got := list("debug_id=" + other + "&code_id=00ff"); got != "" {
		t.Errorf("neither: %v, want none", got)
	}
}

// TestHomePage holds GET / to the sign-in page for a signed-out visitor,
// which names the API root, the OpenAPI document and the symbol bases
// (as the home page of a signed-in person does: the browser tests), and
// an unknown path to the API's JSON 404.
func TestHomePage(t *testing.T) {
	a := newTestAPI(t)
	r := a.do("GET", "/", "", nil)
	if r.status != http.StatusOK || !strings.HasPrefix(r.header.Get("Content-Type"), "text/html") ||
		!strings.Contains(string(r.body), "Sign in") || r.header.Get("Content-Security-Policy") == "" {
		t.Fatalf("GET /: %d %q %s", r.status, r.header.Get("Content-Type"), r.body)
	}
	for _, want := range []string{a.srv.URL + "/api/0/<", a.srv.URL + "/api/0/openapi.json",
		a.srv.URL + "/debuginfod/{organization_slug}/", a.srv.URL + "/symbols/{organization_slug}/"} {
		if !strings.Contains(string(r.body), want) {
			t.Errorf("GET / does not name %q:\n%s", want, r.body)
		}
	}
	if r := a.do("HEAD", "/", "", nil); r.status != http.StatusOK || len(r.body) != 0 {
		t.Errorf("HEAD /: %d, %d bytes", r.status, len(r.body))
	}
	if r := a.do("GET", "/nothing", "", nil); r.status != http.StatusNotFound || !strings.Contains(string(r.body), `"detail"`) {
		t.Errorf("GET /nothing: %d %s, want the JSON 404", r.status, r.body)
	}
}

// TestSymbolRoutesMatrix is the isolation and scope matrix of the symbol
// routes, which routes.go lists among the direct routes (dispatched
// before the mux): every route, for every caller. No credential or a bad one is 401;
// a token without a reading scope 403; a member of another organization,
// with every scope, 404 (never 401 or 403, which would tell that the
// organization exists); each reading scope of the victim 200.
func TestSymbolRoutesMatrix(t *testing.T) {
	f := newSymbolFixture(t)
	// tiny.elf made a debug file with DWARF, for the debuginfo route.
	f.exec(`UPDATE debug_files SET data = jsonb_set(data, '{features}', '["debug", "symtab"]') WHERE file_format = 'elf'`)
	scoped := map[string]string{}
	for _, sc := range debuggerRead.scopes {
		scoped[sc] = f.token
		if sc != "project:read" {
			scoped[sc] = f.testAPI.token("victim@example.com", sc)
		}
	}
	id := tinyBuildID
	routes := map[string]string{
		patDebuginfo:  "/debuginfod/acme/buildid/" + id + "/debuginfo",
		patExecutable: "/debuginfod/acme/buildid/" + id + "/executable",
		patSource:     "/debuginfod/acme/buildid/" + id + "/source/src%20dir/a+b/sub/../main.c",
		patSection:    "/debuginfod/acme/buildid/" + id + "/section/.comment",
		patSymbols:    "/symbols/acme/tiny.elf/elf-buildid-" + id + "/tiny.elf",
	}
	symbolPatterns := slices.Collect(maps.Values(debuginfodRoutes))
	for _, rt := range directRoutes(Deps{}) {
		symbolPatterns = append(symbolPatterns, rt.pattern)
	}
	for _, p := range symbolPatterns {
		if _, ok := routes[p]; !ok && p != patDebuginfod {
			t.Errorf("the matrix has no request of %s", p)
		}
	}
	for pattern, path := range routes {
		for _, c := range []struct {
			caller string
			h      map[string]string
			status int
		}{
			{"no credential", nil, 401},
			{"a bad token", bearer("sntryu_0000"), 401},
			{"a bad Basic password", map[string]string{"Authorization": "Basic " + b64("x:sntryu_0000")}, 401},
			{"org:read only", bearer(f.noScope), 403},
			{"another organization's member", bearer(f.intruder), 404},
			{"another organization's member with Basic", map[string]string{"Authorization": "Basic " + b64("x:"+f.intruder)}, 404},
		} {
			if r := f.get("GET", path, c.h); r.status != c.status {
				t.Errorf("%s, %s: %d, want %d", pattern, c.caller, r.status, c.status)
			}
		}
		for sc, tok := range scoped {
			if r := f.get("GET", path, bearer(tok)); r.status != 200 || len(r.body) == 0 {
				t.Errorf("%s, the victim with %s: %d, want 200", pattern, sc, r.status)
			}
		}
	}
	if r := f.get("GET", routes[patSource], bearer(f.token)); string(r.body) != tinySource ||
		r.header.Get("X-Debuginfod-File") != "/src dir/a+b/main.c" {
		t.Errorf("source: %q, X-Debuginfod-File %q", r.body, r.header.Get("X-Debuginfod-File"))
	}
	// The source bundle by its symbol server key too.
	if r := f.get("GET", "/symbols/acme/tiny.pdb/B644071B511E55DBAC271EE28D84D9910/tiny.src.zip", bearer(f.token)); r.status != 200 || !bytes.Equal(r.body, f.bundle) {
		t.Errorf("source bundle by key: %d", r.status)
	}
}
