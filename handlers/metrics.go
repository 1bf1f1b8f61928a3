package handlers

import (
	"bytes"
	"cmp"
	"context"
	"log/slog"
	"math"
	"net/http"
	"runtime"
	"runtime/metrics"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"errata/handlers/symbolication"
	"errata/store"
	"errata/worker"
)

// Metrics is what GET /metrics reports in the Prometheus text format:
// requests by route pattern, method and status with their latency, the job
// queue and job outcomes, the database pool and a few Go runtime numbers.
//
// Metrics are off unless run() creates a Metrics (METRICS_ADDR): New then
// counts every request, and Handler serves the report on a listener of its
// own, never on the API's. Labels are route patterns, methods and status
// codes only, so no path, token or user data reaches the report.
type Metrics struct {
	version string
	store   *store.Store
	jobs    *worker.Worker
	log     *slog.Logger
	elapsed func(start time.Time) time.Duration // time.Since; tests fix it

	mu        sync.Mutex               // guards routes while New fills it
	routes    map[string]*routeMetrics // by route pattern; filled once by New
	unmatched *routeMetrics            // requests that no route matched

	debugFiles atomic.Pointer[symbolication.DebugFileCache] // the parsed debug files, set by New
	maps       atomic.Pointer[symbolication.MapCache]       // the parsed source maps and mappings, set by New
}

// NewMetrics returns the metrics of one server: version is the build's,
// st answers the pool and queue figures, and jobs (nil when this process
// runs no worker) the job outcomes.
func NewMetrics(version string, st *store.Store, jobs *worker.Worker, log *slog.Logger) *Metrics {
	return &Metrics{
		version:   version,
		store:     st,
		jobs:      jobs,
		log:       log,
		elapsed:   time.Since,
		unmatched: &routeMetrics{route: "unmatched"},
	}
}

// track makes a series table for each route, once, before the handler
// serves; after that the request path only reads the map.
func (m *Metrics) track(rts []route) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.routes != nil {
		panic("handlers: a Metrics counts the requests of one handler only")
	}
	m.routes = make(map[string]*routeMetrics, len(rts))
	for _, rt := range rts {
		m.routes[rt.pattern] = &routeMetrics{route: rt.pattern}
	}
}

// observe counts one answered request. It takes no lock and allocates only
// the first time a route answers a method with a status.
func (m *Metrics) observe(pattern, method string, status int, start time.Time) {
	rm := m.routes[pattern]
	if rm == nil {
		rm = m.unmatched
	}
	rm.lookup(methodLabel(method), status).observe(m.elapsed(start))
}

// methodLabel bounds the method label to the methods of HTTP; any other
// method a client invents is "other".
func methodLabel(method string) string {
	switch method {
	case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch,
		http.MethodDelete, http.MethodOptions, http.MethodConnect, http.MethodTrace:
		return method
	}
	return "other"
}

// durationBuckets are the upper bounds of the latency histogram's buckets.
var durationBuckets = [...]time.Duration{
	1 * time.Millisecond, 2500 * time.Microsecond, 5 * time.Millisecond,
	10 * time.Millisecond, 25 * time.Millisecond, 50 * time.Millisecond,
	100 * time.Millisecond, 250 * time.Millisecond, 500 * time.Millisecond,
	1 * time.Second, 2500 * time.Millisecond, 5 * time.Second, 10 * time.Second,
}

// routeMetrics holds the series of one route pattern, one per method and
// status. The list is copied on write, so readers never lock.
type routeMetrics struct {
	route  string
	mu     sync.Mutex // serializes adding a series
	series atomic.Pointer[[]*requestSeries]
}

// lookup returns the series of method and status, adding it when new.
func (rm *routeMetrics) lookup(method string, status int) *requestSeries {
	var cur []*requestSeries
	if p := rm.series.Load(); p != nil {
		cur = *p
	}
	for _, s := range cur {
		if s.status == status && s.method == method {
			return s
		}
	}
	rm.mu.Lock()
	defer rm.mu.Unlock()
	if p := rm.series.Load(); p != nil {
		cur = *p
	}
	for _, s := range cur {
		if s.status == status && s.method == method {
			return s
		}
	}
	s := &requestSeries{method: method, status: status}
	next := append(cur[:len(cur):len(cur)], s)
	rm.series.Store(&next)
	return s
}

// requestSeries counts the requests of one route, method and status.
type requestSeries struct {
	method string
	status int
	// counts[i] is the number of requests that took at most
	// durationBuckets[i] and more than the bound before it; the last one
	// counts those above every bound.
	counts   [len(durationBuckets) + 1]atomic.Uint64
	sumNanos atomic.Uint64
}

// observe counts a request that took d.
func (s *requestSeries) observe(d time.Duration) {
	d = max(d, 0)
	i := 0
	for i < len(durationBuckets) && d > durationBuckets[i] {
		i++
	}
	s.counts[i].Add(1)
	s.sumNanos.Add(uint64(d))
}

// Handler serves GET /metrics and nothing else; run() puts it on its own
// listener (METRICS_ADDR), never on the API's.
func (m *Metrics) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /metrics", m.serveMetrics)
	return mux
}

// serveMetrics serves GET /metrics. A database that does not answer leaves
// out the job queue and keeps the rest.
func (m *Metrics) serveMetrics(w http.ResponseWriter, r *http.Request) {
	var e exposition
	m.writeBuild(&e)
	m.writeRequests(&e)
	m.writeJobs(r.Context(), &e)
	m.writeServedFileCache(&e)
	m.writePool(&e)
	m.writeDebugFileCache(&e)
	m.writeMapCache(&e)
	writeRuntime(&e)
	w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
	w.Header().Set("Content-Length", strconv.Itoa(e.Len()))
	w.Write(e.Bytes()) //nolint:errcheck // the scraper went away
}

// writeBuild reports the version of the running build.
func (m *Metrics) writeBuild(e *exposition) {
	e.family("errata_build_info", "gauge", "Always 1; the labels name the running build.")
	e.sample("errata_build_info", "1", "version", m.version, "goversion", runtime.Version())
}

// requestSnapshot is one series read once, so that the counter and the
// histogram of a scrape agree.
type requestSnapshot struct {
	route, method, status string
	counts                [len(durationBuckets) + 1]uint64
	sum                   float64
}

// writeRequests reports the request counter and latency histogram, sorted
// by route, method and status.
func (m *Metrics) writeRequests(e *exposition) {
	m.mu.Lock()
	tables := make([]*routeMetrics, 0, len(m.routes)+1)
	for _, rm := range m.routes {
		tables = append(tables, rm)
	}
	m.mu.Unlock()
	tables = append(tables, m.unmatched)

	var snaps []requestSnapshot
	for _, rm := range tables {
		p := rm.series.Load()
		if p == nil {
			continue
		}
		for _, s := range *p {
			snap := requestSnapshot{route: rm.route, method: s.method, status: strconv.Itoa(s.status)}
			for i := range s.counts {
				snap.counts[i] = s.counts[i].Load()
			}
			snap.sum = float64(s.sumNanos.Load()) / float64(time.Second)
			snaps = append(snaps, snap)
		}
	}
	slices.SortFunc(snaps, func(a, b requestSnapshot) int {
		return cmp.Or(strings.Compare(a.route, b.route), strings.Compare(a.method, b.method), strings.Compare(a.status, b.status))
	})

	e.family("errata_http_requests_total", "counter", "Requests answered, by route pattern, method and status.")
	for _, s := range snaps {
		var total uint64
		for _, c := range s.counts {
			total += c
		}
		e.sample("errata_http_requests_total", formatUint(total), "route", s.route, "method", s.method, "status", s.status)
	}
	const name = "errata_http_request_duration_seconds"
	e.family(name, "histogram", "Time from reading a request to its answer, by route pattern, method and status.")
	for _, s := range snaps {
		var cum uint64
		for i, c := range s.counts {
			cum += c
			le := "+Inf"
			if i < len(durationBuckets) {
				le = formatFloat(durationBuckets[i].Seconds())
			}
			e.sample(name+"_bucket", formatUint(cum), "route", s.route, "method", s.method, "status", s.status, "le", le)
		}
		e.sample(name+"_sum", formatFloat(s.sum), "route", s.route, "method", s.method, "status", s.status)
		e.sample(name+"_count", formatUint(cum), "route", s.route, "method", s.method, "status", s.status)
	}
}

// writeJobs reports the queue, which the database holds for every process,
// and the outcomes of this process's worker.
func (m *Metrics) writeJobs(ctx context.Context, e *exposition) {
	var outcomes []worker.Outcomes
	if m.jobs != nil {
		outcomes = m.jobs.Outcomes()
	}
	if m.store != nil {
		ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		queues, err := m.store.JobQueues(ctx)
		if err != nil {
			m.log.Warn("metrics: job queue", "err", err)
		} else {
			// Kinds this process runs are reported even with nothing queued.
			for _, o := range outcomes {
				if !slices.ContainsFunc(queues, func(q store.JobQueue) bool { return q.Kind == o.Kind }) {
					queues = append(queues, store.JobQueue{Kind: o.Kind})
				}
			}
			slices.SortFunc(queues, func(a, b store.JobQueue) int { return strings.Compare(a.Kind, b.Kind) })
			e.family("errata_jobs", "gauge", "Jobs queued or running, by kind and state, in the database (all processes).")
			for _, q := range queues {
				e.sample("errata_jobs", formatInt(q.Queued), "kind", q.Kind, "state", "queued")
				e.sample("errata_jobs", formatInt(q.Running), "kind", q.Kind, "state", "running")
			}
			e.family("errata_jobs_oldest_due_seconds", "gauge", "How long the oldest due queued job of a kind has waited; 0 when none is due.")
			for _, q := range queues {
				e.sample("errata_jobs_oldest_due_seconds", formatFloat(q.OldestDue.Seconds()), "kind", q.Kind)
			}
		}
	}
	if m.jobs != nil {
		slices.SortFunc(outcomes, func(a, b worker.Outcomes) int { return strings.Compare(a.Kind, b.Kind) })
		e.family("errata_job_outcomes_total", "counter", "Job runs of this process, by kind and outcome: done, retried or failed.")
		for _, o := range outcomes {
			e.sample("errata_job_outcomes_total", formatUint(o.Done), "kind", o.Kind, "outcome", "done")
			e.sample("errata_job_outcomes_total", formatUint(o.Retried), "kind", o.Kind, "outcome", "retried")
			e.sample("errata_job_outcomes_total", formatUint(o.Failed), "kind", o.Kind, "outcome", "failed")
		}
	}
}

// writePool reports the database pool's statistics.
func (m *Metrics) writePool(e *exposition) {
	if m.store == nil {
		return
	}
	p := m.store.PoolStats()
	for _, g := range []struct {
		name, kind, help, value string
	}{
		{"errata_db_pool_acquired_connections", "gauge", "Database connections in use.", formatInt(int64(p.AcquiredConns))},
		{"errata_db_pool_idle_connections", "gauge", "Database connections idle in the pool.", formatInt(int64(p.IdleConns))},
		{"errata_db_pool_constructing_connections", "gauge", "Database connections being opened.", formatInt(int64(p.ConstructingConns))},
		{"errata_db_pool_total_connections", "gauge", "Database connections open or opening.", formatInt(int64(p.TotalConns))},
		{"errata_db_pool_max_connections", "gauge", "Size of the database pool (MAX_CONNS).", formatInt(int64(p.MaxConns))},
		{"errata_db_pool_acquires_total", "counter", "Connections taken from the pool.", formatInt(p.AcquireCount)},
		{"errata_db_pool_empty_acquires_total", "counter", "Acquires that found no idle connection and waited or opened one.", formatInt(p.EmptyAcquireCount)},
		{"errata_db_pool_canceled_acquires_total", "counter", "Acquires given up because their request ended first.", formatInt(p.CanceledAcquireCount)},
		{"errata_db_pool_acquire_seconds_total", "counter", "Time spent acquiring connections.", formatFloat(p.AcquireDuration.Seconds())},
	} {
		e.family(g.name, g.kind, g.help)
		e.sample(g.name, g.value)
	}
}

// writeServedFileCache reports what the disk cache of files the symbol
// routes served holds (docs/symbol-server.md).
func (m *Metrics) writeServedFileCache(e *exposition) {
	if m.store == nil {
		return
	}
	b, n := m.store.ServedFileCacheStats()
	e.family("errata_served_file_cache_bytes", "gauge", "Bytes of files the symbol routes served that this process keeps on disk (SYMBOL_CACHE_SIZE bounds them).")
	e.sample("errata_served_file_cache_bytes", formatInt(b))
	e.family("errata_served_file_cache_entries", "gauge", "Files the symbol routes served that this process keeps on disk.")
	e.sample("errata_served_file_cache_entries", formatInt(int64(n)))
}

// writeRuntime reports a few numbers of the Go runtime.
func writeRuntime(e *exposition) {
	samples := []metrics.Sample{
		{Name: "/sched/goroutines:goroutines"},
		{Name: "/memory/classes/total:bytes"},
		{Name: "/memory/classes/heap/objects:bytes"},
	}
	metrics.Read(samples)
	for i, g := range []struct{ name, help string }{
		{"go_goroutines", "Goroutines that currently exist."},
		{"go_memory_classes_total_bytes", "Memory mapped by the Go runtime."},
		{"go_memory_classes_heap_objects_bytes", "Memory occupied by live and not yet freed heap objects."},
	} {
		e.family(g.name, "gauge", g.help)
		v := samples[i].Value
		if v.Kind() == metrics.KindUint64 {
			e.sample(g.name, formatUint(v.Uint64()))
		}
	}
}

// exposition is a report in the Prometheus text format, version 0.0.4.
type exposition struct{ bytes.Buffer }

// family writes the HELP and TYPE lines of a metric.
func (e *exposition) family(name, kind, help string) {
	e.WriteString("# HELP " + name + " ")
	for _, r := range help {
		switch r {
		case '\\':
			e.WriteString(`\\`)
		case '\n':
			e.WriteString(`\n`)
		default:
			e.WriteRune(r)
		}
	}
	e.WriteString("\n# TYPE " + name + " " + kind + "\n")
}

// sample writes one line of a metric; labels are name, value pairs.
func (e *exposition) sample(name, value string, labels ...string) {
	e.WriteString(name)
	for i := 0; i+1 < len(labels); i += 2 {
		if i == 0 {
			e.WriteByte('{')
		} else {
			e.WriteByte(',')
		}
		e.WriteString(labels[i] + `="`)
		for _, r := range labels[i+1] {
			switch r {
			case '\\':
				e.WriteString(`\\`)
			case '"':
				e.WriteString(`\"`)
			case '\n':
				e.WriteString(`\n`)
			default:
				e.WriteRune(r)
			}
		}
		e.WriteByte('"')
		if i+2 >= len(labels) {
			e.WriteByte('}')
		}
	}
	e.WriteString(" " + value + "\n")
}

// formatUint, formatInt and formatFloat write sample values as the text
// format spells them.
func formatUint(v uint64) string { return strconv.FormatUint(v, 10) }

func formatInt(v int64) string { return strconv.FormatInt(v, 10) }

func formatFloat(v float64) string {
	switch {
	case math.IsInf(v, 1):
		return "+Inf"
	case math.IsInf(v, -1):
		return "-Inf"
	case math.IsNaN(v):
		return "NaN"
	}
	return strconv.FormatFloat(v, 'g', -1, 64)
}

// writeDebugFileCache reports what the cache of parsed debug files holds,
// under its own names and under the names of the release before, which
// called it the symbol cache.
func (m *Metrics) writeDebugFileCache(e *exposition) {
	c := m.debugFiles.Load()
	if c == nil {
		return
	}
	b, n := c.Stats()
	writeGauges(e, []gauge{
		{"errata_debug_file_cache_bytes", "Bytes of parsed debug files that native resolutions keep (DEBUG_FILE_CACHE_BYTES bounds them).", b},
		{"errata_debug_file_cache_entries", "Parsed debug files (or their failures) that native resolutions keep.", int64(n)},
		{"errata_symbol_cache_bytes", "Deprecated alias of errata_debug_file_cache_bytes, removed in the next release.", b},
		{"errata_symbol_cache_entries", "Deprecated alias of errata_debug_file_cache_entries, removed in the next release.", int64(n)},
	})
}

// writeMapCache reports what the cache of parsed source maps and ProGuard
// mappings holds, and how many lookups found their entry.
func (m *Metrics) writeMapCache(e *exposition) {
	c := m.maps.Load()
	if c == nil {
		return
	}
	n, b, hits := c.Stats()
	writeGauges(e, []gauge{
		{"errata_map_cache_bytes", "Bytes of parsed source maps and ProGuard mappings that the JavaScript and JVM resolutions keep (SYMBOLICATE_CACHE_BYTES bounds them).", b},
		{"errata_map_cache_entries", "Parsed source maps, mappings and minified files' map references that the JavaScript and JVM resolutions keep.", int64(n)},
	})
	e.family("errata_map_cache_hits_total", "counter", "Lookups of the JavaScript and JVM resolutions that found their parsed file in the cache.")
	e.sample("errata_map_cache_hits_total", formatInt(hits))
}

// gauge is one gauge of a cache: its name, help and value.
type gauge struct {
	name, help string
	value      int64
}

// writeGauges writes each of gs as a family of one sample.
func writeGauges(e *exposition, gs []gauge) {
	for _, g := range gs {
		e.family(g.name, "gauge", g.help)
		e.sample(g.name, formatInt(g.value))
	}
}
