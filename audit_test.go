package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"mime/multipart"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The audit's reproductions (docs/resolution.md, "Bounds of an answer",
// and SECURITY.md, "Budgets of the object-file readers") run against the server binary as shipped, with its
// default settings: one tenant's small upload and few requests must not
// take the memory or the CPU of the process that serves every other.
const (
	// maxAuditGrowth bounds how much the server's resident set may grow
	// over what it held before a reproduction: at its peak during the
	// requests, and what it still holds once they are over.
	maxAuditGrowth = 256 << 20
	// auditHeldAfter is how long after the last reproduction the held
	// memory is measured at the latest (checkHeld): past the runtime's
	// forced collection (every two minutes) and some of the scavenger's
	// return of freed pages.
	auditHeldAfter = 2*time.Minute + 15*time.Second
	// auditIdle is how long the server's CPU time must stay still for a
	// reproduction's work to count as over, the work it goes on with
	// after its client gave up included.
	auditIdle = 2 * time.Second
)

// TestAudit reproduces the audit's findings, each group on a server of
// its own as shipped, one finding after the other: what an answer
// repeats (audit_answers_test.go), bounds that counted the wrong thing
// (audit_charges_test.go), work that grew with frames times file
// (audit_indexes_test.go) and the DWARF reader's (audit_dwarf_test.go).
// A group's findings are measured against what its server held before
// the first of them, and what the server still holds after the last is
// checked. The groups run side by side: one server for all would measure
// each group over what the others' caches hold.
func TestAudit(t *testing.T) {
	t.Parallel()
	for _, group := range []struct {
		name string
		// findings uploads what the group's findings need up front, if
		// anything, and returns them.
		findings func(t *testing.T, a *auditServer) []auditFinding
	}{
		{"charges", auditCharges},
		{"answers", auditAnswers},
		{"indexes", auditIndexes},
		{"DWARF", auditDWARF},
	} {
		t.Run(group.name, func(t *testing.T) {
			t.Parallel()
			a := startAuditServer(t)
			for _, f := range group.findings(t, a) {
				t.Run(f.name, func(t *testing.T) {
					if f.before != nil {
						f.before(t)
					}
					a.finding(t, f.maxCPU, f.attack)
				})
			}
			a.checkHeld(t)
		})
	}
}

// auditFinding is one reproduction: attack, measured by finding within
// maxCPU, after before (when set), which puts in place what the attack
// needs and is not measured.
type auditFinding struct {
	name           string
	maxCPU         time.Duration
	before, attack func(t *testing.T)
}

// auditServer is a server as shipped, with default settings, on which
// findings of an audit are reproduced one after the other.
type auditServer struct {
	*errataServer
	pid  int
	base int64 // resident set before the first reproduction
	// last is when the last reproduction's work was over, and lastCPU
	// the server's CPU time then.
	last    time.Time
	lastCPU time.Duration
}

// startAuditServer spawns the shipped server with its default settings
// (LOG_LEVEL aside), an organization acme with a project web, and a
// token of project:releases,project:read,project:write,org:read.
func startAuditServer(t *testing.T) *auditServer {
	t.Helper()
	s := newErrata(t, map[string]string{"LOG_LEVEL": "warn"})
	s.spawnShipped(t)
	setupAcme(t, s)
	a := &auditServer{errataServer: s, pid: s.proc.Process.Pid}
	a.base = a.usage(t).rss
	return a
}

// procUsage is what /proc says of a process.
type procUsage struct {
	rss, hwm int64         // resident set now and at its peak (VmHWM), in bytes
	cpu      time.Duration // user and system time
}

// usage reads the server's resident set, peak and CPU time from /proc.
func (a *auditServer) usage(t *testing.T) procUsage {
	t.Helper()
	return usageOf(t, a.pid)
}

// usageOf reads process pid's resident set, peak and CPU time from /proc.
func usageOf(t *testing.T, pid int) procUsage {
	t.Helper()
	var u procUsage
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(status), "\n") {
		for _, f := range []struct {
			prefix string
			dst    *int64
		}{{"VmRSS:", &u.rss}, {"VmHWM:", &u.hwm}} {
			if rest, ok := strings.CutPrefix(line, f.prefix); ok {
				kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
				if err != nil {
					t.Fatalf("%s %q: %v", f.prefix, rest, err)
				}
				*f.dst = kb << 10
			}
		}
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		t.Fatal(err)
	}
	// The fields after the command's closing parenthesis; utime and
	// stime are the 14th and 15th of the line, in clock ticks (100 a
	// second on Linux).
	fields := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
	for _, i := range []int{11, 12} {
		ticks, err := strconv.ParseInt(fields[i], 10, 64)
		if err != nil {
			t.Fatalf("/proc/%d/stat: %v", pid, err)
		}
		u.cpu += time.Duration(ticks) * 10 * time.Millisecond
	}
	return u
}

// finding runs attack, one reproduction, and checks that the server's
// peak resident set grew by less than maxAuditGrowth over what it held
// before the first reproduction, and that the CPU time the server spent
// on it, until it stopped working (however long after attack returned),
// stayed under maxCPU.
func (a *auditServer) finding(t *testing.T, maxCPU time.Duration, attack func(t *testing.T)) {
	t.Helper()
	if err := os.WriteFile(fmt.Sprintf("/proc/%d/clear_refs", a.pid), []byte("5"), 0); err != nil {
		t.Fatalf("reset the peak resident set: %v", err)
	}
	before := a.usage(t)
	attack(t)
	// The server's work ends when its CPU time stays still for auditIdle;
	// past maxCPU of CPU time the finding has failed anyway.
	after := a.usage(t)
	for {
		time.Sleep(auditIdle)
		now := a.usage(t)
		if now.cpu == after.cpu || now.cpu-before.cpu > maxCPU {
			after = now
			break
		}
		after = now
	}
	a.last, a.lastCPU = time.Now(), after.cpu
	peak := after.hwm - a.base
	t.Logf("peak resident set %d MB (%+d MB), CPU %s", after.hwm>>20, peak>>20, after.cpu-before.cpu)
	if peak >= maxAuditGrowth {
		t.Errorf("the server's resident set grew by %d MB at its peak, want less than %d MB", peak>>20, maxAuditGrowth>>20)
	}
	if cpu := after.cpu - before.cpu; cpu > maxCPU {
		t.Errorf("the server spent %s of CPU, want at most %s", cpu, maxCPU)
	}
}

// checkHeld checks that the server, once the reproductions are over,
// holds less than maxAuditGrowth more than before the first: what its
// caches keep counts. A server that does nothing holds no more as time
// goes by (its forced collection, every two minutes, and the scavenger
// only return pages), so while its CPU time stays where the last
// reproduction left it, what it holds is at least what it will hold
// auditHeldAfter past that reproduction, and the check is over as soon
// as that is under the bound; once the server has worked, the check is
// the one made auditHeldAfter past the last reproduction.
func (a *auditServer) checkHeld(t *testing.T) {
	t.Helper()
	deadline := a.last.Add(auditHeldAfter)
	u := a.usage(t)
	for u.cpu == a.lastCPU && u.rss-a.base >= maxAuditGrowth && time.Now().Before(deadline) {
		time.Sleep(min(auditIdle, time.Until(deadline)))
		u = a.usage(t)
	}
	if u.cpu != a.lastCPU {
		time.Sleep(time.Until(deadline))
		u = a.usage(t)
	}
	held := u.rss - a.base
	t.Logf("%s after the reproductions the server holds %+d MB", time.Since(a.last).Round(time.Second), held>>20)
	if held >= maxAuditGrowth {
		t.Errorf("the server holds %d MB more than before the reproductions, want less than %d MB", held>>20, maxAuditGrowth>>20)
	}
}

// settle waits until the server's resident set is back within 32 MB of
// what it was at its start, or its forced collection and the return of
// the freed pages have had their time.
func (a *auditServer) settle(t *testing.T) {
	t.Helper()
	deadline := time.Now().Add(auditHeldAfter)
	for time.Now().Before(deadline) && a.usage(t).rss-a.base > 32<<20 {
		time.Sleep(2 * time.Second)
	}
	t.Logf("before the reproductions the server holds %+d MB", (a.usage(t).rss-a.base)>>20)
}

// auditRelease creates release version of acme/web and uploads files
// (name to content) to it as release files.
func auditRelease(t *testing.T, a *auditServer, version string, files map[string]string) {
	t.Helper()
	if status, b := a.api(t, "POST", "/api/0/organizations/acme/releases/", map[string]any{"version": version, "projects": []string{"web"}}); status != http.StatusCreated {
		t.Fatalf("create release: %d %s", status, b)
	}
	for name, data := range files {
		var body bytes.Buffer
		mw := multipart.NewWriter(&body)
		mw.WriteField("name", name)
		w, _ := mw.CreateFormFile("file", filepath.Base(name))
		w.Write([]byte(data))
		mw.Close()
		if r := send(http.DefaultClient, a.errataServer, "POST", "/api/0/projects/acme/web/releases/"+version+"/files/", mw.FormDataContentType(), &body); r.status != http.StatusCreated {
			t.Fatalf("upload %s: %v", name, r)
		}
	}
}

// auditSymbolicate sends body to route of acme/web and decodes its 200
// answer into v; it reports whether it could (the test fails when not,
// and goes on, so that what the request cost the server is measured).
func auditSymbolicate(t *testing.T, a *auditServer, route string, body, v any) bool {
	t.Helper()
	r := sendJSON(http.DefaultClient, a.errataServer, "POST", "/api/0/projects/acme/web/"+route+"/", body)
	if r.err != nil || r.status != http.StatusOK {
		t.Errorf("%.300s", r)
		return false
	}
	t.Logf("%s answered %d bytes", route, len(r.body))
	if err := json.Unmarshal(r.body, v); err != nil {
		t.Errorf("%s: %v", route, err)
		return false
	}
	return true
}
