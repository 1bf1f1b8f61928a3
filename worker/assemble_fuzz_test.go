package worker

import (
	"archive/zip"
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
	"unicode/utf8"

	"errata/store"
)

// Limits of FuzzBundle, small enough for the fuzzer to cross them.
const (
	fuzzMaxMembers = 16
	fuzzReadBudget = 64 << 10
)

// safeMemberName is the rule for member names, written out on its own: a
// relative path of valid UTF-8 without NUL, with no ".." element (either
// slash separates elements) and no drive letter.
func safeMemberName(name string) bool {
	if name == "" || !utf8.ValidString(name) || strings.Contains(name, "\x00") {
		return false
	}
	if name[0] == '/' || name[0] == '\\' || (len(name) >= 2 && name[1] == ':') {
		return false
	}
	for elem := range strings.SplitSeq(strings.ReplaceAll(name, `\`, "/"), "/") {
		if elem == ".." {
			return false
		}
	}
	return true
}

// isText reports whether s can be stored as PostgreSQL text.
func isText(s string) bool {
	return utf8.ValidString(s) && !strings.Contains(s, "\x00")
}

// checkBundleError checks that err, which stopped the reading of a bundle,
// is the bundle's fault (a permanent bundleError, so the job is not
// retried) with a message that a job can record and a client can read.
func checkBundleError(t *testing.T, step string, err error) {
	t.Helper()
	if _, ok := errors.AsType[bundleError](err); !ok {
		t.Fatalf("%s: %v (%T) is not a bundleError", step, err, err)
	}
	if _, ok := errors.AsType[permanentError](err); !ok {
		t.Fatalf("%s: %v is not permanent", step, err)
	}
	if msg := err.Error(); !isText(msg) || len(msg) > 1024 {
		t.Fatalf("%s: the message %q cannot be shown", step, msg)
	}
}

// FuzzBundle reads arbitrary bytes as the assembler reads a bundle:
// openBundle, checkMembers, readManifest, checkManifest and then every
// member the manifest lists, all through one read budget. Each step either
// stops with a permanent bundleError or passes on what the next one may
// trust: at most fuzzMaxMembers members, all with safe names; a manifest
// whose entries name members the bundle has, with urls, headers, dist and
// release that the database can store. Whatever the zip claims, no more
// than fuzzReadBudget bytes come out of it.
func FuzzBundle(f *testing.F) {
	f.Add([]byte("SYSB\x02\x00\x00\x00"))
	f.Fuzz(checkBundle)
}

// FuzzBundleManifest is FuzzBundle on well-formed zips, which byte
// mutations rarely produce: the bundle holds manifest.json with the bytes
// manifest, a member name with content, stored or deflated, and, with
// extra, the two members of the good manifest.
func FuzzBundleManifest(f *testing.F) {
	f.Add([]byte(`{"org": "acme", "release": "1.0", "files": {"a.js": {"url": "~/a.js"}}}`), "a.js", []byte("1"), false, false)
	f.Fuzz(func(t *testing.T, manifest []byte, name string, content []byte, deflate, extra bool) {
		var buf bytes.Buffer
		zw := zip.NewWriter(&buf)
		members := [][2]string{{"manifest.json", string(manifest)}, {name, string(content)}}
		if extra {
			members = append(members, [2]string{"files/_/_/app.min.js", "console.log(1)"},
				[2]string{"files/_/_/app.min.js.map", `{"version":3}`})
		}
		for _, m := range members {
			fh := &zip.FileHeader{Name: m[0], Method: zip.Store}
			if deflate {
				fh.Method = zip.Deflate
			}
			w, err := zw.CreateHeader(fh)
			if err != nil {
				return // a name that zip cannot write
			}
			io.WriteString(w, m[1])
		}
		if err := zw.Close(); err != nil {
			t.Fatal(err)
		}
		checkBundle(t, buf.Bytes())
	})
}

// checkBundle is the property of FuzzBundle for one bundle.
func checkBundle(t *testing.T, data []byte) {
	zr, _, err := openBundle(bytes.NewReader(data), int64(len(data)), fuzzMaxMembers)
	if err != nil {
		checkBundleError(t, "openBundle", err)
		return
	}
	members, err := checkMembers(zr, fuzzMaxMembers)
	if err != nil {
		checkBundleError(t, "checkMembers", err)
		return
	}
	if len(members) > fuzzMaxMembers {
		t.Fatalf("%d members passed a limit of %d", len(members), fuzzMaxMembers)
	}
	for name := range members {
		if !safeMemberName(name) {
			t.Fatalf("member %q passed checkMembers", name)
		}
	}

	// Stream the bundle through the indexer in small, uneven pieces, as
	// blobs of any size would come.
	budget := &readBudget{left: fuzzReadBudget, limit: fuzzReadBudget}
	ms := newMemberStream(zr, 0, budget)
	defer ms.abort()
	for rest, n := data, 1; len(rest) > 0; n = n%13 + 1 {
		k := min(n, len(rest))
		if _, err := ms.Write(rest[:k]); err != nil {
			if budget.left < 0 {
				t.Fatalf("the budget went to %d", budget.left)
			}
			checkBundleError(t, "memberStream", err)
			return
		}
		rest = rest[k:]
	}
	if budget.left < 0 {
		t.Fatalf("the budget went to %d", budget.left)
	}
	seen, err := ms.finish()
	if err != nil {
		checkBundleError(t, "finish", err)
		return
	}
	for name, zf := range members {
		if uint64(seen[name].size) != zf.UncompressedSize64 {
			t.Fatalf("member %q: %d bytes streamed, the directory says %d", name, seen[name].size, zf.UncompressedSize64)
		}
	}
	m, err := manifestOf(ms)
	if err != nil {
		checkBundleError(t, "manifestOf", err)
		return
	}

	job := store.AssemblyJob{OrgSlug: "acme"}
	bt, err := checkManifest(m, members, job)
	if err != nil {
		checkBundleError(t, "checkManifest", err)
		return
	}
	// The job names no projects: only a bundle with a release is accepted.
	if m.Org != "acme" || m.Release == nil || bt.version == nil || *bt.version != *m.Release {
		t.Fatalf("manifest of %q, release %v accepted as %v", m.Org, m.Release, bt.version)
	}
	if store.CheckReleaseVersion(*bt.version) != nil {
		t.Fatalf("release %q accepted", *bt.version)
	}
	if d := bt.dist; d != nil && (*d == "" || !isText(*d) || utf8.RuneCountInString(*d) > store.MaxDistLength) {
		t.Fatalf("dist %q accepted", *d)
	}
	if len(bt.paths) != len(m.Files) {
		t.Fatalf("%d paths for %d manifest entries", len(bt.paths), len(m.Files))
	}
	for _, p := range bt.paths {
		e := m.Files[p]
		if !safeMemberName(p) || members[p] == nil {
			t.Fatalf("manifest entry %q accepted", p)
		}
		if e.URL == "" || len(e.URL) > 1024 || !isText(e.URL) {
			t.Fatalf("url %q accepted", e.URL)
		}
		for k, v := range e.Headers {
			if !isText(k) || !isText(v) {
				t.Fatalf("header %q: %q accepted", k, v)
			}
		}
	}
}
