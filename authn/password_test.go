package authn

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/crypto/argon2"
)

var phcPattern = regexp.MustCompile(`^\$argon2id\$v=19\$m=19456,t=2,p=1\$[A-Za-z0-9+/]{22}\$[A-Za-z0-9+/]{43}$`)

func TestHashPasswordRoundTrip(t *testing.T) {
	h1, err := HashPassword("correct horse battery")
	if err != nil {
		t.Fatal(err)
	}
	h2, err := HashPassword("correct horse battery")
	if err != nil {
		t.Fatal(err)
	}
	if !phcPattern.MatchString(h1) {
		t.Errorf("HashPassword = %q, want the PHC string of the current parameters", h1)
	}
	if h1 == h2 {
		t.Errorf("two hashes of one password are equal (%q): the salt is not fresh", h1)
	}
	if ok, rehash := VerifyPassword(h1, "correct horse battery"); !ok || rehash {
		t.Errorf("VerifyPassword(right) = %v, %v; want true, false", ok, rehash)
	}
	for _, wrong := range []string{"", "correct horse batter", "Correct horse battery", "correct horse battery "} {
		if ok, _ := VerifyPassword(h1, wrong); ok {
			t.Errorf("VerifyPassword(%q) = true for the hash of another password", wrong)
		}
	}
}

// TestVerifyPasswordReferenceHashes checks hashes made by argon2's reference
// implementation (the argon2 command of Debian's package argon2,
// 0~20171227), with other parameters than errata's: they verify, and ask
// for a rehash.
func TestVerifyPasswordReferenceHashes(t *testing.T) {
	for _, encoded := range []string{
		// echo -n "correct horse battery" | argon2 errata-vector-salt -id -t 2 -m 10 -p 1 -l 32 -e
		"$argon2id$v=19$m=1024,t=2,p=1$ZXJyYXRhLXZlY3Rvci1zYWx0$vXOTfXDq8M6B2mIfnmB83SXr8/ictuZtZq0pRAhFtoc",
		// the same with -k 19456: errata's cost, but an 18-byte salt
		"$argon2id$v=19$m=19456,t=2,p=1$ZXJyYXRhLXZlY3Rvci1zYWx0$0BlzxJ9Q4PNmcDC2J0aAoXEl0kc8eIqB83Wx/g3Hhxc",
	} {
		if ok, rehash := VerifyPassword(encoded, "correct horse battery"); !ok || !rehash {
			t.Errorf("VerifyPassword(%q, right) = %v, %v; want true, true", encoded, ok, rehash)
		}
		if ok, _ := VerifyPassword(encoded, "correct horse batterY"); ok {
			t.Errorf("VerifyPassword(%q, wrong) = true", encoded)
		}
	}
}

func TestVerifyPasswordOtherParameters(t *testing.T) {
	salt := []byte("0123456789abcdef")
	for _, p := range []phcCase{
		{memory: 8192, time: argonTime, threads: argonThreads, salt: salt},
		{memory: argonMemory, time: 1, threads: argonThreads, salt: salt},
		{memory: argonMemory, time: argonTime, threads: 2, salt: salt},
		{memory: argonMemory, time: argonTime, threads: argonThreads, salt: salt[:8]},
		{memory: argonMemory, time: argonTime, threads: argonThreads, salt: salt, keyLen: 16},
	} {
		keyLen := uint32(argonKeyLen)
		if p.keyLen != 0 {
			keyLen = p.keyLen
		}
		p.key = argon2.IDKey([]byte("s3cret passphrase"), p.salt, p.time, p.memory, p.threads, keyLen)
		encoded := encodePHC(p.phc())
		if ok, rehash := VerifyPassword(encoded, "s3cret passphrase"); !ok || !rehash {
			t.Errorf("VerifyPassword(%q) = %v, %v; want true, true", encoded, ok, rehash)
		}
	}
}

// phcCase is a phc with the key length to make, for the table above.
type phcCase struct {
	memory, time uint32
	threads      uint8
	salt, key    []byte
	keyLen       uint32
}

func (c phcCase) phc() phc {
	return phc{memory: c.memory, time: c.time, threads: c.threads, salt: c.salt, key: c.key}
}

func TestVerifyPasswordRefusesMalformed(t *testing.T) {
	good, err := HashPassword("correct horse battery")
	if err != nil {
		t.Fatal(err)
	}
	f := strings.Split(good, "$") // "", argon2id, v=19, m=..,t=..,p=.., salt, key
	with := func(i int, v string) string {
		g := append([]string(nil), f...)
		g[i] = v
		return strings.Join(g, "$")
	}
	salt64, key64 := b64.EncodeToString(make([]byte, 65)), b64.EncodeToString(make([]byte, 65))
	for name, encoded := range map[string]string{
		"empty":                "",
		"dollar":               "$",
		"argon2i":              with(1, "argon2i"),
		"argon2d":              with(1, "argon2d"),
		"version 16":           with(2, "v=16"),
		"no version":           strings.Replace(good, "$v=19", "", 1),
		"memory zero":          with(3, "m=0,t=2,p=1"),
		"memory below 8p":      with(3, "m=15,t=2,p=2"),
		"memory over 256 MiB":  with(3, "m=262145,t=2,p=1"),
		"memory 4 GiB":         with(3, "m=4294967295,t=2,p=1"),
		"memory overflows":     with(3, "m=99999999999,t=2,p=1"),
		"time zero":            with(3, "m=19456,t=0,p=1"),
		"time 17":              with(3, "m=19456,t=17,p=1"),
		"time huge":            with(3, "m=19456,t=4294967295,p=1"),
		"threads zero":         with(3, "m=19456,t=2,p=0"),
		"threads 17":           with(3, "m=19456,t=2,p=17"),
		"threads 255":          with(3, "m=19456,t=2,p=255"),
		"leading zero":         with(3, "m=019456,t=2,p=1"),
		"plus sign":            with(3, "m=+19456,t=2,p=1"),
		"minus sign":           with(3, "m=-1,t=2,p=1"),
		"spaces":               with(3, "m=19456, t=2, p=1"),
		"parameters reordered": with(3, "t=2,m=19456,p=1"),
		"parameter missing":    with(3, "m=19456,t=2"),
		"parameter extra":      with(3, "m=19456,t=2,p=1,k=1"),
		"keyid parameter":      with(3, "m=19456,t=2,p=1,keyid=x"),
		"salt padded":          with(4, f[4]+"=="),
		"salt url alphabet":    with(4, strings.Repeat("-", 22)),
		"salt short":           with(4, b64.EncodeToString(make([]byte, 7))),
		"salt long":            with(4, salt64),
		"salt empty":           with(4, ""),
		"salt not canonical":   with(4, f[4][:21]+"B"),
		"key short":            with(5, b64.EncodeToString(make([]byte, 15))),
		"key long":             with(5, key64),
		"key empty":            with(5, ""),
		"field extra":          good + "$x",
		"field missing":        strings.Join(f[:5], "$"),
		"no leading dollar":    strings.TrimPrefix(good, "$"),
		"trailing newline":     good + "\n",
		"newline in key":       with(5, f[5][:20]+"\n"+f[5][20:]),
		"CR in salt":           with(4, f[4][:10]+"\r"+f[4][10:]),
		"over 256 bytes":       with(5, strings.Repeat("A", 300)),
		"huge":                 strings.Repeat("$", 1<<20),
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := decodePHC(encoded); err == nil {
				t.Errorf("decodePHC(%.80q) accepted", encoded)
			}
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			ok, rehash := VerifyPassword(encoded, "correct horse battery")
			runtime.ReadMemStats(&after)
			if ok || rehash {
				t.Errorf("VerifyPassword(%.80q) = %v, %v; want false, false", encoded, ok, rehash)
			}
			// Refused before hashing: far less than argon2id's 19 MiB.
			if n := after.TotalAlloc - before.TotalAlloc; n > 64<<10 {
				t.Errorf("VerifyPassword(%.80q) allocated %d bytes", encoded, n)
			}
		})
	}
}

func TestDecodePHCBounds(t *testing.T) {
	// The largest parameters believed are accepted (and not computed here).
	s := "$argon2id$v=19$m=262144,t=16,p=16$" + b64.EncodeToString(make([]byte, 64)) + "$" + b64.EncodeToString(make([]byte, 64))
	p, err := decodePHC(s)
	if err != nil {
		t.Fatalf("decodePHC(%q): %v", s, err)
	}
	if p.memory != phcMaxMemory || p.time != phcMaxTime || p.threads != phcMaxThreads || len(p.salt) != 64 || len(p.key) != 64 {
		t.Errorf("decodePHC(%q) = %+v", s, p)
	}
	if got := encodePHC(p); got != s {
		t.Errorf("encodePHC(decodePHC(s)) = %q, want %q", got, s)
	}
}

func TestHasherBusy(t *testing.T) {
	ctx := context.Background()
	h := NewHasher(1, 50*time.Millisecond)
	encoded, err := h.Hash(ctx, "correct horse battery")
	if err != nil {
		t.Fatal(err)
	}

	// The first caller holds the only slot.
	if err := h.acquire(ctx); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if _, _, err := h.Verify(ctx, encoded, "correct horse battery"); !errors.Is(err, ErrBusy) {
		t.Errorf("Verify while the slot is held: err = %v, want ErrBusy", err)
	}
	if waited := time.Since(start); waited < 50*time.Millisecond {
		t.Errorf("Verify answered ErrBusy after %v, before its wait of 50ms", waited)
	}
	if _, err := h.Hash(ctx, "correct horse battery"); !errors.Is(err, ErrBusy) {
		t.Errorf("Hash while the slot is held: err = %v, want ErrBusy", err)
	}

	// A caller whose context ends stops waiting at once.
	patient := NewHasher(1, time.Minute)
	if err := patient.acquire(ctx); err != nil {
		t.Fatal(err)
	}
	cctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		_, _, err := patient.Verify(cctx, encoded, "correct horse battery")
		done <- err
	}()
	time.Sleep(20 * time.Millisecond)
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("Verify with a cancelled context: err = %v, want context.Canceled", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Verify kept waiting after its context was cancelled")
	}

	// Once the slot is free, the next caller gets it.
	h.release()
	if ok, _, err := h.Verify(ctx, encoded, "correct horse battery"); err != nil || !ok {
		t.Errorf("Verify after release = %v, %v; want true, nil", ok, err)
	}
}

// TestHasherBound runs more callers than slots and checks that no more
// than the bound run at once, and that waiting callers are served.
func TestHasherBound(t *testing.T) {
	h := NewHasher(2, time.Minute)
	var (
		mu           sync.Mutex
		running, max int
		wg           sync.WaitGroup
	)
	for range 6 {
		wg.Go(func() {
			if err := h.acquire(context.Background()); err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			running++
			max = maxInt(max, running)
			mu.Unlock()
			time.Sleep(5 * time.Millisecond)
			mu.Lock()
			running--
			mu.Unlock()
			h.release()
		})
	}
	wg.Wait()
	if max != 2 {
		t.Errorf("at most %d ran at once, want 2", max)
	}
	if n := cap(NewHasher(0, time.Second).slots); n != runtime.NumCPU() {
		t.Errorf("NewHasher(0) allows %d at once, want NumCPU = %d", n, runtime.NumCPU())
	}
}

func maxInt(a, b int) int {
	if a > b {
		return a
	}
	return b
}

// TestHasherVerifyWithoutHash checks that a missing or unusable hash is
// refused after the work of a real verification: the fastest of three
// such answers takes at least half the time of the fastest of three wrong
// passwords (argon2id is most of both).
// TestHasherVerifyWithoutHash holds that a missing or unusable hash (an
// unknown address) costs what a wrong password costs. Time on a shared
// machine says little, so it compares the work itself: argon2id's memory
// is allocated afresh by every hash, and a call that skipped the hash, or
// ran a cheaper one, allocates less.
func TestHasherVerifyWithoutHash(t *testing.T) {
	ctx := context.Background()
	h := NewHasher(1, time.Minute)
	encoded, err := h.Hash(ctx, "correct horse battery")
	if err != nil {
		t.Fatal(err)
	}
	allocated := func(encoded string) uint64 {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		ok, rehash, err := h.Verify(ctx, encoded, "correct horse battery!")
		runtime.ReadMemStats(&after)
		if ok || rehash || err != nil {
			t.Errorf("Verify(%q, wrong) = %v, %v, %v; want false, false, nil", encoded, ok, rehash, err)
		}
		return after.TotalAlloc - before.TotalAlloc
	}
	wrong := allocated(encoded)
	if wrong < 19456*1024 {
		t.Fatalf("a wrong password allocated %d bytes, less than argon2id's 19 MiB", wrong)
	}
	for _, missing := range []string{"", "not a hash", "$argon2id$v=19$m=262145,t=2,p=1$AAAAAAAAAAA$AAAAAAAAAAAAAAAAAAAAAA"} {
		if got := allocated(missing); got < wrong*9/10 {
			t.Errorf("Verify(%q) allocated %d bytes, a wrong password %d: an unknown address costs less", missing, got, wrong)
		}
	}
}

func TestCheckNewPassword(t *testing.T) {
	tests := []struct {
		name, password, email, code string
	}{
		{"accepted", "tr0ub4dor&3x", "ann@example.com", ""},
		{"eight characters", "zq8#kLm2", "", ""},
		{"seven characters", "zq8#kLm", "", "password_too_short"},
		{"empty", "", "", "password_too_short"},
		{"eight runes of more bytes", "ééééééé", "", "password_too_short"}, // 7 runes, 14 bytes
		{"eight runes", "éééééééé", "", ""},
		{"1024 characters", strings.Repeat("xK", 512), "", ""},
		{"1025 characters", strings.Repeat("xK", 512) + "!", "", "password_too_long"},
		{"1024 runes of more bytes", strings.Repeat("é", 1024), "", ""},
		{"the email", "ann@example.com", "ann@example.com", "password_too_similar"},
		{"the email in other case", "Ann@Example.COM", "ann@example.com", "password_too_similar"},
		{"near the email", "ann@example.com1", "ann@example.com", ""},
		{"common", "password", "", "password_too_common"},
		{"common in other case", "PassWord1", "", "password_too_common"},
		{"common with spaces around", " iloveyou1 ", "", "password_too_common"},
		{"common and long", "1qaz2wsx3edc", "", "password_too_common"},
		{"short before common", "123456", "", "password_too_short"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := CheckNewPassword(tt.password, tt.email)
			if tt.code == "" {
				if err != nil {
					t.Fatalf("CheckNewPassword(%.40q) = %v, want nil", tt.password, err)
				}
				return
			}
			var pe *PasswordError
			if !errors.As(err, &pe) {
				t.Fatalf("CheckNewPassword(%.40q) = %v, want a *PasswordError", tt.password, err)
			}
			if pe.Code != tt.code || pe.Message == "" || pe.Error() != pe.Message {
				t.Errorf("CheckNewPassword(%.40q) = %+v, want code %s and a message", tt.password, pe, tt.code)
			}
		})
	}
}

// TestCommonPasswordList checks the embedded list: 10,000 lines, most
// common first as the source has them, and the lookup built from it.
func TestCommonPasswordList(t *testing.T) {
	zr, err := gzip.NewReader(bytes.NewReader(commonPasswordsGz))
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	sc := bufio.NewScanner(zr)
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	if len(lines) != 10000 {
		t.Errorf("the list has %d lines, want 10000", len(lines))
	}
	if got := strings.Join(lines[:5], " "); got != "123456 password 12345678 qwerty 123456789" {
		t.Errorf("the list starts %q, not with the most common passwords", got)
	}
	for _, w := range []string{"123456", "password", "dragon", "trustno1", "Qwerty123", lines[len(lines)-1]} {
		if !isCommonPassword(w) {
			t.Errorf("isCommonPassword(%q) = false", w)
		}
	}
	if isCommonPassword("tr0ub4dor&3x") {
		t.Errorf("isCommonPassword(tr0ub4dor&3x) = true")
	}
}

// TestCommonPasswordsMemory measures what the lookup holds once built: its
// contents (string headers and bytes) and the heap it takes, the least of
// three builds (other tests' garbage and the race detector add noise).
func TestCommonPasswordsMemory(t *testing.T) {
	list := loadCommonPasswords()
	content := 16 * cap(list)
	for _, w := range list {
		content += len(w)
	}
	held := int64(1 << 62)
	for range 3 {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		l := loadCommonPasswords()
		runtime.GC()
		runtime.ReadMemStats(&after)
		held = min(held, int64(after.HeapAlloc)-int64(before.HeapAlloc))
		runtime.KeepAlive(l)
	}
	t.Logf("%d common passwords: %d bytes of headers and text, %d bytes of heap", len(list), content, held)
	if len(list) != 9913 {
		t.Errorf("the lookup has %d distinct lower-cased passwords, want 9913", len(list))
	}
	if content > 256<<10 || held > 384<<10 {
		t.Errorf("the lookup holds %d bytes (%d of contents), more than the 384 KB (256 KB) allowed", held, content)
	}
}

func FuzzVerifyPassword(f *testing.F) {
	f.Add("$argon2id$v=19$m=19456,t=2,p=1$yM0f04bCbfhc1N4zoSJZww$cPDr8N9BUNyCW5yc4qj6cl0CoU2vMS0gJ90ddxSW3rQ")
	f.Add("$argon2id$v=19$m=8,t=1,p=1$AAAAAAAAAAA$AAAAAAAAAAAAAAAAAAAAAA")
	f.Add("$argon2id$v=19$m=262145,t=2,p=1$AAAAAAAAAAA$AAAAAAAAAAAAAAAAAAAAAA")
	f.Add("$argon2i$v=19$m=16,t=1,p=1$AAAAAAAAAAA$AAAAAAAAAAAAAAAAAAAAAA")
	f.Add("")
	f.Fuzz(func(t *testing.T, encoded string) {
		p, err := decodePHC(encoded)
		if err != nil {
			if ok, rehash := VerifyPassword(encoded, "x"); ok || rehash {
				t.Fatalf("VerifyPassword(%q) = %v, %v for a string decodePHC refuses", encoded, ok, rehash)
			}
			return
		}
		// Only one spelling of each hash is accepted.
		if got := encodePHC(p); got != encoded {
			t.Fatalf("decodePHC accepted %q, which encodes back as %q", encoded, got)
		}
		if p.memory > phcMaxMemory || p.time < 1 || p.time > phcMaxTime || p.threads < 1 || p.threads > phcMaxThreads ||
			len(p.salt) < phcMinSalt || len(p.salt) > phcMaxSalt || len(p.key) < phcMinKey || len(p.key) > phcMaxKey {
			t.Fatalf("decodePHC(%q) = %+v, outside its bounds", encoded, p)
		}
		if p.memory <= 256 && p.time <= 2 { // cheap enough to compute here
			VerifyPassword(encoded, "x")
		}
	})
}

func BenchmarkHashPassword(b *testing.B) {
	for b.Loop() {
		if _, err := HashPassword("correct horse battery"); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkHashPasswordParallel hashes on GOMAXPROCS goroutines at once,
// as many as the server's Hasher lets run, and reports hashes per second
// and the process's CPU time per hash: TestSignInFlood runs it as
// argon2id's own rate on the machine, to compare sign-ins with.
func BenchmarkHashPasswordParallel(b *testing.B) {
	var before, after syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &before); err != nil {
		b.Fatal(err)
	}
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := HashPassword("correct horse battery"); err != nil {
				b.Error(err)
			}
		}
	})
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &after); err != nil {
		b.Fatal(err)
	}
	cpu := time.Duration(after.Utime.Nano() + after.Stime.Nano() - before.Utime.Nano() - before.Stime.Nano())
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "hashes/s")
	b.ReportMetric(cpu.Seconds()*1000/float64(b.N), "cpu-ms/hash")
}
