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

// referenceDepartures are the answers the reference document does not
// name, with the reason errata gives them; the check excuses nothing
// else.
var referenceDepartures = map[string]string{
	"* 429": "the throttle's answer, {\"status\": 429} (docs/accounts.md, Throttling): allauth documents no 429",
	"POST account/authenticators/recovery-codes 200": "the document names no success answer: errata answers in the shape of GET's 200, checked against it",
	"DELETE account/authenticators/totp 404":         "a user without TOTP has none to remove: {\"status\": 404}",
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
// /_allauth/{client}/v1/) fits the schema the reference document gives
// that path, method and status, or is one of referenceDepartures.
func checkReference(t *testing.T, method, path string, a answer) {
	t.Helper()
	key := fmt.Sprintf("%s %s %d", method, path, a.status)
	if _, ok := referenceDepartures[key]; ok && !strings.HasSuffix(key, " 200") {
		return
	}
	if _, ok := referenceDepartures[fmt.Sprintf("* %d", a.status)]; ok {
		return
	}
	d := refDoc(loadReference(t))
	docMethod, status := strings.ToLower(method), strconv.Itoa(a.status)
	if _, ok := referenceDepartures[key]; ok { // a 200 in the shape of GET's
		docMethod = "get"
	}
	op, _ := d.resolve(d["paths"].(map[string]any)["/_allauth/{client}/v1/"+path])[docMethod].(map[string]any)
	if op == nil {
		t.Fatalf("the reference document has no %s %s", method, path)
	}
	res := d.resolve(op["responses"].(map[string]any)[status])
	if res == nil {
		t.Errorf("%s: the reference document names no answer %s (%s)", key, status, a.raw)
		return
	}
	schema := d.resolve(res["content"].(map[string]any)["application/json"])["schema"]
	if errs := d.schemaErrors(schema, a.body, "body"); len(errs) > 0 {
		t.Errorf("%s does not fit the reference document:\n%s\n%s", key, strings.Join(errs, "\n"), a.raw)
	}
}
