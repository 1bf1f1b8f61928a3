package allauthdoc

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
)

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
func (d *Document) allauthExamples() (out []allauthExample, unknown []string) {
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
	d := Load(t)
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
