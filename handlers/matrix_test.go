package handlers

// The isolation and scope matrices: every route of routes.go, checked from
// the route table itself, so that an auditor reads one table to see that no
// caller reaches another organization's or another user's data, and that
// every route asks for the scopes routes.go says.

import (
	"archive/zip"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/jackc/pgx/v5"

	"errata/authn"
	"errata/store"
	"errata/store/storetest"
	"errata/worker"
)

// matrixUser is a user of the matrix fixture with a token of every scope.
type matrixUser struct {
	id    int64
	token string
}

// matrixFixture is two organizations with records of the same names: acme,
// owned by the victim, and rival, owned by the intruder. Each has project
// web, environment production linked to it, and release 1.0.0 linked to
// web with a deploy to production and the file ~/app.js. The intruder holds
// a token of every scope, so that only membership can stop it.
type matrixFixture struct {
	*testAPI
	conn      *pgx.Conn
	snapshotQ string // the query of snapshot
	victim    matrixUser
	intruder  matrixUser
	appFile   map[string]string // organization slug -> id of its ~/app.js
	// bundleFile is, per organization slug, the id of ~/app.min.js in the
	// artifact bundle matrixBundleID, found by debug id matrixDebugID.
	bundleFile map[string]string
	// difID is the id of acme's debug file hello.sym (a query's {dif_id});
	// doomedDifID that of the debug file the DELETE of debug files removes
	// ({doomed_dif_id}).
	difID, doomedDifID string
	n                  int // makes names unique
}

// The artifact bundle both organizations have, indexed by debug id.
const (
	matrixBundleID = "6e1b7a1c-2f0e-4b7e-9a53-0d6f3c1b2a90"
	matrixDebugID  = "c0ffee00-1234-4abc-8def-0123456789ab"
	// The bundle that the DELETE of artifact bundles removes.
	doomedBundleID = "d0d0d0d0-0000-4000-8000-000000000001"
	doomedDebugID  = "d0d0d0d0-1111-4000-8000-000000000001"
)

func newMatrixFixture(t *testing.T) *matrixFixture {
	t.Helper()
	f := &matrixFixture{testAPI: newTestAPI(t), appFile: map[string]string{}, bundleFile: map[string]string{}}
	conn, err := pgx.Connect(context.Background(), f.db)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	f.conn = conn
	f.snapshotQ = snapshotQuery(t, conn)

	f.victim = f.account(t, "owner@acme.example")
	f.intruder = f.account(t, "owner@rival.example")
	for _, org := range []string{"acme", "rival"} {
		f.org(org, "owner@"+org+".example")
		f.project(org, "web")
		if _, err := f.st.CreateEnvironment(context.Background(), org, "production", "web", false); err != nil {
			t.Fatal(err)
		}
		f.release(t, org, "1.0.0")
		f.deploy(t, org, "1.0.0")
		f.appFile[org] = f.file(t, org, "1.0.0", "~/app.js")
		f.bundleFile[org] = f.debugIDBundle(t, org, matrixBundleID, matrixDebugID)
		if id := f.debugFile(t, org, matrixModuleID); org == "acme" {
			f.difID = id
		}
	}
	return f
}

// The Breakpad module id of the debug file both organizations have, and
// its debug id.
const (
	matrixModuleID   = "33221100554477668899AABBCCDDEEFF1"
	matrixDifDebugID = "33221100-5544-7766-8899-aabbccddeeff-1"
)

// dsymZip is a files/dsyms/ upload of the Breakpad file hello.sym of
// module id moduleID.
func dsymZip(t *testing.T, moduleID string) matrixBody {
	return zipUpload(t, "hello.sym", "MODULE Linux x86_64 "+moduleID+" hello\nFILE 0 hello.c\n")
}

// zipUpload is a files/dsyms/ upload of a zip of one file, name.
func zipUpload(t *testing.T, name, content string) matrixBody {
	t.Helper()
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	w, _ := zw.Create(name)
	io.WriteString(w, content)
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	b, ct := multipartBody(t, nil, []filePart{{"file", "symbols.zip", buf.Bytes()}})
	return matrixBody{ct, b}
}

// matrixProguardUUID is the UUID of matrixProguardMapping, as sentry-cli
// computes it.
const (
	matrixProguardUUID    = "12a2e4ee-8705-5f91-8369-3a5b10a48225"
	matrixProguardMapping = "# compiler: R8\ncom.example.MainActivity -> a.a:\n" +
		"    1:1:void <init>():10:10 -> <init>\n    2:5:void onCreate(android.os.Bundle):14:17 -> a\n"
)

// proguardZip is a files/dsyms/ upload of matrixProguardMapping, as
// sentry-cli 2.x's upload-proguard sends it.
func proguardZip(t *testing.T) matrixBody {
	return zipUpload(t, "proguard/"+matrixProguardUUID+".txt", matrixProguardMapping)
}

// debugFile uploads, as org's owner to its project web, the Breakpad file
// hello.sym of module id moduleID and returns the id of its debug file.
func (f *matrixFixture) debugFile(t *testing.T, org, moduleID string) string {
	t.Helper()
	res := f.send(t, "POST /api/0/projects/{organization_slug}/{project_slug}/files/dsyms/{$}",
		map[string]string{"organization_slug": org, "project_slug": "web"}, dsymZip(t, moduleID), f.ownerOf(org))
	res.expect(t, http.StatusCreated, nil)
	var difs []struct {
		ID string `json:"id"`
	}
	if err := json.Unmarshal(res.body, &difs); err != nil || len(difs) != 1 {
		t.Fatalf("upload of %s: %v %s", moduleID, err, res.body)
	}
	return difs[0].ID
}

// debugIDBundle assembles, in org for project web, an artifact bundle
// without a release whose one file ~/app.min.js has the debug id debugID,
// and returns that file's id.
func (f *matrixFixture) debugIDBundle(t *testing.T, org, bundleID, debugID string) string {
	t.Helper()
	owner := f.victim
	if org != "acme" {
		owner = f.intruder
	}
	return f.testAPI.debugIDBundle(t, owner.id, org, bundleID, debugID)
}

// debugIDBundle assembles, as the user ownerID in org for project web, an
// artifact bundle without a release whose one file ~/app.min.js has the
// debug id debugID, and returns that file's id.
func (a *testAPI) debugIDBundle(t *testing.T, ownerID int64, org, bundleID, debugID string) string {
	t.Helper()
	ctx := context.Background()
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	w, _ := zw.Create("files/_/_/app.min.js")
	io.WriteString(w, "x()\n//# debugId="+debugID+"\n")
	w, _ = zw.Create("manifest.json")
	json.NewEncoder(w).Encode(map[string]any{"org": org, "debug_id": bundleID, "files": map[string]any{
		"files/_/_/app.min.js": map[string]any{"url": "~/app.min.js", "type": "minified_source",
			"headers": map[string]string{"debug-id": debugID}},
	}})
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	data := buf.Bytes()
	if err := a.st.SaveChunks(ctx, ownerID, org, func(yield func(store.Chunk, error) bool) {
		yield(store.Chunk{SHA1: sha1Hex(data), Data: data}, nil)
	}); err != nil {
		t.Fatal(err)
	}
	orgID := storetest.Count(t, a.db, `SELECT id FROM organizations WHERE slug = $1`, org)
	payload, _ := json.Marshal(store.AssemblyJob{OrganizationID: int64(orgID), OrgSlug: org, Projects: []string{"web"},
		Checksum: sha1Hex(data), Chunks: []string{sha1Hex(data)}})
	asm := &worker.Assembler{Store: a.st, Log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	if err := asm.Run(ctx, payload); err != nil {
		t.Fatalf("assemble the debug-id bundle of %s: %v", org, err)
	}
	found, err := a.st.ArtifactLookup(ctx, store.ProjectScope{UserID: ownerID, OrgSlug: org, ProjectSlug: "web"}, debugID, 10)
	if err != nil || len(found) != 1 {
		t.Fatalf("the debug-id bundle of %s: %v %v", org, found, err)
	}
	return strconv.FormatInt(found[0].ID, 10)
}

// account creates a user with a token of every scope.
func (f *matrixFixture) account(t *testing.T, email string) matrixUser {
	t.Helper()
	id, err := f.st.CreateUser(context.Background(), email, strings.Split(email, "@")[0])
	if err != nil {
		t.Fatal(err)
	}
	return matrixUser{id: id, token: f.tokenFor(t, id, authn.Scopes)}
}

// tokenFor creates a token with exactly scopes (none is allowed) for the
// user id, whatever its email is now.
func (f *matrixFixture) tokenFor(t *testing.T, id int64, scopes []string) string {
	t.Helper()
	u, err := f.st.User(context.Background(), id)
	if err != nil {
		t.Fatalf("user %d: %v", id, err)
	}
	tok, hash := authn.NewToken()
	if _, err := f.st.CreateToken(context.Background(), u.Email, hash, scopes, "matrix"); err != nil {
		t.Fatal(err)
	}
	return tok
}

// ownerOf is the owner of org's token.
func (f *matrixFixture) ownerOf(org string) string {
	if org == "acme" {
		return f.victim.token
	}
	return f.intruder.token
}

// name returns a name no other call returns.
func (f *matrixFixture) name(prefix string) string {
	f.n++
	return prefix + "-" + strconv.Itoa(f.n)
}

// release creates version in org, linked to web, as the org's owner.
func (f *matrixFixture) release(t *testing.T, org, version string) {
	t.Helper()
	res := f.send(t, "POST /api/0/organizations/{organization_slug}/releases/{$}",
		map[string]string{"organization_slug": org}, jsonBody(map[string]any{"version": version, "projects": []string{"web"}}), f.ownerOf(org))
	res.expect(t, http.StatusCreated, nil)
}

// deploy records a deploy of version of org to production.
func (f *matrixFixture) deploy(t *testing.T, org, version string) {
	t.Helper()
	res := f.send(t, "POST /api/0/organizations/{organization_slug}/releases/{version}/deploys/{$}",
		map[string]string{"organization_slug": org, "version": version}, jsonBody(map[string]any{"environment": "production"}), f.ownerOf(org))
	res.expect(t, http.StatusCreated, nil)
}

// file uploads a file called name to version of org and returns its id.
func (f *matrixFixture) file(t *testing.T, org, version, name string) string {
	t.Helper()
	res := f.send(t, "POST /api/0/organizations/{organization_slug}/releases/{version}/files/{$}",
		map[string]string{"organization_slug": org, "version": version}, fileBody(t, name), f.ownerOf(org))
	res.expect(t, http.StatusCreated, nil)
	return res.field(t, "id").(string)
}

// address gives the user id the address email, verified or not.
func (f *matrixFixture) address(t *testing.T, id int64, email string, verified bool) {
	t.Helper()
	ctx := context.Background()
	if _, err := f.st.AddEmailAddress(ctx, id, email, store.Mail{Subject: "s", Text: "t", HTML: "h"}); err != nil {
		t.Fatalf("add %s: %v", email, err)
	}
	if verified {
		if err := f.st.VerifyEmailAddress(ctx, id, email); err != nil {
			t.Fatalf("verify %s: %v", email, err)
		}
	}
}

// member creates a user who is a plain member of acme.
func (f *matrixFixture) member(t *testing.T, prefix string) matrixUser {
	t.Helper()
	email := f.name(prefix) + "@acme.example"
	u := f.account(t, email)
	f.testAPI.member("acme", email, "member")
	return u
}

// standard names the records both organizations have, in acme, and the
// victim as user.
func (f *matrixFixture) standard() map[string]string {
	return map[string]string{
		"organization_slug": "acme",
		"project_slug":      "web",
		"version":           "1.0.0",
		"name":              "production",
		"file_id":           f.appFile["acme"],
		"user_id":           strconv.FormatInt(f.victim.id, 10),
		"bundle_id":         matrixBundleID,
	}
}

// matrixBody is the body of a request and its type.
type matrixBody struct {
	contentType string
	data        []byte
}

// jsonBody is v as JSON; the test's values (maps of strings, lists and
// booleans) always encode.
func jsonBody(v any) matrixBody {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return matrixBody{"application/json", b}
}

func formBody(v url.Values) matrixBody {
	return matrixBody{"application/x-www-form-urlencoded", []byte(v.Encode())}
}

// fileBody is a single-file upload called name.
func fileBody(t *testing.T, name string) matrixBody {
	t.Helper()
	b, ct := multipartBody(t, [][2]string{{"name", name}}, []filePart{{"file", "app.js", []byte("x()")}})
	return matrixBody{ct, b}
}

// chunkBody is a chunk upload of data.
func chunkBody(t *testing.T, data []byte) matrixBody {
	t.Helper()
	b, ct := multipartBody(t, nil, []filePart{{"file", sha1Hex(data), data}})
	return matrixBody{ct, b}
}

var wildcardPattern = regexp.MustCompile(`\{([a-z_]+)\}`)

// wildcards returns the names of a route pattern's path values.
func wildcards(pattern string) []string {
	var names []string
	for _, m := range wildcardPattern.FindAllStringSubmatch(pattern, -1) {
		names = append(names, m[1])
	}
	return names
}

// send makes the request of pattern with its path values filled from
// values.
func (f *matrixFixture) send(t *testing.T, pattern string, values map[string]string, body matrixBody, token string) response {
	t.Helper()
	return f.sendQuery(t, pattern, "", values, body, token)
}

// sendQuery is send with a query string. The answer leaves out what
// differs between any two requests: the Date and X-Request-Id headers, and
// the request's own path in Link.
func (f *matrixFixture) sendQuery(t *testing.T, pattern, query string, values map[string]string, body matrixBody, token string) response {
	t.Helper()
	method, path, _ := strings.Cut(pattern, " ")
	path = strings.TrimSuffix(path, "{$}")
	query = strings.NewReplacer("{dif_id}", f.difID, "{doomed_dif_id}", f.doomedDifID).Replace(query)
	for _, name := range wildcards(pattern) {
		v, ok := values[name]
		if !ok {
			t.Fatalf("%s: no value for {%s}", pattern, name)
		}
		path = strings.Replace(path, "{"+name+"}", url.PathEscape(v), 1)
	}
	var r io.Reader
	if body.data != nil {
		r = bytes.NewReader(body.data)
	}
	target := f.srv.URL + path
	if query != "" {
		target += "?" + query
	}
	req, err := http.NewRequest(method, target, r)
	if err != nil {
		t.Fatal(err)
	}
	if body.contentType != "" {
		req.Header.Set("Content-Type", body.contentType)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	res := f.exchange(t, req)
	res.header.Del("Date")
	res.header.Del("X-Request-Id")
	if link := res.header.Get("Link"); link != "" {
		res.header.Set("Link", strings.ReplaceAll(link, path, "<path>"))
	}
	return res
}

// exchange sends req to the server and returns its whole answer.
func (f *matrixFixture) exchange(t *testing.T, req *http.Request) response {
	t.Helper()
	res, err := f.srv.Client().Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", req.Method, req.URL.Path, err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return response{status: res.StatusCode, header: res.Header, body: b}
}

// answer is a response in a form cmp can compare.
type answer struct {
	Status int
	Header http.Header
	Body   string
}

func answerOf(r response) answer { return answer{r.status, r.header, string(r.body)} }

// sameAnswer fails t unless got is exactly want.
func sameAnswer(t *testing.T, what string, want, got response) {
	t.Helper()
	if diff := cmp.Diff(answerOf(want), answerOf(got)); diff != "" {
		t.Errorf("%s (-want +got):\n%s", what, diff)
	}
}

// volatileColumns are left out of snapshots: they change on reads.
var volatileColumns = map[string]string{"api_tokens": "last_used", "files": "date_used", "blob_owners": "date_used"}

// snapshotQuery builds one query that returns, for every table of the
// database, its row count and a checksum of its rows.
func snapshotQuery(t *testing.T, conn *pgx.Conn) string {
	t.Helper()
	rows, err := conn.Query(context.Background(), `SELECT tablename FROM pg_tables WHERE schemaname = 'public' ORDER BY tablename`)
	if err != nil {
		t.Fatal(err)
	}
	tables, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil || len(tables) == 0 {
		t.Fatalf("tables: %v %v", tables, err)
	}
	var parts []string
	for _, tbl := range tables {
		row := "to_jsonb(t)"
		if col, ok := volatileColumns[tbl]; ok {
			row += " - '" + col + "'"
		}
		parts = append(parts, fmt.Sprintf(`SELECT '%s', count(*) || ' rows ' || coalesce(md5(string_agg(r, E'\n' ORDER BY r)), '')
			FROM (SELECT (%s)::text AS r FROM %s t) s`, tbl, row, pgx.Identifier{tbl}.Sanitize()))
	}
	return strings.Join(parts, "\nUNION ALL\n")
}

// snapshot returns each table's row count and checksum.
func (f *matrixFixture) snapshot(t *testing.T) map[string]string {
	t.Helper()
	rows, err := f.conn.Query(context.Background(), f.snapshotQ)
	if err != nil {
		t.Fatal(err)
	}
	snap := map[string]string{}
	var table, sum string
	if _, err := pgx.ForEachRow(rows, []any{&table, &sum}, func() error {
		snap[table] = sum
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return snap
}

// unchanged fails t when the database changed between two snapshots.
func unchanged(t *testing.T, what string, before, after map[string]string) {
	t.Helper()
	if diff := cmp.Diff(before, after); diff != "" {
		t.Errorf("%s changed the database (-before +after):\n%s", what, diff)
	}
}

// matrixRequest is a request on a record of its owner that succeeds.
type matrixRequest struct {
	owner  matrixUser        // whose record it is; the victim unless a route needs a user of its own
	values map[string]string // path values naming the record
	query  string            // the query string, the same for every request of the check
	body   matrixBody
	want   int // the owner's status
	// missingBody, when set, is body naming no record, with values.
	missingBody *matrixBody
	// cross, when set, is a request in the intruder's own organization that
	// names a record of the victim's in its body.
	cross *crossRequest
}

// crossRequest is a request of the intruder, in its own organization, that
// names a record of the victim; missing is what the same request got
// before the victim's record existed.
type crossRequest struct {
	values  map[string]string
	body    matrixBody
	missing response
}

// matrixEntry is how the matrices test one route.
type matrixEntry struct {
	// prepare creates what the request names, under the same names in both
	// organizations, and returns the owner's request.
	prepare func(t *testing.T, f *matrixFixture) matrixRequest
	// special replaces the isolation matrix's comparison with the answer of
	// a missing record, for routes that name no record of an organization
	// or of a user by a path value; note says what it checks.
	special func(t *testing.T, f *matrixFixture, pattern string)
	note    string
	// queries, when set, are query strings that take other paths through
	// the handler; the isolation check runs once with each.
	queries []string
}

// missingValues name no record, for each path value of the routes.
var missingValues = map[string]string{
	"organization_slug": "no-such-org",
	"project_slug":      "no-such-project",
	"version":           "no-such-version",
	"name":              "no-such-environment",
	"file_id":           "999999999",
	"user_id":           "999999999",
	"bundle_id":         "00000000-0000-0000-0000-000000000000",
	"repo_id":           "999999999",
	"member_id":         "999999999",
	"token":             strings.Repeat("A", 43),
	"team_slug":         "no-such-team",
}

// globalIDs are path values that are unique across organizations: the
// intruder's own organization with the victim's id must answer as it does
// an id that does not exist.
var globalIDs = []string{"file_id", "repo_id", "member_id"}

// on is the victim's request on the standard records, with values
// overridden by the pairs of kv.
func (f *matrixFixture) on(want int, body matrixBody, kv ...string) matrixRequest {
	values := f.standard()
	for i := 0; i < len(kv); i += 2 {
		values[kv[i]] = kv[i+1]
	}
	return matrixRequest{owner: f.victim, values: values, body: body, want: want}
}

// standing is an entry whose request names the standard records.
func standing(want int, body matrixBody) matrixEntry {
	return matrixEntry{prepare: func(t *testing.T, f *matrixFixture) matrixRequest { return f.on(want, body) }}
}

// asUser is an entry whose request names a user of its own, created by
// prepare, and its body.
func asUser(want int, prepare func(t *testing.T, f *matrixFixture) (matrixUser, matrixBody)) matrixEntry {
	return matrixEntry{prepare: func(t *testing.T, f *matrixFixture) matrixRequest {
		u, body := prepare(t, f)
		r := f.on(want, body, "user_id", strconv.FormatInt(u.id, 10))
		r.owner = u
		return r
	}}
}

var noBody matrixBody

// matrixEntries describes every route of routes.go, keyed by its pattern.
func matrixEntries() map[string]matrixEntry {
	// Both organizations have the ProGuard mapping matrixProguardUUID in
	// web, built for the release com.example@1.0.
	proguardReleases := func(t *testing.T, f *matrixFixture) matrixRequest {
		for _, org := range []string{"acme", "rival"} {
			values := map[string]string{"organization_slug": org, "project_slug": "web"}
			f.send(t, "POST /api/0/projects/{organization_slug}/{project_slug}/files/dsyms/{$}",
				values, proguardZip(t), f.ownerOf(org)).expect(t, http.StatusCreated, nil)
			res := f.send(t, "POST /api/0/projects/{organization_slug}/{project_slug}/files/proguard-artifact-releases/{$}",
				values, jsonBody(map[string]any{"release_name": "com.example@1.0", "proguard_uuid": matrixProguardUUID}), f.ownerOf(org))
			if res.status != http.StatusCreated && res.status != http.StatusConflict {
				t.Fatalf("the release of the mapping in %s: %d %s", org, res.status, res.body)
			}
		}
		return f.on(http.StatusOK, noBody)
	}
	proguardRelease := matrixEntry{prepare: func(t *testing.T, f *matrixFixture) matrixRequest {
		proguardReleases(t, f)
		return f.on(http.StatusCreated, jsonBody(map[string]any{"release_name": f.name("com.example@"), "proguard_uuid": matrixProguardUUID}))
	}}
	createRelease := func(route string) matrixEntry {
		return matrixEntry{prepare: func(t *testing.T, f *matrixFixture) matrixRequest {
			v := f.name("created")
			f.release(t, "rival", v) // the intruder's organization has it already
			body := map[string]any{"version": v}
			if route == "organization" {
				body["projects"] = []string{"web"}
			}
			return f.on(http.StatusCreated, jsonBody(body))
		}}
	}
	deleteRelease := matrixEntry{prepare: func(t *testing.T, f *matrixFixture) matrixRequest {
		v := f.name("doomed")
		f.release(t, "acme", v)
		f.release(t, "rival", v)
		return f.on(http.StatusNoContent, noBody, "version", v)
	}}
	uploadFile := matrixEntry{prepare: func(t *testing.T, f *matrixFixture) matrixRequest {
		name := "~/" + f.name("upload") + ".js"
		f.file(t, "rival", "1.0.0", name)
		return f.on(http.StatusCreated, fileBody(t, name))
	}}
	deleteFile := matrixEntry{prepare: func(t *testing.T, f *matrixFixture) matrixRequest {
		name := "~/" + f.name("doomed") + ".js"
		id := f.file(t, "acme", "1.0.0", name)
		f.file(t, "rival", "1.0.0", name)
		return f.on(http.StatusNoContent, noBody, "file_id", id)
	}}
	renameFile := matrixEntry{prepare: func(t *testing.T, f *matrixFixture) matrixRequest {
		id := f.file(t, "acme", "1.0.0", "~/"+f.name("before")+".js")
		return f.on(http.StatusOK, jsonBody(map[string]any{"name": "~/" + f.name("renamed") + ".js"}), "file_id", id)
	}}
	getFile := standing(http.StatusOK, noBody)
	getFile.queries = []string{"", "download=1"} // the record, and its bytes
	victimAddress := func(want int) matrixEntry {
		return matrixEntry{prepare: func(t *testing.T, f *matrixFixture) matrixRequest {
			email := f.name("address") + "@acme.example"
			f.address(t, f.victim.id, email, false)
			r := f.on(want, jsonBody(map[string]string{"email": email}))
			nobody := jsonBody(map[string]string{"email": "nobody@nowhere.example"})
			r.missingBody = &nobody
			return r
		}}
	}

	return map[string]matrixEntry{
		// Probes and the API root.
		"GET /healthz": {prepare: noRecord(http.StatusOK), special: answersEveryoneAlike,
			note: "answers every caller alike"},
		"GET /readyz": {prepare: noRecord(http.StatusOK), special: answersEveryoneAlike,
			note: "answers every caller alike"},
		"GET /api/0/{$}": {prepare: noRecord(http.StatusOK), special: namesTheCaller,
			note: "names the caller and its token's scopes"},
		"GET /api/0/openapi.json": {prepare: noRecord(http.StatusOK), special: answersEveryoneAlike,
			note: "the API description, the same for every caller"},

		// Environments, releases and deploys.
		"GET /api/0/organizations/{organization_slug}/environments/{$}":                    standing(http.StatusOK, noBody),
		"GET /api/0/organizations/{organization_slug}/storage/{$}":                         standing(http.StatusOK, noBody),
		"GET /api/0/projects/{organization_slug}/{project_slug}/environments/{$}":          standing(http.StatusOK, noBody),
		"PUT /api/0/projects/{organization_slug}/{project_slug}/environments/{name}/{$}":   standing(http.StatusOK, jsonBody(map[string]any{"isHidden": true})),
		"GET /api/0/projects/{organization_slug}/{project_slug}/environments/{name}/{$}":   standing(http.StatusOK, noBody),
		"POST /api/0/organizations/{organization_slug}/releases/{$}":                       createRelease("organization"),
		"GET /api/0/organizations/{organization_slug}/releases/{$}":                        standing(http.StatusOK, noBody),
		"GET /api/0/organizations/{organization_slug}/releases/{version}/{$}":              standing(http.StatusOK, noBody),
		"PUT /api/0/organizations/{organization_slug}/releases/{version}/{$}":              standing(http.StatusOK, jsonBody(map[string]any{"ref": "intruded"})),
		"DELETE /api/0/organizations/{organization_slug}/releases/{version}/{$}":           deleteRelease,
		"POST /api/0/projects/{organization_slug}/{project_slug}/releases/{$}":             createRelease("project"),
		"GET /api/0/projects/{organization_slug}/{project_slug}/releases/{$}":              standing(http.StatusOK, noBody),
		"GET /api/0/projects/{organization_slug}/{project_slug}/releases/{version}/{$}":    standing(http.StatusOK, noBody),
		"PUT /api/0/projects/{organization_slug}/{project_slug}/releases/{version}/{$}":    standing(http.StatusOK, jsonBody(map[string]any{"ref": "intruded"})),
		"DELETE /api/0/projects/{organization_slug}/{project_slug}/releases/{version}/{$}": deleteRelease,
		"POST /api/0/organizations/{organization_slug}/releases/{version}/deploys/{$}":     standing(http.StatusCreated, jsonBody(map[string]any{"environment": "production"})),
		"GET /api/0/organizations/{organization_slug}/releases/{version}/deploys/{$}":      standing(http.StatusOK, noBody),

		// Repositories and commits.
		"GET /api/0/organizations/{organization_slug}/repos/{$}": standing(http.StatusOK, noBody),
		"POST /api/0/organizations/{organization_slug}/repos/{$}": {prepare: func(t *testing.T, f *matrixFixture) matrixRequest {
			return f.on(http.StatusCreated, jsonBody(map[string]any{"name": f.name("repo"), "provider": "git", "url": "https://git.example/acme.git"}))
		}},
		"GET /api/0/organizations/{organization_slug}/repos/{repo_id}/commits/{$}":                  {prepare: prepareRepositoryCommits},
		"GET /api/0/organizations/{organization_slug}/releases/{version}/commits/{$}":               standing(http.StatusOK, noBody),
		"GET /api/0/projects/{organization_slug}/{project_slug}/releases/{version}/commits/{$}":     standing(http.StatusOK, noBody),
		"GET /api/0/organizations/{organization_slug}/releases/{version}/previous-with-commits/{$}": standing(http.StatusOK, noBody),
		"GET /api/0/organizations/{organization_slug}/releases/{version}/commitfiles/{$}":           standing(http.StatusOK, noBody),

		// Users, email addresses, notifications and recovery codes. Another
		// user's id must answer as an id that does not exist: 404 where the
		// route checks {user_id}, the caller's own record where it does not.
		"GET /api/0/organizations/{$}": {prepare: noRecord(http.StatusOK), special: listsOnlyTheCallersOrganizations,
			note: "lists the caller's organizations only"},
		// A new organization: the victim is a superuser, who may create
		// one; the intruder is not (ORG_CREATION=superuser).
		"POST /api/0/organizations/{$}": {prepare: func(t *testing.T, f *matrixFixture) matrixRequest {
			f.exec(`UPDATE users SET is_superuser = true WHERE id = $1`, f.victim.id)
			return matrixRequest{owner: f.victim, body: jsonBody(map[string]any{"name": f.name("created")}), want: http.StatusCreated}
		}, special: createsNothingForOthers, note: "refuses a caller who may not create, and changes nothing"},
		"GET /api/0/organizations/{organization_slug}/{$}":           standing(http.StatusOK, noBody),
		"GET /api/0/organizations/{organization_slug}/projects/{$}":  standing(http.StatusOK, noBody),
		"GET /api/0/projects/{organization_slug}/{project_slug}/{$}": standing(http.StatusOK, noBody),
		// Organization and project management: the owner renames its own,
		// creates a project whose slug the intruder's organization has
		// already, and deletes a project both organizations have.
		"PUT /api/0/organizations/{organization_slug}/{$}":           standing(http.StatusOK, jsonBody(map[string]any{"name": "Intruded"})),
		"PUT /api/0/projects/{organization_slug}/{project_slug}/{$}": standing(http.StatusOK, jsonBody(map[string]any{"name": "Intruded"})),
		"POST /api/0/organizations/{organization_slug}/projects/{$}": {prepare: func(t *testing.T, f *matrixFixture) matrixRequest {
			slug := f.name("created")
			f.project("rival", slug)
			return f.on(http.StatusCreated, jsonBody(map[string]any{"name": slug, "slug": slug}))
		}},
		"DELETE /api/0/projects/{organization_slug}/{project_slug}/{$}": {prepare: func(t *testing.T, f *matrixFixture) matrixRequest {
			slug := f.name("doomed")
			f.project("acme", slug)
			f.project("rival", slug)
			return f.on(http.StatusNoContent, noBody, "project_slug", slug)
		}},
		// Members and invitations: the victim reads its own membership,
		// promotes a new member, and a new owner leaves (member:read
		// removes the caller alone). An invitation's token is its proof.
		"GET /api/0/organizations/{organization_slug}/members/{$}": standing(http.StatusOK, noBody),
		"POST /api/0/organizations/{organization_slug}/members/{$}": {prepare: func(t *testing.T, f *matrixFixture) matrixRequest {
			return f.on(http.StatusCreated, jsonBody(map[string]any{"email": f.name("invited") + "@example.com"}))
		}},
		"GET /api/0/organizations/{organization_slug}/members/{member_id}/{$}": {prepare: func(t *testing.T, f *matrixFixture) matrixRequest {
			return f.on(http.StatusOK, noBody, "member_id", f.membershipID(t, f.victim.id))
		}},
		"PUT /api/0/organizations/{organization_slug}/members/{member_id}/{$}": {prepare: func(t *testing.T, f *matrixFixture) matrixRequest {
			u := f.member(t, "promoted")
			return f.on(http.StatusOK, jsonBody(map[string]any{"orgRole": "admin"}), "member_id", f.membershipID(t, u.id))
		}},
		"DELETE /api/0/organizations/{organization_slug}/members/{member_id}/{$}": {prepare: func(t *testing.T, f *matrixFixture) matrixRequest {
			email := f.name("leaver") + "@acme.example"
			u := f.account(t, email)
			f.testAPI.member("acme", email, "owner")
			r := f.on(http.StatusNoContent, noBody, "member_id", f.membershipID(t, u.id))
			r.owner = u
			return r
		}},
		"GET /api/0/projects/{organization_slug}/{project_slug}/members/{$}": standing(http.StatusOK, noBody),
		"GET /api/0/accept-invite/{organization_slug}/{member_id}/{token}/{$}": {
			prepare: invitationRequest(http.StatusOK, noBody), special: invitationIsItsOwnProof,
			note: "another invitation's token or member, or another organization, is answered as no invitation"},
		"POST /api/0/accept-invite/{organization_slug}/{member_id}/{token}/{$}": {
			prepare: invitationRequest(http.StatusOK, jsonBody(map[string]any{"password": "correct horse battery staple"})),
			special: invitationIsItsOwnProof,
			note:    "another invitation's token or member, or another organization, is answered as no invitation"},

		// Teams, their members and their projects (teams_test.go): a team
		// of the same name in both organizations; a member joins, steps
		// down and leaves itself.
		"GET /api/0/organizations/{organization_slug}/teams/{$}":                                    standing(http.StatusOK, noBody),
		"POST /api/0/organizations/{organization_slug}/teams/{$}":                                   newTeamEntry,
		"GET /api/0/organizations/{organization_slug}/user-teams/{$}":                               standing(http.StatusOK, noBody),
		"GET /api/0/teams/{organization_slug}/{team_slug}/{$}":                                      onTeam(http.StatusOK, noBody, false, false),
		"PUT /api/0/teams/{organization_slug}/{team_slug}/{$}":                                      renameTeamEntry,
		"DELETE /api/0/teams/{organization_slug}/{team_slug}/{$}":                                   onTeam(http.StatusNoContent, noBody, false, false),
		"GET /api/0/teams/{organization_slug}/{team_slug}/members/{$}":                              onTeam(http.StatusOK, noBody, true, false),
		"POST /api/0/organizations/{organization_slug}/members/{member_id}/teams/{team_slug}/{$}":   onTeam(http.StatusCreated, noBody, false, false),
		"PUT /api/0/organizations/{organization_slug}/members/{member_id}/teams/{team_slug}/{$}":    onTeam(http.StatusOK, jsonBody(map[string]any{"teamRole": "contributor"}), true, false),
		"DELETE /api/0/organizations/{organization_slug}/members/{member_id}/teams/{team_slug}/{$}": onTeam(http.StatusOK, noBody, true, false),
		"GET /api/0/teams/{organization_slug}/{team_slug}/projects/{$}":                             onTeam(http.StatusOK, noBody, false, true),
		"POST /api/0/teams/{organization_slug}/{team_slug}/projects/{$}":                            newTeamProjectEntry,
		"GET /api/0/projects/{organization_slug}/{project_slug}/teams/{$}":                          onTeam(http.StatusOK, noBody, false, true),
		"POST /api/0/projects/{organization_slug}/{project_slug}/teams/{team_slug}/{$}":             onTeam(http.StatusCreated, noBody, false, false),
		"DELETE /api/0/projects/{organization_slug}/{project_slug}/teams/{team_slug}/{$}":           onTeam(http.StatusOK, noBody, false, true),
		"GET /api/0/users/{$}": {prepare: noRecord(http.StatusOK), special: listsOnlyTheCaller,
			note: "lists the caller only"},
		"GET /api/0/users/{user_id}/{$}": standing(http.StatusOK, noBody),
		"PUT /api/0/users/{user_id}/{$}": standing(http.StatusOK, jsonBody(map[string]any{"name": "Intruded"})),
		"DELETE /api/0/users/{user_id}/{$}": asUser(http.StatusNoContent, func(t *testing.T, f *matrixFixture) (matrixUser, matrixBody) {
			return f.member(t, "leaver"), noBody
		}),
		"GET /api/0/users/{user_id}/emails/{$}": standing(http.StatusOK, noBody),
		"POST /api/0/users/{user_id}/emails/{$}": {prepare: func(t *testing.T, f *matrixFixture) matrixRequest {
			return f.on(http.StatusCreated, jsonBody(map[string]string{"email": f.name("added") + "@acme.example"}))
		}},
		"PUT /api/0/users/{user_id}/emails/{$}": asUser(http.StatusOK, func(t *testing.T, f *matrixFixture) (matrixUser, matrixBody) {
			u := f.member(t, "switcher")
			email := f.name("verified") + "@acme.example"
			f.address(t, u.id, email, true)
			return u, jsonBody(map[string]string{"email": email})
		}),
		"DELETE /api/0/users/{user_id}/emails/{$}":       victimAddress(http.StatusNoContent),
		"POST /api/0/users/{user_id}/emails/confirm/{$}": victimAddress(http.StatusNoContent),
		"GET /api/0/users/{user_id}/notifications/{$}":   standing(http.StatusOK, noBody),
		"PUT /api/0/users/{user_id}/notifications/{$}":   standing(http.StatusOK, jsonBody(map[string]any{"subscribeByDefault": false})),
		"GET /api/0/generate-recovery-codes/{$}": {prepare: noRecord(http.StatusOK), special: recoveryCodesAreTheCallers,
			note: "generates codes for the caller only: the victim's pending codes survive"},
		"POST /api/0/generate-recovery-codes/{$}": {prepare: prepareRecoveryCode, special: recoveryCodeIsTheCallers,
			note: "another user's pending code is answered as a code nobody holds"},
		// The caller's API tokens take a session only (apitokens_test.go
		// checks that a session naming another user's token gets a 404).
		"GET /api/0/api-tokens/{$}": {prepare: noRecord(http.StatusForbidden), special: refusesTokens,
			note: "refuses every token: a session's route"},
		"POST /api/0/api-tokens/{$}": {prepare: sessionRequest(jsonBody(map[string]any{"scopes": []string{"org:read"}})),
			special: refusesTokens, note: "refuses every token: a session's route"},
		"DELETE /api/0/api-tokens/{$}": {prepare: sessionRequest(jsonBody(map[string]any{"tokenId": "{victim_token_id}"})),
			special: refusesTokens, note: "refuses every token: a session's route"},
		"DELETE /api/0/api-tokens/{token_id}/{$}": {prepare: sessionRequest(noBody), special: refusesTokens,
			note: "refuses every token: a session's route"},
		"POST /api/0/auth/email/verify/{$}": emailKeyEntry(http.StatusNoContent, keyInBody, keyProvesItsOwnAddress,
			"a key for another user's address, or tampered to name it, is answered as a key of no address"),

		// Release files, chunk upload and assembly.
		"GET /api/0/organizations/{organization_slug}/releases/{version}/files/{$}":                        standing(http.StatusOK, noBody),
		"POST /api/0/organizations/{organization_slug}/releases/{version}/files/{$}":                       uploadFile,
		"GET /api/0/organizations/{organization_slug}/releases/{version}/files/{file_id}/{$}":              getFile,
		"PUT /api/0/organizations/{organization_slug}/releases/{version}/files/{file_id}/{$}":              renameFile,
		"DELETE /api/0/organizations/{organization_slug}/releases/{version}/files/{file_id}/{$}":           deleteFile,
		"GET /api/0/projects/{organization_slug}/{project_slug}/releases/{version}/files/{$}":              standing(http.StatusOK, noBody),
		"POST /api/0/projects/{organization_slug}/{project_slug}/releases/{version}/files/{$}":             uploadFile,
		"GET /api/0/projects/{organization_slug}/{project_slug}/releases/{version}/files/{file_id}/{$}":    getFile,
		"PUT /api/0/projects/{organization_slug}/{project_slug}/releases/{version}/files/{file_id}/{$}":    renameFile,
		"DELETE /api/0/projects/{organization_slug}/{project_slug}/releases/{version}/files/{file_id}/{$}": deleteFile,
		"DELETE /api/0/organizations/{organization_slug}/files/source-maps/{$}": {
			prepare: func(t *testing.T, f *matrixFixture) matrixRequest {
				v := "doomed-files"
				for _, org := range []string{"acme", "rival"} {
					f.send(t, "POST /api/0/organizations/{organization_slug}/releases/{$}", map[string]string{"organization_slug": org},
						jsonBody(map[string]any{"version": v, "projects": []string{"web"}}), f.ownerOf(org))
					f.file(t, org, v, "~/"+f.name("doomed")+".js")
				}
				return f.on(http.StatusNoContent, noBody)
			},
			queries: []string{"name=doomed-files"},
		},
		"DELETE /api/0/projects/{organization_slug}/{project_slug}/files/source-maps/{$}": {
			prepare: func(t *testing.T, f *matrixFixture) matrixRequest {
				v := "doomed-files"
				for _, org := range []string{"acme", "rival"} {
					f.send(t, "POST /api/0/organizations/{organization_slug}/releases/{$}", map[string]string{"organization_slug": org},
						jsonBody(map[string]any{"version": v, "projects": []string{"web"}}), f.ownerOf(org))
					f.file(t, org, v, "~/"+f.name("doomed")+".js")
				}
				return f.on(http.StatusNoContent, noBody)
			},
			queries: []string{"name=doomed-files"},
		},
		"GET /api/0/organizations/{organization_slug}/chunk-upload/{$}": standing(http.StatusOK, noBody),
		"POST /api/0/organizations/{organization_slug}/chunk-upload/{$}": {prepare: func(t *testing.T, f *matrixFixture) matrixRequest {
			return f.on(http.StatusOK, chunkBody(t, []byte(f.name("chunk"))))
		}},
		"POST /api/0/organizations/{organization_slug}/releases/{version}/assemble/{$}": {prepare: func(t *testing.T, f *matrixFixture) matrixRequest {
			sum := sha1Hex([]byte(f.name("bundle")))
			return f.on(http.StatusOK, jsonBody(map[string]any{"checksum": sum, "chunks": []string{sum}}))
		}},
		"POST /api/0/organizations/{organization_slug}/artifactbundle/assemble/{$}": {prepare: prepareArtifactBundle},

		// Artifact bundles indexed by debug ids.
		"GET /api/0/projects/{organization_slug}/{project_slug}/files/artifact-bundles/{$}": {
			prepare: func(t *testing.T, f *matrixFixture) matrixRequest { return f.on(http.StatusOK, noBody) },
			queries: []string{"", "query=" + matrixDebugID, "query=" + matrixBundleID},
		},
		"DELETE /api/0/projects/{organization_slug}/{project_slug}/files/artifact-bundles/{$}": {
			prepare: func(t *testing.T, f *matrixFixture) matrixRequest {
				// The doomed bundle, in both organizations, again.
				f.debugIDBundle(t, "acme", doomedBundleID, doomedDebugID)
				f.debugIDBundle(t, "rival", doomedBundleID, doomedDebugID)
				return f.on(http.StatusNoContent, noBody)
			},
			queries: []string{"bundleId=" + doomedBundleID},
		},
		"GET /api/0/projects/{organization_slug}/{project_slug}/artifact-bundles/{bundle_id}/files/{$}": standing(http.StatusOK, noBody),
		"GET /api/0/projects/{organization_slug}/{project_slug}/artifact-bundles/{bundle_id}/files/{file_id}/{$}": {prepare: func(t *testing.T, f *matrixFixture) matrixRequest {
			return f.on(http.StatusOK, noBody, "file_id", f.bundleFile["acme"])
		}},
		"GET /api/0/projects/{organization_slug}/{project_slug}/artifact-lookup/{$}": {
			prepare: func(t *testing.T, f *matrixFixture) matrixRequest { return f.on(http.StatusOK, noBody) },
			queries: []string{"debug_id=" + matrixDebugID},
		},
		"POST /api/0/projects/{organization_slug}/{project_slug}/symbolicate-js/{$}": {prepare: func(t *testing.T, f *matrixFixture) matrixRequest {
			return f.on(http.StatusOK, jsonBody(map[string]any{
				"stacktraces": []any{map[string]any{"frames": []any{map[string]any{"abs_path": "https://app.example/app.min.js", "lineno": 1, "colno": 1}}}},
				"modules":     []any{map[string]any{"type": "sourcemap", "code_file": "https://app.example/app.min.js", "debug_id": matrixDebugID}},
				"release":     "1.0.0",
			}))
		}},
		"POST /api/0/projects/{organization_slug}/{project_slug}/symbolicate-jvm/{$}": {prepare: func(t *testing.T, f *matrixFixture) matrixRequest {
			return f.on(http.StatusOK, jsonBody(map[string]any{
				"stacktraces": []any{map[string]any{"frames": []any{map[string]any{"module": "a.b", "function": "c", "lineno": 1}}}},
				"modules":     []any{map[string]any{"type": "proguard", "uuid": matrixDebugID}},
			}))
		}},

		// Debug information files.
		"POST /api/0/projects/{organization_slug}/{project_slug}/files/difs/assemble/{$}": {prepare: func(t *testing.T, f *matrixFixture) matrixRequest {
			sum := sha1Hex([]byte(f.name("dif")))
			return f.on(http.StatusOK, jsonBody(map[string]any{sum: map[string]any{"name": "hello", "chunks": []string{sum}}}))
		}},
		"GET /api/0/projects/{organization_slug}/{project_slug}/files/dsyms/{$}": {
			prepare: func(t *testing.T, f *matrixFixture) matrixRequest { return f.on(http.StatusOK, noBody) },
			queries: []string{"", "debug_id=" + matrixDifDebugID, "query=hello", "id={dif_id}"},
		},
		"POST /api/0/projects/{organization_slug}/{project_slug}/files/dsyms/{$}": {prepare: func(t *testing.T, f *matrixFixture) matrixRequest {
			return f.on(http.StatusCreated, dsymZip(t, matrixModuleID))
		}},
		"DELETE /api/0/projects/{organization_slug}/{project_slug}/files/dsyms/{$}": {
			prepare: func(t *testing.T, f *matrixFixture) matrixRequest {
				id := fmt.Sprintf("%032X1", f.n+1)
				f.n++
				f.doomedDifID = f.debugFile(t, "acme", id)
				f.debugFile(t, "rival", id)
				return f.on(http.StatusNoContent, noBody)
			},
			queries: []string{"id={doomed_dif_id}"},
		},
		"POST /api/0/projects/{organization_slug}/{project_slug}/files/proguard-artifact-releases":     proguardRelease,
		"POST /api/0/projects/{organization_slug}/{project_slug}/files/proguard-artifact-releases/{$}": proguardRelease,
		"GET /api/0/projects/{organization_slug}/{project_slug}/files/proguard-artifact-releases": {
			prepare: proguardReleases, queries: []string{"proguard_uuid=" + matrixProguardUUID},
		},
		"GET /api/0/projects/{organization_slug}/{project_slug}/files/proguard-artifact-releases/{$}": {
			prepare: proguardReleases, queries: []string{"proguard_uuid=" + matrixProguardUUID},
		},
		"GET /api/0/projects/{organization_slug}/{project_slug}/files/dsyms/unknown/{$}": {
			prepare: func(t *testing.T, f *matrixFixture) matrixRequest { return f.on(http.StatusOK, noBody) },
			queries: []string{"checksums=" + sha1Hex([]byte("nothing")) + "&checksums=" + sha1Hex([]byte("else"))},
		},

		// Native resolution: the module of the standard debug file.
		"POST /api/0/projects/{organization_slug}/{project_slug}/symbolicate/{$}": {prepare: func(t *testing.T, f *matrixFixture) matrixRequest {
			return f.on(http.StatusOK, jsonBody(map[string]any{
				"modules":     []map[string]any{{"type": "elf", "debug_id": matrixDifDebugID, "image_addr": "0x1000", "image_size": 4096}},
				"stacktraces": []map[string]any{{"frames": []map[string]any{{"instruction_addr": "0x1010"}, {"instruction_addr": "0x9000"}}}},
			}))
		}},
	}
}

// membershipID is the id of the membership of the user id in acme.
func (f *matrixFixture) membershipID(t *testing.T, id int64) string {
	t.Helper()
	var m int64
	if err := f.conn.QueryRow(context.Background(), `
		SELECT m.id FROM memberships m JOIN organizations o ON o.id = m.organization_id
		WHERE o.slug = 'acme' AND m.user_id = $1`, id).Scan(&m); err != nil {
		t.Fatal(err)
	}
	return strconv.FormatInt(m, 10)
}

// invitation has the owner of org invite a new address, and returns the
// path values of its link.
func (f *matrixFixture) invitation(t *testing.T, org string) map[string]string {
	t.Helper()
	email := f.name("invited") + "@example.com"
	f.send(t, "POST /api/0/organizations/{organization_slug}/members/{$}", map[string]string{"organization_slug": org},
		jsonBody(map[string]any{"email": email}), f.ownerOf(org)).expect(t, http.StatusCreated, nil)
	ms, err := f.st.Outbox(context.Background(), email)
	if err != nil || len(ms) != 1 {
		t.Fatalf("the invitation of %s: %v %v", email, ms, err)
	}
	m := regexp.MustCompile(`/accept-invite/([^/\s]+)/([0-9]+)/([A-Za-z0-9_-]+)/`).FindStringSubmatch(ms[0].Text)
	if m == nil {
		t.Fatalf("no link in %q", ms[0].Text)
	}
	return map[string]string{"organization_slug": m[1], "member_id": m[2], "token": m[3]}
}

// invitationRequest is the request of an accept-invite route on a new
// invitation of acme, without a credential.
func invitationRequest(want int, body matrixBody) func(t *testing.T, f *matrixFixture) matrixRequest {
	return func(t *testing.T, f *matrixFixture) matrixRequest {
		return matrixRequest{owner: f.victim, values: f.invitation(t, "acme"), body: body, want: want}
	}
}

// invitationIsItsOwnProof checks that an accept-invite route answers
// another invitation's token, another invitation's member id, and the
// invitation in another organization exactly as a token of no invitation,
// changing nothing; the invitation's own link then works.
func invitationIsItsOwnProof(t *testing.T, f *matrixFixture, pattern string) {
	r := invitationRequest(0, noBody)(t, f)
	if strings.HasPrefix(pattern, "POST") {
		r.body = jsonBody(map[string]any{"password": "correct horse battery staple"})
	}
	other := f.invitation(t, "rival")
	send := func(values map[string]string) response { return f.send(t, pattern, values, r.body, "") }
	before := f.snapshot(t)
	missing := send(with(r.values, "token", missingValues["token"]))
	missing.expect(t, http.StatusNotFound, `{"detail":"Not Found"}`)
	sameAnswer(t, "another invitation's token", missing, send(with(r.values, "token", other["token"])))
	sameAnswer(t, "another invitation's member id", missing, send(with(r.values, "member_id", other["member_id"])))
	sameAnswer(t, "the invitation in another organization", missing, send(with(r.values, "organization_slug", "rival")))
	unchanged(t, "requests without the invitation's own token", before, f.snapshot(t))
	send(r.values).expect(t, http.StatusOK, nil)
}

// noRecord is the request of a route that names no record.
func noRecord(want int) func(t *testing.T, f *matrixFixture) matrixRequest {
	return func(t *testing.T, f *matrixFixture) matrixRequest {
		return matrixRequest{owner: f.victim, want: want}
	}
}

// sessionRequest is the entry of an api-tokens route: the victim's request
// naming a token of the victim's, with body; {victim_token_id} in the body
// becomes its id. A token is refused there: 403.
func sessionRequest(body matrixBody) func(t *testing.T, f *matrixFixture) matrixRequest {
	return func(t *testing.T, f *matrixFixture) matrixRequest {
		tok := f.tokenFor(t, f.victim.id, []string{"org:read"})
		var id int64
		if err := f.conn.QueryRow(context.Background(), `SELECT id FROM api_tokens WHERE token_hash = $1`,
			authn.Hash(tok)).Scan(&id); err != nil {
			t.Fatal(err)
		}
		idText := strconv.FormatInt(id, 10)
		named := body
		named.data = bytes.ReplaceAll(body.data, []byte("{victim_token_id}"), []byte(idText))
		return matrixRequest{owner: f.victim, values: map[string]string{"token_id": idText}, body: named,
			want: http.StatusForbidden}
	}
}

// refusesTokens checks that the intruder's token, of every scope, naming a
// token of the victim's gets the 403 of a token on a session's route, the
// answer it gets naming a token that does not exist, and changes nothing.
func refusesTokens(t *testing.T, f *matrixFixture, pattern string) {
	r := sessionRequest(matrixBody{})(t, f)
	if strings.HasPrefix(pattern, "DELETE") && len(wildcards(pattern)) == 0 {
		r.body = jsonBody(map[string]any{"tokenId": r.values["token_id"]})
	}
	before := f.snapshot(t)
	foreign := f.send(t, pattern, r.values, r.body, f.intruder.token)
	foreign.expect(t, http.StatusForbidden, `{"detail":"Permission denied"}`)
	missing := f.send(t, pattern, map[string]string{"token_id": "999999999"}, jsonBody(map[string]any{"tokenId": "999999999"}), f.intruder.token)
	sameAnswer(t, "the intruder's answer against that of a missing token", missing, foreign)
	unchanged(t, "the intruder's request", before, f.snapshot(t))
}

// prepareRepositoryCommits gives both organizations a repository of the
// same name with one commit, of a release of its own, and asks for acme's
// commits.
func prepareRepositoryCommits(t *testing.T, f *matrixFixture) matrixRequest {
	name, version := f.name("repo"), f.name("commits")
	var acme int64
	for _, org := range []string{"acme", "rival"} {
		owner := f.victim.id
		if org == "rival" {
			owner = f.intruder.id
		}
		repo, err := f.st.CreateRepository(context.Background(), owner, org, store.RepositoryInput{Name: name})
		if err != nil {
			t.Fatal(err)
		}
		if org == "acme" {
			acme = repo.ID
		}
		f.release(t, org, version)
		commits := []store.CommitInput{{ID: sha1Hex([]byte(name)), Repository: name}}
		if _, err := f.st.UpdateRelease(context.Background(), owner, org, "", version,
			store.ReleaseUpdate{Commits: store.ReleaseCommitsInput{Commits: &commits}}); err != nil {
			t.Fatal(err)
		}
	}
	return f.on(http.StatusOK, noBody, "repo_id", strconv.FormatInt(acme, 10))
}

// prepareArtifactBundle gives acme a chunk and asks to assemble it. Its
// cross request asks the same in rival, which must answer as it did before
// acme had the chunk: chunks belong to the organization that uploaded them.
func prepareArtifactBundle(t *testing.T, f *matrixFixture) matrixRequest {
	const pattern = "POST /api/0/organizations/{organization_slug}/artifactbundle/assemble/{$}"
	data := []byte(f.name("bundle"))
	sum := sha1Hex(data)
	body := jsonBody(map[string]any{"checksum": sum, "chunks": []string{sum}, "projects": []string{"web"}, "version": "1.0.0"})
	rival := map[string]string{"organization_slug": "rival"}
	before := f.send(t, pattern, rival, body, f.intruder.token)
	f.send(t, "POST /api/0/organizations/{organization_slug}/chunk-upload/{$}", map[string]string{"organization_slug": "acme"},
		chunkBody(t, data), f.victim.token).expect(t, http.StatusOK, nil)
	r := f.on(http.StatusOK, body)
	r.cross = &crossRequest{values: rival, body: body, missing: before}
	return r
}

// answersEveryoneAlike checks that a route that names nothing answers the
// intruder, the victim and a caller without a token alike.
func answersEveryoneAlike(t *testing.T, f *matrixFixture, pattern string) {
	anonymous := f.send(t, pattern, nil, noBody, "")
	anonymous.expect(t, http.StatusOK, nil)
	sameAnswer(t, "the intruder's answer", anonymous, f.send(t, pattern, nil, noBody, f.intruder.token))
	sameAnswer(t, "the victim's answer", anonymous, f.send(t, pattern, nil, noBody, f.victim.token))
}

// namesTheCaller checks that the API root tells the intruder about itself.
func namesTheCaller(t *testing.T, f *matrixFixture, pattern string) {
	want := jsonBody(map[string]any{
		"version": "0",
		"user":    map[string]any{"id": strconv.FormatInt(f.intruder.id, 10), "email": "owner@rival.example", "name": "owner"},
		"auth":    map[string]any{"scopes": authn.Scopes},
	})
	f.send(t, pattern, nil, noBody, f.intruder.token).expect(t, http.StatusOK, string(want.data))
}

// listsOnlyTheCallersOrganizations checks that the organization list of
// the intruder holds its own organization alone.
func listsOnlyTheCallersOrganizations(t *testing.T, f *matrixFixture, pattern string) {
	res := f.send(t, pattern, nil, noBody, f.intruder.token)
	res.expect(t, http.StatusOK, nil)
	var orgs []struct{ Slug string }
	if err := json.Unmarshal(res.body, &orgs); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]struct{ Slug string }{{"rival"}}, orgs); diff != "" {
		t.Errorf("organizations (-want +got):\n%s", diff)
	}
}

// createsNothingForOthers checks that the intruder, no superuser, is
// refused the creation of an organization and changes nothing.
func createsNothingForOthers(t *testing.T, f *matrixFixture, pattern string) {
	before := f.snapshot(t)
	f.send(t, pattern, nil, jsonBody(map[string]any{"name": "acme", "slug": "acme"}), f.intruder.token).
		expect(t, http.StatusUnauthorized, `{"detail": "Organizations are not allowed to be created by this user."}`)
	unchanged(t, "the intruder's request", before, f.snapshot(t))
}

// listsOnlyTheCaller checks that the user list of the intruder holds the
// intruder alone.
func listsOnlyTheCaller(t *testing.T, f *matrixFixture, pattern string) {
	res := f.send(t, pattern, nil, noBody, f.intruder.token)
	res.expect(t, http.StatusOK, nil)
	var users []struct{ ID string }
	if err := json.Unmarshal(res.body, &users); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]struct{ ID string }{{strconv.FormatInt(f.intruder.id, 10)}}, users); diff != "" {
		t.Errorf("users (-want +got):\n%s", diff)
	}
}

// recoveryCodes asks for new codes as the holder of token.
func (f *matrixFixture) recoveryCodes(t *testing.T, token string) []string {
	t.Helper()
	res := f.send(t, "GET /api/0/generate-recovery-codes/{$}", nil, noBody, token)
	res.expect(t, http.StatusOK, nil)
	var out struct{ Codes []string }
	if err := json.Unmarshal(res.body, &out); err != nil || len(out.Codes) != 10 {
		t.Fatalf("codes %s: %v", res.body, err)
	}
	return out.Codes
}

// prepareRecoveryCode has the victim ask for codes and send one back.
func prepareRecoveryCode(t *testing.T, f *matrixFixture) matrixRequest {
	codes := f.recoveryCodes(t, f.victim.token)
	return matrixRequest{owner: f.victim, body: jsonBody(map[string]string{"code": codes[0]}), want: http.StatusNoContent}
}

// recoveryCodesAreTheCallers checks that the intruder's codes are its own
// and that asking for them leaves the victim's pending codes alone.
func recoveryCodesAreTheCallers(t *testing.T, f *matrixFixture, pattern string) {
	victims := f.recoveryCodes(t, f.victim.token)
	before := f.snapshot(t)
	intruders := f.recoveryCodes(t, f.intruder.token)
	unchanged(t, "asking for codes", before, f.snapshot(t))
	for _, c := range intruders {
		if slices.Contains(victims, c) {
			t.Errorf("the intruder got the victim's code %s", c)
		}
	}
	f.send(t, "POST /api/0/generate-recovery-codes/{$}", nil, jsonBody(map[string]string{"code": victims[0]}), f.victim.token).
		expect(t, http.StatusNoContent, nil)
}

// recoveryCodeIsTheCallers checks that the intruder sending the victim's
// pending code, with or without pending codes of its own, gets the answer
// of a code that nobody holds and changes nothing; the victim's code then
// still works.
func recoveryCodeIsTheCallers(t *testing.T, f *matrixFixture, pattern string) {
	intruder := f.name("intruder") + "@rival.example"
	u := f.account(t, intruder) // no pending codes yet
	victims := f.recoveryCodes(t, f.victim.token)
	send := func(code string) response {
		return f.send(t, pattern, nil, jsonBody(map[string]string{"code": code}), u.token)
	}
	for _, pending := range []bool{false, true} {
		var intruders []string
		if pending {
			intruders = f.recoveryCodes(t, u.token)
		}
		nobodys := ""
		for i := 0; nobodys == ""; i++ {
			if c := fmt.Sprintf("%08d", i); !slices.Contains(victims, c) && !slices.Contains(intruders, c) {
				nobodys = c
			}
		}
		before := f.snapshot(t)
		missing := send(nobodys)
		foreign := send(victims[0])
		unchanged(t, "the intruder's codes", before, f.snapshot(t))
		if missing.status != http.StatusBadRequest {
			t.Errorf("a code nobody holds: status %d, want 400", missing.status)
		}
		sameAnswer(t, fmt.Sprintf("the victim's code, intruder with pending codes %t", pending), missing, foreign)
	}
	f.send(t, pattern, nil, jsonBody(map[string]string{"code": victims[0]}), f.victim.token).
		expect(t, http.StatusNoContent, nil)
}

// emailKeys are confirmation keys around one unverified address of the
// victim.
type emailKeys struct {
	address  string
	genuine  string // the victim's key for address
	foreign  string // a key errata signed for the intruder and address
	tampered string // the victim's payload with the intruder's signature
	nothing  string // a key errata signed for the intruder and an address nobody has
}

// newEmailKeys gives the victim a new unverified address and the keys
// around it.
func (f *matrixFixture) newEmailKeys(t *testing.T) emailKeys {
	t.Helper()
	address := f.name("confirm") + "@acme.example"
	f.address(t, f.victim.id, address, false)
	keys := authn.NewEmailKeys(testSecret)
	exp := time.Now().Add(time.Hour)
	k := emailKeys{
		address: address,
		genuine: keys.Sign(authn.EmailKey{UserID: f.victim.id, Email: address, Expires: exp}),
		foreign: keys.Sign(authn.EmailKey{UserID: f.intruder.id, Email: address, Expires: exp}),
		nothing: keys.Sign(authn.EmailKey{UserID: f.intruder.id, Email: "nobody@nowhere.example", Expires: exp}),
	}
	payload, _, _ := strings.Cut(k.genuine, ".")
	_, sig, _ := strings.Cut(k.foreign, ".")
	k.tampered = payload + "." + sig
	return k
}

// presentKey builds the request of a route that presents a confirmation
// key.
type presentKey func(key string) (map[string]string, matrixBody)

// keyInBody is the way the API's route takes a key: in a JSON body. (The
// confirmation page, which takes it in its path and form, has its own
// checks: TestConfirmPageKeys.)
var keyInBody presentKey = func(key string) (map[string]string, matrixBody) {
	return nil, jsonBody(map[string]string{"key": key})
}

// emailKeyEntry is the entry of a route that takes a confirmation key as
// present says; its request presents the victim's key for a new address.
func emailKeyEntry(want int, present presentKey, check func(*testing.T, *matrixFixture, string, presentKey, int), note string) matrixEntry {
	return matrixEntry{
		prepare: func(t *testing.T, f *matrixFixture) matrixRequest {
			values, body := present(f.newEmailKeys(t).genuine)
			return matrixRequest{owner: f.victim, values: values, body: body, want: want}
		},
		special: func(t *testing.T, f *matrixFixture, pattern string) { check(t, f, pattern, present, want) },
		note:    note,
	}
}

// keyProvesItsOwnAddress checks that a key for another user's address and
// a tampered key get exactly the answer of a key for an address nobody has,
// and change nothing; the victim's own key then verifies.
func keyProvesItsOwnAddress(t *testing.T, f *matrixFixture, pattern string, present presentKey, want int) {
	k := f.newEmailKeys(t)
	send := func(key string) response {
		values, body := present(key)
		return f.send(t, pattern, values, body, "")
	}
	before := f.snapshot(t)
	missing := send(k.nothing)
	if missing.status != http.StatusBadRequest {
		t.Errorf("a key of no address: status %d, want 400", missing.status)
	}
	sameAnswer(t, "a key errata signed for the intruder and the victim's address", missing, send(k.foreign))
	sameAnswer(t, "a key tampered to name the victim", missing, send(k.tampered))
	unchanged(t, "keys that are not the victim's", before, f.snapshot(t))
	if res := send(k.genuine); res.status != want {
		t.Errorf("the victim's own key: status %d: %s", res.status, res.body)
	}
}

// matrixRoutes returns the routes of routes.go after checking that the
// matrix has an entry for each and a route for each entry.
func matrixRoutes(t *testing.T, entries map[string]matrixEntry) []route {
	t.Helper()
	rts := routes(Deps{SecretKey: testSecret})
	patterns := map[string]bool{}
	for _, rt := range rts {
		patterns[rt.pattern] = true
		if _, ok := entries[rt.pattern]; !ok {
			t.Errorf("route %q has no matrix entry", rt.pattern)
		}
	}
	for p := range entries {
		if !patterns[p] {
			t.Errorf("matrix entry %q names no route of routes.go", p)
		}
	}
	if t.Failed() {
		t.FailNow()
	}
	return rts
}

// TestIsolationMatrix checks every route of routes.go from the intruder's
// side: it owns rival, whose records have the names of acme's, and holds a
// token of every scope. A request naming a record of acme, or another
// user, gets exactly the answer of a request naming a record that does not
// exist (status, headers and body), and changes nothing in the database;
// then the record's owner makes the same request and succeeds, which shows
// that the record was there. Routes that name no record get a check of
// their own. testdata/matrix/isolation.json lists what the intruder got.
func TestIsolationMatrix(t *testing.T) {
	entries := matrixEntries()
	rts := matrixRoutes(t, entries)
	f := newMatrixFixture(t)
	summary := map[string]any{}
	for _, rt := range rts {
		e := entries[rt.pattern]
		if e.special != nil {
			summary[rt.pattern] = map[string]string{"check": e.note}
			t.Run(rt.pattern+" "+e.note, func(t *testing.T) { e.special(t, f, rt.pattern) })
			continue
		}
		queries := e.queries
		if queries == nil {
			queries = []string{""}
		}
		for _, q := range queries {
			key := rt.pattern
			if q != "" {
				key += " ?" + q
			}
			t.Run(key+" answers the intruder as a missing record", func(t *testing.T) {
				foreign := checkIsolation(t, f, rt.pattern, q, e)
				var body any = string(foreign.body)
				if json.Valid(foreign.body) {
					body = scrubTimes(foreign.json(t))
				}
				summary[key] = map[string]any{"foreign": map[string]any{"status": foreign.status, "body": body}}
			})
		}
	}
	goldenValue(t, "matrix/isolation", summary)
}

// checkIsolation runs the generic isolation check of one route and returns
// the intruder's answer.
func checkIsolation(t *testing.T, f *matrixFixture, pattern, query string, e matrixEntry) response {
	req := e.prepare(t, f)
	req.query = query
	send := func(values map[string]string, body matrixBody, token string) response {
		t.Helper()
		return f.sendQuery(t, pattern, req.query, values, body, token)
	}

	// The requests of the intruder that name nothing: each path value in
	// turn replaced by one that names no record, and the body naming none.
	type variant struct {
		what   string
		values map[string]string
		body   matrixBody
	}
	var missing []variant
	for _, name := range wildcards(pattern) {
		v, ok := missingValues[name]
		if !ok {
			t.Fatalf("no missing value for {%s}: add one to missingValues", name)
		}
		values := with(req.values, name, v)
		missing = append(missing, variant{"{" + name + "} naming no record", values, req.body})
	}
	if req.missingBody != nil {
		missing = append(missing, variant{"a body naming no record", req.values, *req.missingBody})
	}
	if len(missing) == 0 {
		t.Fatal("the route names no record by a path value or its body: give it a special check")
	}

	before := f.snapshot(t)
	answers := make([]response, len(missing))
	for i, m := range missing {
		answers[i] = send(m.values, m.body, f.intruder.token)
	}
	afterMissing := f.snapshot(t)
	if answers[0].status >= 300 {
		unchanged(t, "a request for a missing record", before, afterMissing)
	}
	foreign := send(req.values, req.body, f.intruder.token)
	unchanged(t, "the intruder's request", afterMissing, f.snapshot(t))
	for i, m := range missing {
		sameAnswer(t, "the intruder's answer against that of "+m.what, answers[i], foreign)
	}

	// Ids unique across organizations, through the intruder's own
	// organization.
	for _, name := range wildcards(pattern) {
		if !slices.Contains(globalIDs, name) {
			continue
		}
		own := with(req.values, "organization_slug", "rival")
		before := f.snapshot(t)
		nothing := send(with(own, name, missingValues[name]), req.body, f.intruder.token)
		cross := send(own, req.body, f.intruder.token)
		unchanged(t, "the intruder's request in its own organization", before, f.snapshot(t))
		sameAnswer(t, "the victim's {"+name+"} in the intruder's organization against an id of no record", nothing, cross)
	}
	if c := req.cross; c != nil {
		before := f.snapshot(t)
		cross := send(c.values, c.body, f.intruder.token)
		unchanged(t, "the intruder's request in its own organization", before, f.snapshot(t))
		sameAnswer(t, "the victim's record named in the intruder's organization against the answer before it existed", c.missing, cross)
	}

	// The owner's request shows that the record was there.
	if own := send(req.values, req.body, req.owner.token); own.status != req.want {
		t.Errorf("the owner's request: status %d, want %d: %s", own.status, req.want, own.body)
	}
	return foreign
}

// with returns a copy of m with key set to v.
func with(m map[string]string, key, v string) map[string]string {
	c := make(map[string]string, len(m)+1)
	for k, x := range m {
		c[k] = x
	}
	c[key] = v
	return c
}

// goldenValue compares v, as JSON, with testdata/<name>.json.
func goldenValue(t *testing.T, name string, v any) {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	response{status: http.StatusOK, header: http.Header{"Content-Type": {"application/json"}}, body: b}.golden(t, name)
}

// invalidToken is well formed but belongs to nobody.
var invalidToken = authn.TokenPrefix + strings.Repeat("0", 64)

// TestScopeMatrix checks every route's access rule in routes.go against the
// server: scoped routes answer 403 to a token of every scope but theirs and
// succeed with a token of any one of theirs; any-token routes succeed with
// a token of no scope; routes that need a token answer 401 without one;
// open and optional-token routes answer without one, and optional-token
// routes answer 401 to an invalid one. Each request names a real record of
// the caller, so that success shows. testdata/matrix/scopes.json lists the
// rules.
func TestScopeMatrix(t *testing.T) {
	entries := matrixEntries()
	rts := matrixRoutes(t, entries)
	f := newMatrixFixture(t)
	summary := map[string]any{}
	for _, rt := range rts {
		e, a := entries[rt.pattern], rt.access
		// The scope checks send the entry's first query, if it has any.
		query := ""
		if len(e.queries) > 0 {
			query = e.queries[0]
		}
		send := func(t *testing.T, values map[string]string, body matrixBody, token string) response {
			t.Helper()
			return f.sendQuery(t, rt.pattern, query, values, body, token)
		}
		// garbage is a body that does not parse: access is checked first.
		garbage := func(r matrixRequest) matrixBody {
			ct := r.body.contentType
			if ct == "" {
				ct = "application/json"
			}
			return matrixBody{ct, []byte("{")}
		}
		switch {
		case a.open:
			summary[rt.pattern] = "open"
			t.Run(rt.pattern+" answers without a token", func(t *testing.T) {
				r := e.prepare(t, f)
				if res := send(t, r.values, r.body, ""); res.status != r.want {
					t.Errorf("status %d, want %d: %s", res.status, r.want, res.body)
				}
			})
			continue
		case !a.token:
			summary[rt.pattern] = "optional token"
			t.Run(rt.pattern+" answers without a token", func(t *testing.T) {
				r := e.prepare(t, f)
				if res := send(t, r.values, r.body, ""); res.status != r.want {
					t.Errorf("status %d, want %d: %s", res.status, r.want, res.body)
				}
			})
			t.Run(rt.pattern+" with an invalid token is 401", func(t *testing.T) {
				r := e.prepare(t, f)
				send(t, r.values, r.body, invalidToken).expect(t, http.StatusUnauthorized, `{"detail":"Unauthorized"}`)
			})
			continue
		}
		t.Run(rt.pattern+" without a token is 401", func(t *testing.T) {
			r := e.prepare(t, f)
			before := f.snapshot(t)
			send(t, r.values, r.body, "").expect(t, http.StatusUnauthorized, `{"detail":"Unauthorized"}`)
			send(t, r.values, garbage(r), "").expect(t, http.StatusUnauthorized, `{"detail":"Unauthorized"}`)
			send(t, r.values, r.body, invalidToken).expect(t, http.StatusUnauthorized, `{"detail":"Unauthorized"}`)
			unchanged(t, "a request without a token", before, f.snapshot(t))
		})
		if a.recentSession {
			summary[rt.pattern] = "recent session"
			t.Run(rt.pattern+" with a token of every scope is 403", func(t *testing.T) {
				r := e.prepare(t, f)
				tok := f.tokenFor(t, r.owner.id, authn.Scopes)
				before := f.snapshot(t)
				send(t, r.values, r.body, tok).expect(t, http.StatusForbidden, `{"detail":"Permission denied"}`)
				send(t, r.values, garbage(r), tok).expect(t, http.StatusForbidden, `{"detail":"Permission denied"}`)
				unchanged(t, "a token's request", before, f.snapshot(t))
			})
			continue
		}
		if len(a.scopes) == 0 {
			summary[rt.pattern] = "any token"
			t.Run(rt.pattern+" with a token of no scope succeeds", func(t *testing.T) {
				r := e.prepare(t, f)
				res := send(t, r.values, r.body, f.tokenFor(t, r.owner.id, []string{}))
				if res.status != r.want {
					t.Errorf("status %d, want %d: %s", res.status, r.want, res.body)
				}
			})
			continue
		}
		summary[rt.pattern] = a.scopes
		t.Run(rt.pattern+" without its scopes is 403", func(t *testing.T) {
			var others []string
			for _, s := range authn.Scopes {
				if !slices.Contains(a.scopes, s) {
					others = append(others, s)
				}
			}
			r := e.prepare(t, f)
			tok := f.tokenFor(t, r.owner.id, others)
			before := f.snapshot(t)
			send(t, r.values, r.body, tok).expect(t, http.StatusForbidden, `{"detail":"Permission denied"}`)
			send(t, r.values, garbage(r), tok).expect(t, http.StatusForbidden, `{"detail":"Permission denied"}`)
			unchanged(t, "a request without the scopes", before, f.snapshot(t))
		})
		for _, s := range a.scopes {
			t.Run(rt.pattern+" with only "+s+" succeeds", func(t *testing.T) {
				r := e.prepare(t, f)
				res := send(t, r.values, r.body, f.tokenFor(t, r.owner.id, []string{s}))
				if res.status != r.want {
					t.Errorf("status %d, want %d: %s", res.status, r.want, res.body)
				}
			})
		}
	}
	goldenValue(t, "matrix/scopes", summary)
}
