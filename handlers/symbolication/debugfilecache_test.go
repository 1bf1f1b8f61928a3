package symbolication

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"

	"errata/store"
	"errata/worker/dif"
	"errata/worker/dif/diftest"
)

// breakpadResolver is a small resolver whose size grows with n.
func breakpadResolver(t *testing.T, n int) *dif.Resolver {
	t.Helper()
	res, err := dif.ReadBreakpadSymbols(bytes.NewReader(diftest.Breakpad(n)))
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// TestDebugFileCache keeps parsed files within its bytes, the least
// recently used going first, parses a file once for requests that want
// it at the same time, remembers failures and forgets cancellations.
func TestDebugFileCache(t *testing.T) {
	one := breakpadResolver(t, 100)
	size := one.Size() + EntryOverhead
	c := NewDebugFileCache(2*size + size/2) // room for two
	ctx := context.Background()
	loads := 0
	load := func() (*dif.Resolver, error) { loads++; return breakpadResolver(t, 100), nil }
	for _, k := range []string{"a", "b", "a", "c", "a", "b"} {
		if _, _, err := c.Get(ctx, 1, k, load); err != nil {
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
	big.Get(ctx, 1, "a", load)
	if b, n := big.Stats(); n != 0 || b != 0 {
		t.Errorf("a cache smaller than the file holds %d bytes in %d entries", b, n)
	}

	// Failures are kept (the file stays malformed), cancellations not.
	bad := errors.New("malformed")
	fails := 0
	for range 2 {
		if _, _, err := c.Get(ctx, 1, "bad", func() (*dif.Resolver, error) { fails++; return nil, bad }); err != bad {
			t.Fatalf("got %v, want the failure", err)
		}
	}
	canceled, cancel := context.WithCancel(ctx)
	cancel()
	c.Get(canceled, 1, "gone", func() (*dif.Resolver, error) { return nil, context.Canceled })
	if _, parsed, _ := c.Get(ctx, 1, "gone", load); fails != 1 || !parsed {
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
			c2.Get(ctx, 1, "x", func() (*dif.Resolver, error) {
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

// TestDebugFileCacheParsesFairly: an organization parses one file at a time,
// so that two slow parses of one organization leave a slot to another's
// miss, which starts at once; the second parse of the first starts when
// its first ends.
func TestDebugFileCacheParsesFairly(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := NewDebugFileCache(DefaultDebugFileCacheBytes)
		ctx := context.Background()
		res := breakpadResolver(t, 1)
		// slow parses key, as the organization org, until its release
		// is closed; started is closed when its load begins.
		type parse struct{ started, release, done chan struct{} }
		slow := func(org int64, key string) parse {
			p := parse{make(chan struct{}), make(chan struct{}), make(chan struct{})}
			go func() {
				defer close(p.done)
				if _, _, err := c.Get(ctx, org, key, func() (*dif.Resolver, error) {
					close(p.started)
					<-p.release
					return res, nil
				}); err != nil {
					t.Errorf("%s: %v", key, err)
				}
			}()
			synctest.Wait() // parsing, or waiting for a slot
			return p
		}
		started := func(p parse) bool {
			select {
			case <-p.started:
				return true
			default:
				return false
			}
		}
		a1, a2 := slow(1, "a1"), slow(1, "a2")
		b := slow(2, "b")
		if !started(a1) || started(a2) || !started(b) {
			t.Errorf("parsing: a1 %v, a2 %v, b %v; want a1 and b, a2 waiting for a1", started(a1), started(a2), started(b))
		}
		close(a1.release)
		<-a1.done
		synctest.Wait()
		if !started(a2) {
			t.Error("a2 did not start when a1 ended")
		}
		close(a2.release)
		close(b.release)
		<-a2.done
		<-b.done
		c.mu.Lock()
		defer c.mu.Unlock()
		if len(c.parse.orgs) != 0 || len(c.parse.total) != 0 {
			t.Errorf("after the parses, %d organizations and %d slots are held", len(c.parse.orgs), len(c.parse.total))
		}
	})
}

// TestDebugFileCacheSharedFileStartsAtOnce: a file that two organizations
// hold (one SHA-1), which the first has queued behind its own slow parse,
// is parsed at once by the second, whose slot is free, instead of waiting
// in the first's queue; the first's request then takes that parse.
func TestDebugFileCacheSharedFileStartsAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := NewDebugFileCache(DefaultDebugFileCacheBytes)
		ctx := context.Background()
		res := breakpadResolver(t, 1)
		release, slow := make(chan struct{}), make(chan struct{})
		go func() {
			defer close(slow)
			c.Get(ctx, 1, "slow", func() (*dif.Resolver, error) { <-release; return res, nil })
		}()
		synctest.Wait()
		type result struct {
			parsed bool
			err    error
		}
		// shared asks for the shared file as org, in the background.
		shared := func(org int64) chan result {
			out := make(chan result, 1)
			go func() {
				_, parsed, err := c.Get(ctx, org, "shared", func() (*dif.Resolver, error) { return res, nil })
				out <- result{parsed, err}
			}()
			synctest.Wait()
			return out
		}
		queued := shared(1) // behind "slow"
		select {
		case r := <-shared(2):
			if !r.parsed || r.err != nil {
				t.Errorf("the second organization: parsed %v, %v; want the file parsed", r.parsed, r.err)
			}
		default:
			t.Error("the second organization waits in the first's queue for a file it can parse now")
		}
		close(release)
		<-slow
		if r := <-queued; r.parsed || r.err != nil {
			t.Errorf("the first organization, once its slot is free: parsed %v, %v; want the second's parse", r.parsed, r.err)
		}
	})
}

// TestDebugFileCacheWaitersOutliveTheParser: when the request that parses a
// file ends for a reason of its own (canceled while it parses or while it
// waits for a slot, its parse budget spent, its file deleted), the
// requests waiting for the file parse it themselves instead of failing
// with it, and the file is kept once, not that failure.
func TestDebugFileCacheWaitersOutliveTheParser(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := NewDebugFileCache(DefaultDebugFileCacheBytes)
		res := breakpadResolver(t, 1)
		type result struct {
			res    *dif.Resolver
			parsed bool
			err    error
		}
		// get asks for key in the background; its answer comes on the
		// channel returned, once every goroutine is blocked.
		get := func(ctx context.Context, org int64, key string, load func() (*dif.Resolver, error)) chan result {
			out := make(chan result, 1)
			go func() {
				r, parsed, err := c.Get(ctx, org, key, load)
				out <- result{r, parsed, err}
			}()
			synctest.Wait()
			return out
		}
		own := func() (*dif.Resolver, error) { return res, nil }

		// Canceled while it parses.
		parserCtx, cancel := context.WithCancel(context.Background())
		parser := get(parserCtx, 1, "f", func() (*dif.Resolver, error) {
			<-parserCtx.Done()
			return nil, fmt.Errorf("reading: %w", parserCtx.Err())
		})
		waiter := get(context.Background(), 2, "f", own)
		cancel()
		if r := <-parser; !errors.Is(r.err, context.Canceled) {
			t.Errorf("the canceled parser got %v", r.err)
		}
		if r := <-waiter; r.err != nil || r.res != res || !r.parsed {
			t.Errorf("canceled while parsing: the waiter got %v (parsed %v), want the resolver it parsed", r.err, r.parsed)
		}
		if _, parsed, err := c.Get(context.Background(), 3, "f", own); parsed || err != nil {
			t.Errorf("then: parsed %v, %v; want the resolver kept", parsed, err)
		}

		// Canceled while it waits for its organization's slot, behind
		// busy, with another request of its organization.
		release := make(chan struct{})
		busy := get(context.Background(), 1, "busy", func() (*dif.Resolver, error) { <-release; return res, nil })
		parserCtx, cancel = context.WithCancel(context.Background())
		parser = get(parserCtx, 1, "g", own)
		waiter = get(context.Background(), 1, "g", own)
		cancel()
		if r := <-parser; r.err != context.Canceled {
			t.Errorf("the parser canceled in the queue got %v", r.err)
		}
		// Alone: its file is forgotten.
		parserCtx, cancel = context.WithCancel(context.Background())
		parser = get(parserCtx, 1, "lone", own)
		cancel()
		if r := <-parser; r.err != context.Canceled {
			t.Errorf("the lone parser canceled in the queue got %v", r.err)
		}
		c.mu.Lock()
		if _, ok := c.parsing["lone"]; ok {
			t.Error("a file that nobody waits for any more stays in parsing")
		}
		c.mu.Unlock()
		close(release)
		<-busy
		if r := <-waiter; r.err != nil || !r.parsed {
			t.Errorf("canceled in the queue: the waiter got %v (parsed %v), want the resolver it parsed", r.err, r.parsed)
		}

		// Its parse budget spent.
		release = make(chan struct{})
		parser = get(context.Background(), 1, "h", func() (*dif.Resolver, error) { <-release; return nil, ErrBudget })
		waiter = get(context.Background(), 2, "h", own)
		close(release)
		if r := <-parser; r.err != ErrBudget {
			t.Errorf("the parser over its budget got %v", r.err)
		}
		if r := <-waiter; r.err != nil || !r.parsed {
			t.Errorf("over the parser's budget: the waiter got %v (parsed %v), want the resolver it parsed", r.err, r.parsed)
		}

		// Its file deleted meanwhile: another organization's file of the
		// same bytes is no less readable.
		release = make(chan struct{})
		parser = get(context.Background(), 1, "i", func() (*dif.Resolver, error) {
			<-release
			return nil, fmt.Errorf("file 7: %w", store.ErrNotFound)
		})
		waiter = get(context.Background(), 2, "i", own)
		close(release)
		if r := <-parser; !errors.Is(r.err, store.ErrNotFound) {
			t.Errorf("the parser of a deleted file got %v", r.err)
		}
		if r := <-waiter; r.err != nil || !r.parsed {
			t.Errorf("the parser's file deleted: the waiter got %v (parsed %v), want the resolver it parsed", r.err, r.parsed)
		}
		if b, n := c.Stats(); n != 5 || b != 5*(res.Size()+EntryOverhead) {
			t.Errorf("the cache holds %d bytes in %d entries, want the 5 files' %d (f, busy, g, h, i)", b, n, 5*(res.Size()+EntryOverhead))
		}
	})
}

// TestDebugFileCacheKeepsFilesBeingParsed: a file being parsed is not
// evicted by the files parsed meanwhile: a request for it waits for that
// parse instead of parsing it a second time, and it is counted once
// parsed, the least recently used making room.
func TestDebugFileCacheKeepsFilesBeingParsed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		one := breakpadResolver(t, 100)
		size := one.Size() + EntryOverhead
		c := NewDebugFileCache(2*size + size/2) // room for two
		ctx := context.Background()
		var loads atomic.Int32
		load := func() (*dif.Resolver, error) { loads.Add(1); return breakpadResolver(t, 100), nil }
		release, first := make(chan struct{}), make(chan struct{})
		go func() {
			defer close(first)
			c.Get(ctx, 1, "x", func() (*dif.Resolver, error) { loads.Add(1); <-release; return one, nil })
		}()
		synctest.Wait() // x is being parsed
		for _, k := range []string{"a", "b", "c"} {
			if _, _, err := c.Get(ctx, 2, k, load); err != nil {
				t.Fatal(err)
			}
		}
		again := make(chan bool, 1)
		go func() {
			_, parsed, _ := c.Get(ctx, 3, "x", load)
			again <- parsed
		}()
		synctest.Wait()
		close(release)
		<-first
		if parsed := <-again; parsed || loads.Load() != 4 {
			t.Errorf("x asked for again while it was parsed: parsed again %v, %d parses in all (want 4: x, a, b, c)", parsed, loads.Load())
		}
		// a went for c; b goes for x.
		c.mu.Lock()
		_, hasX := c.entries["x"]
		_, hasC := c.entries["c"]
		c.mu.Unlock()
		if b, n := c.Stats(); n != 2 || b != 2*size || !hasX || !hasC {
			t.Errorf("the cache holds %d bytes in %d entries (x %v, c %v), want %d in x and c", b, n, hasX, hasC, 2*size)
		}
	})
}

// TestDebugFileCacheRecount: a DWARF resolver parses a unit the first time
// an address falls in it (and drops its sections once every unit is
// parsed): Recount counts what it holds then.
func TestDebugFileCacheRecount(t *testing.T) {
	data, err := os.ReadFile("../../worker/dif/testdata/dwarf4.elf")
	if err != nil {
		t.Fatal(err)
	}
	read := func() (*dif.Resolver, error) { return dif.ReadELFDWARF(bytes.NewReader(data), int64(len(data))) }
	c := NewDebugFileCache(DefaultDebugFileCacheBytes)
	res, _, err := c.Get(context.Background(), 1, "d", read)
	if err != nil {
		t.Fatal(err)
	}
	before := res.Size()
	if _, ok := res.Lookup(0x11a0); !ok {
		t.Fatal("nothing at 0x11a0")
	}
	if b, _ := c.Stats(); b != before+EntryOverhead || res.Size() == before {
		t.Fatalf("the cache holds %d bytes for a resolver of %d then %d", b, before, res.Size())
	}
	c.Recount("d")
	if b, n := c.Stats(); n != 1 || b != res.Size()+EntryOverhead {
		t.Errorf("recounted: the cache holds %d bytes in %d entries, want %d in 1", b, n, res.Size()+EntryOverhead)
	}
	t.Logf("%d bytes read, %d once its unit is parsed", before, res.Size())
}

// TestDebugFileCachePanic: a reader that panics releases the requests
// waiting for the same file (with an error), and the next request parses
// it again.
func TestDebugFileCachePanic(t *testing.T) {
	c := NewDebugFileCache(DefaultDebugFileCacheBytes)
	ctx := context.Background()
	started, release, waited := make(chan struct{}), make(chan struct{}), make(chan error)
	go func() {
		defer func() { recover() }()
		c.Get(ctx, 1, "p", func() (*dif.Resolver, error) {
			close(started)
			<-release
			panic("reader bug")
		})
	}()
	<-started
	go func() {
		// Whether it waits for the panicking parse or comes after it,
		// it gets an error: the panic's, or its own reader's.
		_, _, err := c.Get(ctx, 1, "p", func() (*dif.Resolver, error) { return nil, errors.New("parsed again") })
		waited <- err
	}()
	close(release)
	if err := <-waited; err == nil {
		t.Error("a waiter got no error")
	}
	c2 := NewDebugFileCache(DefaultDebugFileCacheBytes)
	func() {
		defer func() { recover() }()
		c2.Get(ctx, 1, "p", func() (*dif.Resolver, error) { panic("reader bug") })
	}()
	if _, parsed, err := c2.Get(ctx, 1, "p", func() (*dif.Resolver, error) { return breakpadResolver(t, 1), nil }); !parsed || err != nil {
		t.Errorf("after a panic: parsed %v, %v; want parsed again", parsed, err)
	}
}
