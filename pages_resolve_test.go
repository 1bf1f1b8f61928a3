package main

import (
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestPagesResolve: the page "Resolve a stack trace" (testdata/pages/
// resolve.mjs). The app of symbolicate_test.go, bundled and minified by
// esbuild, run under node, its map uploaded for a release by sentry-cli;
// the ProGuard mapping of symbolicatejvm_test.go's program
// (worker/dif/proguard/testdata/mapping.txt, as ProGuard 6.2.2 printed
// it) uploaded and associated with the same release. A person pastes
// node's trace, innermost frame first, and must read the frames of the
// unminified run in the same order; pastes the obfuscated Java trace and
// reads the program's own; pastes a request's JSON, and garbage.
func TestPagesResolve(t *testing.T) {
	t.Parallel()
	esbuild := toolEnv(t, "ESBUILD")
	work := t.TempDir()
	writeFiles(t, work, jsApp)
	original := runNode(t, work, filepath.Join(work, "src/main.js"))
	dist := filepath.Join(work, "dist")
	runToolIn(t, work, esbuild, "src/main.js", "--bundle", "--minify", "--sourcemap", "--platform=node",
		"--outfile="+filepath.Join(dist, "app.min.js"))
	out, err := exec.Command("node", filepath.Join(dist, "app.min.js")).CombinedOutput()
	if err != nil {
		t.Fatalf("node: %v\n%s", err, out)
	}
	// The trace as a browser of the app's users would print it: the
	// script at its URL.
	const url = "https://shop.example/static/app.min.js"
	trace := string(out[strings.Index(string(out), "Error: "):])
	trace = strings.ReplaceAll(trace, "file://"+filepath.Join(dist, "app.min.js"), url)
	trace = strings.ReplaceAll(trace, filepath.Join(dist, "app.min.js"), url)
	if strings.Count(trace, url) != len(original) {
		t.Fatalf("the minified run printed\n%s\nthe unminified one %d frames of the app", trace, len(original))
	}
	var jsFrames []map[string]any
	for _, f := range original {
		jsFrames = append(jsFrames, map[string]any{"function": f.Function, "where": filepath.Base(f.File) + ":" + strconv.Itoa(f.Line) + ":" + strconv.Itoa(f.Column)})
	}

	s := startErrata(t, map[string]string{"LOG_LEVEL": "warn"})
	setupAcme(t, s)
	setPassword(t, s, "ops@example.com")
	const release = "web@1.0.0"
	cli := newSentryCLI(t, "SENTRY_CLI_3", s, "acme").in(dist)
	cli.run(t, "sourcemaps", "upload", "--release", release, "--url-prefix", "~/static", "--wait", ".").expect(t, 0)

	mapping := filepath.Join(t.TempDir(), "mapping.txt")
	b, err := os.ReadFile(filepath.Join("worker", "dif", "proguard", "testdata", "mapping.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(mapping, b, 0o644); err != nil {
		t.Fatal(err)
	}
	uuid := proguardUUID(t, mapping)
	cli.run(t, "proguard", "upload", mapping).expect(t, 0)
	difOfType(t, s, "acme", uuid, "proguard")
	if status, body := s.api(t, "POST", "/api/0/projects/acme/web/files/proguard-artifact-releases/",
		map[string]string{"releaseName": release, "proguardUuid": uuid}); status != http.StatusCreated {
		t.Fatalf("proguard-artifact-releases: %d %s", status, body)
	}
	var org struct{ Name string }
	s.getJSON(t, "/api/0/organizations/acme/", &org)

	runPageFlow(t, s, "resolve", map[string]any{
		"email": "ops@example.com", "password": signInPassword, "orgName": org.Name, "release": release,
		"jsTrace": trace, "jsFrames": jsFrames, "url": url, "uuid": uuid,
		// The obfuscated program's trace (its classes as mapping.txt
		// names them), and what the unobfuscated program prints.
		"javaTrace": "com.shop.c: unknown discount code BOGUS\n" +
			"\tat com.shop.a.a(SourceFile:1014)\n\tat com.shop.b.a(SourceFile:1013)\n\tat com.shop.Main.main(SourceFile:6)\n",
		"javaException": "com.shop.UnknownDiscountException",
		"javaFrames": []map[string]string{
			{"function": "com.shop.Discounts.lookup", "where": "Discounts.java:14"},
			{"function": "com.shop.Discounts.rateFor", "where": "Discounts.java:10"},
			{"function": "com.shop.Cart.applyDiscount", "where": "Cart.java:18"},
			{"function": "com.shop.Checkout.total", "where": "Checkout.java:13"},
			{"function": "com.shop.Checkout.run", "where": "Checkout.java:9"},
			{"function": "com.shop.Main.main", "where": "Main.java:6"},
		},
	}, "")
}
