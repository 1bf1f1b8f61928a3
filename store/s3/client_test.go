package s3_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"errata/store"
	"errata/store/s3"
	"errata/store/s3/s3test"
)

// TestObjects puts, reads (whole and in ranges), stats, lists and deletes
// objects on a real versitygw, which checks every signature.
func TestObjects(t *testing.T) {
	srv := s3test.Start(t)
	c := srv.Client("objects")
	ctx := context.Background()
	data := "0123456789abcdefghij"
	for _, key := range []string{"p/aa", "p/bb", "p/cc", "q/dd", "p/empty"} {
		body := data
		if key == "p/empty" {
			body = ""
		}
		if err := c.Put(ctx, key, strings.NewReader(body), int64(len(body))); err != nil {
			t.Fatalf("put %s: %v", key, err)
		}
	}
	// Storing the same bytes again is harmless.
	if err := c.Put(ctx, "p/aa", strings.NewReader(data), int64(len(data))); err != nil {
		t.Fatalf("put again: %v", err)
	}

	t.Run("get", func(t *testing.T) {
		for _, tc := range []struct {
			name           string
			key            string
			offset, length int64
			want           string
		}{
			{"whole", "p/aa", 0, -1, data},
			{"from an offset", "p/aa", 15, -1, "fghij"},
			{"a range", "p/aa", 3, 4, "3456"},
			{"a range past the end", "p/aa", 18, 10, "ij"},
			{"from the end", "p/aa", 20, -1, ""},
			{"nothing", "p/aa", 5, 0, ""},
			{"an empty object", "p/empty", 0, -1, ""},
		} {
			t.Run(tc.name, func(t *testing.T) {
				rc, err := c.Get(ctx, tc.key, tc.offset, tc.length)
				if err != nil {
					t.Fatal(err)
				}
				defer rc.Close()
				got, err := io.ReadAll(rc)
				if err != nil {
					t.Fatal(err)
				}
				if diff := cmp.Diff(tc.want, string(got)); diff != "" {
					t.Errorf("(-want +got):\n%s", diff)
				}
			})
		}
	})

	t.Run("a missing key is ErrNotFound", func(t *testing.T) {
		if _, err := c.Get(ctx, "p/missing", 0, -1); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("get: %v, want ErrNotFound", err)
		}
		if _, err := c.Get(ctx, "p/missing", 2, 0); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("get nothing: %v, want ErrNotFound", err)
		}
		if _, err := c.Stat(ctx, "p/missing"); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("stat: %v, want ErrNotFound", err)
		}
	})

	t.Run("stat", func(t *testing.T) {
		n, err := c.Stat(ctx, "p/bb")
		if err != nil || n != int64(len(data)) {
			t.Errorf("stat = %d, %v; want %d", n, err, len(data))
		}
	})

	t.Run("list", func(t *testing.T) {
		for _, tc := range []struct {
			name, prefix, after string
			want                []string
		}{
			{"everything", "", "", []string{"p/aa 20", "p/bb 20", "p/cc 20", "p/empty 0", "q/dd 20"}},
			{"under a prefix", "p/", "", []string{"p/aa 20", "p/bb 20", "p/cc 20", "p/empty 0"}},
			{"after a key", "p/", "p/bb", []string{"p/cc 20", "p/empty 0"}},
			{"after the last", "p/", "p/zz", nil},
			{"an empty prefix", "r/", "", nil},
		} {
			t.Run(tc.name, func(t *testing.T) {
				if diff := cmp.Diff(tc.want, list(t, c, tc.prefix, tc.after)); diff != "" {
					t.Errorf("(-want +got):\n%s", diff)
				}
			})
		}
	})

	t.Run("an error of fn ends the list", func(t *testing.T) {
		stop := errors.New("stop")
		n := 0
		err := c.List(ctx, "", "", func(string, int64) error { n++; return stop })
		if !errors.Is(err, stop) || n != 1 {
			t.Errorf("List = %v after %d keys, want stop after 1", err, n)
		}
	})

	t.Run("delete", func(t *testing.T) {
		if err := c.Delete(ctx, "p/bb"); err != nil {
			t.Fatal(err)
		}
		if err := c.Delete(ctx, "p/bb"); err != nil {
			t.Errorf("deleting a missing key: %v", err)
		}
		if _, err := c.Stat(ctx, "p/bb"); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("stat after delete: %v, want ErrNotFound", err)
		}
	})
}

// list returns "key size" for each key List gives.
func list(t *testing.T, c *s3.Client, prefix, after string) []string {
	t.Helper()
	var got []string
	err := c.List(context.Background(), prefix, after, func(key string, size int64) error {
		got = append(got, fmt.Sprintf("%s %d", key, size))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// TestListPages lists more keys than a page holds, so that List follows
// continuation tokens, with and without a start.
func TestListPages(t *testing.T) {
	srv := s3test.Start(t)
	cfg := srv.Config("pages")
	cfg.ListPageSize = 3
	c, err := s3.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := c.CreateBucket(ctx); err != nil {
		t.Fatal(err)
	}
	var all []string
	for i := range 11 {
		key := fmt.Sprintf("k/%02d", i)
		if err := c.Put(ctx, key, strings.NewReader("x"), 1); err != nil {
			t.Fatal(err)
		}
		all = append(all, key+" 1")
	}
	if diff := cmp.Diff(all, list(t, c, "k/", "")); diff != "" {
		t.Errorf("all (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(all[5:], list(t, c, "k/", "k/04")); diff != "" {
		t.Errorf("after k/04 (-want +got):\n%s", diff)
	}
}

// TestWrongSecret checks that a request signed with another secret fails
// with an error that says so and shows neither secret.
func TestWrongSecret(t *testing.T) {
	srv := s3test.Start(t)
	srv.Client("secret")
	cfg := srv.Config("secret")
	wrong := "not-the-secret-" + srv.Secret[:8]
	cfg.SecretAccessKey = s3.Secret(wrong)
	c, err := s3.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	errs := map[string]error{
		"check": c.Check(ctx),
		"put":   c.Put(ctx, "k", strings.NewReader("abc"), 3),
	}
	_, errs["stat"] = c.Stat(ctx, "k")
	_, errs["get"] = c.Get(ctx, "k", 0, -1)
	errs["list"] = c.List(ctx, "", "", func(string, int64) error { return nil })
	for op, err := range errs {
		if err == nil {
			t.Errorf("%s: no error with a wrong secret", op)
			continue
		}
		msg := fmt.Sprintf("%v %+v %#v", err, err, err)
		if strings.Contains(msg, wrong) || strings.Contains(msg, srv.Secret) {
			t.Errorf("%s: the error shows a secret: %s", op, msg)
		}
		// A refused store is unavailable to clients (503), never a
		// missing object; serve refuses to start on it (Refused).
		if !errors.Is(err, store.ErrUnavailable) || errors.Is(err, store.ErrNotFound) {
			t.Errorf("%s: %v is not taken for unavailable, or is taken for not found", op, err)
		}
		var se *s3.Error
		if !errors.As(err, &se) || se.Status != http.StatusForbidden || !se.Refused() {
			t.Errorf("%s: %v, want a refused 403 *s3.Error", op, err)
		}
	}
	t.Logf("put: %v", errs["put"])
}

// TestConfigHidesSecret prints a Config every way a log line might.
func TestConfigHidesSecret(t *testing.T) {
	const secret = "wJalrXUtnFEMI-K7MDENG-bPxRfiCYzzSECRET"
	cfg, err := s3.ParseConfig(func(k string) string {
		return map[string]string{
			"BLOB_STORE": "s3://bucket/prefix", "S3_ACCESS_KEY_ID": "AKID", "S3_SECRET_ACCESS_KEY": secret,
		}[k]
	})
	if err != nil {
		t.Fatal(err)
	}
	var logged bytes.Buffer
	slog.New(slog.NewJSONHandler(&logged, nil)).Info("config", "cfg", cfg, "secret", cfg.SecretAccessKey)
	slog.New(slog.NewTextHandler(&logged, nil)).Info("config", "secret", cfg.SecretAccessKey)
	for _, s := range []string{
		fmt.Sprintf("%v", cfg), fmt.Sprintf("%+v", cfg), fmt.Sprintf("%#v", cfg), fmt.Sprintf("%s", cfg),
		fmt.Sprintf("%v %s %q %x", cfg.SecretAccessKey, cfg.SecretAccessKey, cfg.SecretAccessKey, cfg.SecretAccessKey),
		logged.String(),
	} {
		if strings.Contains(s, secret) || strings.Contains(s, fmt.Sprintf("%x", secret)) {
			t.Errorf("shows the secret: %s", s)
		}
	}
}

func TestParseConfig(t *testing.T) {
	base := map[string]string{"S3_ACCESS_KEY_ID": "AKID", "S3_SECRET_ACCESS_KEY": "shh"}
	for _, tc := range []struct {
		name    string
		env     map[string]string
		want    string // Config.String(), or the error
		wantErr bool
	}{
		{"aws", map[string]string{"BLOB_STORE": "s3://my-bucket"},
			"s3://my-bucket at https://s3.us-east-1.amazonaws.com (us-east-1, virtual-host-style)", false},
		{"a prefix and a region", map[string]string{"BLOB_STORE": "s3://my-bucket/errata/blobs/", "S3_REGION": "eu-west-3"},
			"s3://my-bucket/errata/blobs at https://s3.eu-west-3.amazonaws.com (eu-west-3, virtual-host-style)", false},
		{"minio", map[string]string{"BLOB_STORE": "s3://errata", "S3_ENDPOINT": "http://minio:9000"},
			"s3://errata at http://minio:9000 (us-east-1, path-style)", false},
		{"an endpoint in virtual-host style", map[string]string{"BLOB_STORE": "s3://errata", "S3_ENDPOINT": "https://r2.example", "S3_PATH_STYLE": "false"},
			"s3://errata at https://r2.example (us-east-1, virtual-host-style)", false},
		{"not s3", map[string]string{"BLOB_STORE": "gs://x"}, `BLOB_STORE "gs://x": want s3://BUCKET[/PREFIX]`, true},
		{"a bad bucket", map[string]string{"BLOB_STORE": "s3://My_Bucket"}, `BLOB_STORE: bucket name "My_Bucket": want lower-case letters, digits, '-' and '.'`, true},
		{"no bucket", map[string]string{"BLOB_STORE": "s3://"}, `BLOB_STORE: bucket name "": want 3 to 63 characters`, true},
		{"a bad endpoint", map[string]string{"BLOB_STORE": "s3://errata", "S3_ENDPOINT": "minio:9000"}, `S3_ENDPOINT "minio:9000": want http(s)://HOST[:PORT]`, true},
		{"a bad path style", map[string]string{"BLOB_STORE": "s3://errata", "S3_PATH_STYLE": "yes please"}, `S3_PATH_STYLE "yes please": want true or false`, true},
		{"no secret", map[string]string{"BLOB_STORE": "s3://errata", "S3_SECRET_ACCESS_KEY": ""},
			"BLOB_STORE is s3: S3_ACCESS_KEY_ID and S3_SECRET_ACCESS_KEY must both be set", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := map[string]string{}
			for k, v := range base {
				env[k] = v
			}
			for k, v := range tc.env {
				env[k] = v
			}
			cfg, err := s3.ParseConfig(func(k string) string { return env[k] })
			got := ""
			if err != nil {
				got = err.Error()
			} else {
				got = cfg.String()
			}
			if (err != nil) != tc.wantErr {
				t.Fatalf("err = %v, want error %v", err, tc.wantErr)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// TestServerStopped stops the server: every operation fails quickly with
// an error that wraps ErrUnavailable, and works again once it is back.
func TestServerStopped(t *testing.T) {
	srv := s3test.Start(t)
	c := srv.Client("stopped")
	ctx := context.Background()
	if err := c.Put(ctx, "k", strings.NewReader("abc"), 3); err != nil {
		t.Fatal(err)
	}
	srv.Stop()
	ops := map[string]func() error{
		"put": func() error { return c.Put(ctx, "k2", strings.NewReader("abc"), 3) },
		"put from a reader that cannot seek": func() error {
			return c.Put(ctx, "k2", io.MultiReader(strings.NewReader("abc")), 3)
		},
		"get":    func() error { _, err := c.Get(ctx, "k", 0, -1); return err },
		"stat":   func() error { _, err := c.Stat(ctx, "k"); return err },
		"delete": func() error { return c.Delete(ctx, "k") },
		"list":   func() error { return c.List(ctx, "", "", func(string, int64) error { return nil }) },
	}
	for name, op := range ops {
		t.Run(name, func(t *testing.T) {
			start := time.Now()
			err := op()
			if !errors.Is(err, store.ErrUnavailable) {
				t.Errorf("%v, want ErrUnavailable", err)
			}
			if d := time.Since(start); d > 5*time.Second {
				t.Errorf("took %v", d)
			}
		})
	}
	srv.Restart()
	rc, err := c.Get(ctx, "k", 0, -1)
	if err != nil {
		t.Fatalf("after restart: %v", err)
	}
	b, _ := io.ReadAll(rc)
	rc.Close()
	if string(b) != "abc" {
		t.Errorf("after restart: %q", b)
	}
}

// TestRetries puts a proxy that answers 503 to the first requests in
// front of the server: a few are retried, too many are ErrUnavailable.
func TestRetries(t *testing.T) {
	srv := s3test.Start(t)
	srv.Client("retries")
	target, err := url.Parse(srv.Endpoint())
	if err != nil {
		t.Fatal(err)
	}
	var failing, seen atomic.Int64
	rp := httputil.NewSingleHostReverseProxy(target)
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen.Add(1)
		if failing.Add(-1) >= 0 {
			io.Copy(io.Discard, r.Body)
			w.WriteHeader(http.StatusServiceUnavailable)
			io.WriteString(w, "<Error><Code>SlowDown</Code><Message>try later</Message></Error>")
			return
		}
		rp.ServeHTTP(w, r)
	}))
	defer proxy.Close()
	cfg := srv.Config("retries")
	cfg.Endpoint = proxy.URL
	// The signed host is the proxy's, which passes it on unchanged.
	c, err := s3.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()

	failing.Store(2)
	if err := c.Put(ctx, "k", strings.NewReader("abc"), 3); err != nil {
		t.Fatalf("put after two 503s: %v", err)
	}
	failing.Store(2)
	seen.Store(0)
	if n, err := c.Stat(ctx, "k"); err != nil || n != 3 {
		t.Fatalf("stat after two 503s = %d, %v", n, err)
	}
	if seen.Load() != 3 {
		t.Errorf("stat: %d requests, want 3", seen.Load())
	}
	failing.Store(100)
	seen.Store(0)
	_, err = c.Get(ctx, "k", 0, -1)
	if !errors.Is(err, store.ErrUnavailable) || !strings.Contains(err.Error(), "SlowDown") {
		t.Errorf("get with the server failing: %v, want ErrUnavailable and SlowDown", err)
	}
	if seen.Load() != 3 {
		t.Errorf("get: %d requests, want 3 (2 retries)", seen.Load())
	}
}

// TestShortBody gives Put fewer bytes than it announces: the error says
// so, is not the server's, and nothing is stored.
func TestShortBody(t *testing.T) {
	srv := s3test.Start(t)
	c := srv.Client("short")
	ctx := context.Background()
	err := c.Put(ctx, "k", strings.NewReader("abc"), 10)
	if !errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, store.ErrUnavailable) {
		t.Errorf("put = %v, want io.ErrUnexpectedEOF", err)
	}
	if _, err := c.Stat(ctx, "k"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("stat after a short put: %v, want ErrNotFound", err)
	}
}

// TestLargeObject streams 16 MiB up and down and checks that neither
// holds the object in memory.
func TestLargeObject(t *testing.T) {
	srv := s3test.Start(t)
	c := srv.Client("large")
	ctx := context.Background()
	const size = 16 << 20
	src := func() io.Reader { return io.LimitReader(rand.NewChaCha8([32]byte{1}), size) }
	want := sha256.New()
	io.Copy(want, src())

	allocated := func(f func()) uint64 {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		f()
		runtime.ReadMemStats(&after)
		return after.TotalAlloc - before.TotalAlloc
	}
	const limit = 4 << 20
	var err error
	// A reader that cannot seek: Put must not buffer it for retries.
	n := allocated(func() { err = c.Put(ctx, "big", io.MultiReader(src()), size) })
	t.Logf("put allocated %d bytes", n)
	if n > limit {
		t.Errorf("put allocated %d bytes, want at most %d", n, limit)
	}
	if err != nil {
		t.Fatal(err)
	}
	got := sha256.New()
	n = allocated(func() {
		var rc io.ReadCloser
		if rc, err = c.Get(ctx, "big", 0, -1); err == nil {
			_, err = io.Copy(got, rc)
			rc.Close()
		}
	})
	t.Logf("get allocated %d bytes", n)
	if n > limit {
		t.Errorf("get allocated %d bytes, want at most %d", n, limit)
	}
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(want.Sum(nil), got.Sum(nil)) {
		t.Error("the object read back differs")
	}
}

// TestHungServer points the client at a server that accepts connections,
// reads and never answers: every operation ends with ErrUnavailable
// after its timeouts, even an upload larger than the socket buffers.
func TestHungServer(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() {
		for {
			conn, err := l.Accept()
			if err != nil {
				return
			}
			defer conn.Close() // held open, never read nor answered
		}
	}()
	c, err := s3.New(s3.Config{
		Bucket: "hung", Endpoint: "http://" + l.Addr().String(), PathStyle: true,
		AccessKeyID: "k", SecretAccessKey: "s", Timeout: 300 * time.Millisecond, Retries: 1,
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for name, op := range map[string]func() error{
		"stat": func() error { _, err := c.Stat(ctx, "k"); return err },
		"put": func() error {
			return c.Put(ctx, "k", bytes.NewReader(make([]byte, 3<<20)), 3<<20)
		},
	} {
		t.Run(name, func(t *testing.T) {
			start := time.Now()
			if err := op(); !errors.Is(err, store.ErrUnavailable) {
				t.Errorf("%v, want ErrUnavailable", err)
			}
			if d := time.Since(start); d > 15*time.Second {
				t.Errorf("took %s", d)
			}
		})
	}
}

// TestVirtualHostStyle reaches a versitygw that addresses buckets by host
// name (BUCKET.DOMAIN), as AWS prefers.
func TestVirtualHostStyle(t *testing.T) {
	const domain = "s3.errata.test"
	srv := s3test.Start(t, "--virtual-domain", domain)
	srv.Client("vhost") // created in path style, which it still serves
	_, port, _ := net.SplitHostPort(srv.Addr())
	cfg := srv.Config("vhost")
	cfg.Endpoint, cfg.PathStyle = "http://"+domain+":"+port, false
	c, err := s3.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	s3.DialOnly(c, srv.Addr())
	ctx := context.Background()
	if err := c.Put(ctx, "dir/k", strings.NewReader("hello"), 5); err != nil {
		t.Fatal(err)
	}
	rc, err := c.Get(ctx, "dir/k", 1, 3)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(rc)
	rc.Close()
	if string(b) != "ell" {
		t.Errorf("get = %q, want ell", b)
	}
	if diff := cmp.Diff([]string{"dir/k 5"}, list(t, c, "dir/", "")); diff != "" {
		t.Errorf("list (-want +got):\n%s", diff)
	}
}
