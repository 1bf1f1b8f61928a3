package storetest

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"errata/store"
)

func TestRecordAndReplayAReleaseCreate(t *testing.T) {
	ctx := context.Background()
	url := NewDatabase(t)
	rec := &Recorder{}
	st, err := store.Open(ctx, store.Config{URL: url, OnStatement: rec.Hook})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(st.Close)
	user, err := st.CreateUser(ctx, "dev@example.com", "Dev")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.CreateOrganization(ctx, "acme", "Acme", "dev@example.com"); err != nil {
		t.Fatal(err)
	}
	if _, err := st.CreateProject(ctx, store.Operator, "acme", store.NewProject{Slug: "web", Name: "Web"}); err != nil {
		t.Fatal(err)
	}

	var rel store.Release
	stmts := rec.Record(func() {
		rel, _, err = st.CreateRelease(ctx, user, "acme", store.ReleaseInput{Version: "recorded"}, []string{"web"})
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(stmts) < 4 || stmts[0].SQL != "begin" || stmts[len(stmts)-1].SQL != "commit" {
		t.Fatalf("recorded %d statements from %q to %q, want a transaction", len(stmts), stmts[0].SQL, stmts[len(stmts)-1].SQL)
	}
	inserts := 0
	for _, s := range stmts {
		if strings.Contains(s.SQL, "INSERT INTO releases") {
			inserts++
			if !slices.Contains(s.Args, any("recorded")) {
				t.Errorf("the insert's arguments %v lack the version", s.Args)
			}
		}
	}
	if inserts != 1 {
		t.Errorf("recorded %d inserts into releases, want 1", inserts)
	}
	if again := rec.Record(func() {}); len(again) != 0 {
		t.Errorf("recorded %d statements while nothing ran", len(again))
	}

	pool := Pool(t, url)
	sub := &Substitution{Marker: "recorded", Fresh: "replayed", ID: rel.ID}
	if err := Replay(ctx, pool, stmts, sub); err != nil {
		t.Fatal(err)
	}
	// The replay created its own release and linked that one, not the
	// recorded release, to the project.
	var links []string
	rows, err := pool.Query(ctx, `
		SELECT r.version FROM release_projects rp JOIN releases r ON r.id = rp.release_id ORDER BY r.version`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var v string
		if err := rows.Scan(&v); err != nil {
			t.Fatal(err)
		}
		links = append(links, v)
	}
	if diff := cmp.Diff([]string{"recorded", "replayed"}, links); diff != "" {
		t.Errorf("links after the replay (-want +got):\n%s", diff)
	}
	// Without a substitution the replay finds the recorded release again.
	if err := Replay(ctx, pool, stmts, nil); err != nil {
		t.Fatal(err)
	}
}

func TestPgbenchScript(t *testing.T) {
	at := time.Date(2024, 3, 1, 12, 30, 0, 123456000, time.UTC)
	tests := []struct {
		name       string
		stmts      []Statement
		wantScript string
		wantDefs   []string
	}{
		{
			name:       "statements without arguments pass as they are",
			stmts:      []Statement{{SQL: "begin"}, {SQL: "  commit\n"}},
			wantScript: "begin;\ncommit;\n",
		},
		{
			name: "arguments become variables, reused placeholders one variable",
			stmts: []Statement{{
				SQL:  "SELECT 1 FROM t WHERE a = $1 AND b = ANY($2) AND c < $3 AND ($4::text = '' OR d = $4) AND e = $10",
				Args: []any{int64(7), []int64{1, 2}, at, "web", nil, nil, nil, nil, nil, []byte{0xca, 0xfe}},
			}},
			wantScript: "SELECT 1 FROM t WHERE a = :s0a1 AND b = ANY(:s0a2) AND c < :s0a3 AND (:s0a4::text = '' OR d = :s0a4) AND e = :s0a10;\n",
			wantDefs:   []string{"s0a1=7", "s0a2={1,2}", "s0a3=2024-03-01 12:30:00.123456Z", "s0a4=web", `s0a10=\xcafe`},
		},
		{
			name: "nil arguments become NULL and empty ones are set once per client",
			stmts: []Statement{
				{SQL: "SELECT $1, $2", Args: []any{(*string)(nil), ""}},
				{SQL: "SELECT $1", Args: []any{json.RawMessage(`{"a":1}`)}},
			},
			wantScript: "\\if :empty_set\n\\else\nSELECT '' AS s0a2 \\gset\n\\set empty_set 1\n\\endif\n" +
				"SELECT NULL, :s0a2;\nSELECT :s1a1;\n",
			wantDefs: []string{`s1a1={"a":1}`, "empty_set=0"},
		},
		{
			name:       "text arrays are quoted",
			stmts:      []Statement{{SQL: "SELECT $1", Args: []any{[]string{`a"b`, `c\d`, "e f"}}}},
			wantScript: "SELECT :s0a1;\n",
			wantDefs:   []string{`s0a1={"a\"b","c\\d","e f"}`},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			script, defs, err := PgbenchScript(tc.stmts)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.wantScript, script); diff != "" {
				t.Errorf("script (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantDefs, defs); diff != "" {
				t.Errorf("definitions (-want +got):\n%s", diff)
			}
		})
	}
}

func TestPgbenchScriptRefuses(t *testing.T) {
	tests := []struct {
		name string
		stmt Statement
	}{
		{"a placeholder without argument", Statement{SQL: "SELECT $2", Args: []any{int64(1)}}},
		{"an argument without text form", Statement{SQL: "SELECT $1", Args: []any{struct{}{}}}},
	}
	for _, tc := range tests {
		t.Run(tc.name+" fails", func(t *testing.T) {
			if _, _, err := PgbenchScript([]Statement{tc.stmt}); err == nil {
				t.Fatal("no error")
			}
		})
	}
}
