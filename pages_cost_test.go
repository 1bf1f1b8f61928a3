package main

// What a list page costs the server beside the API routes that serve its
// data (docs/pages.md, docs/performance.md): on an organization with
// 5 000 releases, each list page costs at most 1.5 times the API. A page
// asks the API in-process (pages.Visit.Call), so it costs the API's
// answer, plus reading it and writing the HTML; that surplus is what is
// held.
//
// The server is the binary as shipped (ERRATA_BIN: no race detector),
// in a process of its own, asked over HTTP by one signed-in session at
// the same page of each list. The cost is the server process's CPU time
// (the sum of its threads' run time, /proc/<pid>/task/*/schedstat, in
// nanoseconds; the garbage collector's included, PostgreSQL's not) per
// request, over rounds that alternate the page and the API, so that
// whatever else the machine does weighs on both alike; the ratio is
// median(page) / median(API) over the rounds, measured in one run.

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// maxPageCost is the most a list page may cost, in times the API's cost.
const maxPageCost = 1.5

// pageCostReleases is how many releases the organization has.
const pageCostReleases = 5000

// pageCost is a list page and the API requests that serve its data: the
// very requests the page makes.
type pageCost struct {
	name string
	page string
	api  []string
}

// pageCostServer is the shipped server over an organization "bench" with
// 5 000 releases, and its owner's browser.
type pageCostServer struct {
	s      *errataServer
	client *http.Client
	pid    int
	cases  []pageCost
}

// newPageCostServer seeds the organization in SQL, for speed: 5 000
// releases of project web (every fifth also of project api), a deploy of
// every third, 120 files in the newest, 120 debug files of web, 30
// members and 30 teams.
func newPageCostServer(t *testing.T) *pageCostServer {
	t.Helper()
	s := newErrata(t, nil)
	const owner = "owner@bench.example"
	s.cli(t, "admin", "create-user", "--email", owner, "--name", "Owner")
	s.cli(t, "admin", "create-org", "--slug", "bench", "--name", "Bench", "--owner", owner)
	s.cli(t, "admin", "create-project", "--org", "bench", "--slug", "web")
	s.cli(t, "admin", "create-project", "--org", "bench", "--slug", "api")
	s.cli(t, "admin", "create-environment", "--org", "bench", "--name", "production", "--project", "web")
	setPassword(t, s, owner)
	ctx := context.Background()
	for _, sql := range []string{`
		INSERT INTO releases (organization_id, version, ref, url, data, date_created, date_released)
		SELECT o.id, format('web@1.%s.%s+%s', n / 100, n % 100, left(md5(n::text), 7)),
			left(encode(sha256(n::text::bytea), 'hex'), 40), 'https://git.example.com/web/' || n,
			jsonb_build_object('buildNumber', n),
			timestamptz '2026-01-01T00:00:00Z' + n * interval '1 minute',
			timestamptz '2026-01-01T00:05:00Z' + n * interval '1 minute'
		FROM organizations o, generate_series(1, $1::int) n WHERE o.slug = 'bench'`, `
		INSERT INTO release_projects (release_id, project_id)
		SELECT r.id, p.id FROM releases r
		JOIN projects p ON p.organization_id = r.organization_id
		WHERE p.slug = 'web' OR (p.slug = 'api' AND (r.data ->> 'buildNumber')::int % 5 = 0)`, `
		INSERT INTO deploys (release_id, environment_id, name, date_started, date_finished, date_created)
		SELECT r.id, e.id, 'deploy ' || r.version, r.date_created + interval '1 minute',
			r.date_created + interval '2 minutes', r.date_created + interval '2 minutes'
		FROM releases r JOIN environments e ON e.organization_id = r.organization_id
		WHERE (r.data ->> 'buildNumber')::int % 3 = 0`, `
		INSERT INTO files (organization_id, size, sha1, date_created)
		SELECT o.id, 1024 * k, left(encode(sha256(('file ' || k)::bytea), 'hex'), 40),
			timestamptz '2026-02-01T00:00:00Z' + k * interval '1 second'
		FROM organizations o, generate_series(1, 240) k WHERE o.slug = 'bench'`, `
		INSERT INTO release_files (release_id, file_id, name, headers, date_created, size, sha1)
		SELECT (SELECT id FROM releases WHERE (data ->> 'buildNumber')::int = $1::int), f.id,
			format('~/static/js/chunk-%s.min.js', f.id), '{"Content-Type": "application/javascript"}',
			f.date_created, f.size, f.sha1
		FROM files f ORDER BY f.id LIMIT 120`, `
		INSERT INTO debug_files (project_id, file_id, checksum, debug_id, code_id, object_name, cpu_name,
			file_format, data, date_created)
		SELECT p.id, f.id, f.sha1, md5(f.sha1)::uuid::text, left(f.sha1, 40), format('libbench%s.so', f.id),
			'x86_64', 'elf', '{"type": "dbg", "features": ["debug", "symtab"]}', f.date_created
		FROM files f JOIN projects p ON p.organization_id = f.organization_id AND p.slug = 'web'
		ORDER BY f.id OFFSET 120`, `
		WITH u AS (INSERT INTO users (email, name)
			SELECT format('member%s@bench.example', k), 'Member ' || k FROM generate_series(1, 30) k RETURNING id)
		INSERT INTO memberships (organization_id, user_id, role)
		SELECT o.id, u.id, 'member' FROM organizations o, u WHERE o.slug = 'bench'`, `
		INSERT INTO teams (organization_id, slug, name)
		SELECT o.id, 'team-' || k, 'Team ' || k FROM organizations o, generate_series(1, 30) k WHERE o.slug = 'bench'`,
	} {
		if _, err := s.db(t).Exec(ctx, strings.ReplaceAll(sql, "$1::int", strconv.Itoa(pageCostReleases))); err != nil {
			t.Fatal(err)
		}
	}
	var newest string
	if err := s.db(t).QueryRow(ctx, `SELECT version FROM releases WHERE (data ->> 'buildNumber')::int = $1::int`,
		pageCostReleases).Scan(&newest); err != nil {
		t.Fatal(err)
	}
	s.spawnShipped(t)

	jar, _ := cookiejar.New(nil)
	e := &pageCostServer{s: s, client: &http.Client{Jar: jar}, pid: s.proc.Process.Pid}
	e.signIn(t, owner)
	rel := "/organizations/bench/releases/" + url.PathEscape(newest) + "/"
	// The second page of each list, at the cursor the first one links
	// to: both the page and the API read it.
	releases := "/api/0/organizations/bench/releases/"
	files := "/api/0" + rel + "files/"
	dsyms := "/api/0/projects/bench/web/files/dsyms/"
	e.cases = []pageCost{
		{"releases", "/organizations/bench/releases/?cursor=" + e.next(t, releases), []string{
			releases + "?cursor=" + e.next(t, releases)}},
		// A release's page shows the release, a page of its files, its
		// deploys and its commits: the four requests of the API.
		{"release files", rel + "?cursor=" + e.next(t, files), []string{
			"/api/0" + rel, files + "?cursor=" + e.next(t, files),
			"/api/0" + rel + "deploys/?per_page=100", "/api/0" + rel + "commits/?per_page=100"}},
		// The debug files page lists the projects to choose from, and a
		// page of the project's files.
		{"debug files", "/organizations/bench/debug-files/?project=web&cursor=" + e.next(t, dsyms), []string{
			"/api/0/organizations/bench/projects/?per_page=100", dsyms + "?cursor=" + e.next(t, dsyms)}},
	}
	// Each request answers 200, and a page shows what its list holds.
	for _, c := range e.cases {
		for _, p := range append([]string{c.page}, c.api...) {
			if status, body := e.get(t, p); status != http.StatusOK {
				t.Fatalf("%s: %s: %d %s", c.name, p, status, body)
			}
		}
	}
	// The organization's pages of people and projects read the
	// organization (its name, and the caller's access that decides
	// which forms show) beside their list.
	org := "/api/0/organizations/bench/"
	e.cases = append(e.cases,
		pageCost{"members", "/organizations/bench/members/", []string{org, org + "members/me/", org + "members/"}},
		pageCost{"teams", "/organizations/bench/teams/", []string{org, org + "teams/"}},
		pageCost{"projects", "/organizations/bench/projects/", []string{org, org + "projects/"}})
	for page, want := range map[string]string{e.cases[0].page: "web@1.", e.cases[1].page: "chunk-", e.cases[2].page: "libbench"} {
		if _, body := e.get(t, page); strings.Count(body, want) < 50 {
			t.Fatalf("%s shows fewer than 50 rows with %q:\n%s", page, want, body)
		}
	}
	return e
}

// signIn signs email in through the sign-in page, as a browser does.
func (e *pageCostServer) signIn(t *testing.T, email string) {
	t.Helper()
	if status, _ := e.get(t, "/"); status != http.StatusOK {
		t.Fatalf("GET /: %d", status)
	}
	base, _ := url.Parse(e.s.url)
	var csrf string
	for _, c := range e.client.Jar.Cookies(base) {
		if c.Name == "csrftoken" {
			csrf = c.Value
		}
	}
	form := url.Values{"csrfmiddlewaretoken": {csrf}, "email": {email}, "password": {signInPassword}}
	req, _ := http.NewRequest("POST", e.s.url+"/", strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", e.s.url)
	res, err := e.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.Request.URL.Path != "/" || res.StatusCode != http.StatusOK {
		t.Fatalf("sign-in: %d at %s", res.StatusCode, res.Request.URL)
	}
}

// get asks path as the owner's browser.
func (e *pageCostServer) get(t *testing.T, path string) (int, string) {
	res, err := e.client.Get(e.s.url + path)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return res.StatusCode, string(b)
}

// next is the cursor of the page after the first of the API's list path.
func (e *pageCostServer) next(t *testing.T, path string) string {
	t.Helper()
	res, err := e.client.Get(e.s.url + path)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	for _, link := range strings.Split(res.Header.Get("Link"), ",") {
		if strings.Contains(link, `rel="next"`) && strings.Contains(link, `results="true"`) {
			_, cursor, _ := strings.Cut(link, `cursor="`)
			return strings.TrimSuffix(cursor, `"`)
		}
	}
	t.Fatalf("%s: no next page: %d %s", path, res.StatusCode, res.Header.Get("Link"))
	return ""
}

// serverCPU is the CPU time the server's threads ran so far, in
// nanoseconds (the first field of each thread's schedstat).
func (e *pageCostServer) serverCPU(t *testing.T) time.Duration {
	t.Helper()
	stats, err := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/schedstat", e.pid))
	if err != nil || len(stats) == 0 {
		t.Fatalf("the server's threads: %v", err)
	}
	var total time.Duration
	for _, f := range stats {
		b, err := os.ReadFile(f)
		if err != nil {
			continue // a thread that ended
		}
		ns, err := strconv.ParseInt(strings.Fields(string(b))[0], 10, 64)
		if err != nil {
			t.Fatalf("%s: %q", f, b)
		}
		total += time.Duration(ns)
	}
	return total
}

// pageCostFigures are one measurement of a page: the server's CPU time
// for a request of the page and for the API's requests, the medians over
// the rounds.
type pageCostFigures struct{ page, api time.Duration }

func (f pageCostFigures) ratio() float64 { return float64(f.page) / float64(f.api) }

func (f pageCostFigures) String() string {
	return fmt.Sprintf("page %v, API %v per request: %.2f times", f.page, f.api, f.ratio())
}

// measure asks c's page and its API requests in rounds of n each,
// alternating which goes first, and returns the medians.
func (e *pageCostServer) measure(t *testing.T, c pageCost, rounds, n int) pageCostFigures {
	t.Helper()
	var pages, apis []time.Duration
	ask := func(paths ...string) func() {
		return func() {
			for range n {
				for _, p := range paths {
					if status, _ := e.get(t, p); status != http.StatusOK {
						t.Fatalf("%s: %d", p, status)
					}
				}
			}
		}
	}
	page, api := ask(c.page), ask(c.api...)
	timed := func(f func()) time.Duration {
		start := e.serverCPU(t)
		f()
		return (e.serverCPU(t) - start) / time.Duration(n)
	}
	page() // warm the caches and the statements of both
	api()
	for i := range rounds {
		if i%2 == 0 {
			pages = append(pages, timed(page))
			apis = append(apis, timed(api))
		} else {
			apis = append(apis, timed(api))
			pages = append(pages, timed(page))
		}
	}
	slices.Sort(pages)
	slices.Sort(apis)
	return pageCostFigures{page: pages[len(pages)/2], api: apis[len(apis)/2]}
}

// TestListPageCost holds each list page to at most maxPageCost times the
// API's requests of the same data. A measurement that fails is taken
// again once: a busy machine may have weighed on one side of a round.
// The other tests running beside it weigh on both sides alike: the cost is
// the server process's own CPU time.
func TestListPageCost(t *testing.T) {
	t.Parallel()
	e := newPageCostServer(t)
	for _, c := range e.cases {
		f := e.measure(t, c, 9, 50)
		t.Logf("%s: %v", c.name, f)
		if f.ratio() > maxPageCost {
			f = e.measure(t, c, 9, 50)
			t.Logf("%s, measured again: %v", c.name, f)
		}
		if f.ratio() > maxPageCost {
			t.Errorf("%s costs %.2f times the API (%v), more than %.1f", c.name, f.ratio(), f, maxPageCost)
		}
	}
}
