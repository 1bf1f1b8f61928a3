package handlers

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"errata/store"
)

// UnmarshalText lets the tests read golden releases back into releaseOut.
func (t *jsonTime) UnmarshalText(b []byte) error {
	v, err := time.Parse(time.RFC3339Nano, string(b))
	*t = jsonTime(v)
	return err
}

// UnmarshalJSON lets the tests read golden versionInfo back: encoding/json
// cannot set the embedded pointer to the unexported parsedVersion.
func (v *versionOut) UnmarshalJSON(b []byte) error {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		return err
	}
	if err := json.Unmarshal(m["raw"], &v.Raw); err != nil {
		return err
	}
	delete(m, "raw")
	if len(m) == 0 {
		v.parsedVersion = nil
		return nil
	}
	rest, _ := json.Marshal(m)
	dec := json.NewDecoder(bytes.NewReader(rest))
	dec.DisallowUnknownFields()
	v.parsedVersion = new(parsedVersion)
	return dec.Decode(v.parsedVersion)
}

// UnmarshalJSON lets the tests read a golden description back, whole.
func (d *description) UnmarshalJSON(b []byte) error {
	var s string
	err := json.Unmarshal(b, &s)
	*d = description{head: s}
	return err
}

// encodingJSON is what writeJSON wrote before the hand-written encoder:
// encoding/json's Encoder, HTML escaping and newline included.
func encodingJSON(t testing.TB, v any) ([]byte, error) {
	t.Helper()
	var buf bytes.Buffer
	err := json.NewEncoder(&buf).Encode(v)
	return buf.Bytes(), err
}

// handJSON is what writeJSON writes now for v.
func handJSON(t testing.TB, v jsonAppender) ([]byte, error) {
	t.Helper()
	b, err := v.appendJSON(nil)
	return append(b, '\n'), err
}

// checkSameJSON fails unless both encoders write the same bytes for v, or
// both fail.
func checkSameJSON(t testing.TB, v jsonAppender) {
	t.Helper()
	want, wantErr := encodingJSON(t, v)
	got, gotErr := handJSON(t, v)
	if (wantErr != nil) != (gotErr != nil) {
		t.Fatalf("encoding/json error %v, hand-written encoder error %v", wantErr, gotErr)
	}
	if wantErr != nil {
		return
	}
	if diff := cmp.Diff(string(want), string(got)); diff != "" {
		t.Errorf("encoding/json (-) and the hand-written encoder (+) differ:\n%s", diff)
	}
}

// goldenTime stands for the scrubbed timestamps of golden files.
var goldenTime = regexp.MustCompile(`"\\u003ctime\\u003e"|"<time>"`)

func TestReleaseJSONIsEncodingJSON(t *testing.T) {
	t.Run("every golden release and release list", func(t *testing.T) {
		paths, err := filepath.Glob(filepath.Join("..", "testdata", "*.json"))
		if err != nil {
			t.Fatal(err)
		}
		var checked []string
		for _, path := range paths {
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			data = goldenTime.ReplaceAll(data, []byte(`"2026-11-24T01:02:03.456Z"`))
			strict := func(v any) bool {
				dec := json.NewDecoder(bytes.NewReader(data))
				dec.DisallowUnknownFields()
				return dec.Decode(v) == nil && bytes.Contains(data, []byte(`"shortVersion"`))
			}
			var one releaseOut
			var list releaseList
			switch {
			case strict(&one):
				checkSameJSON(t, one)
			case strict(&list):
				checkSameJSON(t, list)
			default:
				continue
			}
			checked = append(checked, filepath.Base(path))
		}
		// The goldens of the release routes, at least.
		for _, name := range []string{"release_get.json", "release_get_semver.json", "release_list_org.json",
			"release_org_created.json", "release_update_ref.json"} {
			if !slices.Contains(checked, name) {
				t.Errorf("golden %s was not checked (checked: %v)", name, checked)
			}
		}
	})
	t.Run("every field set", func(t *testing.T) {
		var r releaseOut
		fill(reflect.ValueOf(&r).Elem(), "a<b>&c\u2028\u2029\"\\\n\r\t\b\f\x01\x7fé\xff")
		// The parsed version is embedded, and unexported: fill leaves it.
		r.VersionInfo.Version.parsedVersion = new(parsedVersion)
		fill(reflect.ValueOf(r.VersionInfo.Version.parsedVersion).Elem(), "a<b>&c\u2028\u2029\"\\\n\r\t\b\f\x01\x7fé\xff")
		checkSameJSON(t, r)
		checkSameJSON(t, releaseList{r, r})
		// A field the hand-written encoder forgets is caught here: every
		// field has a value, so encoding/json writes every key.
		got, _ := handJSON(t, r)
		for _, typ := range []reflect.Type{reflect.TypeFor[releaseOut](), reflect.TypeFor[deployOut](),
			reflect.TypeFor[releaseProjectOut](), reflect.TypeFor[commitOut](), reflect.TypeFor[authorOut](),
			reflect.TypeFor[repositoryOut](), reflect.TypeFor[repositoryProvider](),
			reflect.TypeFor[versionInfoOut](), reflect.TypeFor[parsedVersion](), reflect.TypeFor[releaseOwnerOut]()} {
			for f := range typ.Fields() {
				if !f.IsExported() || f.Anonymous {
					continue
				}
				if key := `"` + strings.Split(f.Tag.Get("json"), ",")[0] + `":`; !bytes.Contains(got, []byte(key)) {
					t.Errorf("%s.%s: no key %s in %s", typ.Name(), f.Name, key, got)
				}
			}
		}
	})
	t.Run("a page of stored releases", func(t *testing.T) {
		// releasePage converts each release as it encodes it, reusing one
		// releaseOut: the bytes must be those of the page converted first.
		var full store.Release
		fill(reflect.ValueOf(&full).Elem(), "a<b>&c\u2028\"\\\n\xff")
		full.Projects = append(full.Projects, store.ReleaseProject{ID: 9, Slug: "z", Name: "Z", Platform: "javascript"})
		bare := store.Release{ID: 2, Version: "2.0", Data: json.RawMessage(`{}`)}
		for _, page := range [][]store.Release{nil, {}, {bare}, {full, bare, full}, {bare, full, bare}} {
			want := releaseList{} // a page is a list, even a nil one
			for _, rel := range page {
				want = append(want, newReleaseOut(rel))
			}
			wantJSON, err := encodingJSON(t, want)
			if err != nil {
				t.Fatal(err)
			}
			got, err := handJSON(t, releasePage(page))
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(string(wantJSON), string(got)); diff != "" {
				t.Errorf("page of %d: encoding/json (-) and releasePage (+) differ:\n%s", len(page), diff)
			}
		}
	})
	t.Run("times of every year form", func(t *testing.T) {
		for _, when := range []time.Time{{}, time.Date(-1, 1, 1, 0, 0, 0, 0, time.UTC),
			time.Date(9999, 12, 31, 23, 59, 59, 999999999, time.UTC), time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC),
			time.Date(7, 3, 4, 5, 6, 7, 8000000, time.FixedZone("y", -7*3600))} {
			checkSameJSON(t, releaseOut{DateCreated: jsonTime(when)})
		}
	})
	t.Run("zero values, nil slices and data", func(t *testing.T) {
		checkSameJSON(t, releaseOut{})
		checkSameJSON(t, releaseList(nil))
		checkSameJSON(t, releaseList{})
		checkSameJSON(t, releaseOut{Data: json.RawMessage(` { "a" : [1, "<x>"] , "b":{} } `)})
		checkSameJSON(t, releaseOut{Data: json.RawMessage(`{"a":`)})
		// What appendRaw's compaction must get right: white space in
		// strings, escaped quotes and backslashes, HTML characters,
		// U+2028 and U+2029 and other UTF-8, as PostgreSQL writes jsonb.
		for _, data := range []string{`{"buildNumber": 12345}`, "{\"a b\": \" x\\\" \\\\ \",\n\t\"c\":\r [1, 2.5e3, true, null]}",
			`{"<a>": "&\u003c\u2028", "s": "\u2028\u2029\u2027é\u00e9"}`, "{\"k\": \"\u2028\u2029\u2027 <&> \xff\"}", ` [ ] `, `"\\"`, `{"a": "b"} x`, `{"a" "b"}`} {
			checkSameJSON(t, releaseOut{Data: json.RawMessage(data)})
		}
	})
}

// fill gives every field of v a value that is not its zero value: s for
// strings, valid JSON holding s for raw JSON, one element for slices.
func fill(v reflect.Value, s string) {
	switch v.Interface().(type) {
	case json.RawMessage:
		b, _ := json.Marshal(map[string]any{"k": s, "n": 1.5, "l": []any{true, nil}})
		v.Set(reflect.ValueOf(json.RawMessage(b)))
		return
	case jsonTime:
		v.Set(reflect.ValueOf(jsonTime(time.Date(2026, 11, 24, 1, 2, 3, 456789000, time.FixedZone("x", 3600)))))
		return
	case time.Time:
		v.Set(reflect.ValueOf(time.Date(2026, 11, 24, 1, 2, 3, 456789000, time.FixedZone("x", 3600))))
		return
	}
	switch v.Kind() {
	case reflect.String:
		v.SetString(s)
	case reflect.Int, reflect.Int64:
		v.SetInt(-42)
	case reflect.Uint64:
		v.SetUint(1<<64 - 1)
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Pointer:
		v.Set(reflect.New(v.Type().Elem()))
		fill(v.Elem(), s)
	case reflect.Slice:
		v.Set(reflect.MakeSlice(v.Type(), 1, 1))
		fill(v.Index(0), s)
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() { // what a pointer points into is set with it
				fill(v.Field(i), s)
			}
		}
	default:
		panic("fill: no value for " + v.Type().String())
	}
}

// releaseList is a page of releases as encoding/json writes it: the
// reference for releasePage, and the shape of the list goldens.
type releaseList []releaseOut

func (l releaseList) appendJSON(b []byte) ([]byte, error) {
	if l == nil {
		return append(b, "null"...), nil
	}
	b = append(b, '[')
	for i, r := range l {
		if i > 0 {
			b = append(b, ',')
		}
		var err error
		if b, err = r.appendJSON(b); err != nil {
			return nil, err
		}
	}
	return append(b, ']'), nil
}

// FuzzReleaseJSON compares the hand-written release encoder with
// encoding/json on fuzzed strings, numbers, times and data.
func FuzzReleaseJSON(f *testing.F) {
	f.Add("1.0.0", "ref", "https://x/<a>&b", "production", "web", []byte(`{"a": [1, 2]}`), int64(7), int64(1700000000123456789), true)
	f.Add("v\u2028\u2029", "\x00\x1f\"\\", "\xff\xfe", "é", "", []byte(`{}`), int64(-1), int64(0), false)
	f.Add("", "", "", "", "", []byte(`not json`), int64(0), int64(-62135596800000000), true)
	f.Add("1.2.3-rc.1+0123456789ab", "ref", "", "x", "my.app", []byte(`{}`), int64(1<<62), int64(1), true)
	f.Fuzz(func(t *testing.T, version, ref, url, env, slug string, data []byte, n, nanos int64, withDeploy bool) {
		when := jsonTime(time.Unix(0, nanos))
		r := releaseOut{
			ID: n, Version: version, ShortVersion: version, Ref: &ref, URL: &url,
			DateCreated: when, DateReleased: &when, Data: json.RawMessage(data),
			NewGroups: int(n), CommitCount: int(n >> 3), DeployCount: int(-n),
			Projects: []releaseProjectOut{{ID: n, Slug: slug, Name: env, Platform: &ref, Platforms: []string{url, env}, HasHealthData: withDeploy},
				{Slug: version, Name: url, Platforms: noPlatforms, NewGroups: int(n)}},
			VersionInfo: parseReleaseVersion(slug + "@" + version),
		}
		if data == nil {
			r.Data = nil
		}
		if withDeploy {
			r.LastDeploy = &deployOut{ID: version, Environment: env, Name: &slug, DateStarted: &when, DateFinished: when}
			r.URL = nil
			r.LastCommit = &commitOut{ID: ref, Message: &env, DateCreated: when, Author: &authorOut{Name: &slug, Email: url},
				Repository: repositoryOut{ID: version, Name: slug, URL: &url, Provider: repositoryProvider{ID: env, Name: ref},
					Status: "active", DateCreated: when, ExternalSlug: &version}}
			r.Authors = []authorOut{{Name: &env, Email: ref}, {Email: slug}}
			r.Owner = &releaseOwnerOut{ID: version, Name: env, Username: url, Email: url, DateJoined: when, LastLogin: &when, IsActive: true}
		} else {
			r.LastCommit = &commitOut{ID: ref, DateCreated: when, Repository: repositoryOut{Name: env}}
			r.Authors = []authorOut{}
		}
		checkSameJSON(t, r)
		checkSameJSON(t, releaseList{r, {Version: ref}})

		// The list route's encoder, on the stored releases the same
		// values make.
		at := time.Unix(0, nanos)
		rel := store.Release{ID: n, Version: version, Ref: &ref, URL: &url, Data: json.RawMessage(data),
			DateCreated: at, DateReleased: &at, Status: slug, DeployCount: int(-n), CommitCount: int(n >> 3),
			Projects: []store.ReleaseProject{{ID: n, Slug: slug, Name: env, Platform: ref}, {Slug: version, Name: url}}}
		if withDeploy {
			rel.LastDeploy = &store.Deploy{ID: n, Environment: env, Name: &slug, DateStarted: &at, DateFinished: at}
			rel.LastCommit = &store.Commit{Key: ref, Message: &env, DateAdded: at,
				Author: &store.CommitAuthor{Name: &slug, Email: url}}
			rel.Authors = []store.CommitAuthor{{Name: &env, Email: ref}, {Email: slug}}
			rel.Owner = &store.ReleaseOwner{ID: n, Email: url, Name: env, DateJoined: at, LastLogin: &at, IsSuperuser: true}
		}
		page := []store.Release{rel, {ID: -n, Version: ref, DateCreated: at}, rel}
		want, wantErr := encodingJSON(t, releaseList{newReleaseOut(page[0]), newReleaseOut(page[1]), newReleaseOut(page[2])})
		got, gotErr := handJSON(t, releasePage(page))
		if (wantErr != nil) != (gotErr != nil) {
			t.Fatalf("encoding/json error %v, releasePage error %v", wantErr, gotErr)
		}
		if diff := cmp.Diff(string(want), string(got)); wantErr == nil && diff != "" {
			t.Errorf("encoding/json (-) and releasePage (+) differ:\n%s", diff)
		}
	})
}
