package handlers

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/mail"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"errata/store"
	"errata/worker/dif"
)

// bodyInput is one request body type of the API, decoded the way its
// handler decodes it.
type bodyInput struct {
	name string
	// keys are the JSON keys of the body, where a 422 may point ("*":
	// any key, for a body that is a map); options are those of a nested
	// options object.
	keys, options []string
	// decode runs decodeJSON and the handler's own validation function,
	// when it has one, and returns the validated value.
	decode func(w http.ResponseWriter, r *http.Request) (any, error)
	// check says what is wrong with a value that decode accepted, beyond
	// what every accepted value must satisfy (see checkStorable).
	check func(v any) error
}

// decodeInto is the decode of a body that its handler checks inline
// after decodeJSON: the fuzz target checks what decodeJSON lets through;
// FuzzAPI covers the inline checks.
func decodeInto[T any](w http.ResponseWriter, r *http.Request) (any, error) {
	var in T
	err := decodeJSON(w, r, &in)
	return in, err
}

// bodyInputs is every body that a handler reads with decodeJSON.
var bodyInputs = []bodyInput{
	{name: "release_create",
		keys: []string{"version", "ref", "url", "dateReleased", "dateStarted", "data", "projects", "commits", "refs", "headCommits"},
		decode: func(w http.ResponseWriter, r *http.Request) (any, error) {
			var in releaseIn
			if err := decodeJSON(w, r, &in); err != nil {
				return nil, err
			}
			ri, err := in.releaseInput()
			if err != nil {
				return nil, err
			}
			projects, err := in.projectSlugs()
			return []any{ri, projects}, err
		},
		check: func(v any) error { return checkReleaseInput(v.([]any)[0].(store.ReleaseInput)) }},
	{name: "project_release_create",
		keys: []string{"version", "ref", "url", "dateReleased", "dateStarted", "data", "commits", "refs", "headCommits"},
		decode: func(w http.ResponseWriter, r *http.Request) (any, error) {
			var in releaseBaseIn
			if err := decodeJSON(w, r, &in); err != nil {
				return nil, err
			}
			return in.releaseInput()
		},
		check: func(v any) error { return checkReleaseInput(v.(store.ReleaseInput)) }},
	{name: "release_update",
		keys: []string{"ref", "url", "dateReleased", "dateStarted", "data", "commits", "refs", "headCommits"},
		decode: func(w http.ResponseWriter, r *http.Request) (any, error) {
			var in releaseUpdateIn
			if err := decodeJSON(w, r, &in); err != nil {
				return nil, err
			}
			return in.releaseUpdate()
		},
		check: func(v any) error {
			u := v.(store.ReleaseUpdate)
			if (!u.SetRef && u.Ref != nil) || (!u.SetURL && u.URL != nil) || (!u.SetData && u.Data != nil) ||
				(!u.SetDateReleased && u.DateReleased != nil) || (!u.SetDateStarted && u.DateStarted != nil) {
				return fmt.Errorf("a value is assigned for a key that was not sent: %+v", u)
			}
			return checkCommits(u.Commits)
		}},
	{name: "deploy_create",
		keys: []string{"environment", "name", "url", "dateStarted", "dateFinished", "projects"},
		decode: func(w http.ResponseWriter, r *http.Request) (any, error) {
			var in deployIn
			if err := decodeJSON(w, r, &in); err != nil {
				return nil, err
			}
			return in.deployInput()
		},
		check: func(v any) error {
			env := v.(store.DeployInput).Environment
			if n := utf8.RuneCountInString(env); n < 1 || n > 64 || strings.ContainsAny(env, "\r\n\f/") {
				return fmt.Errorf("environment %q breaks the naming rule", env)
			}
			return nil
		}},
	{name: "repository_create", keys: []string{"name", "url", "provider"},
		decode: func(w http.ResponseWriter, r *http.Request) (any, error) {
			var in repositoryIn
			if err := decodeJSON(w, r, &in); err != nil {
				return nil, err
			}
			return in.repositoryInput()
		},
		check: func(v any) error {
			repo := v.(store.RepositoryInput)
			if n := utf8.RuneCountInString(repo.Name); n < 1 || n > 200 {
				return fmt.Errorf("a name of %d characters", n)
			}
			return nil
		}},
	{name: "environment_update", keys: []string{"isHidden"}, decode: decodeInto[environmentProjectIn]},
	{name: "organization_create", keys: append([]string{"name", "slug", "agreeTerms"}, organizationCreateUnstored...),
		decode: func(w http.ResponseWriter, r *http.Request) (any, error) {
			var in organizationCreateIn
			if err := decodeJSON(w, r, &in); err != nil {
				return nil, err
			}
			slug, name, err := in.validate()
			return store.OrganizationUpdate{Name: &name, Slug: &slug}, err
		},
		check: func(v any) error {
			u := v.(store.OrganizationUpdate)
			return checkNewNames(u.Name, u.Slug, 64, 50)
		}},
	{name: "organization_update", keys: append([]string{"name", "slug", "require2FA"}, organizationUnstored...),
		decode: func(w http.ResponseWriter, r *http.Request) (any, error) {
			var in organizationUpdateIn
			if err := decodeJSON(w, r, &in); err != nil {
				return nil, err
			}
			return in.update()
		},
		check: func(v any) error {
			u := v.(store.OrganizationUpdate)
			return checkNewNames(u.Name, u.Slug, 64, 50)
		}},
	{name: "project_create", keys: []string{"name", "slug", "platform", "default_rules"},
		decode: func(w http.ResponseWriter, r *http.Request) (any, error) {
			var in projectCreateIn
			if err := decodeJSON(w, r, &in); err != nil {
				return nil, err
			}
			return in.newProject()
		},
		check: func(v any) error {
			np := v.(store.NewProject)
			if err := checkNewNames(&np.Name, &np.Slug, 50, 100); err != nil {
				return err
			}
			return checkPlatform(np.Platform)
		}},
	{name: "project_update", keys: append([]string{"name", "slug", "platform"}, projectUnstored...),
		decode: func(w http.ResponseWriter, r *http.Request) (any, error) {
			var in projectUpdateIn
			if err := decodeJSON(w, r, &in); err != nil {
				return nil, err
			}
			return in.update()
		},
		check: func(v any) error {
			u := v.(store.ProjectUpdate)
			if err := checkNewNames(u.Name, u.Slug, 200, 100); err != nil {
				return err
			}
			if !u.SetPlatform && u.Platform != nil {
				return fmt.Errorf("a platform is assigned that was not sent: %q", *u.Platform)
			}
			return checkPlatform(u.Platform)
		}},
	{name: "release_file_update", keys: []string{"name"}, decode: decodeInto[releaseFileUpdateIn]},
	{name: "user_update", keys: []string{"name", "options"},
		options: []string{"timezone", "stacktraceOrder", "language", "clock24Hours", "preferredTheme"},
		decode: func(w http.ResponseWriter, r *http.Request) (any, error) {
			return decodeUserIn(w, r)
		},
		check: func(v any) error {
			u := v.(store.UserUpdate)
			for _, s := range []*string{u.Name.Value, u.Timezone.Value, u.StacktraceOrder.Value, u.Language.Value, u.PreferredTheme.Value} {
				if s != nil && utf8.RuneCountInString(*s) > 255 {
					return fmt.Errorf("a string of %d characters", utf8.RuneCountInString(*s))
				}
			}
			if u.Name.Set && u.Name.Value == nil {
				return fmt.Errorf("name is set to null")
			}
			if tz := u.Timezone.Value; tz != nil {
				if _, err := time.LoadLocation(*tz); err != nil || *tz == "" || *tz == "Local" {
					return fmt.Errorf("timezone %q is not an IANA zone", *tz)
				}
			}
			return nil
		}},
	{name: "email", keys: []string{"email"},
		decode: func(w http.ResponseWriter, r *http.Request) (any, error) {
			return decodeEmailIn(w, r)
		},
		check: func(v any) error {
			e := v.(string)
			a, err := mail.ParseAddress(e)
			at := strings.LastIndexByte(e, '@')
			switch {
			case len(e) > 254:
				return fmt.Errorf("an address of %d bytes", len(e))
			case err != nil || a.Address != e || a.Name != "" || at < 1:
				return fmt.Errorf("%q is not a bare address: %v", e, err)
			case e[at+1:] != strings.ToLower(e[at+1:]):
				return fmt.Errorf("the domain of %q is not lower-case", e)
			}
			return nil
		}},
	{name: "notifications_update", keys: []string{"subscribeByDefault"}, decode: decodeInto[notificationsIn]},
	{name: "recovery_code", keys: []string{"code"}, decode: decodeInto[recoveryCodeIn]},
	{name: "email_verify", keys: []string{"key"}, decode: decodeInto[verifyIn]},
	{name: "assemble", keys: []string{"checksum", "chunks", "projects", "version", "dist"},
		decode: func(w http.ResponseWriter, r *http.Request) (any, error) {
			return readAssemble(w, r)
		},
		check: func(v any) error {
			req := v.(store.AssemblyRequest)
			for _, sum := range append([]string{req.Checksum}, req.Chunks...) {
				if len(sum) != 40 || strings.Trim(sum, "0123456789abcdef") != "" {
					return fmt.Errorf("%q is not a lower-case SHA-1 in hex", sum)
				}
			}
			return nil
		}},
	{name: "proguard_release", keys: []string{"release_name", "proguard_uuid"},
		decode: func(w http.ResponseWriter, r *http.Request) (any, error) {
			name, uuid, err := readProguardRelease(w, r)
			return [2]string{name, uuid}, err
		},
		check: func(v any) error {
			in := v.([2]string)
			name, uuid := in[0], in[1]
			switch {
			case name == "" || utf8.RuneCountInString(name) > maxProguardReleaseName || strings.ContainsRune(name, 0):
				return fmt.Errorf("release name %q", name)
			case len(uuid) != 36 || strings.Trim(uuid, "0123456789abcdef-") != "" || strings.Count(uuid, "-") != 4:
				return fmt.Errorf("%q is not a lowercase hyphenated UUID", uuid)
			}
			return nil
		}},
	{name: "difs_assemble", keys: []string{"*"},
		decode: func(w http.ResponseWriter, r *http.Request) (any, error) {
			checksums, reqs, err := readDifAssemble(w, r)
			return struct {
				Checksums []string
				Requests  []store.DifRequest
			}{checksums, reqs}, err
		},
		check: func(v any) error {
			in := v.(struct {
				Checksums []string
				Requests  []store.DifRequest
			})
			for i, req := range in.Requests {
				if in.Checksums[i] != req.Checksum {
					return fmt.Errorf("checksum %q answered as %q", req.Checksum, in.Checksums[i])
				}
				for _, sum := range append([]string{req.Checksum}, req.Chunks...) {
					if len(sum) != 40 || strings.Trim(sum, "0123456789abcdef") != "" {
						return fmt.Errorf("%q is not a lower-case SHA-1 in hex", sum)
					}
				}
				if req.Name == "" || len(req.Name) > 1024 {
					return fmt.Errorf("name %q", req.Name)
				}
				if req.DebugID != nil {
					if id, ok := dif.CanonicalDebugID(*req.DebugID); !ok || id != *req.DebugID {
						return fmt.Errorf("debug id %q is not in Sentry's form", *req.DebugID)
					}
				}
			}
			return nil
		}},
}

// checkNewNames checks the validated name and slug of an organization or
// a project (nil when not sent) against Sentry's rules.
func checkNewNames(name, slug *string, maxName, maxSlug int) error {
	if name != nil {
		if n := utf8.RuneCountInString(*name); n < 1 || n > maxName || strings.TrimSpace(*name) == "" {
			return fmt.Errorf("name %q", *name)
		}
	}
	if slug != nil {
		s := *slug
		if len(s) < 1 || len(s) > maxSlug || strings.Trim(s, "0123456789") == "" || s[0] == '-' ||
			strings.Trim(s, "abcdefghijklmnopqrstuvwxyz0123456789_-") != "" || !slugPattern.MatchString(s) {
			return fmt.Errorf("slug %q", s)
		}
	}
	return nil
}

// checkPlatform checks a validated platform: nil, or Sentry's form.
func checkPlatform(p *string) error {
	if p != nil && (len(*p) < 1 || len(*p) > 64 || strings.Trim(*p, "abcdefghijklmnopqrstuvwxyz0123456789-") != "") {
		return fmt.Errorf("platform %q", *p)
	}
	return nil
}

// checkReleaseInput checks a validated release body against the contract.
func checkReleaseInput(ri store.ReleaseInput) error {
	if !versionRule(ri.Version) {
		return fmt.Errorf("version %q breaks the version rule", ri.Version)
	}
	return checkCommits(ri.Commits)
}

// checkCommits checks validated commits and refs against Sentry's limits.
func checkCommits(in store.ReleaseCommitsInput) error {
	within := func(s string, lo, hi int) bool {
		n := utf8.RuneCountInString(s)
		return n >= lo && n <= hi
	}
	if in.Commits != nil {
		for _, c := range *in.Commits {
			if !within(c.ID, 1, 64) || !within(c.Repository, 0, 200) {
				return fmt.Errorf("commit %q of repository %q", c.ID, c.Repository)
			}
			for _, p := range c.PatchSet {
				if !within(p.Path, 1, 255) || (p.Type != "A" && p.Type != "M" && p.Type != "D") {
					return fmt.Errorf("patch %+v", p)
				}
			}
		}
	}
	if in.Refs != nil {
		for _, r := range *in.Refs {
			if !within(r.Commit, 1, 64) || !within(r.Repository, 1, 200) ||
				r.PreviousCommit != nil && !within(*r.PreviousCommit, 1, 64) {
				return fmt.Errorf("ref %+v", r)
			}
		}
	}
	return nil
}

// checkStorable says what an accepted value holds that PostgreSQL cannot
// store or the API cannot write back: a string with NUL or invalid UTF-8,
// raw JSON with either, a timestamp outside years 0000 to 9999 in UTC.
func checkStorable(v reflect.Value, at string) error {
	switch v.Kind() {
	case reflect.String:
		if s := v.String(); !utf8.ValidString(s) || strings.ContainsRune(s, 0) {
			return fmt.Errorf("%s: %q cannot be stored", at, s)
		}
	case reflect.Pointer, reflect.Interface:
		if !v.IsNil() {
			return checkStorable(v.Elem(), at)
		}
	case reflect.Slice:
		if v.Type() == reflect.TypeFor[json.RawMessage]() {
			if b := v.Bytes(); b != nil && (!json.Valid(b) || bytes.Contains(b, []byte(`\u0000`)) || !utf8.Valid(b)) {
				return fmt.Errorf("%s: raw JSON %q cannot be stored", at, b)
			}
			return nil
		}
		for i := range v.Len() {
			if err := checkStorable(v.Index(i), fmt.Sprintf("%s[%d]", at, i)); err != nil {
				return err
			}
		}
	case reflect.Map:
		for it := v.MapRange(); it.Next(); {
			if err := checkStorable(it.Key(), at+" key"); err != nil {
				return err
			}
			if err := checkStorable(it.Value(), fmt.Sprintf("%s[%v]", at, it.Key())); err != nil {
				return err
			}
		}
	case reflect.Struct:
		if t, ok := reflect.TypeAssert[time.Time](v); ok {
			if y := t.UTC().Year(); y < 0 || y > 9999 {
				return fmt.Errorf("%s: %v cannot be written as the API writes times", at, t)
			}
			return nil
		}
		for i := range v.NumField() {
			if err := checkStorable(v.Field(i), at+"."+v.Type().Field(i).Name); err != nil {
				return err
			}
		}
	}
	return nil
}

// checkAPIError says what is wrong with err as the answer to a body of in:
// it must be a 4xx of the contract, a 422 pointing at one of the body's
// keys.
func checkAPIError(in bodyInput, body []byte, err error) error {
	status, resp := errorResponse(err)
	enc, jerr := json.Marshal(resp)
	if jerr != nil {
		return fmt.Errorf("the answer to %v does not encode: %v", err, jerr)
	}
	switch status {
	case http.StatusBadRequest:
		if string(enc) != `{"detail":"Cannot parse request body"}` {
			return fmt.Errorf("400 with %s", enc)
		}
		if json.Valid(body) && utf8.Valid(body) {
			return fmt.Errorf("400 for valid JSON: %v", err)
		}
		return nil
	case http.StatusRequestEntityTooLarge:
		if len(body) <= maxBodyBytes {
			return fmt.Errorf("413 for %d bytes", len(body))
		}
		return nil
	case http.StatusUnprocessableEntity:
	default:
		return fmt.Errorf("status %d (%v)", status, err)
	}
	if !json.Valid(body) {
		return fmt.Errorf("422 for JSON that does not parse: %v", err)
	}
	ve := resp.(map[string]any)["detail"].(validationError)
	if len(ve) == 0 {
		return fmt.Errorf("422 without detail")
	}
	for _, fe := range ve {
		if !slices.Contains([]string{missing, typeError, valueErr}, fe.Type) || fe.Msg == "" {
			return fmt.Errorf("422 entry %+v", fe)
		}
		if len(fe.Loc) == 1 && fe.Loc[0] == "body" && fe.Msg == "Input should be an object" {
			continue // the body is JSON but not an object
		}
		key := func(i int) string {
			s, _ := fe.Loc[i].(string)
			return s
		}
		if slices.Contains(in.keys, "*") && len(fe.Loc) >= 1 && fe.Loc[0] == "body" {
			continue // a map: any key
		}
		if len(fe.Loc) < 2 || fe.Loc[0] != "body" || !slices.Contains(in.keys, key(1)) {
			return fmt.Errorf("422 at %v, not at a key of the body", fe.Loc)
		}
		if len(fe.Loc) > 2 && key(1) == "options" && !slices.Contains(in.options, key(2)) {
			return fmt.Errorf("422 at %v, not at an option", fe.Loc)
		}
	}
	return nil
}

// FuzzDecodeJSON sends arbitrary bytes through the decoding and validation
// of every request body: each either yields a value that keeps the
// contract's rules and can be stored, or an error that errors.go answers
// with a 4xx of the contract. Seeds are named after the input they were
// written for; every seed goes through every input.
func FuzzDecodeJSON(f *testing.F) {
	f.Add([]byte(`{}`))
	f.Add([]byte(`{"version": "1", "projects": ["a"], "commits": [{"id": "a", "repository": "r", "author_name": "A", "timestamp": "2026-01-01T00:00:00Z", "patch_set": [{"path": "p", "type": "M"}]}], "refs": [{"repository": "r", "commit": "a..b"}], "headCommits": [{"repository": "r", "currentId": "c"}]}`))
	f.Add([]byte(`{"name": "acme/web", "url": "https://x.io/a", "provider": "github"}`))
	f.Add([]byte(`{"AAF4C61DDCC5E8A2DABEDE0F3B482CD9AEA9434D": {"name": "a.out", "debug_id": "33221100554477668899AABBCCDDEEFF1", "chunks": ["aaf4c61ddcc5e8a2dabede0f3b482cd9aea9434d"]}}`))
	f.Add([]byte(`{"release_name": "com.example@1.0+5", "proguard_uuid": "12A2E4EE87055F9183693A5B10A48225"}`))
	f.Add([]byte(`{"name": "Mobile App", "slug": "mobile-app", "platform": "react-native", "default_rules": false, "isBookmarked": true}`))
	f.Add([]byte(`{"name": "Globex Corp", "agreeTerms": true, "require2FA": false}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		for _, in := range bodyInputs {
			r := httptest.NewRequest("POST", "/", bytes.NewReader(body))
			v, err := in.decode(httptest.NewRecorder(), r)
			if err != nil {
				if cerr := checkAPIError(in, body, err); cerr != nil {
					t.Errorf("%s: %v", in.name, cerr)
				}
				continue
			}
			if err := checkStorable(reflect.ValueOf(v), in.name); err != nil {
				t.Errorf("accepted: %v", err)
			}
			if in.check != nil {
				if err := in.check(v); err != nil {
					t.Errorf("%s: accepted: %v", in.name, err)
				}
			}
		}
	})
}
