package handlers

import (
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// text checks an optional string field: at most max characters, and not
// empty when required.
func text(o opt[string], required bool, max int, loc ...any) (*string, error) {
	switch {
	case required && !o.Set:
		return nil, invalid(missing, "Field required", loc...)
	case required && (o.Null || o.V == ""):
		return nil, invalid(valueErr, "Input should be a non-empty string", loc...)
	case o.Null || !o.Set:
		return nil, nil
	case max > 0 && utf8.RuneCountInString(o.V) > max:
		return nil, invalid(valueErr, "String should have at most "+strconv.Itoa(max)+" characters", loc...)
	}
	return &o.V, nil
}

// parseTime reads an optional RFC 3339 timestamp field.
func parseTime(o opt[string], field string) (*time.Time, error) {
	if !o.Set || o.Null {
		return nil, nil
	}
	t, err := time.Parse(time.RFC3339Nano, o.V)
	// The API writes timestamps in UTC with a four-digit year.
	if y := t.UTC().Year(); err != nil || y < 0 || y > 9999 {
		return nil, invalid(typeError, "Input should be a valid datetime", "body", field)
	}
	return &t, nil
}

// isText reports whether a multipart value can be stored as text: valid
// UTF-8 without NUL, which PostgreSQL cannot hold.
func isText(s string) bool {
	return utf8.ValidString(s) && !strings.ContainsRune(s, 0)
}
