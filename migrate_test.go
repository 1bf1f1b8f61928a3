package main

import (
	"archive/zip"
	"bytes"
	"crypto/sha1"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"errata/authn"
	"errata/store/storetest"
)

// TestMigrateFromTheFirstSchema upgrades a database made by the main of
// schema version 1 (testdata/schema_v1.sql is its schema.sql), with release
// files stored as parts and chunks waiting for an assembly, and checks that
// after `errata migrate` every file downloads byte for byte, the chunks are
// blobs of their organization, and the old tables are empty.
func TestMigrateFromTheFirstSchema(t *testing.T) {
	t.Parallel()
	old, err := os.ReadFile("testdata/schema_v1.sql")
	if err != nil {
		t.Fatal(err)
	}
	db := storetest.NewEmptyDatabase(t)
	storetest.Exec(t, db, string(old))

	// Files as the first schema stored them: 1 MiB parts. big spans three
	// parts; twin has the same first part as big, to be stored once.
	rng := rand.New(rand.NewPCG(1, 2))
	big := make([]byte, 2<<20+12345)
	for i := range big {
		big[i] = byte(rng.Uint32())
	}
	files := map[string][]byte{
		"~/big.js":   big,
		"~/twin.js":  append(bytes.Clone(big[:1<<20]), "tail"...),
		"~/small.js": []byte("console.log(1)\n"),
		"~/empty.js": {},
	}
	chunk := []byte("a chunk uploaded before the upgrade")
	chunkSum := sha1.Sum(chunk)
	storetest.Exec(t, db, `
		INSERT INTO users (id, email, name) VALUES (1, 'dev@example.com', 'Dev');
		INSERT INTO organizations (id, slug, name) VALUES (1, 'acme', 'Acme');
		INSERT INTO memberships (organization_id, user_id, role) VALUES (1, 1, 'owner');
		INSERT INTO projects (id, organization_id, slug, name) VALUES (1, 1, 'web', 'Web');
		INSERT INTO releases (id, organization_id, version) VALUES (1, 1, '1.0.0');
		INSERT INTO release_projects (release_id, project_id) VALUES (1, 1)`)
	storetest.Exec(t, db, `INSERT INTO file_chunks (organization_id, sha1, size, data) VALUES (1, $1, $2, $3)`,
		hex.EncodeToString(chunkSum[:]), len(chunk), chunk)
	for name, content := range files {
		sum := sha1.Sum(content)
		var id int64
		conn := storetest.Pool(t, db)
		if err := conn.QueryRow(t.Context(), `
			INSERT INTO files (organization_id, size, sha1) VALUES (1, $1, $2) RETURNING id`,
			len(content), hex.EncodeToString(sum[:])).Scan(&id); err != nil {
			t.Fatal(err)
		}
		for pos, rest := 0, content; len(rest) > 0; pos++ {
			n := min(1<<20, len(rest))
			storetest.Exec(t, db, `INSERT INTO file_parts (file_id, position, data) VALUES ($1, $2, $3)`, id, pos, rest[:n])
			rest = rest[n:]
		}
		storetest.Exec(t, db, `
			INSERT INTO release_files (release_id, file_id, name, headers) VALUES (1, $1, $2, '{"Sourcemap": "x.map"}')`, id, name)
	}

	mustCLI(t, db, "migrate")
	mustCLI(t, db, "migrate") // and again: nothing changes

	for table, want := range map[string]int{"file_parts": 0, "file_chunks": 0, "files": 4, "release_files": 4,
		// big's 3 parts, twin's 2 of which 1 is big's, small, the empty
		// file has no part, and the chunk.
		"blobs": 6, "blob_owners": 6} {
		if got := storetest.Count(t, db, `SELECT count(*) FROM `+table); got != want {
			t.Errorf("%s has %d rows after the migration, want %d", table, got, want)
		}
	}

	report := mustCLI(t, db, "admin", "storage")
	for _, want := range []string{`(?m)^acme\s+release files\s+4\s+3158092\b`, `blobs stored: 6 `, `awaiting collection: 0 blobs`} {
		if !regexp.MustCompile(want).MatchString(report) {
			t.Errorf("admin storage has no line matching %s:\n%s", want, report)
		}
	}

	s := newErrata(t, map[string]string{"DATABASE_URL": db, "LOG_LEVEL": "warn"})
	s.serve(t)
	s.token = s.cli(t, "admin", "create-token", "--email", "dev@example.com", "--scopes", "project:releases")
	var list []struct {
		ID, Name, SHA1 string
		Size           int
		Headers        map[string]string
	}
	if status := s.getJSON(t, "/api/0/organizations/acme/releases/1.0.0/files/", &list); status != http.StatusOK {
		t.Fatalf("list files: %d", status)
	}
	got := map[string]string{}
	for _, f := range list {
		req, _ := http.NewRequest("GET", s.url+"/api/0/organizations/acme/releases/1.0.0/files/"+f.ID+"/?download=1", nil)
		req.Header.Set("Authorization", "Bearer "+s.token)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode != http.StatusOK || !bytes.Equal(body, files[f.Name]) {
			t.Errorf("download %s: %d, %d bytes, want 200 and its %d bytes", f.Name, res.StatusCode, len(body), len(files[f.Name]))
		}
		sum := sha1.Sum(files[f.Name])
		if f.SHA1 != hex.EncodeToString(sum[:]) || f.Size != len(files[f.Name]) || f.Headers["Sourcemap"] != "x.map" {
			t.Errorf("%s listed as %+v", f.Name, f)
		}
		got[f.Name] = f.SHA1
	}
	if len(got) != len(files) {
		t.Errorf("listed %v, want the %d files", got, len(files))
	}

	// The chunk uploaded before the upgrade is still the organization's:
	// an assembly asks for nothing.
	var st struct {
		State         string   `json:"state"`
		MissingChunks []string `json:"missingChunks"`
	}
	status, body := s.api(t, "POST", "/api/0/organizations/acme/artifactbundle/assemble/", map[string]any{
		"checksum": hex.EncodeToString(chunkSum[:]), "chunks": []string{hex.EncodeToString(chunkSum[:])},
		"projects": []string{"web"}, "version": "1.0.0"})
	if err := json.Unmarshal(body, &st); err != nil || status != http.StatusOK {
		t.Fatalf("assemble: %d %s", status, body)
	}
	if diff := cmp.Diff([]string{}, st.MissingChunks); diff != "" {
		t.Errorf("missing chunks after the upgrade (-want +got):\n%s", diff)
	}
}

// TestMigrateFromTheSecondSchema upgrades a database made by the main of
// schema version 2 (testdata/schema_v2.sql is its schema.sql) to
// repositories and commits: its releases keep their fields and read with
// no commits, then take some.
func TestMigrateFromTheSecondSchema(t *testing.T) {
	t.Parallel()
	db := oldDatabase(t, "testdata/schema_v2.sql", `
		INSERT INTO releases (id, organization_id, version, ref, status) VALUES (1, 1, '1.0.0', 'abc', 'archived');
		INSERT INTO release_projects (release_id, project_id) VALUES (1, 1)`)

	s := upgraded(t, db)
	type release struct {
		Ref         string          `json:"ref"`
		Status      string          `json:"status"`
		CommitCount int             `json:"commitCount"`
		LastCommit  json.RawMessage `json:"lastCommit"`
		Authors     []any           `json:"authors"`
	}
	var got release
	if status := s.getJSON(t, "/api/0/organizations/acme/releases/1.0.0/", &got); status != http.StatusOK {
		t.Fatalf("get the release: %d", status)
	}
	want := release{Ref: "abc", Status: "archived", LastCommit: json.RawMessage("null"), Authors: []any{}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("the release after the upgrade (-want +got):\n%s", diff)
	}
	status, body := s.api(t, "PUT", "/api/0/organizations/acme/releases/1.0.0/", map[string]any{
		"commits": []map[string]any{{"id": "c0ffee", "repository": "acme/web", "author_email": "dev@example.com"}}})
	if err := json.Unmarshal(body, &got); err != nil || status != http.StatusOK || got.CommitCount != 1 || len(got.Authors) != 1 {
		t.Errorf("set commits after the upgrade: %d %s", status, body)
	}
}

// TestMigrateFromTheThirdSchema upgrades a database made by the main of
// schema version 3 (testdata/schema_v3.sql is its schema.sql), whose file
// changes had no id, to version 4: the release keeps its commits and its
// file changes list with ids.
func TestMigrateFromTheThirdSchema(t *testing.T) {
	t.Parallel()
	db := oldDatabase(t, "testdata/schema_v3.sql", `
		INSERT INTO repositories (id, organization_id, name) VALUES (1, 1, 'acme/web');
		INSERT INTO commit_authors (id, organization_id, email, name) VALUES (1, 1, 'dev@example.com', 'Dev');
		INSERT INTO commits (id, organization_id, repository_id, key, message, author_id)
			VALUES (1, 1, 1, 'c0ffee', 'Fix the total', 1);
		INSERT INTO commit_file_changes (commit_id, filename, type) VALUES (1, 'a.go', 'M'), (1, 'b.go', 'A');
		INSERT INTO releases (id, organization_id, version, commit_count, last_commit_id, authors)
			VALUES (1, 1, '1.0.0', 1, 1, '{1}');
		INSERT INTO release_projects (release_id, project_id) VALUES (1, 1);
		INSERT INTO release_commits (release_id, commit_id, "order") VALUES (1, 1, 0);
		INSERT INTO jobs (kind, unique_key, payload) VALUES
			('assemble', 'assemble:queued', '{"organizationId": 1, "checksum": "x"}'),
			('mail', 'mail:1', '{"outboxId": 1}')`)

	s := upgraded(t, db)
	// Jobs queued before the upgrade work for the organization their
	// payload names, within its limit and its turns; mail for none.
	if n := storetest.Count(t, db, `SELECT count(*) FROM jobs
		WHERE (unique_key = 'assemble:queued' AND organization_id = 1)
		   OR (unique_key = 'mail:1' AND organization_id IS NULL)`); n != 2 {
		t.Errorf("%d of the 2 queued jobs have the organization of their payload after the upgrade", n)
	}
	var rel struct {
		CommitCount int `json:"commitCount"`
		LastCommit  struct {
			ID string `json:"id"`
		} `json:"lastCommit"`
	}
	if status := s.getJSON(t, "/api/0/organizations/acme/releases/1.0.0/", &rel); status != http.StatusOK ||
		rel.CommitCount != 1 || rel.LastCommit.ID != "c0ffee" {
		t.Fatalf("the release after the upgrade: %d %+v", status, rel)
	}
	var changes []struct {
		ID       string `json:"id"`
		Filename string `json:"filename"`
	}
	if status := s.getJSON(t, "/api/0/organizations/acme/releases/1.0.0/commitfiles/", &changes); status != http.StatusOK {
		t.Fatalf("commitfiles after the upgrade: %d", status)
	}
	var files []string
	for _, c := range changes {
		if c.ID == "" {
			t.Errorf("a change without an id: %+v", c)
		}
		files = append(files, c.Filename)
	}
	if diff := cmp.Diff([]string{"b.go", "a.go"}, files); diff != "" {
		t.Errorf("commitfiles after the upgrade (-want +got):\n%s", diff)
	}
	// Version 4 brings debug files: the project has none yet.
	var difs []any
	if status := s.getJSON(t, "/api/0/projects/acme/web/files/dsyms/", &difs); status != http.StatusOK || len(difs) != 0 {
		t.Errorf("debug files after the upgrade: %d %v, want 200 []", status, difs)
	}
	// ... the releases of ProGuard mappings, none yet ...
	var proguard struct{ Releases []string }
	if status := s.getJSON(t, "/api/0/projects/acme/web/files/proguard-artifact-releases?proguard_uuid=12a2e4ee-8705-5f91-8369-3a5b10a48225",
		&proguard); status != http.StatusOK || proguard.Releases == nil || len(proguard.Releases) != 0 {
		t.Errorf("proguard artifact releases after the upgrade: %d %v, want 200 []", status, proguard.Releases)
	}
	// ... and the index of open releases' lists, which the list reads.
	if n := storetest.Count(t, db, `SELECT count(*) FROM pg_indexes WHERE indexname = 'releases_status_page_idx'`); n != 1 {
		t.Errorf("releases_status_page_idx after the upgrade: %d indexes", n)
	}
	var list []struct{ Version string }
	if status := s.getJSON(t, "/api/0/organizations/acme/releases/", &list); status != http.StatusOK ||
		len(list) != 1 || list[0].Version != "1.0.0" {
		t.Errorf("the release list after the upgrade: %d %+v", status, list)
	}
}

// TestMigrateFromTheFourthSchema upgrades a database made by the main of
// schema version 4 (testdata/schema_v4.sql is its schema.sql) to version
// 5: its project gets a platform, null until someone sets one, and its
// repository's commits list through the new page index.
func TestMigrateFromTheFourthSchema(t *testing.T) {
	t.Parallel()
	db := oldDatabase(t, "testdata/schema_v4.sql", `
		INSERT INTO repositories (id, organization_id, name) VALUES (1, 1, 'acme/web');
		INSERT INTO commits (id, organization_id, repository_id, key, date_added)
			VALUES (1, 1, 1, 'c0ffee', '2026-11-20T10:00:00Z'), (2, 1, 1, 'decade', '2026-11-20T11:00:00Z')`)

	s := upgraded(t, db)
	s.token = s.cli(t, "admin", "create-token", "--email", "dev@example.com", "--scopes", "org:read,project:write")
	var project struct {
		Slug     string  `json:"slug"`
		Platform *string `json:"platform"`
	}
	if status := s.getJSON(t, "/api/0/projects/acme/web/", &project); status != http.StatusOK ||
		project.Slug != "web" || project.Platform != nil {
		t.Fatalf("the project after the upgrade: %d %+v", status, project)
	}
	status, body := s.api(t, "PUT", "/api/0/projects/acme/web/", map[string]any{"platform": "go"})
	if err := json.Unmarshal(body, &project); err != nil || status != http.StatusOK || project.Platform == nil || *project.Platform != "go" {
		t.Errorf("set the platform after the upgrade: %d %s", status, body)
	}
	var commits []struct{ ID string }
	if status := s.getJSON(t, "/api/0/organizations/acme/repos/1/commits/", &commits); status != http.StatusOK {
		t.Fatalf("the repository's commits after the upgrade: %d", status)
	}
	if diff := cmp.Diff([]struct{ ID string }{{"decade"}, {"c0ffee"}}, commits); diff != "" {
		t.Errorf("the repository's commits after the upgrade (-want +got):\n%s", diff)
	}
	if n := storetest.Count(t, db, `SELECT count(*) FROM pg_indexes WHERE indexname = 'commits_repository_page_idx'`); n != 1 {
		t.Errorf("commits_repository_page_idx after the upgrade: %d indexes", n)
	}
}

// TestMigrateFromTheFourthSchemaKeepsUploads upgrades a database made by
// the main of schema version 4 (testdata/schema_v4.sql) with a debug file and an assembly job waiting in the queue: both
// are there after the upgrade, the debug file downloads, and the database
// has a deployment id of its own, written once.
func TestMigrateFromTheFourthSchemaKeepsUploads(t *testing.T) {
	t.Parallel()
	const sym = "MODULE Linux x86_64 88221100554477668899AABBCCDDEEFF0 hello\nPUBLIC 1130 0 main\n"
	sum := sha1.Sum([]byte(sym))
	db := oldDatabase(t, "testdata/schema_v4.sql", fmt.Sprintf(`
		INSERT INTO blobs (sha1, size) VALUES ('%[1]s', %[2]d);
		INSERT INTO blob_data (key, data) VALUES ('%[1]s', convert_to('%[3]s', 'UTF8'));
		INSERT INTO blob_owners (organization_id, sha1) VALUES (1, '%[1]s');
		INSERT INTO files (id, organization_id, size, sha1) VALUES (1, 1, %[2]d, '%[1]s');
		INSERT INTO file_blobs (file_id, position, organization_id, sha1, start) VALUES (1, 0, 1, '%[1]s', 0);
		INSERT INTO debug_files (project_id, file_id, checksum, debug_id, object_name, cpu_name, file_format, data)
			VALUES (1, 1, '%[1]s', '88221100-5544-7766-8899-aabbccddeeff', 'hello', 'x86_64', 'breakpad', '{"features": ["symtab"]}');
		INSERT INTO jobs (kind, unique_key, payload, run_at)
			VALUES ('assemble_dif', 'assemble_dif:old', '{"organizationId": 1, "projectId": 1, "name": "x", "checksum": "%[1]s", "chunks": ["%[1]s"]}', now() + interval '1 day')`,
		hex.EncodeToString(sum[:]), len(sym), sym))

	s := upgraded(t, db)
	var difs []struct{ ID, DebugID string }
	if status := s.getJSON(t, "/api/0/projects/acme/web/files/dsyms/", &difs); status != http.StatusOK || len(difs) != 1 {
		t.Fatalf("debug files after the upgrade: %d %v, want the one stored before", status, difs)
	}
	status, body := s.api(t, "GET", "/api/0/projects/acme/web/files/dsyms/?id="+difs[0].ID, nil)
	if status != http.StatusOK || string(body) != sym {
		t.Errorf("the debug file after the upgrade: %d %q, want %q", status, body, sym)
	}
	if n := s.count(t, `SELECT count(*) FROM jobs WHERE unique_key = 'assemble_dif:old' AND state = 'queued'`); n != 1 {
		t.Errorf("%d queued jobs from before the upgrade, want 1", n)
	}
	var id string
	if err := s.db(t).QueryRow(t.Context(), `SELECT id FROM deployment`).Scan(&id); err != nil || len(id) != 36 {
		t.Errorf("the deployment id after the upgrade: %q %v", id, err)
	}
	mustCLI(t, db, "migrate")
	var again string
	if err := s.db(t).QueryRow(t.Context(), `SELECT id FROM deployment`).Scan(&again); err != nil || again != id {
		t.Errorf("the deployment id after another migrate: %q %v, want %q kept", again, err, id)
	}
}

// oldDatabase makes a database with the schema.sql of an earlier main,
// schemaFile, holding a user dev@example.com who owns the organization acme
// and its project web, and the rows of seed.
func oldDatabase(t *testing.T, schemaFile, seed string) string {
	t.Helper()
	old, err := os.ReadFile(schemaFile)
	if err != nil {
		t.Fatal(err)
	}
	db := storetest.NewEmptyDatabase(t)
	storetest.Exec(t, db, string(old))
	storetest.Exec(t, db, `
		INSERT INTO users (id, email, name) VALUES (1, 'dev@example.com', 'Dev');
		INSERT INTO organizations (id, slug, name) VALUES (1, 'acme', 'Acme');
		INSERT INTO memberships (organization_id, user_id, role) VALUES (1, 1, 'owner');
		INSERT INTO projects (id, organization_id, slug, name) VALUES (1, 1, 'web', 'Web');
	`+seed)
	return db
}

// upgraded runs errata migrate on db twice (the second run must change
// nothing) and serves it, with a project:releases token of dev@example.com.
func upgraded(t *testing.T, db string) *errataServer {
	t.Helper()
	mustCLI(t, db, "migrate")
	mustCLI(t, db, "migrate") // and again: nothing changes

	s := newErrata(t, map[string]string{"DATABASE_URL": db, "LOG_LEVEL": "warn"})
	s.serve(t)
	s.token = s.cli(t, "admin", "create-token", "--email", "dev@example.com", "--scopes", "project:releases")
	return s
}

// TestMigrateFromTheSixthSchemaKeepsRoles upgrades a database made by the
// previous main (schema version 6, testdata/schema_v6.sql), before members
// could be invited and teams made, whose organization has an owner, a
// manager, an admin and a member, each with an admin-CLI token of every
// scope. After errata migrate each membership keeps its role, and each token
// keeps working within it: the owner's does everything it did, the others
// what their role grants and no more.
func TestMigrateFromTheSixthSchemaKeepsRoles(t *testing.T) {
	t.Parallel()
	roles := []string{"member", "admin", "manager", "owner"} // lowest first
	every := "{" + strings.Join(authn.Scopes, ",") + "}"
	tokens := map[string]string{}
	// The project web has id 1, given by oldDatabase: the sequence, which
	// the previous main's own inserts moved, goes on after it.
	seed := `INSERT INTO releases (organization_id, version) VALUES (1, 'web@1.0.0');
		SELECT setval('projects_id_seq', 1);` + "\n"
	for i, role := range roles {
		tok, hash := authn.NewToken()
		tokens[role] = tok
		user := 1 // dev@example.com, the owner of oldDatabase
		if role != "owner" {
			user = 2 + i
			seed += fmt.Sprintf(`INSERT INTO users (id, email, name) VALUES (%[1]d, '%[2]s@example.com', '%[2]s');
				INSERT INTO memberships (organization_id, user_id, role) VALUES (1, %[1]d, '%[2]s');`, user, role)
		}
		seed += fmt.Sprintf("INSERT INTO api_tokens (user_id, token_hash, scopes, label) VALUES (%d, decode('%x', 'hex'), '%s', 'admin cli');\n",
			user, hash, every)
	}
	s := upgraded(t, oldDatabase(t, "testdata/schema_v6.sql", seed))

	for _, role := range roles {
		email := role + "@example.com"
		if role == "owner" {
			email = "dev@example.com"
		}
		if n := s.count(t, `SELECT count(*) FROM memberships m JOIN users u ON u.id = m.user_id
			WHERE u.email = $1 AND m.role = $2`, email, role); n != 1 {
			t.Errorf("%s is no longer %s after the upgrade", email, role)
		}
	}

	// Requests of each token, in order, and the lowest role that may make
	// each; a lower role's token is 403.
	for _, role := range roles {
		t.Run("the "+role+"'s token", func(t *testing.T) {
			c := withToken(s, tokens[role])
			project := "api-" + role
			for _, r := range []struct {
				method, path string
				body         any
				status       int
				lowest       string
			}{
				{"GET", "/api/0/organizations/acme/", nil, http.StatusOK, "member"},
				{"GET", "/api/0/organizations/acme/releases/web@1.0.0/", nil, http.StatusOK, "member"},
				{"PUT", "/api/0/projects/acme/web/", map[string]string{"name": "Web"}, http.StatusOK, "admin"},
				{"POST", "/api/0/organizations/acme/projects/", map[string]string{"name": project, "slug": project}, http.StatusCreated, "admin"},
				{"DELETE", "/api/0/projects/acme/" + project + "/", nil, http.StatusNoContent, "admin"},
				{"PUT", "/api/0/organizations/acme/", map[string]string{"name": "Acme"}, http.StatusOK, "manager"},
			} {
				want := r.status
				if slices.Index(roles, role) < slices.Index(roles, r.lowest) {
					want = http.StatusForbidden
				}
				if status, body := c.api(t, r.method, r.path, r.body); status != want {
					t.Errorf("%s %s: %d %s, want %d", r.method, r.path, status, body, want)
				}
			}
		})
	}
}

// TestMigrateFromTheFourthSchemaReadsSectionTables upgrades a database made
// by the previous main (schema version 4, testdata/schema_v4.sql), before
// debug files kept their section tables, holding an ELF executable and its
// source bundle: errata migrate reads the section table and the source index
// from the stored files, once, and the debuginfod routes then serve them.
func TestMigrateFromTheFourthSchemaReadsSectionTables(t *testing.T) {
	t.Parallel()
	elf, err := os.ReadFile("worker/dif/testdata/tiny.elf")
	if err != nil {
		t.Fatal(err)
	}
	const buildID = "1b0744b61e51db55ac271ee28d84d991a2cfc6fa"
	sum := sha1.Sum(elf)
	// And a source bundle of it, as sentry-cli writes one.
	const source = "int main(void) { return 0; }\n"
	var zb bytes.Buffer
	zb.WriteString("SYSB\x02\x00\x00\x00")
	zw := zip.NewWriter(&zb)
	w, _ := zw.Create("files/_/src/main.c")
	io.WriteString(w, source)
	w, _ = zw.Create("manifest.json")
	fmt.Fprintf(w, `{"debug_id": "b644071b-511e-55db-ac27-1ee28d84d991", "code_id": "%s",
		"files": {"files/_/src/main.c": {"type": "source", "path": "/src/main.c"}}}`, buildID)
	zw.Close()
	bundle := zb.Bytes()
	bsum := sha1.Sum(bundle)
	db := oldDatabase(t, "testdata/schema_v4.sql", fmt.Sprintf(`
		INSERT INTO blobs (sha1, size) VALUES ('%[1]s', %[2]d);
		INSERT INTO blob_data (key, data) VALUES ('%[1]s', decode('%[3]s', 'hex'));
		INSERT INTO blob_owners (organization_id, sha1) VALUES (1, '%[1]s');
		INSERT INTO files (id, organization_id, size, sha1) VALUES (2, 1, %[2]d, '%[1]s');
		INSERT INTO file_blobs (file_id, position, organization_id, sha1, start) VALUES (2, 0, 1, '%[1]s', 0);
		INSERT INTO debug_files (project_id, file_id, checksum, debug_id, code_id, object_name, cpu_name, file_format, data)
			VALUES (1, 2, '%[1]s', 'b644071b-511e-55db-ac27-1ee28d84d991', '%[4]s', 'tiny.src.zip', 'x86_64', 'sourcebundle',
				'{"type": "src", "features": ["sources"]}');`,
		hex.EncodeToString(bsum[:]), len(bundle), hex.EncodeToString(bundle), buildID)+fmt.Sprintf(`
		INSERT INTO blobs (sha1, size) VALUES ('%[1]s', %[2]d);
		INSERT INTO blob_data (key, data) VALUES ('%[1]s', decode('%[3]s', 'hex'));
		INSERT INTO blob_owners (organization_id, sha1) VALUES (1, '%[1]s');
		INSERT INTO files (id, organization_id, size, sha1) VALUES (1, 1, %[2]d, '%[1]s');
		INSERT INTO file_blobs (file_id, position, organization_id, sha1, start) VALUES (1, 0, 1, '%[1]s', 0);
		INSERT INTO debug_files (project_id, file_id, checksum, debug_id, code_id, object_name, cpu_name, file_format, data)
			VALUES (1, 1, '%[1]s', 'b644071b-511e-55db-ac27-1ee28d84d991', '%[4]s', 'tiny', 'x86_64', 'elf',
				'{"type": "exe", "features": ["symtab"]}')`,
		hex.EncodeToString(sum[:]), len(elf), hex.EncodeToString(elf), buildID))

	s := upgraded(t, db)
	if n := s.count(t, `SELECT count(*) FROM debug_files WHERE file_format = 'elf' AND sections IS NULL
		OR file_format = 'sourcebundle' AND sources IS NULL`); n != 0 {
		t.Fatalf("%d debug files without a section table or source index after the upgrade, want 0", n)
	}
	sreq, _ := http.NewRequest("GET", s.url+"/debuginfod/acme/buildid/"+buildID+"/source/src/main.c", nil)
	sreq.Header.Set("Authorization", "Bearer "+s.token)
	sresp, err := http.DefaultClient.Do(sreq)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(sresp.Body)
	sresp.Body.Close()
	if sresp.StatusCode != http.StatusOK || string(got) != source {
		t.Errorf("the source after the upgrade: %d %q, want 200 %q", sresp.StatusCode, got, source)
	}
	// .comment is PROGBITS at 0x10e, 0x27 bytes (readelf -S tiny.elf).
	want := elf[0x10e : 0x10e+0x27]
	req, _ := http.NewRequest("GET", s.url+"/debuginfod/acme/buildid/"+buildID+"/section/.comment", nil)
	req.SetBasicAuth("gdb", s.token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	got, _ = io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK || !bytes.Equal(got, want) {
		t.Errorf("section .comment after the upgrade: %d %q, want 200 %q", resp.StatusCode, got, want)
	}
}

// TestMigrateFromTheFifthSchema upgrades a database made by the previous
// main (schema version 5, testdata/schema_v5.sql is its schema.sql) holding
// what that version added: a release's owner, a project's platform, a job
// of an organization with its turn, an ELF debug file with the section
// table read at its assembly. All of it reads the same after the upgrade:
// the stored section table is served as it was, not read again or dropped.
func TestMigrateFromTheFifthSchema(t *testing.T) {
	t.Parallel()
	elf, err := os.ReadFile("worker/dif/testdata/tiny.elf")
	if err != nil {
		t.Fatal(err)
	}
	const buildID = "1b0744b61e51db55ac271ee28d84d991a2cfc6fa"
	sum := sha1.Sum(elf)
	db := oldDatabase(t, "testdata/schema_v5.sql", fmt.Sprintf(`
		UPDATE projects SET platform = 'c' WHERE id = 1;
		UPDATE deployment SET id = '5a1f0c3e-5b2d-4e8f-9a6b-0c1d2e3f4a5b';
		INSERT INTO releases (id, organization_id, version, owner_id) VALUES (1, 1, 'web@1.0.0', 1);
		INSERT INTO release_projects (release_id, project_id) VALUES (1, 1);
		INSERT INTO jobs (kind, unique_key, payload, run_at, organization_id)
			VALUES ('assemble_dif', 'assemble_dif:v5', '{"organizationId": 1}', now() + interval '1 day', 1);
		INSERT INTO job_turns (organization_id, last_claimed) VALUES (1, '2026-11-25T10:00:00Z');
		INSERT INTO blobs (sha1, size) VALUES ('%[1]s', %[2]d);
		INSERT INTO blob_data (key, data) VALUES ('%[1]s', decode('%[3]s', 'hex'));
		INSERT INTO blob_owners (organization_id, sha1) VALUES (1, '%[1]s');
		INSERT INTO files (id, organization_id, size, sha1) VALUES (1, 1, %[2]d, '%[1]s');
		INSERT INTO file_blobs (file_id, position, organization_id, sha1, start) VALUES (1, 0, 1, '%[1]s', 0);
		INSERT INTO debug_files (project_id, file_id, checksum, debug_id, code_id, object_name, cpu_name, file_format, data, sections)
			VALUES (1, 1, '%[1]s', 'b644071b-511e-55db-ac27-1ee28d84d991', '%[4]s', 'tiny', 'x86_64', 'elf',
				'{"type": "exe", "features": ["symtab"]}', '[[".comment", 1, 48, 270, 39, 0]]')`,
		hex.EncodeToString(sum[:]), len(elf), hex.EncodeToString(elf), buildID))

	s := upgraded(t, db)
	var release struct {
		Version string
		Owner   *struct{ Email string }
	}
	if status := s.getJSON(t, "/api/0/organizations/acme/releases/web@1.0.0/", &release); status != http.StatusOK ||
		release.Owner == nil || release.Owner.Email != "dev@example.com" {
		t.Errorf("the release after the upgrade: %d %+v, want its owner dev@example.com", status, release)
	}
	var projects []struct{ Slug, Platform string }
	if status := s.getJSON(t, "/api/0/organizations/acme/releases/web@1.0.0/", &struct {
		Projects *[]struct{ Slug, Platform string }
	}{&projects}); status != http.StatusOK || len(projects) != 1 || projects[0].Platform != "c" {
		t.Errorf("the release's projects after the upgrade: %d %+v, want web with platform c", status, projects)
	}
	if n := s.count(t, `SELECT count(*) FROM jobs WHERE unique_key = 'assemble_dif:v5' AND organization_id = 1 AND state = 'queued'`); n != 1 {
		t.Errorf("%d queued jobs of acme from before the upgrade, want 1", n)
	}
	if n := s.count(t, `SELECT count(*) FROM job_turns WHERE organization_id = 1 AND last_claimed = '2026-11-25T10:00:00Z'`); n != 1 {
		t.Errorf("%d turns of acme kept, want 1", n)
	}
	if n := s.count(t, `SELECT count(*) FROM deployment WHERE id = '5a1f0c3e-5b2d-4e8f-9a6b-0c1d2e3f4a5b'`); n != 1 {
		t.Errorf("the deployment id after the upgrade: %d rows keep it, want 1", n)
	}
	// The one row stored for .comment is what serves it (readelf -S tiny.elf:
	// PROGBITS at 0x10e, 0x27 bytes).
	req, _ := http.NewRequest("GET", s.url+"/debuginfod/acme/buildid/"+buildID+"/section/.comment", nil)
	req.SetBasicAuth("gdb", s.token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if want := elf[0x10e : 0x10e+0x27]; resp.StatusCode != http.StatusOK || !bytes.Equal(got, want) {
		t.Errorf("section .comment after the upgrade: %d %q, want 200 %q", resp.StatusCode, got, want)
	}
	if n := s.count(t, `SELECT count(*) FROM debug_files WHERE sections = '[[".comment", 1, 48, 270, 39, 0]]'`); n != 1 {
		t.Errorf("the section table after the upgrade was read again or dropped: %d rows keep it, want 1", n)
	}
}

// TestMigrateFromTheFifthSchemaSignsIn upgrades a database made by the
// previous main (schema version 5, before people signed in) holding an
// owner's token, a member's token whose scopes go beyond the member's role
// and a set of recovery codes with one code used. After the upgrade the
// owner's token works as before and expires never, the member's token keeps
// what its role grants, and the owner signs in with a password (the
// recovery codes alone ask for no second factor) and finds the nine unused
// codes of the stored set.
func TestMigrateFromTheFifthSchemaSignsIn(t *testing.T) {
	t.Parallel()
	ownerToken, ownerHash := authn.NewToken()
	memberToken, memberHash := authn.NewToken()
	seed := authn.NewRecoverySeed()
	sealed := authn.NewSeedCipher(testSecretKey).Seal(1, seed)
	db := oldDatabase(t, "testdata/schema_v5.sql", fmt.Sprintf(`
		INSERT INTO users (id, email, name) VALUES (2, 'member@example.com', 'Member');
		INSERT INTO memberships (organization_id, user_id, role) VALUES (1, 2, 'member');
		INSERT INTO api_tokens (user_id, token_hash, scopes, label) VALUES
			(1, decode('%x', 'hex'), '{project:releases,org:read}', 'ci'),
			(2, decode('%x', 'hex'), '{project:releases,project:write}', 'member ci');
		INSERT INTO recovery_codes (user_id, seed_encrypted, used_mask) VALUES (1, decode('%x', 'hex'), 1);
		INSERT INTO releases (id, organization_id, version) VALUES (1, 1, 'web@1.0.0');
		INSERT INTO release_projects (release_id, project_id) VALUES (1, 1);`,
		ownerHash, memberHash, sealed))
	s := upgraded(t, db)

	if status, body := withToken(s, ownerToken).api(t, "GET", "/api/0/organizations/acme/releases/web@1.0.0/", nil); status != http.StatusOK {
		t.Errorf("the owner's token from before the upgrade: %d %s, want 200", status, body)
	}
	if n := s.count(t, `SELECT count(*) FROM api_tokens WHERE expires_at IS NULL`); n != 3 {
		t.Errorf("%d tokens without an expiry, want the 2 from before and the new one", n)
	}
	member := withToken(s, memberToken)
	if status, body := member.api(t, "GET", "/api/0/organizations/acme/releases/", nil); status != http.StatusOK {
		t.Errorf("the member's token on a release route: %d %s, want 200", status, body)
	}
	// project:write is beyond a member's role: the token keeps the rest.
	if status, body := member.api(t, "PUT", "/api/0/projects/acme/web/", map[string]string{"name": "Web 2"}); status != http.StatusForbidden {
		t.Errorf("the member's token on a project:write route: %d %s, want 403", status, body)
	}

	setPassword(t, s, "dev@example.com")
	p := newPerson(t, "app")
	p.signIn(s, "dev@example.com")
	if got := p.whoami(s); got != "dev@example.com" {
		t.Fatalf("signed in after the upgrade as %q", got)
	}
	status, body := p.do(s, "GET", "account/authenticators", nil)
	if status != http.StatusOK {
		t.Fatalf("GET account/authenticators: %d %v", status, body)
	}
	var unused any
	for _, a := range body["data"].([]any) {
		if a := a.(map[string]any); a["type"] == "recovery_codes" {
			unused = a["unused_code_count"]
		}
	}
	if unused != float64(9) {
		t.Errorf("unused recovery codes after the upgrade: %v, want 9 (code 0 was used before)", unused)
	}
	if status, _ := p.do(s, "GET", "/api/0/organizations/acme/", nil); status != http.StatusOK {
		t.Errorf("the owner's session on its organization: %d, want 200", status)
	}
}
