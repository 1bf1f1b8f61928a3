package handlers

import (
	"regexp"
	"strings"
	"testing"
)

func TestValidEmailKeyMatchesItsPattern(t *testing.T) {
	// The pattern validEmailKey replaced, kept here as its definition.
	pattern := regexp.MustCompile(`^[A-Za-z0-9_-]{1,600}\.[A-Za-z0-9_-]{1,100}$`)
	keys := []string{
		"", ".", "a.", ".b", "a.b", "aZ09_-.xY_-9", "a.b.c", "a..b", "a b.c", "a.b=", "a+/.b",
		strings.Repeat("a", 600) + ".b", strings.Repeat("a", 601) + ".b",
		"a." + strings.Repeat("b", 100), "a." + strings.Repeat("b", 101),
		"é.b", "a.\x00", "a.b\n",
	}
	for _, key := range keys {
		if got, want := validEmailKey(key), pattern.MatchString(key); got != want {
			t.Errorf("validEmailKey(%q) = %t, want %t", key, got, want)
		}
	}
}
