package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha1"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"errata/authn"
	"errata/store/storetest"
)

// This file runs errata as replicas: two server processes on one database,
// as behind a load balancer. A pending recovery-code seed must survive a GET
// on one replica and the POST on the other (RECOVERY_SEED_STORE=postgres),
// and every background job must run once, whichever replica takes it.

const recoveryPath = "/api/0/generate-recovery-codes/"

// generateCodes asks s for a new set of recovery codes.
func generateCodes(t *testing.T, s *errataServer) []string {
	t.Helper()
	var out struct{ Codes []string }
	if status := s.getJSON(t, recoveryPath, &out); status != http.StatusOK || len(out.Codes) != 10 {
		t.Fatalf("GET recovery codes on %s: %d, %d codes", s.url, status, len(out.Codes))
	}
	return out.Codes
}

// confirmCode posts code to s and checks the answer.
func confirmCode(t *testing.T, s *errataServer, code string, wantStatus int, wantBody string) {
	t.Helper()
	status, body := s.api(t, "POST", recoveryPath, map[string]string{"code": code})
	if status != wantStatus || strings.TrimSpace(string(body)) != wantBody {
		t.Fatalf("POST recovery code on %s: %d %s, want %d %s", s.url, status, body, wantStatus, wantBody)
	}
}

const (
	noCodesSet  = `{"detail":"No recovery codes set, use GET first"}`
	invalidCode = `{"detail":"Invalid code"}`
)

// TestReplicas runs two errata processes on one database with the pending
// recovery-code seeds in PostgreSQL.
func TestReplicas(t *testing.T) {
	t.Parallel()
	a := newErrata(t, map[string]string{"RECOVERY_SEED_STORE": "postgres"})
	b := newErrata(t, map[string]string{"RECOVERY_SEED_STORE": "postgres", "DATABASE_URL": a.env["DATABASE_URL"]})
	if a.env["SECRET_KEY"] != b.env["SECRET_KEY"] {
		t.Fatal("the replicas must share SECRET_KEY")
	}
	a.spawn(t)
	b.spawn(t)
	a.token = a.user(t, "ann@example.com", "org:read,project:releases")
	b.token = a.token
	ann := int64(a.count(t, `SELECT id FROM users WHERE email = 'ann@example.com'`))

	t.Run("codes generated on one replica activate on the other", func(t *testing.T) {
		codes := generateCodes(t, a)
		if n := a.count(t, `SELECT count(*) FROM pending_recovery_seeds WHERE user_id = $1`, ann); n != 1 {
			t.Fatalf("%d pending seeds after the GET, want 1", n)
		}
		confirmCode(t, b, codes[3], http.StatusNoContent, "")
		var sealed []byte
		if err := a.db(t).QueryRow(context.Background(), `
			SELECT seed_encrypted FROM recovery_codes WHERE user_id = $1 AND used_mask = 0`, ann).Scan(&sealed); err != nil {
			t.Fatalf("the recovery codes are not stored: %v", err)
		}
		seed, err := authn.NewSeedCipher(a.env["SECRET_KEY"]).Open(ann, sealed)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(codes, authn.RecoveryCodes(seed)); diff != "" {
			t.Errorf("the stored seed gives other codes (-want +got):\n%s", diff)
		}
		if n := a.count(t, `SELECT count(*) FROM pending_recovery_seeds`); n != 0 {
			t.Errorf("%d pending seeds after the POST, want 0", n)
		}
	})
	t.Run("the seed is consumed once across replicas", func(t *testing.T) {
		codes := generateCodes(t, b)
		confirmCode(t, a, codes[0], http.StatusNoContent, "")
		confirmCode(t, b, codes[0], http.StatusBadRequest, noCodesSet)
		confirmCode(t, a, codes[0], http.StatusBadRequest, noCodesSet)
	})
	t.Run("a wrong code on one replica keeps the seed for the other", func(t *testing.T) {
		codes := generateCodes(t, a)
		confirmCode(t, b, "00000000", http.StatusBadRequest, invalidCode)
		confirmCode(t, a, codes[9], http.StatusNoContent, "")
	})
	t.Run("a GET on one replica replaces the seed of a GET on the other", func(t *testing.T) {
		old := generateCodes(t, a)
		codes := generateCodes(t, b)
		confirmCode(t, a, old[1], http.StatusBadRequest, invalidCode)
		confirmCode(t, a, codes[1], http.StatusNoContent, "")
	})
	t.Run("of concurrent POSTs on both replicas exactly one activates the codes", func(t *testing.T) {
		const notices = `SELECT count(*) FROM mail_outbox WHERE subject = 'New recovery codes were generated'`
		before := a.count(t, notices)
		defer func() {
			if n := a.count(t, notices) - before; n != 5 {
				t.Errorf("%d notices of new recovery codes for 5 activations, want 5", n)
			}
		}()
		for round := range 5 {
			codes := generateCodes(t, a)
			statuses := make([]int, 4)
			errs := make([]error, len(statuses))
			var wg sync.WaitGroup
			for i := range statuses {
				s := []*errataServer{a, b}[i%2]
				wg.Go(func() {
					r := sendJSON(http.DefaultClient, s, "POST", recoveryPath, map[string]string{"code": codes[i]})
					statuses[i], errs[i] = r.status, r.err
				})
			}
			wg.Wait()
			for _, err := range errs {
				if err != nil {
					t.Fatal(err)
				}
			}
			slices.Sort(statuses)
			if want := []int{204, 400, 400, 400}; !slices.Equal(statuses, want) {
				t.Errorf("round %d: statuses %v, want %v", round, statuses, want)
			}
		}
	})

	t.Run("every job runs once, on either replica", func(t *testing.T) {
		a.cli(t, "admin", "create-org", "--slug", "acme", "--owner", "ann@example.com")
		a.cli(t, "admin", "create-project", "--org", "acme", "--slug", "web")
		replicas := []*errataServer{a, b}
		const bundles, addresses = 12, 20

		// Each bundle is uploaded through one replica, then both are asked
		// to assemble it at once, as sentry-cli does when it polls.
		var bodies []map[string]any
		for i := range bundles {
			data := artifactBundle(t, "acme", fmt.Sprintf("1.0.%d", i), map[string]string{
				"~/app.min.js":     fmt.Sprintf("app(%d)", i),
				"~/app.min.js.map": fmt.Sprintf(`{"version":3,"sources":["app%d.js"]}`, i),
			})
			sum := uploadChunk(t, replicas[i%2], "acme", data)
			bodies = append(bodies, map[string]any{"checksum": sum, "chunks": []string{sum},
				"projects": []string{"web"}, "version": fmt.Sprintf("1.0.%d", i)})
		}
		var wg sync.WaitGroup
		errs := make(chan error, 2*bundles)
		for _, body := range bodies {
			for _, s := range replicas {
				wg.Go(func() {
					r := sendJSON(http.DefaultClient, s, "POST", "/api/0/organizations/acme/artifactbundle/assemble/", body)
					status, out, err := r.status, r.body, r.err
					if err == nil && status != http.StatusOK {
						err = fmt.Errorf("assemble on %s: %d %s", s.url, status, out)
					}
					errs <- err
				})
			}
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil {
				t.Fatal(err)
			}
		}

		// Each address is added through one replica, whose worker the
		// request wakes; EMAIL_URL is unset, so the mail goes to that
		// worker's log.
		for i := range addresses {
			status, body := replicas[i%2].api(t, "POST", "/api/0/users/me/emails/", map[string]string{"email": fmt.Sprintf("ann.%d@example.com", i)})
			if status != http.StatusCreated {
				t.Fatalf("add an address: %d %s", status, body)
			}
		}

		waitFor(t, 60*time.Second, "every job to finish", func() bool {
			return a.count(t, `SELECT count(*) FROM jobs WHERE state IN ('queued', 'running')`) == 0
		})
		type kindCount struct {
			Kind                     string
			Jobs, DoneAtFirstAttempt int
		}
		var got []kindCount
		rows, err := a.db(t).Query(context.Background(), `
			SELECT kind, count(*), count(*) FILTER (WHERE state = 'done' AND attempts = 1)
			FROM jobs WHERE kind = 'assemble'
			   OR kind = 'mail' AND (payload->>'outboxId')::bigint IN (SELECT id FROM mail_outbox WHERE to_address <> 'ann@example.com')
			GROUP BY kind ORDER BY kind`)
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
			var k kindCount
			if err := rows.Scan(&k.Kind, &k.Jobs, &k.DoneAtFirstAttempt); err != nil {
				t.Fatal(err)
			}
			got = append(got, k)
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		want := []kindCount{{"assemble", bundles, bundles}, {"mail", addresses, addresses}}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("jobs by kind (-want +got):\n%s", diff)
		}

		// The assemblies: one release per bundle with its two files, each
		// stored once, pointing into the bundle, itself stored once.
		for _, q := range []struct {
			query string
			want  int
		}{
			{`SELECT count(*) FROM releases`, bundles},
			{`SELECT count(*) FROM release_files`, 2 * bundles},
			{`SELECT count(DISTINCT (release_id, name)) FROM release_files`, 2 * bundles},
			{`SELECT count(*) FROM files`, bundles},
		} {
			if n := a.count(t, q.query); n != q.want {
				t.Errorf("%s = %d, want %d", q.query, n, q.want)
			}
		}
		for i := range bundles {
			var files []struct{ Name string }
			path := fmt.Sprintf("/api/0/organizations/acme/releases/1.0.%d/files/", i)
			if status := replicas[(i+1)%2].getJSON(t, path, &files); status != http.StatusOK || len(files) != 2 {
				t.Errorf("GET %s: %d, %d files", path, status, len(files))
			}
		}

		// The mail: each message marked sent, and logged by exactly one
		// replica; both replicas sent some.
		// (ann@example.com, the primary address, also gets the notices of
		// the recovery codes activated above.)
		if n := a.count(t, `SELECT count(*) FROM mail_outbox WHERE date_sent IS NOT NULL AND to_address <> 'ann@example.com'`); n != addresses {
			t.Errorf("%d messages sent, want %d", n, addresses)
		}
		sentBy := map[string][]string{}
		for _, s := range replicas {
			for _, to := range loggedMail(t, s) {
				if to == "ann@example.com" {
					continue
				}
				sentBy[to] = append(sentBy[to], s.url)
			}
		}
		perReplica := map[string]int{}
		for i := range addresses {
			to := fmt.Sprintf("ann.%d@example.com", i)
			if len(sentBy[to]) != 1 {
				t.Errorf("the message to %s was sent by %q, want one replica", to, sentBy[to])
				continue
			}
			perReplica[sentBy[to][0]]++
		}
		if len(sentBy) != addresses {
			t.Errorf("mail went to %d addresses, want %d", len(sentBy), addresses)
		}
		for _, s := range replicas {
			if perReplica[s.url] == 0 {
				t.Errorf("replica %s sent no mail: it took no part", s.url)
			}
		}
		t.Logf("messages sent per replica: %v", perReplica)
	})
}

// TestReplicasWithMemorySeeds shows why the setting exists: with the
// default store each process holds its own seeds, so a POST on the replica
// that did not answer the GET finds none.
func TestReplicasWithMemorySeeds(t *testing.T) {
	t.Parallel()
	a := startErrata(t, nil)
	b := startErrata(t, map[string]string{"DATABASE_URL": a.env["DATABASE_URL"]})
	a.token = a.user(t, "ann@example.com", "org:read")
	b.token = a.token

	codes := generateCodes(t, a)
	confirmCode(t, b, codes[0], http.StatusBadRequest, noCodesSet)
	if n := a.count(t, `SELECT count(*) FROM pending_recovery_seeds`); n != 0 {
		t.Errorf("%d pending seeds in the database, want none", n)
	}
	confirmCode(t, a, codes[0], http.StatusNoContent, "")
}

// TestRecoverySeedStoreSetting checks the values of RECOVERY_SEED_STORE
// that serve refuses at startup.
func TestRecoverySeedStoreSetting(t *testing.T) {
	t.Parallel()
	unmigrated := storetest.NewDatabase(t)
	storetest.Exec(t, unmigrated, `DROP TABLE pending_recovery_seeds`)
	tests := []struct {
		name string
		env  map[string]string
		args []string
		want string
	}{
		{"an unknown value is refused", map[string]string{"RECOVERY_SEED_STORE": "redis"}, nil,
			`RECOVERY_SEED_STORE: "redis" is not memory or postgres`},
		{"an unknown flag value is refused", nil, []string{"--recovery-seed-store", "Postgres"},
			`RECOVERY_SEED_STORE: "Postgres" is not memory or postgres`},
		{"postgres without the table asks for errata migrate",
			map[string]string{"RECOVERY_SEED_STORE": "postgres", "DATABASE_URL": unmigrated}, nil,
			"RECOVERY_SEED_STORE=postgres needs the table of pending seeds: run `errata migrate` first"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := map[string]string{"DATABASE_URL": storetest.NewDatabase(t), "SECRET_KEY": testSecretKey, "PUBLIC_URL": "http://errata.test", "ADDR": "127.0.0.1:0"}
			for k, v := range tt.env {
				env[k] = v
			}
			var stderr bytes.Buffer
			err := run(t.Context(), append([]string{"serve"}, tt.args...), func(k string) string { return env[k] }, io.Discard, &stderr)
			if err == nil || err.Error() != tt.want {
				t.Fatalf("serve: %v, want %q\n%s", err, tt.want, stderr.String())
			}
		})
	}
}

// artifactBundle returns an artifact bundle of org and release holding
// files, a map from url to content.
func artifactBundle(t *testing.T, org, release string, files map[string]string) []byte {
	t.Helper()
	entries := map[string]any{}
	members := map[string]string{}
	for url, content := range files {
		member := "files/_/_/" + strings.TrimPrefix(url, "~/")
		entries[member] = map[string]any{"url": url, "type": "source", "headers": map[string]string{}}
		members[member] = content
	}
	return sysbZip(t, map[string]any{"org": org, "release": release, "files": entries}, members)
}

// uploadChunk uploads data as one chunk to org through s and returns its
// SHA-1.
func uploadChunk(t *testing.T, s *errataServer, org string, data []byte) string {
	t.Helper()
	sum := sha1.Sum(data)
	name := hex.EncodeToString(sum[:])
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	part, err := mw.CreateFormFile("file", name)
	if err != nil {
		t.Fatal(err)
	}
	part.Write(data)
	mw.Close()
	req, err := http.NewRequest("POST", s.url+"/api/0/organizations/"+org+"/chunk-upload/", &body)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+s.token)
	req.Header.Set("Content-Type", mw.FormDataContentType())
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	out, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != http.StatusOK {
		t.Fatalf("chunk upload on %s: %d %s", s.url, res.StatusCode, out)
	}
	return name
}

// loggedMail returns the recipients of the messages that s's log sender
// wrote, one per message.
func loggedMail(t *testing.T, s *errataServer) []string {
	t.Helper()
	var to []string
	sc := bufio.NewScanner(strings.NewReader(s.logs.String()))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var line struct{ Msg, To string }
		if json.Unmarshal(sc.Bytes(), &line) == nil && strings.HasPrefix(line.Msg, "mail not sent") {
			to = append(to, line.To)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return to
}
