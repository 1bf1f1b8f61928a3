package pages

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// TestOrganizationDecoders holds the walker's readers of the
// organization's lists to what encoding/json reads of the same answers.
func TestOrganizationDecoders(t *testing.T) {
	teams := `[{"id":"1","slug":"web-team","name":"Web \"team\" \u00e9","memberCount":3,"isMember":true,"projects":[{"x":[1,{"y":"]"}]}]},
		{"slug":"b","name":"B","memberCount":0,"isMember":false,"avatar":null}]`
	members := `[{"id":"7","email":"a@example.com","name":"A","orgRole":"owner","pending":false,"expired":false,"user":{"id":"3","emails":[{"id":"1"}]}},
		{"id":"8","email":"b@example.com","name":"","orgRole":"member","pending":true,"expired":true,"user":null}]`
	projects := `[{"slug":"web","name":"Web","teams":[{"slug":"t","name":"T","memberCount":1,"isMember":false}],"latestRelease":{"version":"1.0/\u0041"}},
		{"slug":"api","name":"API","teams":[],"latestRelease":null}]`
	check := func(name, answer string, walked, std any, decode func([]byte) error) {
		t.Helper()
		if err := decode([]byte(answer)); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if err := json.Unmarshal([]byte(answer), std); err != nil {
			t.Fatal(err)
		}
		// An empty list and none show alike.
		if diff := cmp.Diff(std, walked, cmpopts.EquateEmpty()); diff != "" {
			t.Errorf("%s: the walker read differently from encoding/json (-json +walker):\n%s", name, diff)
		}
	}
	var ts, tsJSON orgTeams
	check("teams", teams, &ts, &tsJSON, ts.decodeAPI)
	var ms, msJSON orgMembers
	check("members", members, &ms, &msJSON, ms.decodeAPI)
	var ps, psJSON orgProjects
	check("projects", projects, &ps, &psJSON, ps.decodeAPI)
	for _, bad := range []string{`{`, `[{"slug":1}]`, `[{"isMember":"yes"}]`, `[{"user":[]}]`, `[`, `[{"name":"x"},]`} {
		var ts orgTeams
		var ms orgMembers
		if ts.decodeAPI([]byte(bad)) == nil && ms.decodeAPI([]byte(bad)) == nil {
			t.Errorf("%s: read without an error", bad)
		}
	}
}
