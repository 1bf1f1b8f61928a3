package pages

import (
	"bytes"
	"encoding/json"
	"html/template"
	"strings"
	"testing"
)

// walkerDocs are JSON values as the API writes them, and as it might.
var walkerDocs = []string{
	`[]`, `null`, ` [ ] `,
	`[{"id":1,"version":"1.0","projects":[{"slug":"web","name":"W"}],"lastDeploy":null,"data":{}}]`,
	`[{"version":"a\"b\\c\u003cd\u0026","versionInfo":{"package":null,"version":{"raw":"x]}"}},"n":-1.5e3,"t":true,"f":false}]`,
	"[ {\n \"version\" : \"é\\u00e9\\n\" , \"x\" : [ [ ] , { } , \"}\" ] } , {} ]",
	`[{"version":"\\"},{"version":"\\\""}]`,
}

// TestJSONWalker: the walker reads every member of every item as
// encoding/json does.
func TestJSONWalker(t *testing.T) {
	for _, doc := range walkerDocs {
		var want []map[string]json.RawMessage
		if err := json.Unmarshal([]byte(doc), &want); err != nil {
			t.Fatalf("%s: %v", doc, err)
		}
		var got []map[string]json.RawMessage
		err := jsonArray([]byte(doc), func(b []byte, i int) (int, error) {
			item := map[string]json.RawMessage{}
			end, err := jsonObject(b, i, func(k, v []byte) error {
				item[string(k)] = append(json.RawMessage(nil), v...)
				if v[0] == '"' {
					text, err := jsonText(v)
					var s string
					if json.Unmarshal(v, &s); err != nil || string(text) != s {
						t.Errorf("%s: jsonText(%s) = %q, %v, want %q", doc, v, text, err, s)
					}
				}
				return nil
			})
			got = append(got, item)
			return end, err
		})
		if err != nil {
			t.Errorf("%s: %v", doc, err)
			continue
		}
		if len(got) != len(want) {
			t.Errorf("%s: %d items, want %d", doc, len(got), len(want))
			continue
		}
		for i := range want {
			for k, v := range want[i] {
				var a, b bytes.Buffer
				json.Compact(&a, v)
				json.Compact(&b, got[i][k])
				if a.String() != b.String() {
					t.Errorf("%s: item %d %s = %s, want %s", doc, i, k, b.String(), a.String())
				}
			}
			if len(got[i]) != len(want[i]) {
				t.Errorf("%s: item %d has %d members, want %d", doc, i, len(got[i]), len(want[i]))
			}
		}
	}
	for _, bad := range []string{``, `[`, `[{`, `[{"a"}]`, `[{"a":}]`, `[{"a":1,}]`, `[{"a":"1]`, `{"a":1}`, `[1`, `[{"a":1}`, `[{"a":1} {"b":2}]`} {
		if err := jsonArray([]byte(bad), func(b []byte, i int) (int, error) {
			return jsonObject(b, i, func(k, v []byte) error { return nil })
		}); err == nil {
			t.Errorf("%q read without an error", bad)
		}
	}
}

// FuzzJSONWalker: the walker never panics, and reads every array of
// objects that encoding/json reads.
func FuzzJSONWalker(f *testing.F) {
	for _, doc := range walkerDocs {
		f.Add(doc)
	}
	f.Fuzz(func(t *testing.T, doc string) {
		err := jsonArray([]byte(doc), func(b []byte, i int) (int, error) {
			return jsonObject(b, i, func(k, v []byte) error {
				if len(v) > 0 && v[0] == '"' {
					jsonText(v) //nolint:errcheck // only its panics matter
				}
				return nil
			})
		})
		var objects []map[string]json.RawMessage
		if json.Unmarshal([]byte(doc), &objects) == nil && err != nil {
			t.Errorf("%q: %v, but encoding/json reads it", doc, err)
		}
	})
}

// TestEscape: rows escape as html/template does ("+" apart, which needs
// none).
func TestEscape(t *testing.T) {
	for _, s := range []string{"", "plain", `<script>"a" & 'b'</script>`, "a\x00b", "x+y", "é<"} {
		var w rows
		w.text(s)
		want := strings.ReplaceAll(template.HTMLEscapeString(s), "&#43;", "+")
		if string(w.b) != want {
			t.Errorf("escape(%q) = %q, want %q", s, w.b, want)
		}
	}
}

// TestReleaseRows: a release's row links to its escaped address and shows
// its fields escaped.
func TestReleaseRows(t *testing.T) {
	body := `[{"id":1,"version":"2.0 beta+x?#%&<b>","dateCreated":"2026-01-02T03:04:05.000000Z","commitCount":3,` +
		`"deployCount":2,"lastDeploy":{"id":"1","environment":"prod<1>"},"projects":[{"slug":"web"},{"slug":"api"}]},` +
		`{"id":2,"version":"1.0","dateCreated":"x","commitCount":0,"deployCount":0,"lastDeploy":null,"projects":[]}]`
	l := releaseList{org: "acme"}
	if err := l.decodeAPI([]byte(body)); err != nil {
		t.Fatal(err)
	}
	got := string(l.html())
	want := `<tr><td><a href="/organizations/acme/releases/2.0%20beta+x%3F%23%25&amp;%3Cb%3E/">2.0 beta+x?#%&amp;&lt;b&gt;</a></td>` +
		`<td>web, api</td><td><time datetime="2026-01-02T03:04:05.000000Z">2026-01-02 03:04 UTC</time></td>` +
		`<td class="num">2</td><td>prod&lt;1&gt;</td><td class="num">3</td></tr>` + "\n" +
		`<tr><td><a href="/organizations/acme/releases/1.0/">1.0</a></td><td></td><td><time datetime="x">x</time></td>` +
		`<td class="num">0</td><td></td><td class="num">0</td></tr>` + "\n"
	if got != want || l.n != 2 {
		t.Errorf("%d rows:\n%s\nwant\n%s", l.n, got, want)
	}
	if err := (&releaseList{}).decodeAPI([]byte(`[{"deployCount":"2"}]`)); err == nil {
		t.Error("a count that is not a number was read")
	}
}
