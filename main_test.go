package main

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/jackc/pgx/v5"

	"errata/authn"
	"errata/store/storetest"
)

// cli runs errata with args against the database at dbURL and returns its
// output and error.
func cli(t *testing.T, dbURL string, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	var out, errOut bytes.Buffer
	env := map[string]string{"DATABASE_URL": dbURL}
	err = run(t.Context(), args, func(k string) string { return env[k] }, &out, &errOut)
	return out.String(), errOut.String(), err
}

// mustCLI is cli that fails the test on an error.
func mustCLI(t *testing.T, dbURL string, args ...string) string {
	t.Helper()
	out, errOut, err := cli(t, dbURL, args...)
	if err != nil {
		t.Fatalf("errata %s: %v\n%s", strings.Join(args, " "), err, errOut)
	}
	return strings.TrimSpace(out)
}

func TestMigrateIsIdempotentAndSerialized(t *testing.T) {
	t.Parallel()
	db := storetest.NewEmptyDatabase(t)
	var wg sync.WaitGroup
	errs := make([]error, 4)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, _, errs[i] = cli(t, db, "migrate")
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("concurrent migrate %d: %v", i, err)
		}
	}
	if out := mustCLI(t, db, "migrate"); out != "migrated to schema version 7" {
		t.Errorf("migrate again said %q", out)
	}
}

func TestServeRefusesUnmigratedDatabase(t *testing.T) {
	t.Parallel()
	db := storetest.NewEmptyDatabase(t)
	env := map[string]string{"DATABASE_URL": db, "SECRET_KEY": testSecretKey, "PUBLIC_URL": "http://errata.test", "ADDR": "127.0.0.1:0"}
	err := run(t.Context(), []string{"serve"}, func(k string) string { return env[k] }, io.Discard, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "errata migrate") {
		t.Fatalf("serve on an unmigrated database: %v, want an error naming errata migrate", err)
	}
	_, _, err = cli(t, db, "admin", "create-user", "--email", "a@example.com")
	if err == nil || !strings.Contains(err.Error(), "not migrated") {
		t.Fatalf("admin on an unmigrated database: %v", err)
	}
}

func TestServeNeedsSecretKey(t *testing.T) {
	t.Parallel()
	db := storetest.NewDatabase(t)
	_, _, err := cli(t, db, "serve", "--addr", "127.0.0.1:0")
	if err == nil || !strings.Contains(err.Error(), "SECRET_KEY") {
		t.Fatalf("serve without SECRET_KEY: %v", err)
	}
}

func TestAdminCommands(t *testing.T) {
	t.Parallel()
	db := storetest.NewDatabase(t)
	if id := mustCLI(t, db, "admin", "create-user", "--email", "ann@example.com", "--name", "Ann"); id != "1" {
		t.Errorf("create-user printed %q, want the id 1", id)
	}
	mustCLI(t, db, "admin", "create-user", "--email", "bob@example.com")
	if id := mustCLI(t, db, "admin", "create-org", "--slug", "acme", "--owner", "ann@example.com"); id != "1" {
		t.Errorf("create-org printed %q", id)
	}
	mustCLI(t, db, "admin", "create-project", "--org", "acme", "--slug", "web", "--name", "Web")
	if id := mustCLI(t, db, "admin", "create-project", "--org", "acme", "--slug", "api", "--platform", "python"); id != "2" {
		t.Errorf("create-project printed %q, want the id 2", id)
	}
	if n := storetest.Count(t, db, `SELECT count(*) FROM projects WHERE slug = 'api' AND name = 'api' AND platform = 'python'`); n != 1 {
		t.Error("create-project did not store the project api of platform python, named after its slug")
	}
	mustCLI(t, db, "admin", "add-member", "--org", "acme", "--email", "bob@example.com", "--role", "admin")
	mustCLI(t, db, "admin", "create-environment", "--org", "acme", "--name", "production", "--project", "web", "--hidden")
	tok := mustCLI(t, db, "admin", "create-token", "--email", "bob@example.com", "--scopes", "org:read,project:releases")
	if !regexp.MustCompile(`^sntryu_[0-9a-f]{64}$`).MatchString(tok) {
		t.Errorf("create-token printed %q, want only the token", tok)
	}

	errorsTests := []struct {
		name string
		args []string
		want string
	}{
		{"duplicate email", []string{"create-user", "--email", "ANN@example.com"}, `a user with email "ANN@example.com" already exists`},
		{"duplicate slug", []string{"create-org", "--slug", "acme", "--owner", "ann@example.com"}, `an organization with slug "acme" already exists`},
		{"unknown owner", []string{"create-org", "--slug", "new", "--owner", "nobody@example.com"}, `user "nobody@example.com" does not exist`},
		{"unknown org for a project", []string{"create-project", "--org", "nope", "--slug", "web"}, `organization "nope" does not exist`},
		{"duplicate project", []string{"create-project", "--org", "acme", "--slug", "web"}, `organization "acme" already has a project "web"`},
		{"unknown org for a member", []string{"add-member", "--org", "nope", "--email", "bob@example.com"}, `organization "nope" does not exist`},
		{"unknown role", []string{"add-member", "--org", "acme", "--email", "bob@example.com", "--role", "king"}, `unknown role "king"`},
		{"unknown project for an environment", []string{"create-environment", "--org", "acme", "--name", "x", "--project", "nope"}, `project "nope" does not exist`},
		{"unknown scope name", []string{"create-token", "--email", "bob@example.com", "--scopes", "org:read,org:everything"}, `unknown scope "org:everything"`},
		{"token for an unknown user", []string{"create-token", "--email", "nobody@example.com", "--scopes", "org:read"}, `user "nobody@example.com" does not exist`},
		{"missing flag", []string{"create-project", "--org", "acme"}, `--slug is required`},
		{"unknown command", []string{"drop-everything"}, `unknown command "drop-everything"`},
		{"no command", nil, `want create-user, create-org, create-project, add-member, create-environment, create-token, set-password, reset-2fa, end-sessions, storage, collect or migrate-blobs`},
	}
	for _, tc := range errorsTests {
		t.Run(tc.name+" fails", func(t *testing.T) {
			out, _, err := cli(t, db, append([]string{"admin"}, tc.args...)...)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want it to contain %q", err, tc.want)
			}
			if out != "" {
				t.Errorf("stdout = %q, want nothing on failure", out)
			}
		})
	}
}

// TestAdminSetPassword runs the shipped binary, whose standard input
// carries the password.
func TestAdminSetPassword(t *testing.T) {
	t.Parallel()
	db := storetest.NewDatabase(t)
	bin := shippedBinary(t)
	ann, err := strconv.ParseInt(mustCLI(t, db, "admin", "create-user", "--email", "ann@example.com"), 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	storetest.Exec(t, db, `
		INSERT INTO sessions (id_hash, user_id, client, state, expires_at)
		VALUES (decode(repeat('ab', 32), 'hex'), $1, 'browser', 'authenticated', now() + interval '1 day')`, ann)
	setPassword := func(t *testing.T, email, stdin string) (stdout, stderr string, code int) {
		t.Helper()
		cmd := exec.Command(bin, "admin", "set-password", "--email", email)
		cmd.Env = []string{"DATABASE_URL=" + db}
		cmd.Stdin = strings.NewReader(stdin)
		var out, errOut bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errOut
		if err := cmd.Run(); err != nil {
			exit, ok := err.(*exec.ExitError)
			if !ok {
				t.Fatalf("errata admin set-password: %v", err)
			}
			code = exit.ExitCode()
		}
		return out.String(), errOut.String(), code
	}
	hash := func() string {
		t.Helper()
		conn, err := pgx.Connect(t.Context(), db)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close(t.Context())
		var h string
		if err := conn.QueryRow(t.Context(), `SELECT coalesce(password_hash, '') FROM users WHERE id = $1`, ann).Scan(&h); err != nil {
			t.Fatal(err)
		}
		return h
	}

	refused := []struct{ name, email, stdin, want string }{
		{"unknown email", "nobody@example.com", "a fine passphrase\n", `user "nobody@example.com" does not exist`},
		{"no input", "ann@example.com", "", "no password"},
		{"empty line", "ann@example.com", "\nsecond line\n", "no password"},
		{"line too long", "ann@example.com", strings.Repeat("x", 5000) + "\n", "longer than 1024 characters"},
		{"too short", "ann@example.com", "short\n", "This password is too short"},
		{"too long in characters", "ann@example.com", strings.Repeat("x", 1025) + "\n", "This password is too long"},
		{"the email", "ann@example.com", "ANN@example.com\n", "too similar to the email address"},
		{"common", "ann@example.com", "iloveyou1\n", "This password is too common"},
	}
	for _, tc := range refused {
		t.Run(tc.name+" fails", func(t *testing.T) {
			out, errOut, code := setPassword(t, tc.email, tc.stdin)
			if code == 0 || !strings.Contains(errOut, tc.want) || out != "" {
				t.Errorf("exit %d, stdout %q, stderr %q; want a non-zero exit and %q", code, out, errOut, tc.want)
			}
		})
	}
	if h := hash(); h != "" {
		t.Fatalf("a refused password was stored: %q", h)
	}

	out, errOut, code := setPassword(t, "Ann@Example.com", "correct horse battery\r\nignored\n")
	if code != 0 {
		t.Fatalf("set-password: exit %d: %s", code, errOut)
	}
	if want := "set the password of Ann@Example.com and ended its sessions\n"; out != want {
		t.Errorf("stdout = %q, want %q", out, want)
	}
	if ok, rehash := authn.VerifyPassword(hash(), "correct horse battery"); !ok || rehash {
		t.Errorf("the stored hash %q does not verify the password without its CRLF (%v, %v)", hash(), ok, rehash)
	}
	if n := storetest.Count(t, db, `SELECT count(*) FROM sessions WHERE user_id = $1`, ann); n != 0 {
		t.Errorf("%d sessions left after set-password, want none", n)
	}
	if n := storetest.Count(t, db, `SELECT count(*) FROM mail_outbox WHERE user_id = $1 AND subject = 'Your errata password was changed'`, ann); n != 1 {
		t.Errorf("%d notices queued, want 1", n)
	}

	// A last line without its newline is the password too.
	if _, errOut, code := setPassword(t, "ann@example.com", "another fine passphrase"); code != 0 {
		t.Fatalf("set-password without a newline: exit %d: %s", code, errOut)
	}
	if ok, _ := authn.VerifyPassword(hash(), "another fine passphrase"); !ok {
		t.Errorf("the password read without a newline does not verify")
	}
}

// TestAdminSecondFactorCommands: reset-2fa removes a user's TOTP and
// recovery codes, ends their sessions and tells them; end-sessions ends the
// sessions alone; neither touches API tokens or another user; an unknown
// email fails.
func TestAdminSecondFactorCommands(t *testing.T) {
	t.Parallel()
	db := storetest.NewDatabase(t)
	mustCLI(t, db, "admin", "create-user", "--email", "ann@example.com")
	mustCLI(t, db, "admin", "create-user", "--email", "bob@example.com")
	for _, email := range []string{"ann@example.com", "bob@example.com"} {
		mustCLI(t, db, "admin", "create-token", "--email", email, "--scopes", "org:read")
	}
	storetest.Exec(t, db, `
		INSERT INTO sessions (id_hash, user_id, client, state, expires_at)
		SELECT sha256(('s' || u || g)::bytea), u, 'browser', 'authenticated', now() + interval '1 day'
		FROM (VALUES (1), (2)) v(u), generate_series(1, 2) g`)
	storetest.Exec(t, db, `
		INSERT INTO totp_authenticators (user_id, secret_encrypted, last_step) VALUES (1, 'x', 1), (2, 'x', 1);
		INSERT INTO recovery_codes (user_id, seed_encrypted) VALUES (1, 'x'), (2, 'x')`)
	counts := func() map[string]int {
		got := map[string]int{}
		for _, table := range []string{"sessions", "totp_authenticators", "recovery_codes", "api_tokens"} {
			for u, user := range []string{"ann", "bob"} {
				got[user+" "+table] = storetest.Count(t, db, `SELECT count(*) FROM `+table+` WHERE user_id = $1`, u+1)
			}
		}
		got["ann notices"] = storetest.Count(t, db, `SELECT count(*) FROM mail_outbox WHERE to_address = 'ann@example.com'`)
		return got
	}

	if out := mustCLI(t, db, "admin", "end-sessions", "--email", "ANN@example.com"); out != "ended 2 sessions of ANN@example.com" {
		t.Errorf("end-sessions printed %q", out)
	}
	want := map[string]int{"ann sessions": 0, "bob sessions": 2, "ann totp_authenticators": 1, "bob totp_authenticators": 1,
		"ann recovery_codes": 1, "bob recovery_codes": 1, "ann api_tokens": 1, "bob api_tokens": 1, "ann notices": 0}
	if diff := cmp.Diff(want, counts()); diff != "" {
		t.Errorf("after end-sessions (-want +got):\n%s", diff)
	}

	storetest.Exec(t, db, `
		INSERT INTO sessions (id_hash, user_id, client, state, expires_at)
		VALUES (sha256('again'::bytea), 1, 'app', 'mfa', now() + interval '1 day')`)
	mustCLI(t, db, "admin", "reset-2fa", "--email", "ann@example.com")
	want["ann totp_authenticators"], want["ann recovery_codes"], want["ann notices"] = 0, 0, 1
	if diff := cmp.Diff(want, counts()); diff != "" {
		t.Errorf("after reset-2fa (-want +got):\n%s", diff)
	}

	for _, cmd := range []string{"reset-2fa", "end-sessions"} {
		t.Run(cmd+" of an unknown email fails", func(t *testing.T) {
			out, _, err := cli(t, db, "admin", cmd, "--email", "nobody@example.com")
			if err == nil || !strings.Contains(err.Error(), `user "nobody@example.com" does not exist`) || out != "" {
				t.Errorf("%s: %q, %v; want an error naming the user", cmd, out, err)
			}
		})
		t.Run(cmd+" without --email fails", func(t *testing.T) {
			if _, _, err := cli(t, db, "admin", cmd); err == nil || !strings.Contains(err.Error(), "--email is required") {
				t.Errorf("%s: %v", cmd, err)
			}
		})
	}
}

// startDev runs `errata dev` on a free loopback port until the test ends,
// and returns its base URL and what it printed.
func startDev(t *testing.T, env map[string]string) (base string, stdout *lockedBuffer) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	env["ADDR"] = addr
	env["MEMORY_LIMIT"] = "off" // the test process's own, as serve() leaves it
	ctx, cancel := context.WithCancel(context.Background())
	stdout = &lockedBuffer{}
	done := make(chan error, 1)
	go func() { done <- run(ctx, []string{"dev"}, func(k string) string { return env[k] }, stdout, io.Discard) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("server exited: %v", err)
		}
	})
	base = "http://" + addr
	deadline := time.Now().Add(10 * time.Second)
	for {
		res, err := http.Get(base + "/readyz")
		if err == nil {
			res.Body.Close()
			if res.StatusCode == 200 {
				return base, stdout
			}
		}
		select {
		case err := <-done:
			t.Fatalf("server stopped: %v", err)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("server not ready: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestDevPrintsAWorkingTokenAndCurlLine(t *testing.T) {
	t.Parallel()
	db := storetest.NewEmptyDatabase(t)
	base, out := startDev(t, map[string]string{"DATABASE_URL": db})
	m := regexp.MustCompile(`curl -H 'Authorization: Bearer (sntryu_[0-9a-f]{64})' (http://\S+)/api/0/`).FindStringSubmatch(out.String())
	if m == nil {
		t.Fatalf("dev printed no curl line:\n%s", out.String())
	}
	if m[2] != base {
		t.Errorf("curl line points at %s, server is at %s", m[2], base)
	}
	req, _ := http.NewRequest("GET", m[2]+"/api/0/", nil)
	req.Header.Set("Authorization", "Bearer "+m[1])
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(res.Body)
	if res.StatusCode != 200 || !strings.Contains(string(body), `"email":"demo@errata.localhost"`) ||
		!strings.Contains(string(body), `"project:releases"`) {
		t.Fatalf("GET /api/0/ with the printed token: %d %s", res.StatusCode, body)
	}

	// Without EMAIL_URL, dev prints confirmation mail on the console.
	req, _ = http.NewRequest("POST", base+"/api/0/users/me/emails/", strings.NewReader(`{"email":"second@errata.localhost"}`))
	req.Header.Set("Authorization", "Bearer "+m[1])
	req.Header.Set("Content-Type", "application/json")
	res, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusCreated {
		t.Fatalf("POST emails: %d", res.StatusCode)
	}
	// The DEBUGINFOD_URLS line: its URL reaches the demo organization's
	// debuginfod routes with the token (an unknown build id is a 404,
	// not a 401).
	d := regexp.MustCompile(`export DEBUGINFOD_URLS=(http://errata:(sntryu_[0-9a-f]{64})@(\S+)/debuginfod/demo)\n`).FindStringSubmatch(out.String())
	if d == nil || d[2] != m[1] || "http://"+d[3] != base {
		t.Fatalf("dev printed no DEBUGINFOD_URLS line with the token and the server:\n%s", out.String())
	}
	req, _ = http.NewRequest("GET", d[1]+"/buildid/00ff/debuginfo", nil)
	if res, err = http.DefaultClient.Do(req); err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusNotFound {
		t.Errorf("GET an unknown build id through DEBUGINFOD_URLS: %d, want 404", res.StatusCode)
	}
	// The demo user's printed password is the one stored.
	pw := regexp.MustCompile(`password of demo@errata.localhost: (\S+)\n`).FindStringSubmatch(out.String())
	if pw == nil {
		t.Fatalf("dev printed no password of the demo user:\n%s", out.String())
	}
	conn, err := pgx.Connect(t.Context(), db)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var stored string
	if err := conn.QueryRow(t.Context(), `SELECT password_hash FROM users WHERE email = 'demo@errata.localhost'`).Scan(&stored); err != nil {
		t.Fatal(err)
	}
	if ok, _ := authn.VerifyPassword(stored, pw[1]); !ok {
		t.Errorf("the printed password %q does not verify against the stored hash", pw[1])
	}
	link := regexp.MustCompile(regexp.QuoteMeta(base) + `/profile/confirm-email/[^/\s]+/`)
	waitFor(t, 10*time.Second, "the confirmation link on the console", func() bool { return link.MatchString(out.String()) })
}

func TestBadDurationSettingsAreRefused(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ key, value string }{
		{"SHUTDOWN_TIMEOUT", "10"},
		{"READ_HEADER_TIMEOUT", "soon"},
		{"JOB_LEASE", "-1s"},
	} {
		t.Run(tc.key+"="+tc.value, func(t *testing.T) {
			env := map[string]string{"DATABASE_URL": "postgres://unused", "SECRET_KEY": testSecretKey, "PUBLIC_URL": "http://errata.test", tc.key: tc.value}
			err := run(t.Context(), []string{"serve"}, func(k string) string { return env[k] }, io.Discard, io.Discard)
			if err == nil || !strings.Contains(err.Error(), tc.key) {
				t.Fatalf("err = %v, want one that names %s", err, tc.key)
			}
		})
	}
}

// testSecretKey is a SECRET_KEY of the 32 bytes serve wants at least.
const testSecretKey = "errata-test-secret-0123456789abcdef"

func TestServeNeedsALongSecretKeyAndPublicURL(t *testing.T) {
	t.Parallel()
	db := storetest.NewDatabase(t)
	for _, tc := range []struct {
		name string
		env  map[string]string
		want string
	}{
		{"a short SECRET_KEY", map[string]string{"SECRET_KEY": "short", "PUBLIC_URL": "https://errata.example.com"}, "SECRET_KEY has 5 bytes, fewer than 32"},
		{"no PUBLIC_URL", map[string]string{"SECRET_KEY": testSecretKey}, "PUBLIC_URL is not set"},
		{"a PUBLIC_URL without a scheme", map[string]string{"SECRET_KEY": testSecretKey, "PUBLIC_URL": "errata.example.com"}, "PUBLIC_URL"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := map[string]string{"DATABASE_URL": db, "ADDR": "127.0.0.1:0"}
			for k, v := range tc.env {
				env[k] = v
			}
			err := run(t.Context(), []string{"serve"}, func(k string) string { return env[k] }, io.Discard, io.Discard)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("serve: %v, want an error containing %q", err, tc.want)
			}
		})
	}
}

// TestEveryBadSettingIsReported sets four settings wrong, by variable and
// by flag: serve refuses to start and its one error names each of them.
func TestEveryBadSettingIsReported(t *testing.T) {
	t.Parallel()
	env := map[string]string{"DATABASE_URL": "postgres://unused", "PUBLIC_URL": "http://errata.test",
		"SECRET_KEY": "short", "SHUTDOWN_TIMEOUT": "10", "ORG_JOB_LIMIT": "0"}
	err := run(t.Context(), []string{"serve", "--user-routes-scope", "all"}, func(k string) string { return env[k] }, io.Discard, io.Discard)
	if err == nil {
		t.Fatal("serve started with four bad settings")
	}
	for _, want := range []string{
		"SECRET_KEY has 5 bytes, fewer than 32",
		`SHUTDOWN_TIMEOUT: "10" is not a positive duration such as 30s or 2m`,
		`ORG_JOB_LIMIT: "0" is not a positive number`,
		`USER_ROUTES_SCOPE: "all" is not any or required`,
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("serve: %v, want an error that says %s", err, want)
		}
	}
}
