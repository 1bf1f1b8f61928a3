package store

import (
	"strings"
	"testing"
	"time"
)

// TestSymbolLookupsAreShortLived: an answer is trusted for
// SymbolLookupTime and no longer, by caller, organization and query;
// forget drops them all, and an answer read before a forget is not
// remembered after it; the section route's queries, long keys and
// answers past the bound are never remembered.
func TestSymbolLookupsAreShortLived(t *testing.T) {
	var l symbolLookups
	now := time.Now()
	q := SymbolQuery{Formats: []string{"elf"}, CodeID: "ab", Feature: "debug"}
	key, ok := symbolLookupKey(1, "acme", q)
	if !ok {
		t.Fatal("a debuginfo query is not remembered")
	}
	_, gen, found := l.get(key, now)
	if found {
		t.Fatal("an answer before any was remembered")
	}
	l.remember(key, gen, symbolLookup{f: SymbolFile{FileID: 7}}, now)
	if a, _, ok := l.get(key, now.Add(SymbolLookupTime-time.Millisecond)); !ok || a.f.FileID != 7 {
		t.Errorf("within %s: %v %v, want file 7", SymbolLookupTime, a, ok)
	}
	if _, _, ok := l.get(key, now.Add(SymbolLookupTime)); ok {
		t.Errorf("still trusted after %s", SymbolLookupTime)
	}
	for _, other := range []struct {
		user int64
		org  string
		q    SymbolQuery
	}{
		{2, "acme", q},
		{1, "other", q},
		{1, "acme", SymbolQuery{Formats: []string{"elf"}, CodeID: "ab", Types: []string{"exe", "lib"}}},
		{1, "acme", SymbolQuery{Formats: []string{"elf"}, CodeID: "abcd", Feature: "debug"}},
		{1, "acme", SymbolQuery{Formats: []string{"elf"}, CodeIDs: []string{"ab"}, Feature: "debug"}},
	} {
		k, _ := symbolLookupKey(other.user, other.org, other.q)
		if _, _, ok := l.get(k, now); ok || k == key {
			t.Errorf("user %d, %s, %+v answered as user 1, acme, %+v", other.user, other.org, other.q, q)
		}
	}

	_, gen, _ = l.get(key, now)
	l.forget()
	if _, _, ok := l.get(key, now); ok {
		t.Error("remembered after forget")
	}
	l.remember(key, gen, symbolLookup{f: SymbolFile{FileID: 8}}, now) // read before the forget
	if _, _, ok := l.get(key, now); ok {
		t.Error("an answer read before a forget was remembered after it")
	}

	if _, ok := symbolLookupKey(1, "acme", SymbolQuery{Formats: []string{"elf"}, CodeID: "ab", Sections: true}); ok {
		t.Error("a query of the section table is remembered")
	}
	if _, ok := symbolLookupKey(1, "acme", SymbolQuery{SourcePath: "/" + strings.Repeat("a", maxSymbolLookupKey)}); ok {
		t.Error("a key longer than the bound is remembered")
	}

	_, gen, _ = l.get(key, now)
	for i := 0; i < maxSymbolLookups+10; i++ {
		k, _ := symbolLookupKey(int64(i), "acme", q)
		l.remember(k, gen, symbolLookup{}, now)
	}
	if len(l.items) != maxSymbolLookups {
		t.Errorf("%d answers remembered, want the bound %d", len(l.items), maxSymbolLookups)
	}
	later := now.Add(SymbolLookupTime)
	l.remember(key, gen, symbolLookup{f: SymbolFile{FileID: 9}}, later)
	if a, _, ok := l.get(key, later); !ok || a.f.FileID != 9 || len(l.items) != 1 {
		t.Errorf("once the others expired: %v, %d answers; want file 9 alone", ok, len(l.items))
	}
}
