package allauthdoc

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math/big"
	"net/mail"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
)

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
func (d *Document) schemaErrors(sv any, v any, at string, depth int) []string {
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
func (d *Document) objectErrors(s, obj map[string]any, at string, depth int) []string {
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
