package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"mime/multipart"
	"net/http"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// soakConns is how many connections the soak keeps busy at once.
const soakConns = 64

// soakDuration is how long the soak runs: 60 s, or SOAK_DURATION for a
// shorter local run.
func soakDuration(t *testing.T) time.Duration {
	t.Helper()
	v := os.Getenv("SOAK_DURATION")
	if v == "" {
		return 60 * time.Second
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		t.Fatalf("SOAK_DURATION=%q is not a positive duration", v)
	}
	return d
}

// soakTally is what the soak's clients sent, got and had acknowledged.
type soakTally struct {
	requests  int
	byOp      map[string]int
	byStatus  map[int]int
	latencies []time.Duration
	failures  []string // unexpected answers, the first few of each client

	// Acknowledged writes: answered 2xx.
	releases, deploys, uploads, deletes, emails int
}

func (a *soakTally) add(b *soakTally) {
	a.requests += b.requests
	for k, v := range b.byOp {
		a.byOp[k] += v
	}
	for k, v := range b.byStatus {
		a.byStatus[k] += v
	}
	a.latencies = append(a.latencies, b.latencies...)
	a.failures = append(a.failures, b.failures...)
	a.releases += b.releases
	a.deploys += b.deploys
	a.uploads += b.uploads
	a.deletes += b.deletes
	a.emails += b.emails
}

// soakClient is one connection's worth of load. It owns the releases it
// creates, so that it knows what reading them must return.
type soakClient struct {
	id     int
	s      *errataServer
	client *http.Client
	rnd    *rand.Rand
	tally  soakTally

	releases []string          // versions, in creation order
	refs     map[string]string // version -> the ref last set
	files    map[string][]string
	n        int // requests sent, for unique names
}

// do sends one request of operation op and checks its status against want.
func (c *soakClient) do(op, method, path, contentType string, body []byte, want int) result {
	c.n++
	r := send(c.client, c.s, method, path, contentType, bytes.NewReader(body))
	c.tally.requests++
	c.tally.byOp[op]++
	c.tally.latencies = append(c.tally.latencies, r.latency())
	if r.err == nil {
		c.tally.byStatus[r.status]++
	}
	if r.err != nil || r.status != want {
		c.fail("%s: %s, want %d", op, r, want)
	}
	return r
}

func (c *soakClient) doJSON(op, method, path string, v any, want int) result {
	b, _ := json.Marshal(v) // the soak's values always encode
	return c.do(op, method, path, "application/json", b, want)
}

func (c *soakClient) fail(format string, args ...any) {
	if len(c.tally.failures) < 5 {
		c.tally.failures = append(c.tally.failures, fmt.Sprintf("client %d: ", c.id)+fmt.Sprintf(format, args...))
	} else {
		c.tally.failures = append(c.tally.failures, "")
	}
}

// release returns one of the client's releases, creating the first.
func (c *soakClient) release() string {
	if len(c.releases) == 0 {
		c.createRelease()
	}
	if len(c.releases) == 0 {
		return "missing"
	}
	return c.releases[c.rnd.IntN(len(c.releases))]
}

func (c *soakClient) createRelease() {
	v := fmt.Sprintf("soak-%d-%d", c.id, c.n)
	r := c.doJSON("create release", "POST", "/api/0/organizations/acme/releases/",
		map[string]any{"version": v, "projects": []string{"web"}}, http.StatusCreated)
	if r.status == http.StatusCreated {
		c.releases = append(c.releases, v)
		c.tally.releases++
	}
}

var nextCursor = regexp.MustCompile(`<([^>]*)>; rel="next"; results="true"`)

// step sends one request of a mix of reads and writes.
func (c *soakClient) step() {
	switch p := c.rnd.IntN(100); {
	case p < 12:
		c.createRelease()
	case p < 20:
		v := c.release()
		ref := fmt.Sprintf("ref-%d", c.n)
		r := c.doJSON("update release", "PUT", "/api/0/organizations/acme/releases/"+v+"/",
			map[string]any{"ref": ref, "url": "https://example.com/" + v}, http.StatusOK)
		if r.status == http.StatusOK {
			c.refs[v] = ref
		}
	case p < 30:
		v := c.release()
		env := []string{"production", "staging", "qa"}[c.rnd.IntN(3)]
		r := c.doJSON("create deploy", "POST", "/api/0/organizations/acme/releases/"+v+"/deploys/",
			map[string]any{"environment": env}, http.StatusCreated)
		if r.status == http.StatusCreated {
			c.tally.deploys++
		}
	case p < 40:
		v := c.release()
		var body bytes.Buffer
		mw := multipart.NewWriter(&body)
		mw.WriteField("name", fmt.Sprintf("~/c%d/f%d.js", c.id, c.n))
		mw.WriteField("header", "Content-Type:application/javascript")
		w, _ := mw.CreateFormFile("file", "f.js")
		w.Write(bytes.Repeat([]byte("console.log('soak');\n"), 1+c.rnd.IntN(200)))
		mw.Close()
		r := c.do("upload file", "POST", "/api/0/organizations/acme/releases/"+v+"/files/", mw.FormDataContentType(), body.Bytes(), http.StatusCreated)
		if r.status == http.StatusCreated {
			var f struct{ ID string }
			json.Unmarshal(r.body, &f)
			c.files[v] = append(c.files[v], f.ID)
			c.tally.uploads++
		}
	case p < 45:
		v := c.release()
		if len(c.files[v]) == 0 {
			c.do("list files", "GET", "/api/0/organizations/acme/releases/"+v+"/files/", "", nil, http.StatusOK)
			return
		}
		i := c.rnd.IntN(len(c.files[v]))
		id := c.files[v][i]
		r := c.do("delete file", "DELETE", "/api/0/organizations/acme/releases/"+v+"/files/"+id+"/", "", nil, http.StatusNoContent)
		if r.status == http.StatusNoContent {
			c.files[v] = slices.Delete(c.files[v], i, i+1)
			c.tally.deletes++
		}
	case p < 65:
		r := c.do("list releases", "GET", "/api/0/organizations/acme/releases/?limit=20", "", nil, http.StatusOK)
		if m := nextCursor.FindStringSubmatch(r.header.Get("Link")); m != nil {
			c.do("list releases", "GET", strings.TrimPrefix(m[1], c.s.url), "", nil, http.StatusOK)
		}
	case p < 80:
		v := c.release()
		r := c.do("get release", "GET", "/api/0/projects/acme/web/releases/"+v+"/", "", nil, http.StatusOK)
		var rel struct{ Ref *string }
		if r.status == http.StatusOK && json.Unmarshal(r.body, &rel) == nil {
			if want, ok := c.refs[v]; ok && (rel.Ref == nil || *rel.Ref != want) {
				c.fail("get release %s: ref %v, want %q, the last one acknowledged", v, rel.Ref, want)
			}
		}
	case p < 87:
		v := c.release()
		r := c.do("list files", "GET", "/api/0/organizations/acme/releases/"+v+"/files/?limit=100", "", nil, http.StatusOK)
		if hits, err := strconv.Atoi(r.header.Get("X-Hits")); r.status == http.StatusOK && (err != nil || hits != len(c.files[v])) {
			c.fail("list files of %s: X-Hits %q, want the %d acknowledged", v, r.header.Get("X-Hits"), len(c.files[v]))
		}
	case p < 92:
		v := c.release()
		c.do("list deploys", "GET", "/api/0/organizations/acme/releases/"+v+"/deploys/", "", nil, http.StatusOK)
	case p < 96:
		c.do("list environments", "GET", "/api/0/organizations/acme/environments/", "", nil, http.StatusOK)
	default:
		r := c.doJSON("add email", "POST", "/api/0/users/me/emails/",
			map[string]any{"email": fmt.Sprintf("c%d-%d@soak.example.com", c.id, c.n)}, http.StatusCreated)
		if r.status == http.StatusCreated {
			c.tally.emails++
		}
	}
}

func TestSoak(t *testing.T) {
	t.Parallel()
	duration := soakDuration(t)
	s := startErrata(t, map[string]string{"LOG_LEVEL": "warn"})
	setupAcme(t, s)
	transport := &http.Transport{MaxIdleConnsPerHost: soakConns, MaxConnsPerHost: soakConns}
	defer transport.CloseIdleConnections()
	client := &http.Client{Transport: transport, Timeout: time.Minute}

	start := time.Now()
	deadline := start.Add(duration)
	clients := make([]*soakClient, soakConns)
	var wg sync.WaitGroup
	for i := range clients {
		c := &soakClient{
			id: i, s: s, client: client, rnd: rand.New(rand.NewPCG(uint64(i), 6)),
			tally: soakTally{byOp: map[string]int{}, byStatus: map[int]int{}},
			refs:  map[string]string{}, files: map[string][]string{},
		}
		clients[i] = c
		wg.Go(func() {
			for time.Now().Before(deadline) {
				c.step()
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)

	total := soakTally{byOp: map[string]int{}, byStatus: map[int]int{}}
	for _, c := range clients {
		total.add(&c.tally)
	}
	slices.Sort(total.latencies)
	pct := func(p int) time.Duration {
		return total.latencies[(len(total.latencies)-1)*p/100].Round(time.Millisecond)
	}
	t.Logf("soak: %d connections for %s: %d requests, %.0f requests/s; latency p50 %s, p99 %s, max %s",
		soakConns, elapsed.Round(time.Millisecond), total.requests, float64(total.requests)/elapsed.Seconds(), pct(50), pct(99), pct(100))
	t.Logf("soak: statuses %v", total.byStatus)
	t.Logf("soak: operations %v", total.byOp)
	t.Logf("soak: acknowledged %d releases, %d deploys, %d uploads, %d deletes, %d email addresses",
		total.releases, total.deploys, total.uploads, total.deletes, total.emails)

	for _, f := range total.failures {
		if f != "" {
			t.Error(f)
		}
	}
	if n := len(total.failures); n > 0 {
		t.Errorf("%d requests had an unexpected answer", n)
	}
	for status, n := range total.byStatus {
		if status >= 500 {
			t.Errorf("%d answers were %d", n, status)
		}
	}

	// The database holds exactly what was acknowledged.
	for _, c := range []struct {
		what  string
		query string
		want  int
	}{
		{"releases", `SELECT count(*) FROM releases`, total.releases},
		{"release project links", `SELECT count(*) FROM release_projects`, total.releases},
		{"deploys", `SELECT count(*) FROM deploys`, total.deploys},
		{"release files", `SELECT count(*) FROM release_files`, total.uploads - total.deletes},
		{"stored files in use", `SELECT count(*) FROM files f WHERE EXISTS (SELECT 1 FROM release_files rf WHERE rf.file_id = f.id)`, total.uploads - total.deletes},
		{"email addresses", `SELECT count(*) FROM email_addresses`, 1 + total.emails},
		{"confirmation mails", `SELECT count(*) FROM mail_outbox`, total.emails},
		{"environments", `SELECT count(*) FROM environments`, 3},
	} {
		if got := s.count(t, c.query); got != c.want {
			t.Errorf("%s: %d in the database, %d acknowledged", c.what, got, c.want)
		}
	}
	// Reading every release back, page by page, finds each once with its
	// acknowledged deploys.
	seen, deploys := 0, 0
	for path := "/api/0/organizations/acme/releases/?limit=100"; path != ""; {
		r := send(client, s, "GET", path, "", nil)
		var page []struct{ DeployCount int }
		if r.err != nil || r.status != http.StatusOK || json.Unmarshal(r.body, &page) != nil {
			t.Fatalf("reading the releases back: %s", r)
		}
		for _, rel := range page {
			seen++
			deploys += rel.DeployCount
		}
		path = ""
		if m := nextCursor.FindStringSubmatch(r.header.Get("Link")); m != nil {
			path = strings.TrimPrefix(m[1], s.url)
		}
	}
	if seen != total.releases || deploys != total.deploys {
		t.Errorf("the release list has %d releases with %d deploys, want the %d and %d acknowledged",
			seen, deploys, total.releases, total.deploys)
	}
}
