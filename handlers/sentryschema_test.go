package handlers

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// sentryDocument is Sentry's published OpenAPI document (openapi-derefed.json
// of getsentry/sentry-api-schema release 0.272.0, commit a589a26c3b29),
// kept gzipped beside the repository in ../shared/data, never in it.
const sentryDocument = "shared/data/sentry-openapi-derefed-a589a26c3b29.json.gz"

// sentryDeparture is a way errata's answers knowingly differ from Sentry's
// document, with its reason. Every departure is here, in one place; the
// validation excuses nothing else.
type sentryDeparture struct {
	op     string // operationId, or "*" for every operation
	kind   string // what is excused: "status", "missing", "value", "scopes"
	at     string // for missing and value: the JSON path (items as [])
	fields []string
	reason string
}

var sentryDepartures = []sentryDeparture{
	{op: "*", kind: "status", fields: []string{"400->422"},
		reason: "validation errors are 422 with a list of {type, loc, msg} (CONTRACT.md §3), where Sentry answers 400"},
	{op: "*", kind: "scopes",
		reason: "the scopes each route takes are the specification's table (management-api.md §5 and CONTRACT.md §7); errata has no org:ci or org:integrations scope"},
	{op: "listOrganizationReleaseFiles", kind: "status", fields: []string{"404->200"},
		reason: "the files of a release that does not exist or is not visible list as 200 [] (CONTRACT.md §7, as GlitchTip answers)"},
	{op: "listProjectReleaseFiles", kind: "status", fields: []string{"404->200"},
		reason: "the files of a release that does not exist or is not visible list as 200 [] (CONTRACT.md §7, as GlitchTip answers)"},
	{op: "getProject", kind: "missing", at: "", fields: strings.Fields(`
		allowedDomains autofixAutomationTuning avatar builtinSymbolSources color dataScrubber
		dataScrubberDefaults debugFilesRole defaultEnvironment derivedGroupingEnhancements digestsMaxDelay
		digestsMinDelay dynamicSamplingBiases enableAutoReleaseCreation fingerprintingRules groupingConfig
		groupingEnhancements highlightContext highlightPreset highlightTags isDynamicallySampled isInternal
		isPublic options processingIssues relayPiiConfig resolveAge safeFields scmSourceContextEnabled
		scrapeJavaScript scrubIPAddresses secondaryGroupingConfig secondaryGroupingExpiry securityToken
		securityTokenHeader seerNightshiftTweaks seerScannerAutomation sensitiveFields storeCrashReports
		subjectPrefix subjectTemplate symbolSources tempestFetchScreenshots verifySSL`),
		reason: "Sentry's product settings that errata has no concept of (grouping, data scrubbing, symbol sources, alerts, " +
			"digests, sampling, Seer, security headers) stay out"},
	{op: "updateProject", kind: "missing", at: "", fields: strings.Fields(`
		allowedDomains autofixAutomationTuning avatar builtinSymbolSources color dataScrubber
		dataScrubberDefaults debugFilesRole defaultEnvironment derivedGroupingEnhancements digestsMaxDelay
		digestsMinDelay dynamicSamplingBiases enableAutoReleaseCreation fingerprintingRules groupingConfig
		groupingEnhancements highlightContext highlightPreset highlightTags isDynamicallySampled isInternal
		isPublic options processingIssues relayPiiConfig resolveAge safeFields scmSourceContextEnabled
		scrapeJavaScript scrubIPAddresses secondaryGroupingConfig secondaryGroupingExpiry securityToken
		securityTokenHeader seerNightshiftTweaks seerScannerAutomation sensitiveFields storeCrashReports
		subjectPrefix subjectTemplate symbolSources tempestFetchScreenshots verifySSL`),
		reason: "the answer is the project as GET gives it: without Sentry's product settings, as there"},
	{op: "listOrganizationEnvironments", kind: "value", at: "[].id",
		reason: "environment ids are integers (CONTRACT.md §5), where Sentry writes strings"},
	{op: "listProjectEnvironments", kind: "value", at: "[].id",
		reason: "environment ids are integers (CONTRACT.md §5), where Sentry writes strings"},
	{op: "getProjectEnvironment", kind: "value", at: ".id",
		reason: "environment ids are integers (CONTRACT.md §5), where Sentry writes strings"},
	{op: "updateProjectEnvironment", kind: "value", at: ".id",
		reason: "environment ids are integers (CONTRACT.md §5), where Sentry writes strings"},
}

// scopesDeparture is the index of the scopes departure.
var scopesDeparture = slices.IndexFunc(sentryDepartures, func(d sentryDeparture) bool { return d.kind == "scopes" })

// findSentryDocument walks up from the working directory to the directory
// that holds shared/data: the repository's parent here and in CI.
func findSentryDocument(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		p := filepath.Join(dir, sentryDocument)
		if _, err := os.Stat(p); err == nil {
			return p
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatalf("Sentry's OpenAPI document %s is in no parent directory of the tests: it belongs next to the repository, in ../shared/data", sentryDocument)
		}
		dir = parent
	}
}

// sentryDoc is the part of an OpenAPI document the test reads.
type sentryDoc struct {
	Paths map[string]map[string]struct {
		OperationID string `json:"operationId"`
		Parameters  []struct {
			Name string `json:"name"`
			In   string `json:"in"`
		} `json:"parameters"`
		Responses map[string]struct {
			Content map[string]struct {
				Schema map[string]any `json:"schema"`
			} `json:"content"`
		} `json:"responses"`
		Security []map[string][]string `json:"security"`
	} `json:"paths"`
}

func loadSentryDocument(t *testing.T) sentryDoc {
	t.Helper()
	f, err := os.Open(findSentryDocument(t))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	var doc sentryDoc
	dec := json.NewDecoder(zr)
	dec.UseNumber()
	if err := dec.Decode(&doc); err != nil {
		t.Fatalf("Sentry's document: %v", err)
	}
	return doc
}

var pathParam = regexp.MustCompile(`\{[^}]+\}`)

// templateKey is a path template with its parameters unnamed, so that
// errata's {organization_slug} meets Sentry's {organization_id_or_slug}.
func templateKey(method, path string) string {
	path = strings.TrimSuffix(path, "{$}")
	return method + " " + pathParam.ReplaceAllString(path, "{}")
}

// schemaErrors validates v against the subset of JSON Schema that Sentry's
// document uses: type (a name or a list), nullable, enum, properties,
// required, additionalProperties, items, anyOf, oneOf, allOf and the
// date-time format. Numbers are json.Number.
func schemaErrors(s map[string]any, v any, at string) []string {
	if v == nil {
		if s["nullable"] == true || typeAllows(s, "null") || len(schemaTypes(s)) == 0 && !hasAlternatives(s) {
			return nil
		}
		if !hasAlternatives(s) {
			return []string{at + ": null is not allowed"}
		}
	}
	var errs []string
	if types := schemaTypes(s); len(types) > 0 {
		ok := false
		for _, typ := range types {
			ok = ok || hasType(v, typ)
		}
		if !ok {
			return []string{fmt.Sprintf("%s: %s is not of type %v", at, short(v), types)}
		}
	}
	if enum, ok := s["enum"].([]any); ok {
		found := false
		for _, e := range enum {
			found = found || fmt.Sprint(e) == fmt.Sprint(v)
		}
		if !found {
			errs = append(errs, fmt.Sprintf("%s: %s is not one of %v", at, short(v), enum))
		}
	}
	if s["format"] == "date-time" {
		if str, ok := v.(string); ok {
			if _, err := time.Parse(time.RFC3339Nano, str); err != nil {
				errs = append(errs, fmt.Sprintf("%s: %q is not a date-time", at, str))
			}
		}
	}
	if obj, ok := v.(map[string]any); ok {
		props, _ := s["properties"].(map[string]any)
		for _, name := range stringList(s["required"]) {
			if _, ok := obj[name]; !ok {
				errs = append(errs, fmt.Sprintf("%s: required field %q is missing", at, name))
			}
		}
		keys := make([]string, 0, len(obj))
		for k := range obj {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			if ps, ok := props[k].(map[string]any); ok {
				errs = append(errs, schemaErrors(ps, obj[k], at+"."+k)...)
				continue
			}
			switch ap := s["additionalProperties"].(type) {
			case bool:
				if !ap {
					errs = append(errs, fmt.Sprintf("%s: field %q is not allowed", at, k))
				}
			case map[string]any:
				errs = append(errs, schemaErrors(ap, obj[k], at+"."+k)...)
			}
		}
	}
	if list, ok := v.([]any); ok {
		if items, ok := s["items"].(map[string]any); ok {
			for i, e := range list {
				// Items are reported as [] so that a departure names them all.
				_ = i
				errs = append(errs, schemaErrors(items, e, at+"[]")...)
			}
		}
	}
	for _, sub := range schemaList(s["allOf"]) {
		errs = append(errs, schemaErrors(sub, v, at)...)
	}
	if subs := schemaList(s["anyOf"]); len(subs) > 0 {
		var first []string
		ok := false
		for i, sub := range subs {
			e := schemaErrors(sub, v, at)
			if len(e) == 0 {
				ok = true
				break
			}
			if i == 0 {
				first = e
			}
		}
		if !ok {
			errs = append(errs, fmt.Sprintf("%s: matches none of anyOf (the first says: %s)", at, strings.Join(first, "; ")))
		}
	}
	if subs := schemaList(s["oneOf"]); len(subs) > 0 {
		n := 0
		var first []string
		for i, sub := range subs {
			e := schemaErrors(sub, v, at)
			if len(e) == 0 {
				n++
			} else if i == 0 {
				first = e
			}
		}
		switch {
		case n == 0:
			errs = append(errs, fmt.Sprintf("%s: matches none of oneOf (the first says: %s)", at, strings.Join(first, "; ")))
		case n > 1:
			errs = append(errs, fmt.Sprintf("%s: matches %d of oneOf, not exactly one", at, n))
		}
	}
	return errs
}

func hasAlternatives(s map[string]any) bool {
	return s["anyOf"] != nil || s["oneOf"] != nil || s["allOf"] != nil
}

func schemaTypes(s map[string]any) []string {
	switch t := s["type"].(type) {
	case string:
		return []string{t}
	case []any:
		return stringList(t)
	}
	return nil
}

func typeAllows(s map[string]any, typ string) bool {
	return slices.Contains(schemaTypes(s), typ)
}

func hasType(v any, typ string) bool {
	switch typ {
	case "null":
		return v == nil
	case "boolean":
		_, ok := v.(bool)
		return ok
	case "string":
		_, ok := v.(string)
		return ok
	case "number":
		_, ok := v.(json.Number)
		return ok
	case "integer":
		n, ok := v.(json.Number)
		if !ok {
			return false
		}
		_, err := n.Int64()
		return err == nil
	case "object":
		_, ok := v.(map[string]any)
		return ok
	case "array":
		_, ok := v.([]any)
		return ok
	}
	return false
}

func stringList(v any) []string {
	list, _ := v.([]any)
	out := make([]string, 0, len(list))
	for _, e := range list {
		if s, ok := e.(string); ok {
			out = append(out, s)
		}
	}
	return out
}

func schemaList(v any) []map[string]any {
	list, _ := v.([]any)
	out := make([]map[string]any, 0, len(list))
	for _, e := range list {
		if m, ok := e.(map[string]any); ok {
			out = append(out, m)
		}
	}
	return out
}

func short(v any) string {
	b, _ := json.Marshal(v)
	if len(b) > 80 {
		return string(b[:80]) + "..."
	}
	return string(b)
}

// departuresUsed counts, per index of sentryDepartures, the errors and
// statuses each excused: a departure that excuses nothing is stale.
var departuresUsed = map[int]int{}

// departedFields are the missing fields that departures excused, as
// "index field".
var departedFields = map[string]bool{}

// excused says whether a validation error of op is a stated departure.
func excused(op, msg string) bool {
	for i, d := range sentryDepartures {
		if d.op != "*" && d.op != op {
			continue
		}
		switch d.kind {
		case "missing":
			for _, f := range d.fields {
				if msg == fmt.Sprintf("%s: required field %q is missing", d.at, f) {
					departuresUsed[i]++
					departedFields[fmt.Sprint(i, " ", f)] = true
					return true
				}
			}
		case "value":
			if strings.HasPrefix(msg, d.at+": ") {
				departuresUsed[i]++
				return true
			}
		}
	}
	return false
}

func statusExcused(op string, documented, got int) bool {
	for i, d := range sentryDepartures {
		if (d.op == "*" || d.op == op) && d.kind == "status" &&
			slices.Contains(d.fields, fmt.Sprintf("%d->%d", documented, got)) {
			departuresUsed[i]++
			return true
		}
	}
	return false
}

// sentryCall is one request the test sends: an operation of the document,
// with the request the document describes, and the status errata answers.
type sentryCall struct {
	method, path string // errata's request
	body         any    // JSON, or a multipart body with contentType
	contentType  string
	status       int // errata's answer
	documented   int // the document's status when errata's departs from it
}

// TestSentrySchema calls every operation errata shares with Sentry's
// document and validates each answer against the documented response
// schema; the departures are sentryDepartures.
func TestSentrySchema(t *testing.T) {
	doc := loadSentryDocument(t)
	a := newTestAPI(t)
	a.user("owner@example.com")
	a.org("acme", "owner@example.com")
	a.project("acme", "web")
	a.project("acme", "api")
	tok := a.token("owner@example.com")

	// The data every answer shows: a repository, a release with commits,
	// an owner and a deploy, a file, a debug file and environments.
	res := a.do("POST", "/api/0/organizations/acme/repos/", tok, map[string]any{"name": "acme/web", "provider": "github",
		"url": "https://github.com/acme/web"})
	res.expect(t, http.StatusCreated, nil)
	var repo struct{ ID string }
	json.Unmarshal(res.body, &repo)
	a.do("POST", "/api/0/organizations/acme/releases/", tok, map[string]any{
		"version": "web@1.2.3-rc.1+20260101", "projects": []string{"web", "api"}, "ref": "6ba09a7c53235ee8a8fa5ee4c1ca8ca886e7fdbb",
		"url": "https://example.com/releases/1.2.3", "dateReleased": "2026-11-21T21:10:14.724Z", "owner": "owner@example.com",
		"commits": []map[string]any{{"id": "6ba09a7c53235ee8a8fa5ee4c1ca8ca886e7fdbb", "repository": "acme/web",
			"message": "Fix the build", "author_name": "Jane", "author_email": "jane@example.com",
			"timestamp": "2026-11-20T10:00:00Z", "patch_set": []map[string]any{{"path": "src/app.js", "type": "M"}}}},
	}).expect(t, http.StatusCreated, nil)
	a.do("POST", "/api/0/organizations/acme/releases/web@1.2.3-rc.1+20260101/deploys/", tok, map[string]any{
		"environment": "production", "name": "Deploy 1", "url": "https://example.com/deploys/1",
	}).expect(t, http.StatusCreated, nil)
	body, ct := multipartBody(t, [][2]string{{"name", "~/app.min.js"}, {"header", "Content-Type:text/javascript"}},
		[]filePart{{"file", "app.min.js", []byte("function a(){}")}})
	res = a.doMultipart("POST", "/api/0/projects/acme/web/releases/web@1.2.3-rc.1+20260101/files/", tok, body, ct)
	res.expect(t, http.StatusCreated, nil)
	var file struct{ ID string }
	json.Unmarshal(res.body, &file)
	sym := breakpadFile("33221100554477668899AABBCCDDEEFF0")
	dsyms, dsymsType := dsymsZip(t, map[string][]byte{"hello.sym": sym})
	a.doMultipart("POST", "/api/0/projects/acme/web/files/dsyms/", tok, dsyms, dsymsType).expect(t, http.StatusCreated, nil)

	const rel = "/api/0/organizations/acme/releases/web@1.2.3-rc.1+20260101/"
	const projRel = "/api/0/projects/acme/web/releases/web@1.2.3-rc.1+20260101/"
	upload := func(name string) (any, string) {
		b, ct := multipartBody(t, [][2]string{{"name", name}}, []filePart{{"file", "x.js", []byte("x")}})
		return b, ct
	}
	orgUpload, orgUploadType := upload("~/org.js")
	projUpload, projUploadType := upload("~/proj.js")
	// A member of acme whom the member calls read, change and remove.
	a.user("member@example.com")
	a.member("acme", "member@example.com", "member")
	member := fmt.Sprint("/api/0/organizations/acme/members/",
		a.count(`SELECT m.id FROM memberships m JOIN users u ON u.id = m.user_id WHERE u.email = 'member@example.com'`), "/")
	calls := []sentryCall{
		{method: "GET", path: "/api/0/organizations/", status: 200},
		{method: "GET", path: "/api/0/organizations/acme/", status: 200},
		{method: "GET", path: "/api/0/organizations/acme/projects/", status: 200},
		{method: "GET", path: "/api/0/projects/acme/web/", status: 200},
		{method: "GET", path: "/api/0/organizations/acme/environments/", status: 200},
		{method: "GET", path: "/api/0/projects/acme/web/environments/", status: 200},
		{method: "PUT", path: "/api/0/projects/acme/web/environments/production/", body: map[string]any{"isHidden": false}, status: 200},
		{method: "POST", path: "/api/0/organizations/acme/releases/", body: map[string]any{"version": "2.0.0", "projects": []string{"web"},
			"ref": "main", "url": "https://example.com/2.0.0", "owner": "owner@example.com"}, status: 201},
		{method: "POST", path: "/api/0/organizations/acme/releases/", body: map[string]any{"version": "2.0.0", "projects": []string{"api"}}, status: 208},
		{method: "POST", path: "/api/0/organizations/acme/releases/", body: map[string]any{"version": "", "projects": []string{"api"}},
			status: 422, documented: 400},
		{method: "GET", path: "/api/0/organizations/acme/releases/", status: 200},
		{method: "GET", path: "/api/0/organizations/acme/releases/?query=rc&environment=production&project=web", status: 200},
		{method: "GET", path: rel, status: 200},
		{method: "PUT", path: rel, body: map[string]any{"ref": "v1.2.3", "url": "https://example.com/r", "dateReleased": "2026-11-22T00:00:00Z"}, status: 200},
		{method: "GET", path: "/api/0/projects/acme/web/releases/", status: 200},
		{method: "GET", path: "/api/0/projects/acme/web/releases/?query=RC&environment=production", status: 200},
		{method: "POST", path: rel + "deploys/", body: map[string]any{"environment": "staging", "name": "Deploy 2"}, status: 201},
		{method: "GET", path: rel + "deploys/", status: 200},
		{method: "GET", path: "/api/0/organizations/acme/repos/", status: 200},
		{method: "GET", path: rel + "commits/", status: 200},
		{method: "GET", path: projRel + "commits/", status: 200},
		{method: "GET", path: rel + "commitfiles/", status: 200},
		{method: "GET", path: rel + "files/", status: 200},
		{method: "GET", path: rel + "files/?query=app&checksum=" + sha1Hex([]byte("function a(){}")), status: 200},
		{method: "GET", path: "/api/0/organizations/acme/releases/nope/files/", status: 200, documented: 404},
		{method: "POST", path: rel + "files/", body: orgUpload, contentType: orgUploadType, status: 201},
		{method: "GET", path: rel + "files/" + file.ID + "/", status: 200},
		{method: "GET", path: projRel + "files/", status: 200},
		{method: "GET", path: "/api/0/projects/acme/web/releases/nope/files/", status: 200, documented: 404},
		{method: "POST", path: projRel + "files/", body: projUpload, contentType: projUploadType, status: 201},
		{method: "GET", path: projRel + "files/" + file.ID + "/", status: 200},
		{method: "GET", path: "/api/0/projects/acme/web/files/dsyms/", status: 200},
		{method: "PUT", path: rel + "files/" + file.ID + "/", body: map[string]any{"name": "~/renamed.js"}, status: 200},
		{method: "PUT", path: projRel + "files/" + file.ID + "/", body: map[string]any{"name": "~/app.min.js"}, status: 200},
		{method: "GET", path: "/api/0/projects/acme/web/environments/production/", status: 200},
		{method: "GET", path: "/api/0/organizations/acme/repos/" + repo.ID + "/commits/", status: 200},
		{method: "PUT", path: "/api/0/organizations/acme/", body: map[string]any{"name": "Acme Inc"}, status: 200},
		{method: "POST", path: "/api/0/organizations/acme/projects/", body: map[string]any{"name": "Mobile", "slug": "mobile", "platform": "javascript"}, status: 201},
		{method: "PUT", path: "/api/0/projects/acme/mobile/", body: map[string]any{"name": "Mobile app", "platform": "javascript-react"}, status: 200},
		// Teams, their members and their projects (handlers/teams.go).
		{method: "POST", path: "/api/0/organizations/acme/teams/", body: map[string]any{"slug": "backend", "name": "Backend"}, status: 201},
		{method: "GET", path: "/api/0/organizations/acme/teams/", status: 200},
		{method: "GET", path: "/api/0/organizations/acme/user-teams/", status: 200},
		{method: "GET", path: "/api/0/teams/acme/backend/", status: 200},
		{method: "PUT", path: "/api/0/teams/acme/backend/", body: map[string]any{"slug": "backend", "name": "Back end"}, status: 200},
		{method: "GET", path: "/api/0/teams/acme/backend/members/", status: 200},
		{method: "DELETE", path: "/api/0/organizations/acme/members/me/teams/backend/", status: 200},
		{method: "POST", path: "/api/0/organizations/acme/members/me/teams/backend/", status: 201},
		{method: "POST", path: "/api/0/organizations/acme/members/me/teams/backend/", status: 204},
		{method: "PUT", path: "/api/0/organizations/acme/members/me/teams/backend/", body: map[string]any{"teamRole": "admin"}, status: 200},
		{method: "POST", path: "/api/0/projects/acme/web/teams/backend/", status: 201},
		{method: "GET", path: "/api/0/projects/acme/web/teams/", status: 200},
		{method: "GET", path: "/api/0/teams/acme/backend/projects/", status: 200},
		{method: "POST", path: "/api/0/teams/acme/backend/projects/", body: map[string]any{"name": "Jobs", "slug": "jobs", "platform": "go"}, status: 201},
		{method: "DELETE", path: "/api/0/projects/acme/web/teams/backend/", status: 200},
		{method: "POST", path: "/api/0/organizations/acme/teams/", body: map[string]any{"slug": "doomed"}, status: 201},
		{method: "DELETE", path: "/api/0/teams/acme/doomed/", status: 204},
		{method: "GET", path: "/api/0/organizations/acme/members/", status: 200},
		{method: "POST", path: "/api/0/organizations/acme/members/", body: map[string]any{"email": "new@example.com", "orgRole": "member"}, status: 201},
		{method: "GET", path: member, status: 200},
		{method: "PUT", path: member, body: map[string]any{"orgRole": "admin"}, status: 200},
		{method: "PUT", path: member, body: map[string]any{"orgRole": "boss"}, status: 422, documented: 400},
		{method: "GET", path: "/api/0/projects/acme/web/members/", status: 200},
		{method: "DELETE", path: member, status: 204},
		// The deletes come last: they remove what the others read.
		{method: "DELETE", path: "/api/0/projects/acme/mobile/", status: 204},
		{method: "DELETE", path: projRel + "files/" + file.ID + "/", status: 204},
		{method: "DELETE", path: rel + "files/" + file.ID + "/", status: 404},
		{method: "DELETE", path: "/api/0/organizations/acme/releases/2.0.0/", status: 204},
	}

	// The operations errata shares with the document, from routes.go.
	index := map[string]string{} // templateKey -> the document's path
	for p, ops := range doc.Paths {
		for m := range ops {
			index[templateKey(strings.ToUpper(m), p)] = p
		}
	}
	shared := map[string]route{}
	for _, rt := range routes(Deps{}) {
		method, path, _ := strings.Cut(rt.pattern, " ")
		if _, ok := index[templateKey(method, path)]; ok {
			shared[templateKey(method, path)] = rt
		}
	}
	mux := http.NewServeMux()
	for _, rt := range routes(Deps{}) {
		mux.HandleFunc(rt.pattern, func(http.ResponseWriter, *http.Request) {})
	}
	covered := map[string]bool{}
	for _, c := range calls {
		u, err := url.Parse(c.path)
		if err != nil {
			t.Fatal(err)
		}
		_, pattern := mux.Handler(&http.Request{Method: c.method, URL: u, Host: "errata.test"})
		method, path, _ := strings.Cut(pattern, " ")
		key := templateKey(method, path)
		docPath, ok := index[key]
		if !ok {
			t.Fatalf("%s %s: %q is not an operation of Sentry's document", c.method, c.path, pattern)
		}
		op := doc.Paths[docPath][strings.ToLower(c.method)]
		name := fmt.Sprintf("%s_%d", op.OperationID, c.status)
		t.Run(name, func(t *testing.T) {
			var res response
			if c.contentType != "" {
				res = a.doMultipart(c.method, c.path, tok, c.body.([]byte), c.contentType)
			} else {
				res = a.do(c.method, c.path, tok, c.body)
			}
			if res.status != c.status {
				t.Fatalf("%s %s: status %d, want %d: %s", c.method, c.path, res.status, c.status, res.body)
			}
			documented := c.status
			if c.documented != 0 {
				documented = c.documented
				if !statusExcused(op.OperationID, documented, c.status) {
					t.Errorf("%s %s answers %d where the document says %d, and no departure says why", c.method, c.path, c.status, documented)
				}
			}
			resp, ok := op.Responses[fmt.Sprint(documented)]
			if !ok {
				t.Fatalf("%s: the document has no %d answer (it has %v)", op.OperationID, documented, keys(op.Responses))
			}
			content, hasBody := resp.Content["application/json"]
			if !hasBody || c.status != documented || c.status == http.StatusNoContent {
				// No schema to hold the body to (204, or a departure's status).
				return
			}
			var v any
			dec := json.NewDecoder(bytes.NewReader(res.body))
			dec.UseNumber()
			if err := dec.Decode(&v); err != nil {
				t.Fatalf("body is not JSON: %v: %s", err, res.body)
			}
			if list, ok := v.([]any); ok && len(list) == 0 {
				t.Errorf("%s %s: an empty list validates nothing", c.method, c.path)
			}
			for _, e := range schemaErrors(content.Schema, v, "") {
				if !excused(op.OperationID, e) {
					t.Errorf("%s %s: %s", c.method, c.path, e)
				}
			}
		})
		covered[key] = true
	}
	var names []string
	for key, rt := range shared {
		docPath := index[key]
		method, _, _ := strings.Cut(key, " ")
		op := doc.Paths[docPath][strings.ToLower(method)]
		names = append(names, op.OperationID)
		if !covered[key] {
			t.Errorf("%s (%s) is shared with Sentry's document and no call validates it", key, docPath)
		}
		// The scopes: the specification's table, the scopes departure.
		var documented []string
		for _, req := range op.Security {
			documented = append(documented, req["auth_token"]...)
		}
		if !rt.access.token || len(rt.access.scopes) == 0 {
			t.Errorf("%s: Sentry's document asks for a scope, and errata's route for none", op.OperationID)
			continue
		}
		var onlyErrata, onlySentry []string
		for _, sc := range rt.access.scopes {
			if !slices.Contains(documented, sc) {
				onlyErrata = append(onlyErrata, sc)
			}
		}
		for _, sc := range documented {
			if !slices.Contains(rt.access.scopes, sc) {
				onlySentry = append(onlySentry, sc)
			}
		}
		if len(onlyErrata)+len(onlySentry) > 0 {
			departuresUsed[scopesDeparture]++
			t.Logf("scopes of %s (a departure): errata alone takes %v, Sentry alone %v", op.OperationID, onlyErrata, onlySentry)
		}
	}
	sort.Strings(names)
	if !t.Failed() {
		for i, d := range sentryDepartures {
			if departuresUsed[i] == 0 {
				t.Errorf("departure %d (%s %s %s) excused nothing: remove it", i, d.op, d.kind, d.at)
			}
		}
		for i, d := range sentryDepartures {
			if d.kind == "missing" {
				for _, f := range d.fields {
					if !departedFields[fmt.Sprint(i, " ", f)] {
						t.Errorf("departure %d says %q is missing, and it is not", i, f)
					}
				}
			}
		}
	}
	t.Logf("%d operations shared with Sentry's document: %s", len(names), strings.Join(names, ", "))
}

func keys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// TestSchemaErrors checks the validator itself on each keyword it reads.
func TestSchemaErrors(t *testing.T) {
	schema := func(s string) map[string]any {
		var m map[string]any
		dec := json.NewDecoder(strings.NewReader(s))
		dec.UseNumber()
		if err := dec.Decode(&m); err != nil {
			t.Fatal(err)
		}
		return m
	}
	value := func(s string) any {
		var v any
		dec := json.NewDecoder(strings.NewReader(s))
		dec.UseNumber()
		if err := dec.Decode(&v); err != nil {
			t.Fatal(err)
		}
		return v
	}
	obj := `{"type": "object", "properties": {"id": {"type": "integer"}, "name": {"type": "string", "nullable": true},
		"tags": {"type": "array", "items": {"type": "string", "enum": ["a", "b"]}},
		"when": {"type": "string", "format": "date-time"}}, "required": ["id", "name"], "additionalProperties": false}`
	tests := []struct {
		schema, value string
		want          []string
	}{
		{obj, `{"id": 1, "name": null, "tags": ["a"], "when": "2026-11-25T10:00:00.000Z"}`, nil},
		{obj, `{"name": "x"}`, []string{`: required field "id" is missing`}},
		{obj, `{"id": 1.5, "name": "x"}`, []string{`.id: 1.5 is not of type [integer]`}},
		{obj, `{"id": 1, "name": "x", "extra": true}`, []string{`: field "extra" is not allowed`}},
		{obj, `{"id": 1, "name": "x", "tags": ["c"]}`, []string{`.tags[]: "c" is not one of [a b]`}},
		{obj, `{"id": 1, "name": "x", "when": "yesterday"}`, []string{`.when: "yesterday" is not a date-time`}},
		{obj, `null`, []string{`: null is not allowed`}},
		{`{"type": ["string", "null"]}`, `null`, nil},
		{`{"anyOf": [{"type": "string"}, {"type": "integer"}]}`, `true`, []string{`: matches none of anyOf (the first says: : true is not of type [string])`}},
		{`{"oneOf": [{"type": "integer"}, {"type": "number"}]}`, `1`, []string{`: matches 2 of oneOf, not exactly one`}},
		{`{"oneOf": [{"type": "integer"}, {"type": "string"}]}`, `true`, []string{`: matches none of oneOf (the first says: : true is not of type [integer])`}},
		{`{"allOf": [{"type": "object", "required": ["a"]}, {"type": "object", "required": ["b"]}]}`, `{"a": 1}`, []string{`: required field "b" is missing`}},
		{`{"type": "object", "additionalProperties": {"type": "string"}}`, `{"a": 1}`, []string{`.a: 1 is not of type [string]`}},
		{`{}`, `null`, nil},
	}
	for _, tt := range tests {
		got := schemaErrors(schema(tt.schema), value(tt.value), "")
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("%s against %s (-want +got):\n%s", tt.value, tt.schema, diff)
		}
	}
}
