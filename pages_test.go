package main

// The browser tests of the pages (docs/pages.md): each flow of
// testdata/pages is a person using errata in headless Chromium, driven
// by playwright-core, with axe-core's WCAG 2.1 A and AA rules on every
// page it sees and a screenshot of each kept in ERRATA_SCREENSHOTS.

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
)

// pageTools are the tools of the browser tests, which ./dev.sh test
// installs.
func pageTools(t *testing.T) map[string]string {
	t.Helper()
	tools := map[string]string{}
	for _, name := range []string{"CHROMIUM", "PLAYWRIGHT_CORE", "AXE_CORE", "JSQR", "PNGJS"} {
		tools[name] = os.Getenv(name)
		if tools[name] == "" {
			t.Fatalf("%s is not set: run the tests with ./dev.sh test, which installs the browser tests' tools", name)
		}
	}
	return tools
}

var (
	screenshotsOnce sync.Once
	screenshotsDir  string
)

// screenshots is where the flows keep their screenshots: ERRATA_SCREENSHOTS,
// else a new temporary folder, named in the log, that the test leaves.
func screenshots(t *testing.T) string {
	screenshotsOnce.Do(func() {
		screenshotsDir = os.Getenv("ERRATA_SCREENSHOTS")
		if screenshotsDir == "" {
			dir, err := os.MkdirTemp("", "errata-screenshots-")
			if err != nil {
				t.Fatal(err)
			}
			screenshotsDir = dir
		}
	})
	return screenshotsDir
}

// runPageFlow runs the flow testdata/pages/<flow>.mjs against s with
// fixture (what the flow may know: addresses, passwords), and maildir,
// the Maildir of the SMTP server s sends to ("" when none).
func runPageFlow(t *testing.T, s *errataServer, flow string, fixture map[string]any, maildir string) {
	t.Helper()
	tools := pageTools(t)
	fx, err := json.Marshal(fixture)
	if err != nil {
		t.Fatal(err)
	}
	dir := screenshots(t)
	cmd := exec.Command("node", filepath.Join("testdata", "pages", flow+".mjs"))
	cmd.Env = append(os.Environ(), "ERRATA_URL="+s.url, "PAGES_FIXTURE="+string(fx), "PAGES_FLOW="+flow,
		"ERRATA_SCREENSHOTS="+dir, "MAILDIR="+maildir)
	for k, v := range tools {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	out, err := cmd.CombinedOutput()
	t.Logf("%s (screenshots in %s):\n%s", flow, dir, out)
	if err != nil {
		t.Errorf("flow %s: %v", flow, err)
	}
}

// pageOrg makes an organization slug, named name, with a project web,
// owned by a new person email with a password, and returns the person's
// password.
func pageOrg(t *testing.T, s *errataServer, email, slug, name string) string {
	t.Helper()
	s.cli(t, "admin", "create-user", "--email", email)
	s.cli(t, "admin", "create-org", "--slug", slug, "--name", name, "--owner", email)
	s.cli(t, "admin", "create-project", "--org", slug, "--slug", "web")
	setPassword(t, s, email)
	return signInPassword
}

// TestPagesHome: sign-in at / and the home page.
func TestPagesHome(t *testing.T) {
	t.Parallel()
	s := startErrata(t, nil)
	password := pageOrg(t, s, "ann@example.com", "acme", "Acme Corp")
	runPageFlow(t, s, "home", map[string]any{"email": "ann@example.com", "password": password, "orgName": "Acme Corp"}, "")
}
