package handlers

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"mime"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"

	"errata/authn"
	"errata/store"
)

// The tests of this file hold openapi.json to the code: it validates as
// OpenAPI 3.1, it describes exactly the routes of routes.go with the scopes
// of their access rules, every response example in it is what the handler
// answers to a real request, and every response the tests get fits the
// documented schema.

// exampleOrigin is the origin of the URLs in the document's examples; the
// test server's own origin is replaced by it before comparing.
const exampleOrigin = "https://errata.example.com"

// openAPIDoc is the document, decoded.
type openAPIDoc map[string]any

func loadOpenAPI(t *testing.T) openAPIDoc {
	t.Helper()
	var doc openAPIDoc
	if err := json.Unmarshal(openAPIDocument, &doc); err != nil {
		t.Fatalf("openapi.json is not JSON: %v", err)
	}
	return doc
}

// pointer returns the value at the JSON pointer ref ("#/components/...").
func (doc openAPIDoc) pointer(ref string) (any, error) {
	rest, ok := strings.CutPrefix(ref, "#/")
	if !ok {
		return nil, fmt.Errorf("reference %q is not local", ref)
	}
	var v any = map[string]any(doc)
	for _, part := range strings.Split(rest, "/") {
		part = strings.NewReplacer("~1", "/", "~0", "~").Replace(part)
		m, ok := v.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("reference %q: %q is not in an object", ref, part)
		}
		if v, ok = m[part]; !ok {
			return nil, fmt.Errorf("reference %q: no %q", ref, part)
		}
	}
	return v, nil
}

// resolve follows v's $ref, if any, and returns the object it names with
// the name of the component ("" when v is inline).
func (doc openAPIDoc) resolve(t *testing.T, v any) (map[string]any, string) {
	t.Helper()
	m, _ := v.(map[string]any)
	ref, ok := m["$ref"].(string)
	if !ok {
		return m, ""
	}
	target, err := doc.pointer(ref)
	if err != nil {
		t.Fatal(err)
	}
	tm, ok := target.(map[string]any)
	if !ok {
		t.Fatalf("%s is not an object", ref)
	}
	return tm, ref[strings.LastIndexByte(ref, '/')+1:]
}

// docOperation is an operation of the document and the route it describes.
type docOperation struct {
	method string // GET
	path   string // /api/0/users/{user_id}/
	id     string // operationId
	op     map[string]any
	item   map[string]any // the path item: parameters shared by its operations
}

var httpMethods = []string{"get", "put", "post", "delete", "options", "head", "patch", "trace"}

// operations returns every operation of the document by "METHOD path".
func (doc openAPIDoc) operations(t *testing.T) map[string]docOperation {
	t.Helper()
	paths, ok := doc["paths"].(map[string]any)
	if !ok {
		t.Fatal("openapi.json has no paths")
	}
	ops := map[string]docOperation{}
	for path, it := range paths {
		item, _ := it.(map[string]any)
		for _, m := range httpMethods {
			op, ok := item[m].(map[string]any)
			if !ok {
				continue
			}
			id, _ := op["operationId"].(string)
			method := strings.ToUpper(m)
			ops[method+" "+path] = docOperation{method: method, path: path, id: id, op: op, item: item}
		}
	}
	return ops
}

// routeKey turns a route pattern into the document's "METHOD path": the
// {$} that makes a pattern exact is the path's end in the document.
func routeKey(t *testing.T, pattern string) string {
	t.Helper()
	method, path, ok := strings.Cut(pattern, " ")
	if !ok || strings.Contains(path, "...}") {
		t.Fatalf("route %q: want METHOD /path with single-segment wildcards", pattern)
	}
	return method + " " + strings.TrimSuffix(path, "{$}")
}

// security is what the document must say of access rule a: one
// requirement per accepted scope, any valid token, an optional token,
// nothing at all, or a session.
func security(a access) []any {
	switch {
	case a.open:
		return []any{}
	case a.recentSession:
		return []any{map[string]any{"session": []any{}}}
	case a.sessionOnly:
		return []any{map[string]any{}, map[string]any{"session": []any{}}}
	case !a.token:
		return []any{map[string]any{}, map[string]any{"bearer": []any{}}}
	case len(a.scopes) == 0:
		return []any{map[string]any{"bearer": []any{}}}
	}
	reqs := []any{}
	for _, s := range a.scopes {
		reqs = append(reqs, map[string]any{"bearer": []any{s}})
	}
	return reqs
}

// pathParameters returns the names of the path parameters of o.
func (doc openAPIDoc) pathParameters(t *testing.T, o docOperation) []string {
	t.Helper()
	var names []string
	for _, list := range []any{o.item["parameters"], o.op["parameters"]} {
		ps, _ := list.([]any)
		for _, p := range ps {
			pm, _ := doc.resolve(t, p)
			if pm["in"] == "path" {
				names = append(names, pm["name"].(string))
			}
		}
	}
	sort.Strings(names)
	return names
}

// TestOpenAPIDescribesEveryRoute holds the document to routes.go: the same
// routes, each with the security requirements of its access rule, its path
// parameters, and 401 and 403 documented exactly when they can happen.
func TestOpenAPIDescribesEveryRoute(t *testing.T) {
	doc := loadOpenAPI(t)
	ops := doc.operations(t)
	rules := map[string]access{}
	for _, rt := range routes(Deps{}) {
		rules[routeKey(t, rt.pattern)] = rt.access
	}
	if diff := cmp.Diff(slices.Sorted(maps.Keys(rules)), slices.Sorted(maps.Keys(ops))); diff != "" {
		t.Fatalf("routes.go (-) and openapi.json (+) disagree on the routes:\n%s", diff)
	}
	ids := map[string]string{}
	for _, key := range slices.Sorted(maps.Keys(rules)) {
		rule, o := rules[key], ops[key]
		t.Run(key, func(t *testing.T) {
			if o.id == "" {
				t.Error("no operationId")
			} else if other, dup := ids[o.id]; dup {
				t.Errorf("operationId %q is also %s's", o.id, other)
			}
			ids[o.id] = key
			if diff := cmp.Diff(security(rule), o.op["security"]); diff != "" {
				t.Errorf("security does not match the access rule of routes.go (-want +got):\n%s", diff)
			}
			names := wildcards(o.path)
			sort.Strings(names)
			if diff := cmp.Diff(names, doc.pathParameters(t, o)); diff != "" {
				t.Errorf("path parameters do not match the path (-want +got):\n%s", diff)
			}
			responses, _ := o.op["responses"].(map[string]any)
			for status, want := range map[string]bool{
				"401": !rule.open,
				"403": len(rule.scopes) > 0 || rule.recentSession || rule.sessionOnly,
			} {
				if _, got := responses[status]; got != want {
					t.Errorf("documents %s: %t, want %t", status, got, want)
				}
			}
		})
	}
}

// TestOpenAPIIsServed checks that the document is served as it is embedded,
// without a token, and revalidates by its ETag.
func TestOpenAPIIsServed(t *testing.T) {
	a := newTestAPI(t)
	res := sendDocRequest(t, a.srv.URL, docRequest{method: "GET", path: "/api/0/openapi.json"})
	if res.status != http.StatusOK || !bytes.Equal(res.body, openAPIDocument) {
		t.Fatalf("GET without a token: status %d, %d bytes; want 200 and the %d bytes of openapi.json",
			res.status, len(res.body), len(openAPIDocument))
	}
	etag := res.header.Get("ETag")
	got := map[string]string{
		"Content-Type":  res.header.Get("Content-Type"),
		"Cache-Control": res.header.Get("Cache-Control"),
		"ETag is set":   strconv.FormatBool(etag != ""),
	}
	want := map[string]string{"Content-Type": "application/json", "Cache-Control": "no-cache", "ETag is set": "true"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("headers (-want +got):\n%s", diff)
	}
	t.Run("revalidation with the ETag is 304", func(t *testing.T) {
		res := sendDocRequest(t, a.srv.URL, docRequest{method: "GET", path: "/api/0/openapi.json",
			header: http.Header{"If-None-Match": {etag}}})
		if res.status != http.StatusNotModified || len(res.body) != 0 {
			t.Errorf("status %d with %d bytes, want 304 without a body", res.status, len(res.body))
		}
	})
}

// TestOpenAPIIsValid runs an OpenAPI 3.1 validator from npm on the served
// document: @seriousme/openapi-schema-validator, which checks it against
// the official JSON schema of OpenAPI 3.1 and checks its references.
// ./dev.sh test installs it and sets OPENAPI_VALIDATOR to its command.
func TestOpenAPIIsValid(t *testing.T) {
	validator := os.Getenv("OPENAPI_VALIDATOR")
	if validator == "" {
		t.Fatal("OPENAPI_VALIDATOR is not set: run the tests with ./dev.sh test, which installs " +
			"@seriousme/openapi-schema-validator from npm and sets it to its validate-api command")
	}
	a := newTestAPI(t)
	res := sendDocRequest(t, a.srv.URL, docRequest{method: "GET", path: "/api/0/openapi.json"})
	if res.status != http.StatusOK {
		t.Fatalf("GET /api/0/openapi.json: %d", res.status)
	}
	var doc map[string]any
	if err := json.Unmarshal(res.body, &doc); err != nil {
		t.Fatal(err)
	}
	if v, _ := doc["openapi"].(string); !strings.HasPrefix(v, "3.1.") {
		t.Errorf("openapi = %q, want 3.1.x", v)
	}
	validate := func(body []byte) (bool, string) {
		file := filepath.Join(t.TempDir(), "openapi.json")
		if err := os.WriteFile(file, body, 0o644); err != nil {
			t.Fatal(err)
		}
		out, err := exec.Command(validator, file).CombinedOutput()
		var result struct {
			Valid bool `json:"valid"`
		}
		if jerr := json.Unmarshal(out, &result); jerr != nil {
			t.Fatalf("%s %s: %v; output is not its JSON report:\n%s", validator, file, err, out)
		}
		return err == nil && result.Valid, string(out)
	}
	if ok, out := validate(res.body); !ok {
		t.Fatalf("the served document is not valid OpenAPI 3.1:\n%s", out)
	}
	t.Run("the validator rejects a broken document", func(t *testing.T) {
		broken := maps.Clone(doc)
		broken["paths"] = map[string]any{"/healthz": map[string]any{"get": map[string]any{"responses": "none"}}}
		body, _ := json.Marshal(broken)
		if ok, out := validate(body); ok {
			t.Fatalf("%s accepts an operation whose responses is a string:\n%s", validator, out)
		}
	})
}

// TestOpenAPIExamplesFitTheirSchemas checks every example of the document,
// of requests and responses, against the schema beside it.
func TestOpenAPIExamplesFitTheirSchemas(t *testing.T) {
	doc := loadOpenAPI(t)
	count := 0
	var walk func(v any, at string, schema any)
	walk = func(v any, at string, schema any) {
		switch x := v.(type) {
		case map[string]any:
			if s, ok := x["schema"]; ok {
				schema = s
			}
			if e, ok := x["example"]; ok {
				count++
				for _, err := range doc.schemaErrors(schema, e, at+"/example") {
					t.Error(err)
				}
			}
			if exs, ok := x["examples"].(map[string]any); ok && x["schema"] != nil {
				for name, e := range exs {
					em, _ := doc.resolve(t, e)
					count++
					for _, err := range doc.schemaErrors(schema, em["value"], at+"/examples/"+name) {
						t.Error(err)
					}
				}
			}
			for k, e := range x {
				if k != "example" && k != "examples" {
					walk(e, at+"/"+k, schema)
				}
			}
		case []any:
			for i, e := range x {
				walk(e, at+"/"+strconv.Itoa(i), schema)
			}
		}
	}
	walk(doc["paths"], "#/paths", nil)
	walk(doc["components"].(map[string]any)["responses"], "#/components/responses", nil)
	if count < 50 {
		t.Errorf("only %d examples checked against their schemas", count)
	}
}

// schemaAnnotations are the keywords of JSON Schema that schemaErrors
// ignores: they say nothing about which values fit.
var schemaAnnotations = map[string]bool{
	"description": true, "title": true, "examples": true, "default": true,
	"contentMediaType": true, "deprecated": true, "readOnly": true, "writeOnly": true,
}

// schemaKeywords are the keywords schemaErrors checks.
var schemaKeywords = map[string]bool{
	"$ref": true, "type": true, "properties": true, "required": true, "additionalProperties": true,
	"items": true, "minItems": true, "maxItems": true, "minLength": true, "maxLength": true,
	"minimum": true, "maximum": true, "pattern": true, "format": true, "enum": true, "const": true,
	"allOf": true, "anyOf": true, "oneOf": true,
}

// TestOpenAPISchemasUseCheckedKeywords walks every schema of the document,
// those no example reaches included: each keyword must be one that
// schemaErrors checks or an annotation, so that a misspelt keyword (which
// JSON Schema would ignore) or one this test cannot check fails here.
func TestOpenAPISchemasUseCheckedKeywords(t *testing.T) {
	doc := loadOpenAPI(t)
	var walkSchema func(s any, at string)
	walkSchema = func(s any, at string) {
		m, ok := s.(map[string]any)
		if !ok {
			if _, isBool := s.(bool); !isBool {
				t.Errorf("%s: a schema is an object or a boolean, not %s", at, compactJSON(s))
			}
			return
		}
		for k, v := range m {
			switch {
			case !schemaKeywords[k] && !schemaAnnotations[k]:
				t.Errorf("%s: keyword %q is not checked by schemaErrors", at, k)
			case k == "properties":
				for name, ps := range v.(map[string]any) {
					walkSchema(ps, at+"/properties/"+name)
				}
			case k == "items" || k == "additionalProperties":
				walkSchema(v, at+"/"+k)
			case k == "allOf" || k == "anyOf" || k == "oneOf":
				for i, sub := range v.([]any) {
					walkSchema(sub, fmt.Sprintf("%s/%s/%d", at, k, i))
				}
			}
		}
	}
	// Every "schema" of the document is a Schema Object, and so is every
	// entry of components/schemas.
	var walk func(v any, at string)
	walk = func(v any, at string) {
		switch x := v.(type) {
		case map[string]any:
			for k, e := range x {
				if k == "schema" {
					walkSchema(e, at+"/schema")
				} else {
					walk(e, at+"/"+k)
				}
			}
		case []any:
			for i, e := range x {
				walk(e, at+"/"+strconv.Itoa(i))
			}
		}
	}
	components, _ := doc["components"].(map[string]any)
	schemas, _ := components["schemas"].(map[string]any)
	if len(schemas) == 0 {
		t.Fatal("no components/schemas")
	}
	for name, s := range schemas {
		walkSchema(s, "#/components/schemas/"+name)
	}
	walk(doc["paths"], "#/paths")
	for _, part := range []string{"parameters", "headers", "responses"} {
		walk(components[part], "#/components/"+part)
	}
}

// schemaErrors reports where v does not fit schema, a JSON Schema (2020-12)
// of the document. It knows the keywords the document uses and reports any
// other, so that no schema passes because a keyword was skipped.
func (doc openAPIDoc) schemaErrors(schema, v any, at string) []string {
	if b, ok := schema.(bool); ok {
		if !b {
			return []string{at + ": no value is allowed here"}
		}
		return nil
	}
	s, ok := schema.(map[string]any)
	if !ok {
		return []string{fmt.Sprintf("%s: schema %v is not an object", at, schema)}
	}
	var errs []string
	fail := func(format string, args ...any) {
		errs = append(errs, at+": "+fmt.Sprintf(format, args...))
	}
	obj, isObj := v.(map[string]any)
	arr, isArr := v.([]any)
	str, isStr := v.(string)
	num, isNum := v.(float64)
	for _, k := range slices.Sorted(maps.Keys(s)) {
		kw := s[k]
		switch k {
		case "$ref":
			target, err := doc.pointer(kw.(string))
			if err != nil {
				fail("%v", err)
				continue
			}
			errs = append(errs, doc.schemaErrors(target, v, at)...)
		case "type":
			var types []any
			if ts, ok := kw.([]any); ok {
				types = ts
			} else {
				types = []any{kw}
			}
			if !slices.ContainsFunc(types, func(t any) bool { return hasJSONType(v, t.(string)) }) {
				fail("%s is not of type %v", compactJSON(v), kw)
			}
		case "properties":
			if isObj {
				for name, ps := range kw.(map[string]any) {
					if pv, ok := obj[name]; ok {
						errs = append(errs, doc.schemaErrors(ps, pv, at+"."+name)...)
					}
				}
			}
		case "required":
			if isObj {
				for _, name := range kw.([]any) {
					if _, ok := obj[name.(string)]; !ok {
						fail("required key %q is missing", name)
					}
				}
			}
		case "additionalProperties":
			if isObj {
				props, _ := s["properties"].(map[string]any)
				for name, pv := range obj {
					switch _, known := props[name]; {
					case known:
					case kw == false:
						fail("key %q is not in the schema", name)
					default:
						errs = append(errs, doc.schemaErrors(kw, pv, at+"."+name)...)
					}
				}
			}
		case "items":
			for i, e := range arr {
				errs = append(errs, doc.schemaErrors(kw, e, fmt.Sprintf("%s[%d]", at, i))...)
			}
		case "minItems", "maxItems":
			if n := float64(len(arr)); isArr && (k == "minItems" && n < kw.(float64) || k == "maxItems" && n > kw.(float64)) {
				fail("%d items, %s is %v", len(arr), k, kw)
			}
		case "minLength", "maxLength":
			if n := float64(utf8.RuneCountInString(str)); isStr && (k == "minLength" && n < kw.(float64) || k == "maxLength" && n > kw.(float64)) {
				fail("%d characters, %s is %v", utf8.RuneCountInString(str), k, kw)
			}
		case "minimum", "maximum":
			if isNum && (k == "minimum" && num < kw.(float64) || k == "maximum" && num > kw.(float64)) {
				fail("%v is out of range, %s is %v", num, k, kw)
			}
		case "pattern":
			if isStr && !regexp.MustCompile(kw.(string)).MatchString(str) {
				fail("%q does not match %s", str, kw)
			}
		case "format":
			if kw != "date-time" {
				fail("format %q is not checked by this test", kw)
			} else if _, err := time.Parse(time.RFC3339Nano, str); isStr && err != nil {
				fail("%q is not an RFC 3339 date-time", str)
			}
		case "enum":
			if !slices.ContainsFunc(kw.([]any), func(e any) bool { return reflect.DeepEqual(e, v) }) {
				fail("%s is not one of %s", compactJSON(v), compactJSON(kw))
			}
		case "const":
			if !reflect.DeepEqual(kw, v) {
				fail("%s is not %s", compactJSON(v), compactJSON(kw))
			}
		case "allOf", "anyOf", "oneOf":
			matched := 0
			var sub []string
			for _, alt := range kw.([]any) {
				e := doc.schemaErrors(alt, v, at)
				if len(e) == 0 {
					matched++
				}
				sub = append(sub, e...)
			}
			n := len(kw.([]any))
			if k == "allOf" && matched < n || k == "anyOf" && matched == 0 || k == "oneOf" && matched != 1 {
				fail("%s: %d of %d schemas match: %s", k, matched, n, strings.Join(sub, "; "))
			}
		default:
			if !schemaAnnotations[k] {
				fail("keyword %q is not checked by this test", k)
			}
		}
	}
	return errs
}

// hasJSONType reports whether v, decoded by encoding/json, is of the JSON
// Schema type typ.
func hasJSONType(v any, typ string) bool {
	switch x := v.(type) {
	case nil:
		return typ == "null"
	case bool:
		return typ == "boolean"
	case string:
		return typ == "string"
	case float64:
		return typ == "number" || typ == "integer" && x == float64(int64(x))
	case []any:
		return typ == "array"
	case map[string]any:
		return typ == "object"
	}
	return false
}

func compactJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// varyingKeys are the keys whose values change from one run to the next:
// their values are compared by form only.
var varyingKeys = map[string]bool{"id": true, "codes": true}

// secretForms are the forms of the values of keys that a server makes at
// random and shows once, compared by form only.
var secretForms = map[string]*regexp.Regexp{
	"token":               regexp.MustCompile(`^sntryu_[0-9a-f]{64}$`),
	"tokenLastCharacters": regexp.MustCompile(`^[0-9a-f]{4}$`),
}

var digitsPattern = regexp.MustCompile(`^[0-9]+$`)

// matchExample reports where got differs from the example want. Objects
// must have the same keys and arrays the same length; values must be
// equal, except timestamps and the values of varyingKeys, which must only
// have the same form.
func matchExample(want, got any, at string, varying bool) []string {
	mismatch := func() []string {
		return []string{fmt.Sprintf("%s: example has %s, response has %s", at, compactJSON(want), compactJSON(got))}
	}
	switch w := want.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok {
			return mismatch()
		}
		var errs []string
		for _, k := range slices.Sorted(maps.Keys(w)) {
			gv, ok := g[k]
			if form := secretForms[k]; ok && form != nil {
				if s, _ := gv.(string); !form.MatchString(s) || !form.MatchString(fmt.Sprint(w[k])) {
					errs = append(errs, fmt.Sprintf("%s.%s: %s or %s is not of the form %s", at, k, compactJSON(w[k]), compactJSON(gv), form))
				}
				continue
			}
			if ok {
				errs = append(errs, matchExample(w[k], gv, at+"."+k, varying || varyingKeys[k])...)
			} else {
				errs = append(errs, fmt.Sprintf("%s: the response has no key %q", at, k))
			}
		}
		for _, k := range slices.Sorted(maps.Keys(g)) {
			if _, ok := w[k]; !ok {
				errs = append(errs, fmt.Sprintf("%s: the example has no key %q", at, k))
			}
		}
		return errs
	case []any:
		g, ok := got.([]any)
		if !ok || len(g) != len(w) {
			return mismatch()
		}
		var errs []string
		for i := range w {
			errs = append(errs, matchExample(w[i], g[i], fmt.Sprintf("%s[%d]", at, i), varying)...)
		}
		return errs
	case string:
		g, ok := got.(string)
		switch {
		case !ok:
			return mismatch()
		case timestampPattern.MatchString(w):
			if !timestampPattern.MatchString(g) {
				return mismatch()
			}
		case varying && digitsPattern.MatchString(w):
			if !digitsPattern.MatchString(g) {
				return mismatch()
			}
		case w != g:
			return mismatch()
		}
		return nil
	case float64:
		if g, ok := got.(float64); !ok || !varying && g != w {
			return mismatch()
		}
		return nil
	}
	if !reflect.DeepEqual(want, got) {
		return mismatch()
	}
	return nil
}

// replaceStrings returns v with f applied to every string in it.
func replaceStrings(v any, f func(string) string) any {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			x[k] = replaceStrings(e, f)
		}
	case []any:
		for i, e := range x {
			x[i] = replaceStrings(e, f)
		}
	case string:
		return f(x)
	}
	return v
}

// docRequest is a request of the document tests.
type docRequest struct {
	method      string
	path        string            // the document's path, with {name} for path values
	values      map[string]string // path values
	query       url.Values
	token       string
	header      http.Header
	body        []byte
	contentType string
	server      string // "" is the fixture's server; else a URL
}

func (r docRequest) clone() docRequest {
	r.values = maps.Clone(r.values)
	r.query = maps.Clone(r.query)
	r.header = r.header.Clone()
	return r
}

// jsonBody makes v the request's JSON body; a string is sent as it is.
func (r *docRequest) jsonBody(v any) {
	r.contentType = "application/json"
	if s, ok := v.(string); ok {
		r.body = []byte(s)
		return
	}
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	r.body = b
}

func sendDocRequest(t *testing.T, base string, r docRequest) response {
	t.Helper()
	path := r.path
	for name, v := range r.values {
		path = strings.ReplaceAll(path, "{"+name+"}", url.PathEscape(v))
	}
	u := base + path
	if len(r.query) > 0 {
		u += "?" + r.query.Encode()
	}
	req, err := http.NewRequest(r.method, u, bytes.NewReader(r.body))
	if err != nil {
		t.Fatal(err)
	}
	maps.Copy(req.Header, r.header)
	if r.token != "" {
		req.Header.Set("Authorization", "Bearer "+r.token)
	}
	if r.contentType != "" {
		req.Header.Set("Content-Type", r.contentType)
	}
	client := &http.Client{Timeout: 30 * time.Second}
	res, err := client.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", r.method, u, err)
	}
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return response{status: res.StatusCode, header: res.Header, body: body}
}

// docFixture is the data the examples are taken on; each operation gets
// its own copy. Organization acme (owner ann, member ben) has project web,
// environments production (visible in web) and staging (hidden in web),
// and release 1.0.0 of web, deployed to production, with one file
// ~/app.min.js. Ann has a verified address besides her primary one, an
// unverified one and a GitHub account.
type docFixture struct {
	*testAPI
	annID  int64
	ann    string // ann's token, every scope
	ben    string // ben's token, every scope
	narrow string // ann's token with member:read, a scope no route accepts
	scoped string // ann's token with org:read and project:releases
	fileID int64
	// bundleFileID is ~/app.min.js of the debug-id bundle matrixBundleID.
	bundleFileID string
	// difID is the debug file hello.sym of web (Breakpad module
	// matrixModuleID), whose content is docDifContent.
	difID   string
	repoID  int64  // the repository acme/web
	homeKey string // the confirmation key of ann@home.example.com
	dead    string // URL of a server whose database is unreachable
	limited string // URL of a server whose bundle limit is 1 KiB
}

func newDocFixture(t *testing.T, dead string) *docFixture {
	t.Helper()
	ctx := context.Background()
	a := newTestAPI(t)
	f := &docFixture{testAPI: a, dead: dead}
	f.annID = a.user("ann@example.com")
	a.user("ben@example.com")
	a.org("acme", "ann@example.com")
	a.member("acme", "ben@example.com", "member")
	a.project("acme", "web")
	check := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	_, err := a.st.CreateEnvironment(ctx, "acme", "production", "web", false)
	check(err)
	_, err = a.st.CreateEnvironment(ctx, "acme", "staging", "web", true)
	check(err)
	ref, relURL := "4e1b9c7a0f3d2b8e6a5c4d3e2f1a0b9c8d7e6f5a", "https://github.com/acme/web/releases/tag/1.0.0"
	_, _, err = a.st.CreateRelease(ctx, f.annID, "acme", store.ReleaseInput{Version: "1.0.0", Ref: &ref, URL: &relURL}, []string{"web"})
	check(err)
	repoURL, github := "https://github.com/acme/web", "integrations:github"
	repo, err := a.st.CreateRepository(ctx, f.annID, "acme", store.RepositoryInput{Name: "acme/web", URL: &repoURL, Provider: &github})
	check(err)
	f.repoID = repo.ID
	message, author, email := "Fix the checkout total", "Ann", "ann@example.com"
	committed := time.Date(2026, 11, 21, 20, 0, 0, 0, time.UTC)
	_, err = a.st.UpdateRelease(ctx, f.annID, "acme", "", "1.0.0", store.ReleaseUpdate{Commits: store.ReleaseCommitsInput{
		Commits: &[]store.CommitInput{{ID: ref, Repository: "acme/web", Message: &message, AuthorName: &author, AuthorEmail: &email,
			Timestamp: &committed, PatchSet: []store.FileChange{{Path: "src/checkout.js", Type: "M"}}}}}})
	check(err)
	deploy := "web-1.0.0"
	_, err = a.st.CreateDeploy(ctx, f.annID, "acme", "1.0.0", store.DeployInput{Environment: "production", Name: &deploy})
	check(err)
	rf, err := a.st.CreateReleaseFile(ctx, store.ReleaseFileScope{UserID: f.annID, OrgSlug: "acme", Version: "1.0.0"},
		store.NewReleaseFile{Name: "~/app.min.js", Headers: map[string]string{"Content-Type": "application/javascript"}},
		strings.NewReader("console.log(\"hello\");\n"))
	check(err)
	f.fileID = rf.ID
	f.bundleFileID = a.debugIDBundle(t, f.annID, "acme", matrixBundleID, matrixDebugID)
	difs, err := a.st.CreateDebugFiles(ctx, store.ProjectScope{UserID: f.annID, OrgSlug: "acme", ProjectSlug: "web"}, []store.DebugUpload{{Content: strings.NewReader(docDifContent), Objects: []store.DebugFileObject{{DebugID: matrixDifDebugID, ObjectName: "hello",
		CPUName: "x86_64", FileFormat: "breakpad", Type: "dbg"}}}}, true)
	check(err)
	f.difID = strconv.FormatInt(difs[0].ID, 10)
	a.exec(`INSERT INTO email_addresses (user_id, email, is_verified)
		VALUES ($1, 'ann@work.example.com', true), ($1, 'ann@home.example.com', false)`, f.annID)
	a.exec(`INSERT INTO social_accounts (user_id, provider, uid, email, username)
		VALUES ($1, 'github', '583231', 'ann@example.com', 'ann')`, f.annID)
	// The team backend, with ann on it as its admin.
	a.exec(`INSERT INTO teams (organization_id, slug, name) SELECT id, 'backend', 'Backend' FROM organizations WHERE slug = 'acme'`)
	a.exec(`INSERT INTO team_members (team_id, membership_id, role) SELECT t.id, m.id, 'admin'
		FROM teams t JOIN memberships m ON m.organization_id = t.organization_id AND m.user_id = $1`, f.annID)
	f.ann = a.token("ann@example.com")
	f.ben = a.token("ben@example.com")
	f.narrow = a.token("ann@example.com", "member:read")
	f.scoped = a.token("ann@example.com", "org:read", "project:releases")
	f.homeKey = authn.NewEmailKeys(testSecret).Sign(authn.EmailKey{
		UserID: f.annID, Email: "ann@home.example.com", Expires: time.Now().Add(authn.EmailKeyLifetime)})
	return f
}

// docDifContent is the Breakpad file of the document's debug file: what
// dsymZip uploads for matrixModuleID.
const docDifContent = "MODULE Linux x86_64 " + matrixModuleID + " hello\nFILE 0 hello.c\n"

// deps is what newTestAPI gives its server, for servers of other limits.
func (f *docFixture) deps() Deps {
	return Deps{Store: f.st, Auth: &authn.Authenticator{Store: f.st}, Log: f.lg, Now: time.Now,
		SecretKey: testSecret, RecoverySeeds: authn.NewPendingSeeds(300*time.Second, time.Now)}
}

// limitedServer returns the URL of a server on the fixture's database
// whose bundle limit is 1 KiB.
func (f *docFixture) limitedServer() string {
	if f.limited == "" {
		d := f.deps()
		d.MaxBundleSize = 1 << 10
		srv := httptest.NewServer(serve(d, routes(d)))
		f.t.Cleanup(srv.Close)
		f.limited = srv.URL
	}
	return f.limited
}

// newDeadServer returns the URL of a server whose database cannot be
// reached.
func newDeadServer(t *testing.T) string {
	st, err := store.Open(context.Background(), store.Config{
		URL: "postgres://postgres@/postgres?host=" + url.QueryEscape(filepath.Join(t.TempDir(), "nothing")) + "&sslmode=disable"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(st.Close)
	d := Deps{Store: st, Auth: &authn.Authenticator{Store: st}, Log: slog.New(slog.NewJSONHandler(io.Discard, nil)),
		Now: time.Now, SecretKey: testSecret, RecoverySeeds: authn.NewPendingSeeds(300*time.Second, time.Now)}
	srv := httptest.NewServer(serve(d, routes(d)))
	t.Cleanup(srv.Close)
	return srv.URL
}

// uploadChunk stores content as a chunk of acme.
func (f *docFixture) uploadChunk(t *testing.T, content string) {
	t.Helper()
	r := docRequest{method: "POST", path: "/api/0/organizations/acme/chunk-upload/", token: f.ann}
	r.body, r.contentType = multipartBody(t, nil, []filePart{{"file", sha1Hex([]byte(content)), []byte(content)}})
	if res := sendDocRequest(t, f.srv.URL, r); res.status != http.StatusOK {
		t.Fatalf("chunk upload: %d %s", res.status, res.body)
	}
}

// exampleCase turns an operation's ordinary request into the request that
// should get one of its examples.
type exampleCase func(t *testing.T, f *docFixture, r *docRequest)

// genericCases get the examples and responses of the document's components,
// shared by many operations, keyed by the component's name.
var genericCases = map[string]exampleCase{
	"Unauthorized": func(t *testing.T, f *docFixture, r *docRequest) {
		r.token = authn.TokenPrefix + strings.Repeat("0", 64)
	},
	"PermissionDenied": func(t *testing.T, f *docFixture, r *docRequest) { r.token = f.narrow },
	"NotFound": func(t *testing.T, f *docFixture, r *docRequest) {
		switch {
		case r.values["organization_slug"] != "":
			r.values["organization_slug"] = "globex"
		case r.values["user_id"] != "":
			r.values["user_id"] = "999999999"
		default:
			t.Fatalf("%s %s: no way to ask for something missing", r.method, r.path)
		}
	},
	"TooLarge": func(t *testing.T, f *docFixture, r *docRequest) {
		r.jsonBody(map[string]string{"pad": strings.Repeat("x", maxBodyBytes)})
	},
	"Unavailable":              func(t *testing.T, f *docFixture, r *docRequest) { r.server = f.dead },
	"CannotParse":              func(t *testing.T, f *docFixture, r *docRequest) { r.jsonBody(`{"version": `) },
	"InvalidOrganizationSlug":  func(t *testing.T, f *docFixture, r *docRequest) { r.values["organization_slug"] = "-acme" },
	"InvalidVersion":           func(t *testing.T, f *docFixture, r *docRequest) { r.values["version"] = "latest" },
	"InvalidFileID":            func(t *testing.T, f *docFixture, r *docRequest) { r.values["file_id"] = "one" },
	"InvalidEnvironmentName":   func(t *testing.T, f *docFixture, r *docRequest) { r.values["name"] = strings.Repeat("x", 65) },
	"InvalidUserID":            func(t *testing.T, f *docFixture, r *docRequest) { r.values["user_id"] = "ann" },
	"InvalidLimit":             func(t *testing.T, f *docFixture, r *docRequest) { r.query.Set("limit", "ten") },
	"InvalidCursor":            func(t *testing.T, f *docFixture, r *docRequest) { r.query.Set("cursor", "nope") },
	"InvalidVisibility":        func(t *testing.T, f *docFixture, r *docRequest) { r.query.Set("visibility", "secret") },
	"ReauthenticationRequired": reauthenticationRequired,
}

// operationCases are what an operation needs beyond its ordinary request
// and the generic cases.
type operationCases struct {
	// request adjusts the ordinary request (the document's request
	// example, the fixture's values, ann's token); it runs once and may
	// prepare data.
	request exampleCase
	// examples get the operation's own examples, keyed by status and
	// example name ("201", "400 emailExists"); they come first.
	examples map[string]exampleCase
	// responses get documented responses that have no example, keyed by
	// status and media type ("200 application/octet-stream", "304").
	responses map[string]exampleCase
	// ownFixture gives a GET its own fixture: its request changes what the
	// other GETs, which share one, read (a sign-in sets a user's
	// lastLogin and a member's lastActive; an invitation adds a member).
	ownFixture bool
}

func withJSON(v any) exampleCase {
	return func(t *testing.T, f *docFixture, r *docRequest) { r.jsonBody(v) }
}

// asDocumented is the case of an example that needs nothing beyond the
// operation's own request.
func asDocumented(*testing.T, *docFixture, *docRequest) {}

// releaseFileUploadCases are the cases of both release-file uploads.
var releaseFileUploadCases = operationCases{
	request: func(t *testing.T, f *docFixture, r *docRequest) {
		r.body, r.contentType = multipartBody(t,
			[][2]string{{"name", "~/app.min.js.map"}, {"header", "Content-Type:application/json"}},
			[]filePart{{"file", "app.min.js.map", []byte(`{"version":3,"sources":["app.js"],"mappings":"AAAA"}`)}})
	},
	examples: map[string]exampleCase{
		"409 exists": func(t *testing.T, f *docFixture, r *docRequest) {
			r.body, r.contentType = multipartBody(t, [][2]string{{"name", "~/app.min.js"}},
				[]filePart{{"file", "app.min.js", []byte("console.log(1);\n")}})
		},
		"413 tooLarge": func(t *testing.T, f *docFixture, r *docRequest) {
			r.server = f.limitedServer()
			r.body, r.contentType = multipartBody(t, nil, []filePart{{"file", "big.js", bytes.Repeat([]byte("x"), 1<<20+2<<10)}})
		},
		"422 missingFile": func(t *testing.T, f *docFixture, r *docRequest) {
			r.body, r.contentType = multipartBody(t, [][2]string{{"name", "~/app.min.js.map"}}, nil)
		},
	},
}

// releaseFileGetCases are the cases of both single-file GETs.
var releaseFileGetCases = operationCases{responses: map[string]exampleCase{
	"200 application/octet-stream": func(t *testing.T, f *docFixture, r *docRequest) { r.query.Set("download", "1") },
}}

var updateReleaseCases = operationCases{examples: map[string]exampleCase{
	"422 invalidDate": withJSON(map[string]any{"dateReleased": "yesterday"}),
}}

// docProguardUUID is the UUID of the ProGuard mapping of the proguard
// artifact release examples.
const docProguardUUID = "7e2c1b5a-4f3d-5e6a-9b8c-0d1e2f3a4b5c"

// proguardReleaseCases are the cases of both spellings of the proguard
// artifact release create: web has the mapping docProguardUUID, already
// built for com.example@1.0+5.
var proguardReleaseCases = operationCases{
	request: func(t *testing.T, f *docFixture, r *docRequest) {
		sc := store.ProjectScope{UserID: f.annID, OrgSlug: "acme", ProjectSlug: "web"}
		_, err := f.st.CreateDebugFiles(context.Background(), sc, []store.DebugUpload{{Content: strings.NewReader("a.A -> a:\n"), Objects: []store.DebugFileObject{{DebugID: docProguardUUID, ObjectName: "proguard-mapping", CPUName: "any", FileFormat: "proguard"}}}}, true)
		if err == nil {
			err = f.st.AssociateProguardRelease(context.Background(), sc, "com.example@1.0+5", docProguardUUID)
		}
		if err != nil {
			t.Fatal(err)
		}
	},
	examples: map[string]exampleCase{
		"409 exists":             withJSON(map[string]any{"release_name": "com.example@1.0+5", "proguard_uuid": docProguardUUID}),
		"422 noMapping":          withJSON(map[string]any{"release_name": "a", "proguard_uuid": "00000000-0000-0000-0000-000000000001"}),
		"422 missingReleaseName": withJSON(map[string]any{"proguard_uuid": docProguardUUID}),
	},
}

// proguardReleasesCases are the cases of both spellings of the proguard
// artifact release list.
var proguardReleasesCases = operationCases{
	request: func(t *testing.T, f *docFixture, r *docRequest) { r.query.Set("proguard_uuid", docProguardUUID) },
	examples: map[string]exampleCase{
		"422 invalidUuid": func(t *testing.T, f *docFixture, r *docRequest) { r.query.Set("proguard_uuid", "p") },
	},
}

// releaseFileUpdateCases are the cases of both release-file renames:
// another file of the release is called ~/other.js.
var releaseFileUpdateCases = operationCases{examples: map[string]exampleCase{
	"409 exists": func(t *testing.T, f *docFixture, r *docRequest) {
		_, err := f.st.CreateReleaseFile(context.Background(), store.ReleaseFileScope{UserID: f.annID, OrgSlug: "acme", Version: "1.0.0"},
			store.NewReleaseFile{Name: "~/other.js"}, strings.NewReader("other()"))
		if err != nil {
			t.Fatal(err)
		}
		r.jsonBody(map[string]any{"name": "~/other.js"})
	},
	"422 missingName": withJSON(map[string]any{}),
}}

var docCases = map[string]operationCases{
	"updateOrganization": {examples: map[string]exampleCase{
		"409 slugTaken": func(t *testing.T, f *docFixture, r *docRequest) {
			f.org("initech", "ann@example.com")
			r.jsonBody(map[string]any{"slug": "initech"})
		},
		"422 invalidSlug":     withJSON(map[string]any{"slug": "Acme!"}),
		"422 unstoredSetting": withJSON(map[string]any{"name": "Acme Corp", "defaultRole": "member"}),
		"400 noSecondFactor":  withJSON(map[string]any{"require2FA": true}),
	}},
	"createOrganization": {
		// ann is a superuser, who may create organizations.
		request: func(t *testing.T, f *docFixture, r *docRequest) {
			f.exec(`UPDATE users SET is_superuser = true WHERE id = $1`, f.annID)
		},
		examples: map[string]exampleCase{
			"401 notAllowed":  func(t *testing.T, f *docFixture, r *docRequest) { r.token = f.token("ben@example.com") },
			"409 slugTaken":   withJSON(map[string]any{"name": "Acme", "slug": "acme"}),
			"422 missingName": withJSON(map[string]any{"slug": "globex"}),
		},
	},
	"createProject": {examples: map[string]exampleCase{
		"409 exists":          withJSON(map[string]any{"name": "Web", "slug": "web"}),
		"422 missingName":     withJSON(map[string]any{"slug": "mobile"}),
		"422 invalidPlatform": withJSON(map[string]any{"name": "Mobile", "platform": "React Native"}),
	}},
	"createOrganizationTeam": {examples: map[string]exampleCase{"409": withJSON(map[string]any{"slug": "backend"})}},
	"updateTeam": {examples: map[string]exampleCase{"409": func(t *testing.T, f *docFixture, r *docRequest) {
		f.exec(`INSERT INTO teams (organization_id, slug, name) SELECT id, 'frontend', 'Frontend' FROM organizations WHERE slug = 'acme'`)
		r.jsonBody(map[string]any{"slug": "frontend"})
	}}},
	"createTeamProject": {examples: map[string]exampleCase{"409": withJSON(map[string]any{"name": "Web", "slug": "web"})}},
	"updateProject": {examples: map[string]exampleCase{
		"409 exists": func(t *testing.T, f *docFixture, r *docRequest) {
			f.project("acme", "api")
			r.jsonBody(map[string]any{"slug": "api"})
		},
		"422 unstoredSetting": withJSON(map[string]any{"isBookmarked": true}),
	}},
	"listRepositoryCommits": {examples: map[string]exampleCase{
		"422 invalidRepoId": func(t *testing.T, f *docFixture, r *docRequest) { r.values["repo_id"] = "web" },
	}},
	"updateReleaseFile":        releaseFileUpdateCases,
	"updateProjectReleaseFile": releaseFileUpdateCases,
	"deleteOrganizationReleaseSourceMaps": {
		request: func(t *testing.T, f *docFixture, r *docRequest) { r.query.Set("name", "1.0.0") },
		examples: map[string]exampleCase{
			"422 invalidName": func(t *testing.T, f *docFixture, r *docRequest) { r.query.Set("name", "latest") },
		},
	},
	"deleteReleaseSourceMaps": {
		request: func(t *testing.T, f *docFixture, r *docRequest) { r.query.Set("name", "1.0.0") },
		examples: map[string]exampleCase{
			"422 invalidName": func(t *testing.T, f *docFixture, r *docRequest) { r.query.Set("name", "latest") },
		},
	},
	"listArtifactBundles": {examples: map[string]exampleCase{
		"422 invalidQuery": func(t *testing.T, f *docFixture, r *docRequest) { r.query.Set("query", strings.Repeat("q", 201)) },
	}},
	"deleteArtifactBundle": {
		request: func(t *testing.T, f *docFixture, r *docRequest) { r.query.Set("bundleId", matrixBundleID) },
		examples: map[string]exampleCase{
			"422 invalidBundleId": func(t *testing.T, f *docFixture, r *docRequest) { r.query.Set("bundleId", "b") },
		},
	},
	"listArtifactBundleFiles": {examples: map[string]exampleCase{
		"422 invalidBundleId": func(t *testing.T, f *docFixture, r *docRequest) { r.values["bundle_id"] = "b" },
	}},
	"downloadArtifactBundleFile": {
		request: func(t *testing.T, f *docFixture, r *docRequest) { r.values["file_id"] = f.bundleFileID },
		examples: map[string]exampleCase{
			"422 invalidBundleId": func(t *testing.T, f *docFixture, r *docRequest) { r.values["bundle_id"] = "b" },
		},
		responses: map[string]exampleCase{"200 application/octet-stream": asDocumented},
	},
	"lookupArtifactsByDebugId": {
		request: func(t *testing.T, f *docFixture, r *docRequest) { r.query.Set("debug_id", matrixDebugID) },
		examples: map[string]exampleCase{
			"422 invalidDebugId": func(t *testing.T, f *docFixture, r *docRequest) { r.query.Set("debug_id", "d") },
		},
	},
	"apiRoot": {examples: map[string]exampleCase{
		"200 anonymous":     func(t *testing.T, f *docFixture, r *docRequest) { r.token = "" },
		"200 authenticated": func(t *testing.T, f *docFixture, r *docRequest) { r.token = f.scoped },
	}},
	"updateProjectEnvironment": {examples: map[string]exampleCase{
		"422 missingIsHidden": withJSON(map[string]any{"name": "production"}),
	}},
	"createRelease": {examples: map[string]exampleCase{
		"208":                withJSON(map[string]any{"version": "1.0.0", "projects": []string{"web"}}),
		"422 noValidProject": withJSON(map[string]any{"version": "2.0.0", "projects": []string{"mobile"}}),
		"422 missingVersion": withJSON(map[string]any{"projects": []string{"web"}}),
		"422 invalidVersion": withJSON(map[string]any{"version": "latest", "projects": []string{"web"}}),
	}},
	"createProjectRelease": {examples: map[string]exampleCase{
		"422 invalidVersion": withJSON(map[string]any{"version": "latest"}),
	}},
	"updateRelease":        updateReleaseCases,
	"updateProjectRelease": updateReleaseCases,
	"createRepository": {examples: map[string]exampleCase{
		"409 exists":          withJSON(map[string]any{"name": "acme/web"}),
		"422 unknownProvider": withJSON(map[string]any{"name": "acme/api", "provider": "svn"}),
	}},
	"listRepositories": {examples: map[string]exampleCase{
		"422 invalidStatus": func(t *testing.T, f *docFixture, r *docRequest) { r.query.Set("status", "gone") },
	}},
	"createDeploy": {examples: map[string]exampleCase{
		"422 missingEnvironment": withJSON(map[string]any{"name": "web-2.0.0"}),
	}},
	"updateUser": {examples: map[string]exampleCase{
		"422 invalidTimezone": withJSON(map[string]any{"options": map[string]any{"timezone": "Mars/Olympus_Mons"}}),
	}},
	"deleteUser": {
		// Ben can delete his account; Ann owns acme.
		request: func(t *testing.T, f *docFixture, r *docRequest) { r.token = f.ben },
		examples: map[string]exampleCase{
			"400 organizationOwner": func(t *testing.T, f *docFixture, r *docRequest) { r.token = f.ann },
		},
	},
	"createEmail": {examples: map[string]exampleCase{
		"400 emailExists":  withJSON(map[string]any{"email": "ben@example.com"}),
		"422 invalidEmail": withJSON(map[string]any{"email": "ann at example.com"}),
	}},
	"resendEmailConfirmation": {examples: map[string]exampleCase{
		"404": withJSON(map[string]any{"email": "ann@work.example.com"}),
	}},
	"activateRecoveryCodes": {
		request: func(t *testing.T, f *docFixture, r *docRequest) {
			res := sendDocRequest(t, f.srv.URL, docRequest{method: "GET", path: "/api/0/generate-recovery-codes/", token: f.ann})
			var out recoveryCodesOut
			if err := json.Unmarshal(res.body, &out); err != nil || len(out.Codes) == 0 {
				t.Fatalf("generate recovery codes: %d %s", res.status, res.body)
			}
			r.jsonBody(map[string]any{"code": out.Codes[3]})
		},
		examples: map[string]exampleCase{
			"400 noCodesSet":  func(t *testing.T, f *docFixture, r *docRequest) { r.token = f.ben },
			"400 invalidCode": withJSON(map[string]any{"code": "00000000"}),
			"422 missingCode": withJSON(map[string]any{}),
		},
	},
	"listApiTokens":      apiTokenDocCases["listApiTokens"],
	"createApiToken":     apiTokenDocCases["createApiToken"],
	"deleteApiTokenById": apiTokenDocCases["deleteApiTokenById"],
	"deleteApiToken":     apiTokenDocCases["deleteApiToken"],
	"verifyEmail": {
		request: func(t *testing.T, f *docFixture, r *docRequest) { r.jsonBody(map[string]any{"key": f.homeKey}) },
		examples: map[string]exampleCase{
			"400 invalidKey": withJSON(map[string]any{"key": "bm90IGEga2V5.bm8"}),
			"422 missingKey": withJSON(map[string]any{}),
		},
	},
	"openAPIDocument": {responses: map[string]exampleCase{
		"304": func(t *testing.T, f *docFixture, r *docRequest) {
			res := sendDocRequest(t, f.srv.URL, *r)
			r.header = http.Header{"If-None-Match": {res.header.Get("ETag")}}
		},
	}},
	"getReleaseFile":           releaseFileGetCases,
	"getProjectReleaseFile":    releaseFileGetCases,
	"uploadReleaseFile":        releaseFileUploadCases,
	"uploadProjectReleaseFile": releaseFileUploadCases,
	"uploadChunks": {
		request: func(t *testing.T, f *docFixture, r *docRequest) {
			r.body, r.contentType = multipartBody(t, nil, []filePart{{"file", sha1Hex([]byte("hello")), []byte("hello")}})
		},
		examples: map[string]exampleCase{
			"400 mismatch": func(t *testing.T, f *docFixture, r *docRequest) {
				r.body, r.contentType = multipartBody(t, nil, []filePart{{"file", sha1Hex([]byte("hello")), []byte("hullo")}})
			},
			"400 badName": func(t *testing.T, f *docFixture, r *docRequest) {
				r.body, r.contentType = multipartBody(t, nil, []filePart{{"file", "chunk-1", []byte("hello")}})
			},
		},
	},
	"assembleDifs": {examples: map[string]exampleCase{
		"200 notFound": asDocumented,
		"200 created": func(t *testing.T, f *docFixture, r *docRequest) {
			f.uploadChunk(t, "hullo")
			r.jsonBody(map[string]any{sha1Hex([]byte("hullo")): map[string]any{"name": "hello", "chunks": []string{sha1Hex([]byte("hullo"))}}})
		},
		"200 ok": withJSON(map[string]any{sha1Hex([]byte(docDifContent)): map[string]any{
			"name": "hello.sym", "chunks": []string{sha1Hex([]byte(docDifContent))}}}),
		"200 error": func(t *testing.T, f *docFixture, r *docRequest) {
			f.uploadChunk(t, "hullo")
			r.jsonBody(map[string]any{sha1Hex([]byte("hullo")): map[string]any{"name": "hello", "chunks": []string{sha1Hex([]byte("hullo"))}}})
			sendDocRequest(t, f.srv.URL, *r) // enqueues the job that the worker would fail
			f.exec(`UPDATE jobs SET state = 'error', last_error = 'The file "hello" is not a supported debug information file'
				WHERE id = (SELECT max(id) FROM jobs)`)
		},
		"422 invalidChecksum": withJSON(map[string]any{"hello": map[string]any{"name": "hello", "chunks": []string{}}}),
	}},
	"listDebugFiles": {
		examples: map[string]exampleCase{
			"422 invalidDebugId": func(t *testing.T, f *docFixture, r *docRequest) { r.query.Set("debug_id", "d") },
			"422 invalidId":      func(t *testing.T, f *docFixture, r *docRequest) { r.query.Set("id", "one") },
		},
		responses: map[string]exampleCase{
			"200 application/octet-stream": func(t *testing.T, f *docFixture, r *docRequest) { r.query.Set("id", f.difID) },
		},
	},
	"uploadDebugFiles": {
		request: func(t *testing.T, f *docFixture, r *docRequest) {
			b := dsymZip(t, matrixModuleID)
			r.body, r.contentType = b.data, b.contentType
		},
		examples: map[string]exampleCase{
			"400 notAZip": func(t *testing.T, f *docFixture, r *docRequest) {
				r.body, r.contentType = multipartBody(t, nil, []filePart{{"file", "symbols.zip", []byte("not a zip")}})
			},
			"413 tooLarge": func(t *testing.T, f *docFixture, r *docRequest) {
				r.server = f.limitedServer()
				r.body, r.contentType = multipartBody(t, nil, []filePart{{"file", "big.zip", bytes.Repeat([]byte("x"), 1<<20+2<<10)}})
			},
			"422 missingFile": func(t *testing.T, f *docFixture, r *docRequest) {
				r.body, r.contentType = multipartBody(t, [][2]string{{"name", "symbols.zip"}}, nil)
			},
		},
	},
	"deleteDebugFile": {
		request: func(t *testing.T, f *docFixture, r *docRequest) { r.query.Set("id", f.difID) },
		examples: map[string]exampleCase{
			"422 invalidId": func(t *testing.T, f *docFixture, r *docRequest) { r.query.Set("id", "one") },
		},
	},
	"createProguardRelease":        proguardReleaseCases,
	"createProguardReleaseNoSlash": proguardReleaseCases,
	"listProguardReleases":         proguardReleasesCases,
	"listProguardReleasesNoSlash":  proguardReleasesCases,
	"listUnknownDebugFiles": {
		request: func(t *testing.T, f *docFixture, r *docRequest) {
			r.query["checksums"] = []string{sha1Hex([]byte(docDifContent)), sha1Hex([]byte("hello"))}
		},
		examples: map[string]exampleCase{
			"422 invalidChecksum": func(t *testing.T, f *docFixture, r *docRequest) { r.query.Set("checksums", "hello") },
		},
	},
	"assembleRelease": {examples: map[string]exampleCase{
		"422 missingFields":   withJSON(map[string]any{}),
		"422 invalidChecksum": withJSON(map[string]any{"checksum": "not-a-sha1", "chunks": []string{}}),
	}},
	"assembleArtifactBundle": {examples: map[string]exampleCase{
		"200 notFound": asDocumented,
		"200 created": func(t *testing.T, f *docFixture, r *docRequest) {
			f.uploadChunk(t, "hello")
			r.jsonBody(map[string]any{"checksum": sha1Hex([]byte("hello")), "chunks": []string{sha1Hex([]byte("hello"))},
				"projects": []string{"web"}, "version": "2.0.0"})
		},
		"200 error": func(t *testing.T, f *docFixture, r *docRequest) {
			f.uploadChunk(t, "hello")
			r.jsonBody(map[string]any{"checksum": sha1Hex([]byte("hello")), "chunks": []string{sha1Hex([]byte("hello"))},
				"projects": []string{"web"}})
			sendDocRequest(t, f.srv.URL, *r) // enqueues the job that the worker would fail
			f.exec(`UPDATE jobs SET state = 'error', last_error = 'The bundle names no release: pass a release version'
				WHERE id = (SELECT max(id) FROM jobs)`)
		},
		"422 invalidChecksum": withJSON(map[string]any{"checksum": sha1Hex([]byte("hello")), "chunks": []string{"hello"}}),
	}},

	// Members and invitations: ann (the only owner) changes and removes
	// ben; the invitation routes take the link of a new invitation,
	// without a credential.
	"addOrganizationMember": {examples: map[string]exampleCase{
		"409 member":       withJSON(map[string]any{"email": "ben@example.com"}),
		"422 missingEmail": withJSON(map[string]any{}),
	}},
	"updateOrganizationMember": {request: namingBen},
	"deleteOrganizationMember": {request: namingBen},
	"getInvitation":            {request: namingInvitation, ownFixture: true},
	"acceptInvitation": {request: namingInvitation, examples: map[string]exampleCase{
		"422 missingPassword": withJSON(map[string]any{}),
	}},
}

// namingBen makes a member route name ben's membership.
func namingBen(t *testing.T, f *docFixture, r *docRequest) {
	r.values["member_id"] = strconv.Itoa(f.count(`SELECT m.id FROM memberships m JOIN users u ON u.id = m.user_id
		WHERE u.email = 'ben@example.com'`))
}

// namingInvitation has ann invite cal@example.com and makes an
// accept-invite route name its link, without a credential.
func namingInvitation(t *testing.T, f *docFixture, r *docRequest) {
	res := sendDocRequest(t, f.srv.URL, docRequest{method: "POST", path: "/api/0/organizations/acme/members/", token: f.ann,
		body: []byte(`{"email": "cal@example.com"}`), contentType: "application/json"})
	if res.status != http.StatusCreated {
		t.Fatalf("invitation: %d %s", res.status, res.body)
	}
	ms, err := f.st.Outbox(context.Background(), "cal@example.com")
	if err != nil || len(ms) != 1 {
		t.Fatalf("the invitation's mail: %v %v", ms, err)
	}
	m := regexp.MustCompile(`/accept-invite/acme/([0-9]+)/([A-Za-z0-9_-]+)/`).FindStringSubmatch(ms[0].Text)
	if m == nil {
		t.Fatalf("no link in %q", ms[0].Text)
	}
	r.values["member_id"], r.values["token"], r.token = m[1], m[2], ""
}

// docExample is one response example of an operation.
type docExample struct {
	status    string // "200"
	name      string // the key in examples; "" for a lone example
	component string // the components/examples or components/responses entry it comes from
	mediaType string
	value     any
}

// key names the example in docCases.
func (e docExample) key() string {
	if e.name == "" {
		return e.status
	}
	return e.status + " " + e.name
}

// examples returns the response examples of o: errors first, then
// successes, each group ordered by key.
func (doc openAPIDoc) examples(t *testing.T, o docOperation) []docExample {
	t.Helper()
	var exs []docExample
	responses, _ := o.op["responses"].(map[string]any)
	for status, rv := range responses {
		resp, respName := doc.resolve(t, rv)
		content, _ := resp["content"].(map[string]any)
		for mt, mv := range content {
			media, _ := mv.(map[string]any)
			if v, ok := media["example"]; ok {
				exs = append(exs, docExample{status: status, component: respName, mediaType: mt, value: v})
			}
			named, _ := media["examples"].(map[string]any)
			for name, ev := range named {
				e, exName := doc.resolve(t, ev)
				v, ok := e["value"]
				if !ok {
					t.Fatalf("%s %s: example %s has no value", o.method, o.path, name)
				}
				exs = append(exs, docExample{status: status, name: name, component: exName, mediaType: mt, value: v})
			}
		}
	}
	sort.Slice(exs, func(i, j int) bool {
		si, sj := exs[i].status < "300", exs[j].status < "300"
		if si != sj {
			return sj
		}
		return exs[i].key() < exs[j].key()
	})
	return exs
}

// ordinaryRequest is the request of o on f that succeeds: the fixture's
// path values, ann's token and the document's request example.
func (doc openAPIDoc) ordinaryRequest(t *testing.T, f *docFixture, o docOperation) docRequest {
	t.Helper()
	r := docRequest{method: o.method, path: o.path, values: map[string]string{}, query: url.Values{}, token: f.ann}
	fixture := map[string]string{
		"organization_slug": "acme", "project_slug": "web", "version": "1.0.0",
		"file_id": strconv.FormatInt(f.fileID, 10), "name": "production", "user_id": "me", "key": f.homeKey,
		"bundle_id": matrixBundleID, "repo_id": strconv.FormatInt(f.repoID, 10),
		"token_id":  "0",               // apiTokenDocCases make the token
		"member_id": "me", "token": "", // memberDocCases name another member or an invitation
		"team_slug": "backend",
	}
	for _, name := range doc.pathParameters(t, o) {
		v, ok := fixture[name]
		if !ok {
			t.Fatalf("no fixture value for the path parameter %s", name)
		}
		r.values[name] = v
	}
	if rb, _ := doc.resolve(t, o.op["requestBody"]); rb != nil {
		content, _ := rb["content"].(map[string]any)
		if media, ok := content["application/json"].(map[string]any); ok {
			if ex, ok := media["example"]; ok {
				r.jsonBody(ex)
			}
		}
	}
	return r
}

// response returns the documented response of o for status, or nil.
func (doc openAPIDoc) response(t *testing.T, o docOperation, status int) map[string]any {
	t.Helper()
	responses, _ := o.op["responses"].(map[string]any)
	r, _ := doc.resolve(t, responses[strconv.Itoa(status)])
	return r
}

// checkResponse reports where res differs from what o documents for its
// status: content type, body schema and headers.
func (doc openAPIDoc) checkResponse(t *testing.T, o docOperation, res response) []string {
	t.Helper()
	resp := doc.response(t, o, res.status)
	if resp == nil {
		return []string{fmt.Sprintf("status %d is not documented; body %s", res.status, res.body)}
	}
	var errs []string
	content, _ := resp["content"].(map[string]any)
	if len(content) == 0 {
		if len(res.body) != 0 {
			errs = append(errs, fmt.Sprintf("%d documents no body; got %s", res.status, res.body))
		}
	} else {
		mt, _, _ := mime.ParseMediaType(res.header.Get("Content-Type"))
		media, ok := content[mt].(map[string]any)
		switch {
		case !ok:
			errs = append(errs, fmt.Sprintf("%d: Content-Type %q is not documented", res.status, res.header.Get("Content-Type")))
		case mt == "application/json":
			var body any
			if err := json.Unmarshal(res.body, &body); err != nil {
				errs = append(errs, fmt.Sprintf("%d: body is not JSON: %s", res.status, res.body))
			} else {
				errs = append(errs, doc.schemaErrors(media["schema"], body, fmt.Sprintf("%d body", res.status))...)
			}
		}
	}
	headers, _ := resp["headers"].(map[string]any)
	for name, hv := range headers {
		h, _ := doc.resolve(t, hv)
		values, present := res.header[http.CanonicalHeaderKey(name)]
		if !present {
			if h["required"] == true {
				errs = append(errs, fmt.Sprintf("%d: no %s header", res.status, name))
			}
			continue
		}
		var v any = values[0]
		if sm, _ := h["schema"].(map[string]any); sm["type"] == "integer" {
			n, err := strconv.Atoi(values[0])
			if err != nil {
				errs = append(errs, fmt.Sprintf("%d: %s %q is not an integer", res.status, name, values[0]))
				continue
			}
			v = float64(n)
		}
		errs = append(errs, doc.schemaErrors(h["schema"], v, fmt.Sprintf("%d header %s", res.status, name))...)
	}
	return errs
}

// checkExample reports where res differs from the example ex.
func (f *docFixture) checkExample(ex docExample, res response) []string {
	if strconv.Itoa(res.status) != ex.status {
		return []string{fmt.Sprintf("status %d, want %s; body %s", res.status, ex.status, res.body)}
	}
	if mt, _, _ := mime.ParseMediaType(res.header.Get("Content-Type")); mt != ex.mediaType {
		return []string{fmt.Sprintf("Content-Type %q, want %s", res.header.Get("Content-Type"), ex.mediaType)}
	}
	var got any
	if err := json.Unmarshal(res.body, &got); err != nil {
		return []string{fmt.Sprintf("body is not JSON: %s", res.body)}
	}
	got = replaceStrings(got, func(s string) string { return strings.ReplaceAll(s, f.srv.URL, exampleOrigin) })
	errs := matchExample(ex.value, got, "body", false)
	if len(errs) > 0 {
		b, _ := json.MarshalIndent(got, "", "  ")
		errs = append(errs, "the response body is:\n"+string(b))
	}
	return errs
}

// TestOpenAPIExamplesAreWhatHandlersAnswer sends, for every response example
// of the document, the request that should get it, and compares: same
// status, same keys, same values but for ids, timestamps and recovery
// codes. Each response must also fit the documented schema and headers. An
// example that no case of genericCases or docCases reaches fails the test,
// and so does an operation that answers 503 without a database and does not
// document it, or the other way round.
func TestOpenAPIExamplesAreWhatHandlersAnswer(t *testing.T) {
	doc := loadOpenAPI(t)
	ops := doc.operations(t)
	ids := map[string]bool{}
	for _, o := range ops {
		ids[o.id] = true
	}
	for id := range docCases {
		if !ids[id] {
			t.Errorf("docCases has cases of %q, which is not an operation of openapi.json", id)
		}
	}
	dead := newDeadServer(t)
	// GET changes nothing, so every GET shares one fixture; each other
	// operation gets its own.
	shared := newDocFixture(t, dead)
	for _, key := range slices.Sorted(maps.Keys(ops)) {
		o := ops[key]
		t.Run(key, func(t *testing.T) {
			t.Parallel()
			cases := docCases[o.id]
			f := shared
			if o.method != "GET" || cases.ownFixture {
				f = newDocFixture(t, dead)
			}
			base := doc.ordinaryRequest(t, f, o)
			if cases.request != nil {
				cases.request(t, f, &base)
			}
			if rb, _ := doc.resolve(t, o.op["requestBody"]); rb != nil {
				if base.body == nil {
					t.Fatal("the operation takes a body but has no request example and no request in docCases")
				}
				content, _ := rb["content"].(map[string]any)
				mt, _, _ := mime.ParseMediaType(base.contentType)
				if media, ok := content[mt].(map[string]any); !ok {
					t.Errorf("request Content-Type %q is not documented", base.contentType)
				} else if mt == "application/json" {
					var body any
					json.Unmarshal(base.body, &body)
					for _, err := range doc.schemaErrors(media["schema"], body, "request body") {
						t.Error(err)
					}
				}
			}
			used := map[string]bool{}
			successChecked := false
			for _, ex := range doc.examples(t, o) {
				c, ok := cases.examples[ex.key()]
				if ok {
					used[ex.key()] = true
				} else if c, ok = genericCases[ex.component]; !ok {
					if ex.status >= "300" || ex.name != "" {
						t.Errorf("example %q (%s) is not checked: add a case to docCases[%q]", ex.key(), ex.component, o.id)
						continue
					}
					c = asDocumented
				}
				r := base.clone()
				c(t, f, &r)
				server := f.srv.URL
				if r.server != "" {
					server = r.server
				}
				res := sendDocRequest(t, server, r)
				for _, err := range f.checkExample(ex, res) {
					t.Errorf("example %s: %s", ex.key(), err)
				}
				for _, err := range doc.checkResponse(t, o, res) {
					t.Errorf("example %s: %s", ex.key(), err)
				}
				successChecked = successChecked || ex.status < "300"
			}
			for k := range cases.examples {
				if !used[k] {
					t.Errorf("docCases[%q] has a case %q that matches no example", o.id, k)
				}
			}
			for _, key := range slices.Sorted(maps.Keys(cases.responses)) {
				status, mediaType, _ := strings.Cut(key, " ")
				r := base.clone()
				cases.responses[key](t, f, &r)
				res := sendDocRequest(t, f.srv.URL, r)
				mt, _, _ := mime.ParseMediaType(res.header.Get("Content-Type"))
				if strconv.Itoa(res.status) != status || mt != mediaType && mediaType != "" {
					t.Errorf("response %s: got %d %s", key, res.status, res.header.Get("Content-Type"))
				}
				for _, err := range doc.checkResponse(t, o, res) {
					t.Errorf("response %s: %s", key, err)
				}
			}
			if !successChecked {
				res := sendDocRequest(t, f.srv.URL, base)
				if res.status >= 300 {
					t.Errorf("the ordinary request: status %d; body %s", res.status, res.body)
				}
				for _, err := range doc.checkResponse(t, o, res) {
					t.Errorf("the ordinary request: %s", err)
				}
			}
			t.Run("documents 503 exactly when it can answer it", func(t *testing.T) {
				res := sendDocRequest(t, dead, base)
				documented := doc.response(t, o, http.StatusServiceUnavailable) != nil
				if got := res.status == http.StatusServiceUnavailable; got != documented {
					t.Errorf("without a database: status %d; 503 documented: %t", res.status, documented)
				}
			})
		})
	}
}
