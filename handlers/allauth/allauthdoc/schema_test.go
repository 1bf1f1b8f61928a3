package allauthdoc

import (
	"slices"
	"testing"
)

// TestAllauthSchemaKeywords holds the keywords the allauth document does not
// use (yet) to JSON Schema's meaning, on hand-made schemas.
func TestAllauthSchemaKeywords(t *testing.T) {
	t.Parallel()
	d := &Document{root: map[string]any{}}
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
