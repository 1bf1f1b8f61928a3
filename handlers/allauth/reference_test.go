package allauth_test

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// referenceDocument is django-allauth's own OpenAPI document of its
// headless API (version 65.16.1, MIT), kept beside the repository in
// ../shared/data, never in it.
const referenceDocument = "shared/data/allauth-headless-openapi-65.16.1.json"

// referenceDeparture is an answer the reference document does not name:
// why errata gives it and, when it has the shape of an answer the document
// does name ("GET auth/session 200"), that answer, which it is checked
// against.
type referenceDeparture struct {
	reason  string
	shapeOf string
}

// referenceDepartures are the answers the reference document does not
// name, by "METHOD path status" or "* status"; the check excuses nothing
// else.
var referenceDepartures = map[string]referenceDeparture{
	"* 403": {reason: `the CSRF check's refusal, {"status": 403} (docs/accounts.md), which allauth documents on no route`},
	"* 413": {reason: `a body over 16 KiB, {"status": 413}`},
	"* 429": {reason: `the throttle's answer, {"status": 429} (docs/accounts.md, Throttling): allauth documents no 429`},
	"* 503": {reason: `the password hasher busy or the database out of reach, {"status": 503} with Retry-After`},
	"POST account/authenticators/recovery-codes 200": {shapeOf: "GET account/authenticators/recovery-codes 200",
		reason: "the document names no success answer: errata answers in the shape of GET's 200"},
	"POST account/password/change 200": {shapeOf: "GET auth/session 200",
		reason: "the document names no success answer: errata answers in the shape of the session"},
	"POST auth/reauthenticate 401": {shapeOf: "GET auth/session 401",
		reason: "a client that is not signed in gets the flows, as from GET auth/session"},
	"POST auth/2fa/reauthenticate 401": {shapeOf: "GET auth/session 401",
		reason: "a client that is not signed in gets the flows, as from GET auth/session"},
	"DELETE account/authenticators/totp 404": {reason: `a user without TOTP has none to remove: {"status": 404}`},
}

// reference is the decoded reference document, loaded once.
var reference struct {
	once sync.Once
	doc  map[string]any
	err  error
}

// loadReference returns the reference document, found in a parent
// directory of the tests (the repository's parent here and in CI).
func loadReference(t *testing.T) map[string]any {
	t.Helper()
	reference.once.Do(func() {
		dir, err := os.Getwd()
		if err != nil {
			reference.err = err
			return
		}
		for {
			if b, err := os.ReadFile(filepath.Join(dir, referenceDocument)); err == nil {
				reference.err = json.Unmarshal(b, &reference.doc)
				return
			}
			parent := filepath.Dir(dir)
			if parent == dir {
				reference.err = fmt.Errorf("%s is in no parent directory of the tests: it belongs next to the repository, in ../shared/data", referenceDocument)
				return
			}
			dir = parent
		}
	})
	if reference.err != nil {
		t.Fatal(reference.err)
	}
	return reference.doc
}

// refDoc is the reference document, for resolving references.
type refDoc map[string]any

// resolve follows v's $ref, if any, to the object it names.
func (d refDoc) resolve(v any) map[string]any {
	m, _ := v.(map[string]any)
	for m != nil && m["$ref"] != nil {
		m = d.referenced(m)
	}
	return m
}

// referenced is the object that m's $ref ("#/components/...") names.
func (d refDoc) referenced(m map[string]any) map[string]any {
	var cur any = map[string]any(d)
	for _, part := range strings.Split(strings.TrimPrefix(m["$ref"].(string), "#/"), "/") {
		cur = cur.(map[string]any)[part]
	}
	next, _ := cur.(map[string]any)
	return next
}

// schemaErrors reports where v does not fit schema, an OpenAPI 3.0 schema
// object of the document. It knows the keywords the document uses (type,
// nullable, enum, properties, required, items, allOf, oneOf, anyOf) and
// reports any other that could constrain a value. A "nullable" beside a
// "$ref" (the document's OptionalTimestamp) admits null, as its authors
// mean.
func (d refDoc) schemaErrors(schema, v any, at string) []string {
	if v == nil && d.nullableRef(schema) {
		return nil
	}
	s := d.resolve(schema)
	if s == nil {
		return []string{at + ": no schema"}
	}
	var errs []string
	fail := func(format string, args ...any) { errs = append(errs, at+": "+fmt.Sprintf(format, args...)) }
	for k := range s {
		switch k {
		case "type", "nullable", "enum", "properties", "required", "items", "allOf", "oneOf", "anyOf",
			"description", "example", "title", "format":
		default:
			fail("unchecked keyword %q", k)
		}
	}
	if v == nil {
		if s["nullable"] != true && s["type"] != nil {
			fail("null where the schema is not nullable")
		}
		return errs
	}
	switch s["type"] {
	case "object":
		if _, ok := v.(map[string]any); !ok {
			fail("%v is not an object", v)
			return errs
		}
	case "array":
		if _, ok := v.([]any); !ok {
			fail("%v is not an array", v)
			return errs
		}
	case "string":
		if _, ok := v.(string); !ok {
			fail("%v is not a string", v)
		}
	case "boolean":
		if _, ok := v.(bool); !ok {
			fail("%v is not a boolean", v)
		}
	case "integer":
		if f, ok := v.(float64); !ok || f != math.Trunc(f) {
			fail("%v is not an integer", v)
		}
	case "number":
		if _, ok := v.(float64); !ok {
			fail("%v is not a number", v)
		}
	}
	if enum, ok := s["enum"].([]any); ok && !slices.Contains(enum, v) {
		fail("%v is not one of %v", v, enum)
	}
	if obj, ok := v.(map[string]any); ok {
		for _, name := range anyList(s["required"]) {
			if _, ok := obj[name.(string)]; !ok {
				fail("%q is required", name)
			}
		}
		props, _ := s["properties"].(map[string]any)
		for name, sub := range props {
			if val, ok := obj[name]; ok {
				errs = append(errs, d.schemaErrors(sub, val, at+"."+name)...)
			}
		}
	}
	if list, ok := v.([]any); ok && s["items"] != nil {
		for i, item := range list {
			errs = append(errs, d.schemaErrors(s["items"], item, at+"["+strconv.Itoa(i)+"]")...)
		}
	}
	for _, sub := range anyList(s["allOf"]) {
		errs = append(errs, d.schemaErrors(sub, v, at)...)
	}
	if alts := anyList(s["oneOf"]); alts != nil {
		if n := d.matching(alts, v, at); n != 1 {
			fail("%d of oneOf's %d schemas match, want exactly 1", n, len(alts))
		}
	}
	if alts := anyList(s["anyOf"]); alts != nil && d.matching(alts, v, at) == 0 {
		fail("none of anyOf's %d schemas matches", len(alts))
	}
	return errs
}

// nullableRef reports whether schema is a chain of references one of
// which is marked nullable.
func (d refDoc) nullableRef(schema any) bool {
	m, _ := schema.(map[string]any)
	for m != nil && m["$ref"] != nil {
		if m["nullable"] == true {
			return true
		}
		m = d.referenced(m)
	}
	return false
}

// matching counts the schemas of alts that v fits.
func (d refDoc) matching(alts []any, v any, at string) int {
	n := 0
	for _, alt := range alts {
		if len(d.schemaErrors(alt, v, at)) == 0 {
			n++
		}
	}
	return n
}

// anyList is v as a list, nil when it is none.
func anyList(v any) []any {
	l, _ := v.([]any)
	return l
}

// checkReference fails the test unless the answer a to method path (below
// /_allauth/{client}/v1/, its query ignored) fits the schema the reference
// document gives that path, method and status, or is one of
// referenceDepartures.
func checkReference(t *testing.T, method, path string, a answer) {
	t.Helper()
	path, _, _ = strings.Cut(path, "?")
	key := fmt.Sprintf("%s %s %d", method, path, a.status)
	d := refDoc(loadReference(t))
	schema, documented := d.answerSchema(t, method, path, a.status)
	if !documented {
		dep, ok := referenceDepartures[key]
		if !ok {
			dep, ok = referenceDepartures[fmt.Sprintf("* %d", a.status)]
		}
		if !ok {
			t.Errorf("%s: the reference document names no such answer (%s)", key, a.raw)
			return
		}
		if dep.shapeOf == "" {
			return
		}
		var m, p, st string
		fmt.Sscan(dep.shapeOf, &m, &p, &st)
		n, _ := strconv.Atoi(st)
		schema, _ = d.answerSchema(t, m, p, n)
	}
	if errs := d.schemaErrors(schema, a.body, "body"); len(errs) > 0 {
		t.Errorf("%s does not fit the reference document:\n%s\n%s", key, strings.Join(errs, "\n"), a.raw)
	}
}

// answerSchema returns the schema of the answer status to method path
// (below /_allauth/{client}/v1/), and whether the document names that
// answer; a path or method it does not have fails the test.
func (d refDoc) answerSchema(t *testing.T, method, path string, status int) (any, bool) {
	t.Helper()
	op, _ := d.resolve(d["paths"].(map[string]any)["/_allauth/{client}/v1/"+path])[strings.ToLower(method)].(map[string]any)
	if op == nil {
		t.Fatalf("the reference document has no %s %s", method, path)
	}
	res := d.resolve(op["responses"].(map[string]any)[strconv.Itoa(status)])
	if res == nil {
		return nil, false
	}
	return d.resolve(res["content"].(map[string]any)["application/json"])["schema"], true
}
