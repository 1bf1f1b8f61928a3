package store

import (
	"strconv"
	"strings"
	"sync"
	"time"
)

// SymbolLookupTime is how long FindSymbolFile trusts what it answered a
// caller (a file, or none) before asking the database again: the bound on
// how late a replica sees a debug file another one stored, or deleted.
// In the process that stores or deletes a debug file it is forgotten at
// once. Debuggers ask again and again for the same build ids (and
// libdebuginfod remembers a miss for ten minutes itself, docs/symbol-server.md).
const SymbolLookupTime = time.Second

// Bounds of the lookups remembered: past maxSymbolLookups, expired ones
// are dropped, and while none has expired nothing more is remembered; a
// query whose key is longer than maxSymbolLookupKey (a long source path)
// is never remembered. With at most 1 KiB a key and a file's record, its
// blob index (a row per 8 MiB: 32 for a file of the default
// MAX_BUNDLE_SIZE) and no section table (the section route's queries are
// never remembered), they hold a few MiB at most.
const (
	maxSymbolLookups   = 1024
	maxSymbolLookupKey = 1024
)

// symbolLookups remembers FindSymbolFile's answers by caller,
// organization and query, for SymbolLookupTime.
type symbolLookups struct {
	mu    sync.Mutex
	items map[string]symbolLookup
	// gen counts forget's calls: an answer read before one is not
	// remembered after it.
	gen uint64
}

// symbolLookup is an answer of FindSymbolFile: a file, or err (a file
// not found). The file is shared by the requests it answers: never
// changed.
type symbolLookup struct {
	f     SymbolFile
	err   error
	until time.Time
}

// symbolLookupKey is the key of a query of the user in the organization
// slug, and whether it may be remembered.
func symbolLookupKey(userID int64, slug string, q SymbolQuery) (string, bool) {
	if q.Sections {
		return "", false
	}
	var b strings.Builder
	b.WriteString(strconv.FormatInt(userID, 10))
	for _, s := range [][]string{{slug}, q.Formats, {q.CodeID}, q.CodeIDs, {q.DebugID}, {q.ObjectName}, q.Types, {q.Feature}, {q.SourcePath}} {
		b.WriteByte(0)
		for _, v := range s {
			b.WriteString(v)
			b.WriteByte(1)
		}
		if b.Len() > maxSymbolLookupKey {
			return "", false
		}
	}
	return b.String(), true
}

// get returns the answer remembered for key, if still trusted at now, and
// the generation to remember a new one with.
func (l *symbolLookups) get(key string, now time.Time) (symbolLookup, uint64, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	a, ok := l.items[key]
	if !ok || !now.Before(a.until) {
		return symbolLookup{}, l.gen, false
	}
	return a, l.gen, true
}

// remember keeps a as the answer for key, read at generation gen.
func (l *symbolLookups) remember(key string, gen uint64, a symbolLookup, now time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if gen != l.gen {
		return
	}
	if l.items == nil {
		l.items = map[string]symbolLookup{}
	}
	if len(l.items) >= maxSymbolLookups {
		for k, old := range l.items {
			if !now.Before(old.until) {
				delete(l.items, k)
			}
		}
		if len(l.items) >= maxSymbolLookups {
			return
		}
	}
	a.until = now.Add(SymbolLookupTime)
	l.items[key] = a
}

// forget drops every answer: a debug file was stored or deleted, or an
// organization renamed, in this process.
func (l *symbolLookups) forget() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.gen++
	l.items = nil
}
