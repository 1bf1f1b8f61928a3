package handlers

import (
	"context"
	"encoding/json"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"

	"errata/store"
)

// TestArtifactLookupAsSymbolicatorAsks holds artifact-lookup/ to the lookups
// symbolicator makes (docs/symbol-server.md): several debug ids at once, and release files and release bundles
// found by a URL stem, case-insensitively, of the release and dist asked.
func TestArtifactLookupAsSymbolicatorAsks(t *testing.T) {
	a := newTestAPI(t)
	ctx := context.Background()
	owner := a.user("dev@example.com")
	a.org("acme", "dev@example.com")
	a.project("acme", "web")
	tok := a.token("dev@example.com", "project:read", "project:releases")
	const id1, id2 = "c0ffee00-1234-4abc-8def-0123456789ab", "c0ffee00-5678-4abc-8def-0123456789ab"
	f1 := a.debugIDBundle(t, owner, "acme", "6e1b7a1c-2f0e-4b7e-9a53-0d6f3c1b2a90", id1)
	f2 := a.debugIDBundle(t, owner, "acme", "6e1b7a1c-2f0e-4b7e-9a53-0d6f3c1b2a91", id2)
	if _, _, err := a.st.CreateRelease(ctx, owner, "acme", store.ReleaseInput{Version: "web@1.0"}, []string{"web"}); err != nil {
		t.Fatal(err)
	}
	sc := store.ReleaseFileScope{UserID: owner, OrgSlug: "acme", ProjectSlug: "web", Version: "web@1.0"}
	prod := "prod"
	var ids []string
	for _, nf := range []store.NewReleaseFile{
		{Name: "~/static/App.min.js"},
		{Name: "~/static/app.min.js.map"},
		{Name: "~/static/app.min.js", Dist: &prod},
		{Name: "~/static/other.js"},
	} {
		rf, err := a.st.CreateReleaseFile(ctx, sc, nf, strings.NewReader("content of "+nf.Name))
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, strconv.FormatInt(rf.ID, 10))
	}
	lookup := func(q url.Values) (int, []artifactLookupJSON) {
		t.Helper()
		r := a.do("GET", "/api/0/projects/acme/web/artifact-lookup/?"+q.Encode(), tok, nil)
		var out []artifactLookupJSON
		if r.status == 200 {
			if err := json.Unmarshal(r.body, &out); err != nil {
				t.Fatal(err)
			}
		}
		return r.status, out
	}
	idsOf := func(out []artifactLookupJSON) []string {
		var s []string
		for _, f := range out {
			s = append(s, f.ID+":"+f.ResolvedWith)
		}
		slices.Sort(s)
		return s
	}
	if status, out := lookup(url.Values{"debug_id": {id1, strings.ToUpper(id2)}}); status != 200 ||
		!slices.Equal(idsOf(out), sorted(f1+":debug-id", f2+":debug-id")) {
		t.Errorf("two debug ids: %d %v, want %s and %s", status, idsOf(out), f1, f2)
	}
	if status, out := lookup(url.Values{"release": {"web@1.0"}, "url": {"/static/app"}}); status != 200 ||
		!slices.Equal(idsOf(out), sorted(ids[0]+":release", ids[1]+":release")) {
		t.Errorf("release and a URL stem: %d %v, want files %s and %s", status, idsOf(out), ids[0], ids[1])
	} else if !strings.HasSuffix(out[0].URL, "/api/0/projects/acme/web/releases/web@1.0/files/"+out[0].ID+"/?download=1") {
		t.Errorf("release file URL %q", out[0].URL)
	}
	if status, out := lookup(url.Values{"release": {"web@1.0"}, "dist": {"prod"}, "url": {"/STATIC/APP"}}); status != 200 ||
		!slices.Equal(idsOf(out), sorted(ids[2]+":release")) {
		t.Errorf("release, dist and a URL stem: %d %v, want file %s", status, idsOf(out), ids[2])
	}
	if status, _ := lookup(url.Values{"release": {"web@1.0"}}); status != 422 {
		t.Errorf("a release without a URL nor a debug id: %d, want 422", status)
	}
	if status, _ := lookup(url.Values{"debug_id": {id1, "nope"}}); status != 422 {
		t.Errorf("a bad debug id among good ones: %d, want 422", status)
	}
}

func sorted(s ...string) []string { slices.Sort(s); return s }
