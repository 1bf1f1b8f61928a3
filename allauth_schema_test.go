package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"math/big"
	"net/mail"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"errata/shareddata"
)

// allauthDocument is django-allauth's OpenAPI document of its headless API
// (allauth/headless/spec/doc/openapi.yaml of pennersr/django-allauth at tag
// 65.16.1, as JSON), kept with the shared test data (shareddata) beside the
// repository, never in it.
// The sign-in API answers in its shapes (docs/accounts.md).
const allauthDocument = "allauth-headless-openapi-65.16.1.json"

// allauthSpec is the allauth document, decoded with its numbers kept as
// json.Number so that integers and numbers stay apart.
type allauthSpec struct {
	root map[string]any
}

var allauthLoaded struct {
	sync.Mutex
	spec *allauthSpec
}

// loadAllauth reads allauthDocument once for the test binary; a missing or
// unreadable document fails the test.
func loadAllauth(t *testing.T) *allauthSpec {
	t.Helper()
	allauthLoaded.Lock()
	defer allauthLoaded.Unlock()
	if allauthLoaded.spec != nil {
		return allauthLoaded.spec
	}
	data, err := os.ReadFile(shareddata.Path(t, allauthDocument))
	if err != nil {
		t.Fatal(err)
	}
	root, err := decodeJSON(data)
	if err != nil {
		t.Fatalf("%s: %v", allauthDocument, err)
	}
	doc, ok := root.(map[string]any)
	if !ok || doc["paths"] == nil || doc["components"] == nil {
		t.Fatalf("%s is not an OpenAPI document with paths and components", allauthDocument)
	}
	allauthLoaded.spec = &allauthSpec{root: doc}
	return allauthLoaded.spec
}

// decodeJSON decodes exactly one JSON value, numbers as json.Number.
func decodeJSON(data []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, errors.New("data after the JSON value")
	}
	return v, nil
}

// checkAllauth validates an answer of errata's sign-in API against the
// allauth document: the operation of method and path (a concrete path such
// as /_allauth/app/v1/auth/login) must exist, status must be one of its
// documented responses, and body must match that response's JSON schema.
// Each failure is a test error naming method, path, status and the schema
// error.
func checkAllauth(t *testing.T, method, path string, status int, body []byte) {
	t.Helper()
	for _, e := range loadAllauth(t).answerErrors(method, path, status, body) {
		t.Errorf("%s %s %d: %s\nbody: %s", method, path, status, e, clip(body, 600))
	}
}

// answerErrors is checkAllauth's judgement, one message per error.
func (d *allauthSpec) answerErrors(method, path string, status int, body []byte) []string {
	media, err := d.response(method, path, status)
	if err != nil {
		return []string{err.Error()}
	}
	if media == nil {
		if len(bytes.TrimSpace(body)) > 0 {
			return []string{"the document describes no body for this answer"}
		}
		return nil
	}
	v, err := decodeJSON(body)
	if err != nil {
		return []string{fmt.Sprintf("the body is not one JSON value: %v", err)}
	}
	return d.schemaErrors(media["schema"], v, "$", 0)
}

// operation finds the document's operation for method and a concrete path.
// A template segment {name} matches a segment that its path parameter's
// schema accepts ({client}: browser or app); where several templates match,
// the one with the most literal segments wins (/_allauth/browser/v1/... over
// /_allauth/{client}/v1/...).
func (d *allauthSpec) operation(method, path string) (string, map[string]any, error) {
	path, _, _ = strings.Cut(path, "?")
	segs := strings.Split(path, "/")
	paths, _ := d.root["paths"].(map[string]any)
	best, bestLiterals, tie := "", -1, false
	var bestOp map[string]any
	for tmpl, item := range paths {
		item, _ := item.(map[string]any)
		op, ok := item[strings.ToLower(method)].(map[string]any)
		if !ok {
			continue
		}
		literals, ok := d.matchPath(tmpl, segs, item, op)
		if !ok {
			continue
		}
		switch {
		case literals > bestLiterals:
			best, bestLiterals, bestOp, tie = tmpl, literals, op, false
		case literals == bestLiterals:
			tie = true
		}
	}
	if bestOp == nil {
		return "", nil, fmt.Errorf("the document has no operation %s %s", method, path)
	}
	if tie {
		return "", nil, fmt.Errorf("several operations of the document match %s %s", method, path)
	}
	return best, bestOp, nil
}

// matchPath says whether the concrete segments match tmpl, and how many of
// tmpl's segments are literal.
func (d *allauthSpec) matchPath(tmpl string, segs []string, item, op map[string]any) (int, bool) {
	tsegs := strings.Split(tmpl, "/")
	if len(tsegs) != len(segs) {
		return 0, false
	}
	literals := 0
	for i, ts := range tsegs {
		name, isParam := strings.CutPrefix(ts, "{")
		if !isParam {
			if ts != segs[i] {
				return 0, false
			}
			literals++
			continue
		}
		name = strings.TrimSuffix(name, "}")
		if segs[i] == "" {
			return 0, false
		}
		if schema := d.pathParamSchema(name, item, op); schema != nil && len(d.schemaErrors(schema, segs[i], "", 0)) > 0 {
			return 0, false
		}
	}
	return literals, true
}

// pathParamSchema is the schema of the path parameter name, declared by the
// operation or its path item, or nil.
func (d *allauthSpec) pathParamSchema(name string, item, op map[string]any) any {
	for _, list := range []any{op["parameters"], item["parameters"]} {
		params, _ := list.([]any)
		for _, p := range params {
			p, _ := d.deref(p).(map[string]any)
			if p["in"] == "path" && p["name"] == name {
				return p["schema"]
			}
		}
	}
	return nil
}

// response finds the media type object (application/json) of the answer
// status to method and path, or nil when the document describes no body.
// An undocumented status is an error.
func (d *allauthSpec) response(method, path string, status int) (map[string]any, error) {
	tmpl, op, err := d.operation(method, path)
	if err != nil {
		return nil, err
	}
	responses, _ := op["responses"].(map[string]any)
	r, ok := responses[strconv.Itoa(status)]
	if !ok {
		return nil, fmt.Errorf("status %d is not documented for %s %s (documented: %s)", status, method, tmpl, strings.Join(slices.Sorted(maps.Keys(responses)), ", "))
	}
	resp, _ := d.deref(r).(map[string]any)
	content, _ := resp["content"].(map[string]any)
	if len(content) == 0 {
		return nil, nil
	}
	media, ok := content["application/json"].(map[string]any)
	if !ok {
		return nil, fmt.Errorf("the %d answer of %s %s has no application/json body in the document", status, method, tmpl)
	}
	return media, nil
}

// deref follows $ref (local JSON pointers, #/components/...) until v is no
// reference; a dangling reference resolves to nil.
func (d *allauthSpec) deref(v any) any {
	for range 32 {
		m, ok := v.(map[string]any)
		if !ok {
			return v
		}
		ref, ok := m["$ref"].(string)
		if !ok {
			return v
		}
		v = d.pointer(ref)
	}
	return nil
}

// pointer resolves a local JSON pointer such as #/components/schemas/User.
func (d *allauthSpec) pointer(ref string) any {
	p, ok := strings.CutPrefix(ref, "#/")
	if !ok {
		return nil
	}
	var v any = d.root
	for _, tok := range strings.Split(p, "/") {
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = m[tok]
	}
	return v
}

// schemaKeywords are the keywords the validator applies; schemaAnnotations
// are the ones that say nothing about validity. Any other keyword fails the
// validation, so that a document that starts using one (minLength, pattern,
// discriminator ...) cannot pass answers the validator does not check.
var (
	schemaKeywords = []string{
		"$ref", "type", "nullable", "enum", "const", "required", "properties",
		"additionalProperties", "items", "allOf", "oneOf", "anyOf", "format",
	}
	schemaAnnotations = []string{
		"description", "title", "example", "examples", "default", "deprecated",
		"readOnly", "writeOnly", "externalDocs",
	}
)

// knownKeyword says whether k is a keyword the validator applies, an
// annotation or an extension (x-...).
func knownKeyword(k string) bool {
	return slices.Contains(schemaKeywords, k) || slices.Contains(schemaAnnotations, k) || strings.HasPrefix(k, "x-")
}

// schemaErrors validates v against schema s of the document: the subset of
// JSON Schema that OpenAPI 3.0 and 3.1 documents use. $ref resolves within
// the document, and keywords beside a $ref apply too (the document writes
// {"nullable": true, "$ref": ...} for an optional timestamp); nullable and a
// type list with "null" allow null; integer is a number without a fraction;
// oneOf must match exactly one. at is the JSON path of v in the answer.
func (d *allauthSpec) schemaErrors(sv any, v any, at string, depth int) []string {
	if depth > 64 {
		return []string{at + ": schema nesting deeper than 64 (a $ref cycle?)"}
	}
	s, ok := sv.(map[string]any)
	if !ok {
		if b, isBool := sv.(bool); isBool {
			if b {
				return nil
			}
			return []string{at + ": the schema allows nothing"}
		}
		return []string{fmt.Sprintf("%s: the schema %s is not an object", at, shortJSON(sv))}
	}
	var errs []string
	for _, k := range slices.Sorted(maps.Keys(s)) {
		if !knownKeyword(k) {
			errs = append(errs, fmt.Sprintf("%s: the validator does not know the schema keyword %q", at, k))
		}
	}
	if v == nil && (s["nullable"] == true || slices.Contains(schemaTypes(s), "null")) {
		return errs
	}
	if ref, ok := s["$ref"].(string); ok {
		target := d.pointer(ref)
		if target == nil {
			return append(errs, fmt.Sprintf("%s: $ref %s resolves to nothing", at, ref))
		}
		errs = append(errs, d.schemaErrors(target, v, at, depth+1)...)
	}
	if types := schemaTypes(s); len(types) > 0 && !slices.ContainsFunc(types, func(typ string) bool { return typeAccepts(typ, jsonType(v)) }) {
		// The other keywords say little about a value of the wrong type.
		return append(errs, fmt.Sprintf("%s: %s is not of type %s", at, shortJSON(v), strings.Join(types, " or ")))
	}
	if enum, ok := s["enum"].([]any); ok && !slices.ContainsFunc(enum, func(e any) bool { return equalJSON(e, v) }) {
		errs = append(errs, fmt.Sprintf("%s: %s is not one of %s", at, shortJSON(v), shortJSON(enum)))
	}
	if c, ok := s["const"]; ok && !equalJSON(c, v) {
		errs = append(errs, fmt.Sprintf("%s: %s is not %s", at, shortJSON(v), shortJSON(c)))
	}
	if f, ok := s["format"].(string); ok {
		if e := formatError(f, v); e != "" {
			errs = append(errs, at+": "+e)
		}
	}
	if obj, ok := v.(map[string]any); ok {
		errs = append(errs, d.objectErrors(s, obj, at, depth)...)
	}
	if list, ok := v.([]any); ok {
		if items, ok := s["items"]; ok {
			for i, e := range list {
				errs = append(errs, d.schemaErrors(items, e, fmt.Sprintf("%s[%d]", at, i), depth+1)...)
			}
		}
	}
	allOf, _ := s["allOf"].([]any)
	anyOf, _ := s["anyOf"].([]any)
	oneOf, _ := s["oneOf"].([]any)
	for _, sub := range allOf {
		errs = append(errs, d.schemaErrors(sub, v, at, depth+1)...)
	}
	if len(anyOf) > 0 {
		var why []string
		for i, sub := range anyOf {
			e := d.schemaErrors(sub, v, at, depth+1)
			if len(e) == 0 {
				why = nil
				break
			}
			why = append(why, fmt.Sprintf("[%d] %s", i, e[0]))
		}
		if why != nil {
			errs = append(errs, fmt.Sprintf("%s: matches none of anyOf: %s", at, strings.Join(why, " | ")))
		}
	}
	if len(oneOf) > 0 {
		var matched []int
		var why []string
		for i, sub := range oneOf {
			if e := d.schemaErrors(sub, v, at, depth+1); len(e) > 0 {
				why = append(why, fmt.Sprintf("[%d] %s", i, e[0]))
			} else {
				matched = append(matched, i)
			}
		}
		switch {
		case len(matched) == 0:
			errs = append(errs, fmt.Sprintf("%s: matches none of oneOf: %s", at, strings.Join(why, " | ")))
		case len(matched) > 1:
			errs = append(errs, fmt.Sprintf("%s: matches %d of oneOf (%v), not exactly one", at, len(matched), matched))
		}
	}
	return errs
}

// objectErrors applies required, properties and additionalProperties.
func (d *allauthSpec) objectErrors(s, obj map[string]any, at string, depth int) []string {
	var errs []string
	required, _ := s["required"].([]any)
	for _, name := range required {
		if _, ok := obj[fmt.Sprint(name)]; !ok {
			errs = append(errs, fmt.Sprintf("%s: required field %q is missing", at, name))
		}
	}
	props, _ := s["properties"].(map[string]any)
	for _, k := range slices.Sorted(maps.Keys(obj)) {
		if ps, ok := props[k]; ok {
			errs = append(errs, d.schemaErrors(ps, obj[k], at+"."+k, depth+1)...)
			continue
		}
		switch ap, stated := s["additionalProperties"]; {
		case !stated:
		case ap == false:
			errs = append(errs, fmt.Sprintf("%s: field %q is not allowed", at, k))
		default:
			errs = append(errs, d.schemaErrors(ap, obj[k], at+"."+k, depth+1)...)
		}
	}
	return errs
}

// formatError checks the formats that cost little to check; a format the
// validator does not know is an error, as an unknown keyword is.
func formatError(format string, v any) string {
	switch format {
	case "date-time", "email", "uri":
		s, ok := v.(string)
		if !ok {
			return ""
		}
		var err error
		switch format {
		case "date-time":
			_, err = time.Parse(time.RFC3339Nano, s)
		case "email":
			var a *mail.Address
			if a, err = mail.ParseAddress(s); err == nil && a.Address != s {
				err = errors.New("not a bare address")
			}
		case "uri":
			var u *url.URL
			if u, err = url.Parse(s); err == nil && u.Scheme == "" {
				err = errors.New("no scheme")
			}
		}
		if err != nil {
			return fmt.Sprintf("%q is not a %s: %v", s, format, err)
		}
	case "int32", "int64":
		n, ok := v.(json.Number)
		if !ok {
			return ""
		}
		bits := 32
		if format == "int64" {
			bits = 64
		}
		if _, err := strconv.ParseInt(n.String(), 10, bits); err != nil {
			return fmt.Sprintf("%s is not an %s", n, format)
		}
	case "float", "double":
	default:
		return fmt.Sprintf("the validator does not know the format %q", format)
	}
	return ""
}

func schemaTypes(s map[string]any) []string {
	switch t := s["type"].(type) {
	case string:
		return []string{t}
	case []any:
		types := make([]string, len(t))
		for i, e := range t {
			types[i] = fmt.Sprint(e)
		}
		return types
	}
	return nil
}

// jsonType names the JSON Schema type of v, decoded with json.Number:
// "integer" for a number without a fraction (2.0 is one), which a schema of
// type number accepts too.
func jsonType(v any) string {
	switch v := v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case string:
		return "string"
	case json.Number:
		if r, ok := new(big.Rat).SetString(v.String()); ok && r.IsInt() {
			return "integer"
		}
		return "number"
	case map[string]any:
		return "object"
	case []any:
		return "array"
	}
	return fmt.Sprintf("%T", v)
}

// typeAccepts says whether the schema type typ accepts a value of JSON type
// jt.
func typeAccepts(typ, jt string) bool {
	return typ == jt || typ == "number" && jt == "integer"
}

// equalJSON compares two decoded JSON values, numbers by value (200 is
// 200.0).
func equalJSON(a, b any) bool {
	switch a := a.(type) {
	case json.Number:
		b, ok := b.(json.Number)
		if !ok {
			return false
		}
		ra, okA := new(big.Rat).SetString(a.String())
		rb, okB := new(big.Rat).SetString(b.String())
		return okA && okB && ra.Cmp(rb) == 0
	case map[string]any:
		b, ok := b.(map[string]any)
		if !ok || len(a) != len(b) {
			return false
		}
		for k, va := range a {
			vb, ok := b[k]
			if !ok || !equalJSON(va, vb) {
				return false
			}
		}
		return true
	case []any:
		b, ok := b.([]any)
		return ok && slices.EqualFunc(a, b, equalJSON)
	default:
		return a == b
	}
}

// shortJSON is v as JSON, cut after 120 bytes.
func shortJSON(v any) string {
	b, _ := json.Marshal(v)
	return clip(b, 120)
}

// clip is b as text, cut after n bytes.
func clip(b []byte, n int) string {
	if len(b) > n {
		return string(b[:n]) + "..."
	}
	return string(b)
}

// allauthExample is an example of the document with the schema it
// illustrates.
type allauthExample struct {
	where  string // where the document writes it
	schema any
	value  any
}

// allauthExamples lists every example of the document's answers: the
// example and examples of each response's body, and the example of each
// schema node of those bodies and of components/schemas. It also lists the
// keywords of those schema nodes that the validator does not know, as
// "where: keyword".
func (d *allauthSpec) allauthExamples() (out []allauthExample, unknown []string) {
	seen := map[string]bool{}
	var walkSchema func(s any, where string)
	walkSchema = func(s any, where string) {
		m, ok := s.(map[string]any)
		if !ok {
			return
		}
		for k := range m {
			if !knownKeyword(k) {
				unknown = append(unknown, where+": "+k)
			}
		}
		if ex, ok := m["example"]; ok {
			out = append(out, allauthExample{where + " example", m, ex})
		}
		props, _ := m["properties"].(map[string]any)
		for _, k := range slices.Sorted(maps.Keys(props)) {
			walkSchema(props[k], where+".properties."+k)
		}
		walkSchema(m["items"], where+".items")
		walkSchema(m["additionalProperties"], where+".additionalProperties")
		for _, kw := range []string{"allOf", "oneOf", "anyOf"} {
			subs, _ := m[kw].([]any)
			for i, sub := range subs {
				walkSchema(sub, fmt.Sprintf("%s.%s[%d]", where, kw, i))
			}
		}
	}
	paths, _ := d.root["paths"].(map[string]any)
	for _, tmpl := range slices.Sorted(maps.Keys(paths)) {
		item, _ := paths[tmpl].(map[string]any)
		for _, method := range slices.Sorted(maps.Keys(item)) {
			op, _ := item[method].(map[string]any)
			responses, _ := op["responses"].(map[string]any)
			for _, status := range slices.Sorted(maps.Keys(responses)) {
				where := fmt.Sprintf("%s %s %s", strings.ToUpper(method), tmpl, status)
				if m, ok := responses[status].(map[string]any); ok && m["$ref"] != nil {
					where = m["$ref"].(string)
				}
				if seen[where] {
					continue
				}
				seen[where] = true
				resp, _ := d.deref(responses[status]).(map[string]any)
				content, _ := resp["content"].(map[string]any)
				media, _ := content["application/json"].(map[string]any)
				if media == nil {
					continue
				}
				if ex, ok := media["example"]; ok {
					out = append(out, allauthExample{where + " example", media["schema"], ex})
				}
				examples, _ := media["examples"].(map[string]any)
				for _, name := range slices.Sorted(maps.Keys(examples)) {
					ex, _ := d.deref(examples[name]).(map[string]any)
					out = append(out, allauthExample{where + " examples." + name, media["schema"], ex["value"]})
				}
				walkSchema(media["schema"], where)
			}
		}
	}
	components, _ := d.root["components"].(map[string]any)
	schemas, _ := components["schemas"].(map[string]any)
	for _, name := range slices.Sorted(maps.Keys(schemas)) {
		walkSchema(schemas[name], "#/components/schemas/"+name)
	}
	return out, unknown
}

// allauthDocumentFlaws are the examples of the document that its own
// schemas refuse, with the validator's exact errors: the test fails when one
// of them passes or fails otherwise, so that they prove the validator too.
var allauthDocumentFlaws = map[string][]string{
	// SessionGone (410) reuses the 401 example UnauthenticatedInitial.
	"#/components/responses/SessionGone examples.unauth": {
		"$.status: 401 is not one of [410]",
	},
	// The example predates the account fields the schema requires.
	"#/components/schemas/ConfigurationResponse example": {
		`$.data.account: required field "email_verification_by_code_enabled" is missing`,
		`$.data.account: required field "is_open_for_signup" is missing`,
		`$.data.account: required field "login_by_code_enabled" is missing`,
	},
	// CannotGenerateRecoveryCodes writes its code inside the message.
	"POST /_allauth/{client}/v1/account/authenticators/recovery-codes 400 examples.invalid_code": {
		`$.errors[0]: required field "code" is missing`,
	},
}

// TestAllauthDocumentExamples validates every example of the document's
// answers against its own schema: the validator agrees with the document on
// the document's own data, and finds exactly the flaws listed.
func TestAllauthDocumentExamples(t *testing.T) {
	t.Parallel()
	d := loadAllauth(t)
	examples, unknown := d.allauthExamples()
	if len(examples) < 50 {
		t.Fatalf("only %d examples found in the document", len(examples))
	}
	for _, u := range unknown {
		t.Errorf("the validator does not know the schema keyword of %s", u)
	}
	got := map[string][]string{}
	for _, ex := range examples {
		if errs := d.schemaErrors(ex.schema, ex.value, "$", 0); len(errs) > 0 {
			got[ex.where] = errs
		}
	}
	for _, where := range slices.Sorted(maps.Keys(got)) {
		want, known := allauthDocumentFlaws[where]
		if !known {
			t.Errorf("%s: %s", where, strings.Join(got[where], "; "))
		} else if !slices.Equal(want, got[where]) {
			t.Errorf("%s: the known flaw changed:\nwant %q\ngot  %q", where, want, got[where])
		}
	}
	for _, where := range slices.Sorted(maps.Keys(allauthDocumentFlaws)) {
		if _, ok := got[where]; !ok {
			t.Errorf("%s: the known flaw is gone (or the example is)", where)
		}
	}
	t.Logf("%d examples validated, %d known flaws", len(examples), len(allauthDocumentFlaws))
}

// TestAllauthAnswerErrors holds the validator to hand-made answers: the
// right ones pass, each wrong one gets exactly its error.
func TestAllauthAnswerErrors(t *testing.T) {
	t.Parallel()
	d := loadAllauth(t)
	const (
		user    = `{"id": 1, "display": "Ada", "has_usable_password": true, "email": "ada@example.com"}`
		methods = `[{"method": "password", "at": 1711555057.06, "email": "ada@example.com"}]`
		session = `{"status": 200, "data": {"user": ` + user + `, "methods": ` + methods + `}, "meta": {"is_authenticated": true}}`
		totp    = `{"type": "totp", "created_at": 1711555057, "last_used_at": null}`
		codes   = `{"type": "recovery_codes", "created_at": 1711555057, "last_used_at": 1711555060.5, "total_code_count": 10, "unused_code_count": 9}`
	)
	cases := []struct {
		name, method, path string
		status             int
		body               string
		want               []string
	}{
		{"browser session", "GET", "/_allauth/browser/v1/auth/session", 200, session, nil},
		{"app session", "GET", "/_allauth/app/v1/auth/session", 200, session, nil},
		{"a query string is not part of the path", "GET", "/_allauth/app/v1/auth/session?x=1", 200, session, nil},
		{"an integer written with a fraction of zero", "GET", "/_allauth/app/v1/auth/session", 200,
			strings.Replace(session, `"status": 200`, `"status": 200.0`, 1), nil},
		{"missing required field", "GET", "/_allauth/app/v1/auth/session", 200,
			`{"status": 200, "data": {"user": ` + user + `, "methods": []}}`,
			[]string{`$: required field "meta" is missing`}},
		{"a number where an integer belongs", "GET", "/_allauth/app/v1/auth/session", 200,
			strings.Replace(session, `"status": 200`, `"status": 200.5`, 1),
			[]string{`$.status: 200.5 is not of type integer`}},
		{"a value outside the enum", "GET", "/_allauth/app/v1/auth/session", 200,
			strings.Replace(session, `"status": 200`, `"status": 201`, 1),
			[]string{`$.status: 201 is not one of [200]`}},
		{"wrong type", "POST", "/_allauth/browser/v1/auth/login", 400,
			`{"status": 400, "errors": [{"code": 7, "message": "no", "param": "email"}]}`,
			[]string{`$.errors[0].code: 7 is not of type string`}},
		{"oneOf matching none", "GET", "/_allauth/app/v1/auth/session", 200,
			strings.Replace(session, `"id": 1`, `"id": true`, 1),
			[]string{`$.data.user.id: matches none of oneOf: [0] $.data.user.id: true is not of type integer | [1] $.data.user.id: true is not of type string`}},
		{"oneOf over $ref and allOf", "GET", "/_allauth/browser/v1/account/authenticators", 200,
			`{"status": 200, "data": [` + totp + `, ` + codes + `]}`, nil},
		{"an authenticator of no documented kind", "GET", "/_allauth/browser/v1/account/authenticators", 200,
			`{"status": 200, "data": [{"type": "sms", "created_at": 1, "last_used_at": null}]}`,
			[]string{`$.data[0]: matches none of oneOf: [0] $.data[0].type: "sms" is not one of ["totp"] | [1] $.data[0]: required field "total_code_count" is missing | [2] $.data[0]: required field "id" is missing`}},
		{"null where the $ref's sibling says nullable", "GET", "/_allauth/browser/v1/account/authenticators", 200,
			`{"status": 200, "data": [` + totp + `]}`, nil},
		{"null where nothing says nullable", "GET", "/_allauth/browser/v1/account/authenticators", 200,
			`{"status": 200, "data": [` + strings.Replace(totp, `"created_at": 1711555057`, `"created_at": null`, 1) + `]}`,
			[]string{`$.data[0]: matches none of oneOf: [0] $.data[0].created_at: null is not of type number | [1] $.data[0].created_at: null is not of type number | [2] $.data[0].created_at: null is not of type number`}},
		{"TOTP not set up", "GET", "/_allauth/app/v1/account/authenticators/totp", 404,
			`{"status": 404, "meta": {"secret": "J4ZKKXTK7NOVU7EP", "totp_url": "otpauth://totp/errata:ada?secret=J4ZKKXTK7NOVU7EP"}}`, nil},
		{"TOTP not set up without its secret", "GET", "/_allauth/app/v1/account/authenticators/totp", 404,
			`{"status": 404, "meta": {"totp_url": "otpauth://totp/errata:ada"}}`,
			[]string{`$.meta: required field "secret" is missing`}},
		{"pending second factor", "POST", "/_allauth/browser/v1/auth/login", 401,
			`{"status": 401, "data": {"flows": [{"id": "login"}, {"id": "mfa_authenticate", "is_pending": true, "types": ["totp"]}]}, "meta": {"is_authenticated": false}}`, nil},
		{"a flow of no documented kind", "POST", "/_allauth/browser/v1/auth/login", 401,
			`{"status": 401, "data": {"flows": [{"id": "mfa_authenticate", "is_pending": false, "types": ["sms"]}]}, "meta": {"is_authenticated": false}}`,
			[]string{`$.data.flows[0].is_pending: false is not one of [true]`, `$.data.flows[0].types[0]: "sms" is not one of ["recovery_codes","totp","webauthn"]`}},
		{"browser-only path", "POST", "/_allauth/browser/v1/auth/2fa/trust", 400, `{"status": 400, "errors": []}`, nil},
		{"browser-only path asked by the app", "POST", "/_allauth/app/v1/auth/2fa/trust", 400, `{"status": 400, "errors": []}`,
			[]string{`the document has no operation POST /_allauth/app/v1/auth/2fa/trust`}},
		{"app-only path", "POST", "/_allauth/app/v1/tokens/refresh", 400, `{"status": 400}`, nil},
		{"app-only path asked by the browser", "POST", "/_allauth/browser/v1/tokens/refresh", 400, `{"status": 400}`,
			[]string{`the document has no operation POST /_allauth/browser/v1/tokens/refresh`}},
		{"a client of no documented kind", "GET", "/_allauth/desktop/v1/config", 200, `{}`,
			[]string{`the document has no operation GET /_allauth/desktop/v1/config`}},
		{"a method of no documented operation", "PUT", "/_allauth/app/v1/auth/session", 200, session,
			[]string{`the document has no operation PUT /_allauth/app/v1/auth/session`}},
		{"an undocumented status", "POST", "/_allauth/app/v1/auth/login", 500, `{"status": 500}`,
			[]string{`status 500 is not documented for POST /_allauth/{client}/v1/auth/login (documented: 200, 400, 401, 409)`}},
		{"an empty body", "GET", "/_allauth/app/v1/auth/session", 401, ``,
			[]string{`the body is not one JSON value: EOF`}},
		{"data after the value", "GET", "/_allauth/app/v1/auth/session", 200, session + `{}`,
			[]string{`the body is not one JSON value: data after the JSON value`}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := d.answerErrors(c.method, c.path, c.status, []byte(c.body))
			if !slices.Equal(c.want, got) {
				t.Errorf("%s %s %d:\nwant %q\ngot  %q", c.method, c.path, c.status, c.want, got)
			}
		})
	}
}

// TestAllauthSchemaKeywords holds the keywords the allauth document does not
// use (yet) to JSON Schema's meaning, on hand-made schemas.
func TestAllauthSchemaKeywords(t *testing.T) {
	t.Parallel()
	d := &allauthSpec{root: map[string]any{}}
	cases := []struct {
		name, schema, value string
		want                []string
	}{
		{"const", `{"const": "a"}`, `"a"`, nil},
		{"const refused", `{"const": "a"}`, `"b"`, []string{`$: "b" is not "a"`}},
		{"type list with null", `{"type": ["string", "null"]}`, `null`, nil},
		{"type list refused", `{"type": ["string", "null"]}`, `1`, []string{`$: 1 is not of type string or null`}},
		{"additionalProperties false", `{"type": "object", "properties": {"a": {}}, "additionalProperties": false}`, `{"a": 1, "b": 2}`,
			[]string{`$: field "b" is not allowed`}},
		{"additionalProperties schema", `{"type": "object", "additionalProperties": {"type": "integer"}}`, `{"a": 1, "b": "x"}`,
			[]string{`$.b: "x" is not of type integer`}},
		{"additionalProperties unstated", `{"type": "object", "properties": {"a": {}}}`, `{"b": 2}`, nil},
		{"anyOf", `{"anyOf": [{"type": "string"}, {"type": "integer"}]}`, `3`, nil},
		{"anyOf refused", `{"anyOf": [{"type": "string"}, {"type": "integer"}]}`, `true`,
			[]string{`$: matches none of anyOf: [0] $: true is not of type string | [1] $: true is not of type integer`}},
		{"oneOf matching two", `{"oneOf": [{"type": "number"}, {"type": "integer"}]}`, `3`,
			[]string{`$: matches 2 of oneOf ([0 1]), not exactly one`}},
		{"oneOf matching one", `{"oneOf": [{"type": "number"}, {"type": "integer"}]}`, `3.5`, nil},
		{"items", `{"type": "array", "items": {"type": "boolean"}}`, `[true, 1]`, []string{`$[1]: 1 is not of type boolean`}},
		{"date-time", `{"type": "string", "format": "date-time"}`, `"2026-11-27T22:00:00Z"`, nil},
		{"date-time refused", `{"type": "string", "format": "date-time"}`, `"yesterday"`,
			[]string{`$: "yesterday" is not a date-time: parsing time "yesterday" as "2006-01-02T15:04:05.999999999Z07:00": cannot parse "yesterday" as "2006"`}},
		{"email refused", `{"format": "email"}`, `"Ada <ada@example.com>"`, []string{`$: "Ada <ada@example.com>" is not a email: not a bare address`}},
		{"int32 refused", `{"type": "integer", "format": "int32"}`, `4294967296`, []string{`$: 4294967296 is not an int32`}},
		{"an unknown format", `{"format": "hostname"}`, `"x"`, []string{`$: the validator does not know the format "hostname"`}},
		{"an unknown keyword", `{"type": "string", "minLength": 3}`, `"x"`, []string{`$: the validator does not know the schema keyword "minLength"`}},
		{"a dangling $ref", `{"$ref": "#/components/schemas/Nothing"}`, `1`, []string{`$: $ref #/components/schemas/Nothing resolves to nothing`}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			schema, err := decodeJSON([]byte(c.schema))
			if err != nil {
				t.Fatal(err)
			}
			v, err := decodeJSON([]byte(c.value))
			if err != nil {
				t.Fatal(err)
			}
			if got := d.schemaErrors(schema, v, "$", 0); !slices.Equal(c.want, got) {
				t.Errorf("%s against %s:\nwant %q\ngot  %q", c.value, c.schema, c.want, got)
			}
		})
	}
}
