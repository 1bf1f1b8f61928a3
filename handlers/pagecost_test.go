package handlers

// What a list page costs errata beside the API routes that serve its data
// (docs/pages.md): on an organization with 5 000 releases, each list page
// costs the server at most 1.5 times the API. A page asks the API
// in-process (pages.Visit.Call), so it costs the API's answer, plus
// decoding it and rendering the HTML; that surplus is what is held.
//
// Both are served in-process by the handler of handlers.New, to the same
// signed-in session, at the same page of the list. The cost is this
// process's CPU time (user and system, getrusage(2): the garbage
// collector's included, the database's wait not), per request, over
// rounds that alternate the page and the API, so that whatever else the
// machine does weighs on both alike; the ratio is median(page) /
// median(API) over the rounds, measured in one run.

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"errata/authn"
	"errata/store"
	"errata/store/storetest"
)

// maxPageCost is the most a list page may cost, in times the API's cost.
const maxPageCost = 1.5

// pageCost is a list page and the API requests that serve its data: the
// very requests the page makes.
type pageCost struct {
	name string
	page string
	api  []string
}

// pageCostEnv is an organization "bench" with 5 000 releases, errata's
// handler over it, and its owner's session.
type pageCostEnv struct {
	h       http.Handler
	cookies []*http.Cookie
	cases   []pageCost
}

// pageCostReleases is how many releases the organization has.
const pageCostReleases = 5000

// newPageCostEnv seeds the organization, in SQL for speed: 5 000 releases
// of project web (every fifth also of project api), a deploy of every
// third, 120 files in the newest, and 120 debug files of web.
func newPageCostEnv(tb testing.TB) *pageCostEnv {
	tb.Helper()
	ctx := context.Background()
	st, db := storetest.NewWithURL(tb)
	const owner = "owner@bench.example"
	user, err := st.CreateUser(ctx, owner, "Owner")
	if err != nil {
		tb.Fatal(err)
	}
	if _, err := st.CreateOrganization(ctx, "bench", "Bench", owner); err != nil {
		tb.Fatal(err)
	}
	for _, slug := range []string{"web", "api"} {
		if _, err := st.CreateProject(ctx, store.Operator, "bench", store.NewProject{Slug: slug, Name: strings.ToUpper(slug)}); err != nil {
			tb.Fatal(err)
		}
	}
	if _, err := st.CreateEnvironment(ctx, "bench", "production", "web", false); err != nil {
		tb.Fatal(err)
	}
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
		ORDER BY f.id OFFSET 120`,
	} {
		storetest.Exec(tb, db, strings.ReplaceAll(sql, "$1::int", strconv.Itoa(pageCostReleases)))
	}
	var newest string
	if err := storetest.Pool(tb, db).QueryRow(ctx, `SELECT version FROM releases WHERE (data ->> 'buildNumber')::int = $1::int`,
		pageCostReleases).Scan(&newest); err != nil {
		tb.Fatal(err)
	}

	log := slog.New(slog.NewJSONHandler(io.Discard, nil))
	auth := &authn.Authenticator{Store: st}
	h := New(Deps{Store: st, Auth: auth, Log: log, SecretKey: "bench", Now: time.Now})
	sid, _, err := auth.StartSession(ctx, authn.NewSession{UserID: user, Client: authn.ClientBrowser,
		UserAgent: "bench", IP: "192.0.2.1"})
	if err != nil {
		tb.Fatal(err)
	}
	e := &pageCostEnv{h: h, cookies: []*http.Cookie{
		{Name: authn.SessionCookieName, Value: sid},
		{Name: authn.CSRFCookieName, Value: authn.NewCSRFToken()},
	}}
	rel := "/organizations/bench/releases/" + url.PathEscape(newest) + "/"
	// The second page of each list, at the cursor the first one links
	// to: both the page and the API read it.
	releases := "/api/0/organizations/bench/releases/"
	files := "/api/0" + rel + "files/"
	dsyms := "/api/0/projects/bench/web/files/dsyms/"
	e.cases = []pageCost{
		{"releases", "/organizations/bench/releases/?cursor=" + e.next(tb, releases), []string{
			releases + "?cursor=" + e.next(tb, releases)}},
		// A release's page shows the release, a page of its files, its
		// deploys and its commits: the four requests of the API.
		{"release files", rel + "?cursor=" + e.next(tb, files), []string{
			"/api/0" + rel, files + "?cursor=" + e.next(tb, files),
			"/api/0" + rel + "deploys/?per_page=100", "/api/0" + rel + "commits/?per_page=100"}},
		// The debug files page lists the projects to choose from, and a
		// page of the project's files.
		{"debug files", "/organizations/bench/debug-files/?project=web&cursor=" + e.next(tb, dsyms), []string{
			"/api/0/organizations/bench/projects/?per_page=100", dsyms + "?cursor=" + e.next(tb, dsyms)}},
	}
	// Each request answers 200, and a page shows what its list holds.
	for _, c := range e.cases {
		for _, p := range append([]string{c.page}, c.api...) {
			if rec := e.get(p); rec.Code != http.StatusOK {
				tb.Fatalf("%s: %s: %d %s", c.name, p, rec.Code, rec.Body)
			}
		}
	}
	for page, want := range map[string]string{e.cases[0].page: "web@1.", e.cases[1].page: "chunk-", e.cases[2].page: "libbench"} {
		if body := e.get(page).Body.String(); strings.Count(body, want) < defaultLimit {
			tb.Fatalf("%s shows fewer than %d rows with %q:\n%s", page, defaultLimit, want, body)
		}
	}
	return e
}

// get serves GET path to the owner's session, in-process.
func (e *pageCostEnv) get(path string) *httptest.ResponseRecorder {
	req := httptest.NewRequest("GET", path, nil)
	req.RemoteAddr = "192.0.2.1:4000"
	req.Header.Set("User-Agent", "bench")
	for _, c := range e.cookies {
		req.AddCookie(c)
	}
	rec := httptest.NewRecorder()
	e.h.ServeHTTP(rec, req)
	return rec
}

// next is the cursor of the page after the first of the API's list path.
func (e *pageCostEnv) next(tb testing.TB, path string) string {
	tb.Helper()
	rec := e.get(path)
	for _, link := range strings.Split(rec.Header().Get("Link"), ",") {
		if strings.Contains(link, `rel="next"`) && strings.Contains(link, `results="true"`) {
			_, cursor, _ := strings.Cut(link, `cursor="`)
			return strings.TrimSuffix(cursor, `"`)
		}
	}
	tb.Fatalf("%s: no next page: %d %s", path, rec.Code, rec.Header().Get("Link"))
	return ""
}

// pageCostFigures are one measurement of a page: the CPU time of a
// request of the page and of the API's requests, the medians over the
// rounds.
type pageCostFigures struct {
	page, api time.Duration
}

func (f pageCostFigures) ratio() float64 { return float64(f.page) / float64(f.api) }

func (f pageCostFigures) String() string {
	return fmt.Sprintf("page %v, API %v per request: %.2f times", f.page, f.api, f.ratio())
}

// measure serves c's page and its API requests in rounds rounds of n
// each, alternating which goes first, and returns the medians.
func (e *pageCostEnv) measure(tb testing.TB, c pageCost, rounds, n int) pageCostFigures {
	tb.Helper()
	var pages, apis []float64
	page := func() {
		for range n {
			e.get(c.page)
		}
	}
	api := func() {
		for range n {
			for _, p := range c.api {
				e.get(p)
			}
		}
	}
	timed := func(f func()) float64 {
		start := processCPU(tb)
		f()
		return float64(processCPU(tb)-start) / float64(n)
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
	return pageCostFigures{page: time.Duration(median(pages)), api: time.Duration(median(apis))}
}

// TestListPageCost holds each list page to at most maxPageCost times the
// API's requests of the same data. A measurement that fails is taken
// again once: a busy machine may have weighed on one side of a round.
func TestListPageCost(t *testing.T) {
	if processCPU(t) == 0 {
		t.Skip("no getrusage(2) here")
	}
	e := newPageCostEnv(t)
	for _, c := range e.cases {
		t.Run(strings.ReplaceAll(c.name, " ", "_"), func(t *testing.T) {
			f := e.measure(t, c, 7, 60)
			t.Logf("%s: %v", c.name, f)
			if f.ratio() > maxPageCost {
				f = e.measure(t, c, 7, 60)
				t.Logf("%s, measured again: %v", c.name, f)
			}
			if f.ratio() > maxPageCost {
				t.Errorf("%s costs %.2f times the API (%v), more than %.1f", c.name, f.ratio(), f, maxPageCost)
			}
		})
	}
}

// BenchmarkListPages reports each list page's CPU time per request, the
// API's for the same data, and their ratio.
func BenchmarkListPages(b *testing.B) {
	e := newPageCostEnv(b)
	for _, c := range e.cases {
		b.Run(strings.ReplaceAll(c.name, " ", "_"), func(b *testing.B) {
			n := max(1, b.N/7)
			b.ResetTimer()
			f := e.measure(b, c, 7, n)
			b.ReportMetric(float64(f.page.Nanoseconds()), "page-cpu-ns/op")
			b.ReportMetric(float64(f.api.Nanoseconds()), "api-cpu-ns/op")
			b.ReportMetric(f.ratio(), "page/api")
		})
	}
}
