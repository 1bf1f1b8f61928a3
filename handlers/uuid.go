package handlers

import "strings"

// canonicalUUID returns s, a UUID in any case with or without hyphens, in
// the lower-case hyphenated form, or false.
func canonicalUUID(s string) (string, bool) {
	h := strings.ToLower(strings.ReplaceAll(s, "-", ""))
	if len(h) != 32 || strings.Trim(h, "0123456789abcdef") != "" {
		return "", false
	}
	return h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:], true
}
