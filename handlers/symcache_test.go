package handlers

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"

	"errata/authn"
	"errata/store/storetest"
	"errata/worker/dif"
)

// breakpadResolver is a small resolver whose size grows with n.
func breakpadResolver(t *testing.T, n int) *dif.Resolver {
	t.Helper()
	var b strings.Builder
	b.WriteString("MODULE Linux x86_64 B644071B511E55DBAC271EE28D84D9910 x\n")
	for i := range n {
		b.WriteString("PUBLIC " + strings.Repeat("1", 1+i%8) + " 0 f\n")
	}
	res, err := dif.ReadBreakpadSymbols(strings.NewReader(b.String()))
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// TestSymbolCache keeps parsed files within its bytes, the least
// recently used going first, parses a file once for requests that want
// it at the same time, remembers failures and forgets cancellations.
func TestSymbolCache(t *testing.T) {
	one := breakpadResolver(t, 100)
	size := one.Size() + symbolErrorSize
	c := NewDebugFileCache(2*size + size/2) // room for two
	ctx := context.Background()
	loads := 0
	load := func() (*dif.Resolver, error) { loads++; return breakpadResolver(t, 100), nil }
	for _, k := range []string{"a", "b", "a", "c", "a", "b"} {
		if _, _, err := c.get(ctx, k, load); err != nil {
			t.Fatal(err)
		}
	}
	// a, b parsed; a hit; c parsed (b goes); a hit; b parsed again.
	if loads != 4 {
		t.Errorf("%d parses, want 4", loads)
	}
	if b, n := c.Stats(); n != 2 || b != 2*size {
		t.Errorf("the cache holds %d bytes in %d entries, want %d in 2", b, n, 2*size)
	}

	// A file larger than the cache is parsed and not kept.
	big := NewDebugFileCache(size / 2)
	big.get(ctx, "a", load)
	if b, n := big.Stats(); n != 0 || b != 0 {
		t.Errorf("a cache smaller than the file holds %d bytes in %d entries", b, n)
	}

	// Failures are kept (the file stays malformed), cancellations not.
	bad := errors.New("malformed")
	fails := 0
	for range 2 {
		if _, _, err := c.get(ctx, "bad", func() (*dif.Resolver, error) { fails++; return nil, bad }); err != bad {
			t.Fatalf("got %v, want the failure", err)
		}
	}
	canceled, cancel := context.WithCancel(ctx)
	cancel()
	c.get(canceled, "gone", func() (*dif.Resolver, error) { return nil, context.Canceled })
	if _, parsed, _ := c.get(ctx, "gone", load); fails != 1 || !parsed {
		t.Errorf("%d parses of the failed file (want 1); the canceled one parsed again: %v", fails, parsed)
	}

	// Requests wanting one file at once parse it once.
	c2 := NewDebugFileCache(DefaultDebugFileCacheBytes)
	release := make(chan struct{})
	var mu sync.Mutex
	n := 0
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			c2.get(ctx, "x", func() (*dif.Resolver, error) {
				mu.Lock()
				n++
				mu.Unlock()
				<-release
				return one, nil
			})
		})
	}
	close(release)
	wg.Wait()
	if n != 1 {
		t.Errorf("%d parses of one file wanted by 8 requests", n)
	}
}

// TestSymbolCacheRecount: a DWARF resolver parses a unit the first time
// an address falls in it (and drops its sections once every unit is
// parsed): recount counts what it holds then.
func TestSymbolCacheRecount(t *testing.T) {
	data, err := os.ReadFile("../worker/dif/testdata/dwarf4.elf")
	if err != nil {
		t.Fatal(err)
	}
	read := func() (*dif.Resolver, error) { return dif.ReadELFDWARF(bytes.NewReader(data), int64(len(data))) }
	c := NewDebugFileCache(DefaultDebugFileCacheBytes)
	res, _, err := c.get(context.Background(), "d", read)
	if err != nil {
		t.Fatal(err)
	}
	before := res.Size()
	if _, ok := res.Lookup(0x11a0); !ok {
		t.Fatal("nothing at 0x11a0")
	}
	if b, _ := c.Stats(); b != before+symbolErrorSize || res.Size() == before {
		t.Fatalf("the cache holds %d bytes for a resolver of %d then %d", b, before, res.Size())
	}
	c.recount("d")
	if b, n := c.Stats(); n != 1 || b != res.Size()+symbolErrorSize {
		t.Errorf("recounted: the cache holds %d bytes in %d entries, want %d in 1", b, n, res.Size()+symbolErrorSize)
	}
	t.Logf("%d bytes read, %d once its unit is parsed", before, res.Size())
}

// TestSymbolCachePanic: a reader that panics releases the requests
// waiting for the same file (with an error), and the next request parses
// it again.
func TestSymbolCachePanic(t *testing.T) {
	c := NewDebugFileCache(DefaultDebugFileCacheBytes)
	ctx := context.Background()
	started, release, waited := make(chan struct{}), make(chan struct{}), make(chan error)
	go func() {
		defer func() { recover() }()
		c.get(ctx, "p", func() (*dif.Resolver, error) {
			close(started)
			<-release
			panic("reader bug")
		})
	}()
	<-started
	go func() {
		// Whether it waits for the panicking parse or comes after it,
		// it gets an error: the panic's, or its own reader's.
		_, _, err := c.get(ctx, "p", func() (*dif.Resolver, error) { return nil, errors.New("parsed again") })
		waited <- err
	}()
	close(release)
	if err := <-waited; err == nil {
		t.Error("a waiter got no error")
	}
	c2 := NewDebugFileCache(DefaultDebugFileCacheBytes)
	func() {
		defer func() { recover() }()
		c2.get(ctx, "p", func() (*dif.Resolver, error) { panic("reader bug") })
	}()
	if _, parsed, err := c2.get(ctx, "p", func() (*dif.Resolver, error) { return breakpadResolver(t, 1), nil }); !parsed || err != nil {
		t.Errorf("after a panic: parsed %v, %v; want parsed again", parsed, err)
	}
}

// TestMetricsOfTheSymbolCache: /metrics reports the bytes and entries of
// the parsed debug files New's cache holds.
func TestMetricsOfTheSymbolCache(t *testing.T) {
	st := storetest.New(t)
	log := slog.New(slog.NewJSONHandler(io.Discard, nil))
	m := NewMetrics("v1.2.3-test", st, nil, log)
	c := NewDebugFileCache(DefaultDebugFileCacheBytes)
	New(Deps{Store: st, Auth: &authn.Authenticator{Store: st}, Log: log, SecretKey: "test-secret", Metrics: m, DebugFileCache: c})
	res := breakpadResolver(t, 10)
	c.get(context.Background(), "a", func() (*dif.Resolver, error) { return res, nil })
	text := scrape(t, m)
	for name, want := range map[string]string{
		"errata_symbol_cache_bytes":   strconv.FormatInt(res.Size()+symbolErrorSize, 10),
		"errata_symbol_cache_entries": "1",
	} {
		lines := strings.Split(strings.TrimSuffix(family(text, name), "\n"), "\n")
		if len(lines) != 3 || lines[1] != "# TYPE "+name+" gauge" || lines[2] != name+" "+want {
			t.Errorf("%s: want a gauge of %s, got:\n%s", name, want, strings.Join(lines, "\n"))
		}
	}
}
