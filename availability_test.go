package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"mime/multipart"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestSlowClientsDoNotStarveOtherTenants is the audit's first finding: with
// a pool of four connections, one tenant's four chunk uploads that send a
// byte a second and four downloads that never read must not hold the pool:
// another tenant's release lists are all answered, and between them the
// server's metrics show the pool not full. Counts, not latencies: either
// four slow requests that held a connection each would fill it, and a list
// would then wait for POOL_ACQUIRE_TIMEOUT and be a 503.
func TestSlowClientsDoNotStarveOtherTenants(t *testing.T) {
	t.Parallel()
	const maxConns = 4
	metricsURL := fmt.Sprintf("http://127.0.0.1:%d/metrics", freePort(t))
	s := newErrata(t, map[string]string{"LOG_LEVEL": "warn", "MAX_CONNS": strconv.Itoa(maxConns), "READ_TIMEOUT": "30s", "WRITE_TIMEOUT": "30s",
		"METRICS_ADDR": strings.TrimSuffix(strings.TrimPrefix(metricsURL, "http://"), "/metrics")})
	s.spawn(t)
	setupAcme(t, s)
	attacker := s.token
	victim := s.user(t, "victim@globex.example", "project:releases")
	s.cli(t, "admin", "create-org", "--slug", "globex", "--owner", "victim@globex.example")
	s.cli(t, "admin", "create-project", "--org", "globex", "--slug", "web")
	s.token = victim
	for i := range 20 {
		if status, body := s.api(t, "POST", "/api/0/organizations/globex/releases/", map[string]any{
			"version": fmt.Sprintf("2.0.%d", i), "projects": []string{"web"}}); status != http.StatusCreated {
			t.Fatalf("create release: %d %s", status, body)
		}
	}
	s.token = attacker
	if status, body := s.api(t, "POST", "/api/0/organizations/acme/releases/", map[string]any{
		"version": "1.0.0", "projects": []string{"web"}}); status != http.StatusCreated {
		t.Fatalf("create release: %d %s", status, body)
	}
	var file bytes.Buffer
	mw := multipart.NewWriter(&file)
	w, _ := mw.CreateFormFile("file", "big.js")
	w.Write(bytes.Repeat([]byte("0123456789abcdef"), 1<<20)) // 16 MiB
	mw.Close()
	r := send(http.DefaultClient, s, "POST", "/api/0/organizations/acme/releases/1.0.0/files/", mw.FormDataContentType(), &file)
	if r.err != nil || r.status != http.StatusCreated {
		t.Fatalf("upload: %s", r)
	}
	var created struct{ ID string }
	if err := json.Unmarshal(r.body, &created); err != nil {
		t.Fatal(err)
	}

	addr := strings.TrimPrefix(s.url, "http://")
	var conns []net.Conn
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	dial := func(request string) net.Conn {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.Write([]byte(request)); err != nil {
			t.Fatal(err)
		}
		conns = append(conns, c)
		return c
	}
	// Four chunk uploads that announce 1 MiB and send it a byte a second.
	var uploads []net.Conn
	for range 4 {
		uploads = append(uploads, dial("POST /api/0/organizations/acme/chunk-upload/ HTTP/1.1\r\nHost: "+addr+
			"\r\nAuthorization: Bearer "+attacker+"\r\nContent-Type: multipart/form-data; boundary=x\r\nContent-Length: 1048576\r\n\r\n"+
			"--x\r\nContent-Disposition: form-data; name=\"file\"; filename=\"0000000000000000000000000000000000000000\"\r\n\r\n"))
	}
	// Four downloads of 16 MiB whose clients never read.
	for range 4 {
		dial("GET /api/0/organizations/acme/releases/1.0.0/files/" + created.ID + "/?download=1 HTTP/1.1\r\nHost: " + addr +
			"\r\nAuthorization: Bearer " + attacker + "\r\n\r\n")
	}

	// acquired is how many of the pool's connections are in use.
	acquired := func() int {
		_, text := get(t, metricsURL)
		for line := range strings.SplitSeq(text, "\n") {
			if v, ok := strings.CutPrefix(line, "errata_db_pool_acquired_connections "); ok {
				n, err := strconv.Atoi(v)
				if err != nil {
					t.Fatalf("errata_db_pool_acquired_connections %q: %v", v, err)
				}
				return n
			}
		}
		t.Fatalf("the metrics have no errata_db_pool_acquired_connections:\n%s", text)
		return 0
	}

	// The downloads read from the database until their sockets' buffers
	// are full; then they wait for clients that never read, as the
	// uploads wait for their bytes, and hold no connection.
	waitFor(t, 20*time.Second, "the slow requests to hold no database connection", func() bool { return acquired() == 0 })

	s.token = victim
	var slowest time.Duration
	mostInUse := 0
	for i := range 10 {
		for _, c := range uploads {
			c.Write([]byte("a"))
		}
		start := time.Now()
		status, body := s.api(t, "GET", "/api/0/organizations/globex/releases/?limit=10", nil)
		slowest = max(slowest, time.Since(start))
		if status != http.StatusOK {
			t.Errorf("list %d: %d %s", i, status, body)
		}
		mostInUse = max(mostInUse, acquired())
		time.Sleep(500 * time.Millisecond)
	}
	t.Logf("another tenant's release list while 4 uploads trickle and 4 downloads stall: slowest of 10 took %s; at most %d of %d database connections in use between them",
		slowest.Round(time.Millisecond), mostInUse, maxConns)
	if mostInUse >= maxConns {
		t.Errorf("%d of the %d database connections were in use between the lists: the slow clients hold the pool", mostInUse, maxConns)
	}
}

// TestUploadsInFlightPerTokenAreBounded: past BODIES_PER_TOKEN uploads in
// flight, a token's next upload waits for a slot, then is 503 with
// Retry-After (which sentry-cli retries; it fails at once on 429); another
// token's is not.
func TestUploadsInFlightPerTokenAreBounded(t *testing.T) {
	t.Parallel()
	s := newErrata(t, map[string]string{"LOG_LEVEL": "warn", "BODIES_PER_TOKEN": "2"})
	s.serve(t)
	setupAcme(t, s)
	other := s.cli(t, "admin", "create-token", "--email", "ops@example.com", "--scopes", "project:releases")
	addr := strings.TrimPrefix(s.url, "http://")
	for range 2 {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		c.Write([]byte("POST /api/0/organizations/acme/chunk-upload/ HTTP/1.1\r\nHost: " + addr +
			"\r\nAuthorization: Bearer " + s.token + "\r\nContent-Type: multipart/form-data; boundary=x\r\nContent-Length: 1000\r\n\r\n--x\r\n"))
	}
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	w, _ := mw.CreateFormFile("file", sha1Hex([]byte("c")))
	w.Write([]byte("c"))
	mw.Close()
	waitFor(t, 5*time.Second, "the third upload to be refused", func() bool {
		r := send(http.DefaultClient, s, "POST", "/api/0/organizations/acme/chunk-upload/", mw.FormDataContentType(), bytes.NewReader(body.Bytes()))
		return r.status == http.StatusServiceUnavailable && r.header.Get("Retry-After") == "5" &&
			string(r.body) == `{"detail":"Too many uploads in flight for this token, its limit is 2: retry later"}`+"\n"
	})
	s.token = other
	if r := send(http.DefaultClient, s, "POST", "/api/0/organizations/acme/chunk-upload/", mw.FormDataContentType(), bytes.NewReader(body.Bytes())); r.status != http.StatusOK {
		t.Errorf("another token's upload: %s, want 200", r)
	}
}
