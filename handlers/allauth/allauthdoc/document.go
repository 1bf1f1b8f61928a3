package allauthdoc

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"errata/shareddata"
)

// Name is the file of the document in the shared test data.
const Name = "allauth-headless-openapi-65.16.1.json"

// Document is the allauth document, decoded with its numbers kept as
// json.Number so that integers and numbers stay apart.
type Document struct {
	root map[string]any
}

var loaded struct {
	sync.Mutex
	doc *Document
}

// Load reads the document once for the test binary; a missing or
// unreadable document fails the test.
func Load(t testing.TB) *Document {
	t.Helper()
	loaded.Lock()
	defer loaded.Unlock()
	if loaded.doc != nil {
		return loaded.doc
	}
	data, err := os.ReadFile(shareddata.Path(t, Name))
	if err != nil {
		t.Fatal(err)
	}
	root, err := decodeJSON(data)
	if err != nil {
		t.Fatalf("%s: %v", Name, err)
	}
	doc, ok := root.(map[string]any)
	if !ok || doc["paths"] == nil || doc["components"] == nil {
		t.Fatalf("%s is not an OpenAPI document with paths and components", Name)
	}
	loaded.doc = &Document{root: doc}
	return loaded.doc
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

// Check validates an answer of errata's sign-in API against the document:
// the operation of method and path (a concrete path such as
// /_allauth/app/v1/auth/login, its query ignored) must exist, status must be
// one of its documented responses or a departure with the shape of one, and
// body must match that response's JSON schema. Each failure is a test error
// naming method, path, status and the schema error.
func Check(t testing.TB, method, path string, status int, body []byte) {
	t.Helper()
	report(t, method, path, status, body, Load(t).Errors(method, path, status, body))
}

// CheckExcusing is Check, but an answer the document names nowhere that
// departures excuses without a shape (the CSRF refusal, the throttle's 429,
// ...) passes unchecked.
func CheckExcusing(t testing.TB, method, path string, status int, body []byte) {
	t.Helper()
	d := Load(t)
	if d.Excused(method, path, status) {
		return
	}
	report(t, method, path, status, body, d.Errors(method, path, status, body))
}

func report(t testing.TB, method, path string, status int, body []byte, errs []string) {
	t.Helper()
	for _, e := range errs {
		t.Errorf("%s %s %d: %s\nbody: %s", method, path, status, e, clip(body, 600))
	}
}

// Errors is Check's judgement, one message per error.
func (d *Document) Errors(method, path string, status int, body []byte) []string {
	media, err := d.response(method, path, status)
	held := ""
	if isUndocumented(err) {
		if dep, ok := departureOf(method, path, status); ok && dep.shapeOf != "" {
			var m, route string
			var s int
			fmt.Sscanf(dep.shapeOf, "%s %s %d", &m, &route, &s)
			client, _ := clientOf(path)
			held = "held to " + dep.shapeOf + "'s shape: "
			media, err = d.response(m, "/_allauth/"+client+"/v1/"+route, s)
		}
	}
	if err != nil {
		return []string{held + err.Error()}
	}
	if media == nil {
		if len(bytes.TrimSpace(body)) > 0 {
			return []string{held + "the document describes no body for this answer"}
		}
		return nil
	}
	v, err := decodeJSON(body)
	if err != nil {
		return []string{fmt.Sprintf("%sthe body is not one JSON value: %v", held, err)}
	}
	errs := d.schemaErrors(media["schema"], v, "$", 0)
	for i := range errs {
		errs[i] = held + errs[i]
	}
	return errs
}

// Excused says whether the document names no answer status to method and
// path and departures excuses it without a shape.
func (d *Document) Excused(method, path string, status int) bool {
	if _, err := d.response(method, path, status); !isUndocumented(err) {
		return false
	}
	dep, ok := departureOf(method, path, status)
	return ok && dep.shapeOf == ""
}

// departure is an answer errata gives that the document does not name: why
// errata gives it and, when it has the shape of an answer the document does
// name ("GET auth/session 200"), that answer, which it is held to.
type departure struct {
	reason  string
	shapeOf string
}

// departures are the answers the document does not name, by "METHOD route
// status" (route below /_allauth/{client}/v1/) or "* status"; nothing else
// is excused.
var departures = map[string]departure{
	"* 403": {reason: `the CSRF check's refusal, {"status": 403} (docs/accounts.md), which allauth documents on no route`},
	"* 413": {reason: `a body over 16 KiB, {"status": 413}`},
	"* 429": {reason: `the throttle's answer, {"status": 429} (docs/accounts.md, Throttling): allauth documents no 429`},
	"* 503": {reason: `the password hasher busy or the database out of reach, {"status": 503} with Retry-After`},
	"POST account/authenticators/recovery-codes 200": {shapeOf: "GET account/authenticators/recovery-codes 200",
		reason: "the document names no success answer: errata answers in the shape of GET's 200 (docs/accounts.md)"},
	"POST account/password/change 200": {shapeOf: "GET auth/session 200",
		reason: "the document names no success answer: errata answers in the shape of the session (docs/accounts.md)"},
	"POST auth/reauthenticate 401": {shapeOf: "GET auth/session 401",
		reason: "a client that is not signed in gets the flows, as from GET auth/session"},
	"POST auth/2fa/reauthenticate 401": {shapeOf: "GET auth/session 401",
		reason: "a client that is not signed in gets the flows, as from GET auth/session"},
	"DELETE account/authenticators/totp 404": {reason: `a user without TOTP has none to remove: {"status": 404}`},
}

// departureOf finds the departure of the answer status to method and path.
func departureOf(method, path string, status int) (departure, bool) {
	_, route := clientOf(path)
	if dep, ok := departures[fmt.Sprintf("%s %s %d", method, route, status)]; ok {
		return dep, true
	}
	dep, ok := departures[fmt.Sprintf("* %d", status)]
	return dep, ok
}

// clientOf splits a concrete path /_allauth/{client}/v1/{route} (its query
// ignored) into client and route.
func clientOf(path string) (client, route string) {
	path, _, _ = strings.Cut(path, "?")
	rest, _ := strings.CutPrefix(path, "/_allauth/")
	client, route, _ = strings.Cut(rest, "/")
	route, _ = strings.CutPrefix(route, "v1/")
	return client, route
}

// undocumentedError is the error of a status the operation does not
// document.
type undocumentedError string

func (e undocumentedError) Error() string { return string(e) }

// isUndocumented says whether err is an undocumentedError.
func isUndocumented(err error) bool {
	var u undocumentedError
	return errors.As(err, &u)
}

// operation finds the document's operation for method and a concrete path.
// A template segment {name} matches a segment that its path parameter's
// schema accepts ({client}: browser or app); where several templates match,
// the one with the most literal segments wins (/_allauth/browser/v1/... over
// /_allauth/{client}/v1/...).
func (d *Document) operation(method, path string) (string, map[string]any, error) {
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
func (d *Document) matchPath(tmpl string, segs []string, item, op map[string]any) (int, bool) {
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
func (d *Document) pathParamSchema(name string, item, op map[string]any) any {
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
// An undocumented status is an undocumentedError.
func (d *Document) response(method, path string, status int) (map[string]any, error) {
	tmpl, op, err := d.operation(method, path)
	if err != nil {
		return nil, err
	}
	responses, _ := op["responses"].(map[string]any)
	r, ok := responses[strconv.Itoa(status)]
	if !ok {
		return nil, undocumentedError(fmt.Sprintf("status %d is not documented for %s %s (documented: %s)", status, method, tmpl, strings.Join(slices.Sorted(maps.Keys(responses)), ", ")))
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
func (d *Document) deref(v any) any {
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
func (d *Document) pointer(ref string) any {
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
