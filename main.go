// Command errata is a Sentry-compatible management API server.
//
//	errata [serve]            serve the API (the default)
//	errata migrate            apply schema.sql to DATABASE_URL
//	errata dev                migrate, create demo data, print a token, serve
//	errata admin <command>    bootstrap users, organizations, projects, tokens
//	errata version            print the version of this build
//	errata healthcheck        exit 0 when the server on ADDR answers /healthz
//
// Configuration comes from the environment; the flags of serve mirror it.
package main

import (
	"context"
	_ "embed"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"runtime/debug"
	"strings"
	"syscall"
	"time"

	"errata/authn"
	"errata/handlers"
	"errata/handlers/symbolication"
	"errata/store"
	"errata/store/s3"
	"errata/worker"
	"errata/worker/mail"
)

//go:embed schema.sql
var schema string

// version is stamped by the build: go build -ldflags "-X main.version=...".
// It is the one variable the linker can set, hence a package variable.
var version string

// buildVersion is the stamped version, else what the Go toolchain recorded
// in the binary, else "devel".
func buildVersion() string {
	info, _ := debug.ReadBuildInfo()
	return versionOf(version, info)
}

// versionOf picks the version of a build: the stamp, else the VCS revision
// (with "-dirty" for uncommitted changes), else the module's version.
func versionOf(stamp string, info *debug.BuildInfo) string {
	if stamp != "" {
		return stamp
	}
	if info == nil {
		return "devel"
	}
	var rev, dirty string
	for _, s := range info.Settings {
		switch {
		case s.Key == "vcs.revision":
			rev = s.Value
		case s.Key == "vcs.modified" && s.Value == "true":
			dirty = "-dirty"
		}
	}
	if rev != "" {
		return rev + dirty
	}
	if v := info.Main.Version; v != "" && v != "(devel)" {
		return v
	}
	return "devel"
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "errata:", err)
		os.Exit(1)
	}
}

// run is the whole program; main only supplies the process's context,
// arguments, environment and output.
func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	cmd := "serve"
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		cmd, args = args[0], args[1:]
	}
	switch cmd {
	case "serve":
		return runServe(ctx, args, getenv, stdout, stderr, false)
	case "dev":
		return runServe(ctx, args, getenv, stdout, stderr, true)
	case "migrate":
		cfg, err := loadConfig("migrate", args, getenv, stderr)
		if err != nil {
			return err
		}
		// The backfill holds the migration lock on one connection while it
		// reads and writes on others.
		if cfg.maxConns == 1 {
			cfg.maxConns = 2
		}
		st, err := openStore(ctx, cfg)
		if err != nil {
			return err
		}
		defer st.Close()
		if err := st.Migrate(ctx, schema); err != nil {
			return fmt.Errorf("migrate: %w", err)
		}
		// What the symbol routes need of the debug files stored before
		// errata read it at assembly (ELF section tables, source bundle
		// indexes): read now, in batches, resumably.
		n, err := st.BackfillSymbolMetadata(ctx, worker.SectionTable, worker.SourceIndex)
		if err != nil {
			return fmt.Errorf("migrate: reading the stored debug files for the symbol routes: %w", err)
		}
		if n > 0 {
			fmt.Fprintln(stdout, "read", n, "stored debug files for the symbol routes")
		}
		fmt.Fprintln(stdout, "migrated to schema version", store.SchemaVersion)
		return nil
	case "admin":
		return runAdmin(ctx, args, getenv, stdout, stderr)
	case "version":
		if len(args) > 0 {
			return fmt.Errorf("version: unexpected argument %q", args[0])
		}
		fmt.Fprintln(stdout, buildVersion())
		return nil
	case "healthcheck":
		return runHealthcheck(ctx, args, getenv, stderr)
	}
	return fmt.Errorf("unknown command %q (want serve, migrate, dev, admin, version or healthcheck)", cmd)
}

// config is errata's configuration; every field has an environment variable
// and a flag of the same meaning.
type config struct {
	databaseURL      string
	addr             string
	metricsAddr      string
	publicURL        string
	secretKey        string
	emailURL         string
	defaultFromEmail string
	logLevel         string
	maxConns         int
	statementTimeout time.Duration
	shutdownTimeout  time.Duration
	recoveryCodeTTL  time.Duration
	jobLease         time.Duration
	http             httpTimeouts
	assembleLimits   worker.AssembleLimits
	// symbolCacheBytes bounds the parsed files the resolution routes keep.
	symbolCacheBytes int64
	// blobGrace keeps what nothing uses for a while before the collector
	// removes it; fileRetention (0: off) expires files nobody used.
	blobGrace       time.Duration
	jobRetention    time.Duration // how long ended jobs are kept
	fileRetention   time.Duration
	collectInterval time.Duration
	// orgStorageQuota bounds the bytes of blobs one organization owns; 0:
	// no bound.
	orgStorageQuota int64
	// orgJobLimit bounds the background jobs one organization has queued
	// or running.
	orgJobLimit int
	// symbolCacheSize bounds the bytes of files the symbol routes keep,
	// in a private directory made under symbolCacheDir (in memory when
	// it is empty or the directory cannot be made).
	symbolCacheSize int64
	symbolCacheDir  string
	// acquireTimeout and idleInTx bound how long a statement waits for a
	// connection and how long a transaction may idle; bodiesPerToken how
	// many requests with a body one token has in flight.
	acquireTimeout time.Duration
	idleInTx       time.Duration
	bodiesPerToken int
	// debugFileCacheBytes bounds the parsed debug files that native
	// resolutions keep in memory (DEBUG_FILE_CACHE_BYTES).
	debugFileCacheBytes int64
	// userRoutesScope is "any" (any valid token, the spec's rule) or
	// "required" (a member scope) for the user routes.
	userRoutesScope string

	// blobStore is where the bytes of uploads live: "postgres" or
	// s3://BUCKET[/PREFIX] (with the S3_* variables).
	blobStore string
	// blobs is the object store blobStore names (nil for postgres), made
	// from the S3_* variables, and blobPrefix the prefix of its keys.
	blobs      store.BlobStore
	blobPrefix string

	// recoverySeedStore is where pending recovery-code seeds wait:
	// "memory" (one process) or "postgres" (replicas).
	recoverySeedStore string
}

// httpTimeouts bound how long one connection may hold the server: a client
// that sends its headers or its body too slowly is cut off.
type httpTimeouts struct {
	readHeader time.Duration // the request line and headers
	read       time.Duration // the whole request, body included
	write      time.Duration // from the end of the headers to the end of the response
	idle       time.Duration // a keep-alive connection between requests
}

func loadConfig(name string, args []string, getenv func(string) string, stderr io.Writer) (config, error) {
	env := func(key, def string) string {
		if v := getenv(key); v != "" {
			return v
		}
		return def
	}
	var envErrs []error
	envDuration := func(key string, def time.Duration) time.Duration {
		v := getenv(key)
		if v == "" {
			return def
		}
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			envErrs = append(envErrs, fmt.Errorf("%s: %q is not a positive duration such as 30s or 2m", key, v))
			return def
		}
		return d
	}
	var c config
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&c.databaseURL, "database-url", env("DATABASE_URL", ""), "PostgreSQL URL (DATABASE_URL)")
	fs.StringVar(&c.addr, "addr", env("ADDR", ":8000"), "listen address (ADDR)")
	fs.StringVar(&c.metricsAddr, "metrics-addr", env("METRICS_ADDR", ""), "listen address of GET /metrics alone; empty: no metrics (METRICS_ADDR)")
	fs.StringVar(&c.publicURL, "public-url", env("PUBLIC_URL", ""), "scheme://host[:port] of links the server writes (PUBLIC_URL)")
	fs.StringVar(&c.secretKey, "secret-key", env("SECRET_KEY", ""), "secret for signed keys and encryption at rest (SECRET_KEY)")
	fs.StringVar(&c.emailURL, "email-url", env("EMAIL_URL", ""), "smtp://user:pass@host:port; empty logs mail instead (EMAIL_URL)")
	fs.StringVar(&c.defaultFromEmail, "default-from-email", env("DEFAULT_FROM_EMAIL", "errata@localhost"), "sender of mail (DEFAULT_FROM_EMAIL)")
	fs.StringVar(&c.logLevel, "log-level", env("LOG_LEVEL", "info"), "debug, info, warn or error (LOG_LEVEL)")
	fs.IntVar(&c.maxConns, "max-conns", 0, "database pool size; 0: pgxpool's default, the larger of 4 and the CPU count (MAX_CONNS)")
	fs.DurationVar(&c.statementTimeout, "statement-timeout", envDuration("STATEMENT_TIMEOUT", 30*time.Second), "PostgreSQL statement_timeout (STATEMENT_TIMEOUT)")
	fs.DurationVar(&c.shutdownTimeout, "shutdown-timeout", envDuration("SHUTDOWN_TIMEOUT", 20*time.Second), "how long SIGTERM waits for requests and jobs (SHUTDOWN_TIMEOUT)")
	fs.DurationVar(&c.recoveryCodeTTL, "recovery-code-ttl", envDuration("RECOVERY_CODE_TTL", 300*time.Second), "how long generated recovery codes wait for confirmation (RECOVERY_CODE_TTL)")
	fs.StringVar(&c.blobStore, "blob-store", env("BLOB_STORE", "postgres"), "where the bytes of uploads live: postgres, or s3://BUCKET[/PREFIX] with S3_ENDPOINT, S3_REGION, S3_ACCESS_KEY_ID, S3_SECRET_ACCESS_KEY, S3_PATH_STYLE (BLOB_STORE)")
	fs.StringVar(&c.recoverySeedStore, "recovery-seed-store", env("RECOVERY_SEED_STORE", "memory"), "where generated recovery codes wait: memory (one process) or postgres (several replicas) (RECOVERY_SEED_STORE)")
	fs.DurationVar(&c.jobLease, "job-lease", envDuration("JOB_LEASE", 30*time.Second), "how long a job stays claimed without renewal; a crashed server's job runs again after it (JOB_LEASE)")
	fs.DurationVar(&c.http.readHeader, "read-header-timeout", envDuration("READ_HEADER_TIMEOUT", 5*time.Second), "how long a client may take to send a request's headers (READ_HEADER_TIMEOUT)")
	fs.DurationVar(&c.http.read, "read-timeout", envDuration("READ_TIMEOUT", 60*time.Second), "how long a client may take to send a whole request, body included (READ_TIMEOUT)")
	fs.DurationVar(&c.http.write, "write-timeout", envDuration("WRITE_TIMEOUT", 120*time.Second), "how long the server may take to send a response (WRITE_TIMEOUT)")
	fs.DurationVar(&c.http.idle, "idle-timeout", envDuration("IDLE_TIMEOUT", 120*time.Second), "how long an idle keep-alive connection stays open (IDLE_TIMEOUT)")
	fs.DurationVar(&c.acquireTimeout, "pool-acquire-timeout", envDuration("POOL_ACQUIRE_TIMEOUT", 5*time.Second), "how long a request waits for a free database connection before it is answered 503 (POOL_ACQUIRE_TIMEOUT)")
	fs.DurationVar(&c.idleInTx, "idle-in-transaction-timeout", envDuration("IDLE_IN_TRANSACTION_TIMEOUT", 10*time.Second), "PostgreSQL idle_in_transaction_session_timeout of every connection (IDLE_IN_TRANSACTION_TIMEOUT)")
	c.bodiesPerToken = 16
	if v := getenv("BODIES_PER_TOKEN"); v != "" {
		if _, err := fmt.Sscan(v, &c.bodiesPerToken); err != nil || c.bodiesPerToken < 1 {
			envErrs = append(envErrs, fmt.Errorf("BODIES_PER_TOKEN: %q is not a positive number", v))
		}
	}
	fs.IntVar(&c.bodiesPerToken, "bodies-per-token", c.bodiesPerToken, "how many uploads (multipart requests) one token may have in flight; more are answered 503 with Retry-After (BODIES_PER_TOKEN)")
	fs.DurationVar(&c.blobGrace, "blob-grace", envDuration("BLOB_GRACE", 24*time.Hour), "how long an upload that nothing uses is kept before the collector removes it (BLOB_GRACE)")
	fs.StringVar(&c.userRoutesScope, "user-routes-scope", env("USER_ROUTES_SCOPE", "any"), "any: user, email and recovery-code routes take any valid token, as the spec says; required: they need member:read (reads) or member:write (changes) (USER_ROUTES_SCOPE)")
	fs.DurationVar(&c.jobRetention, "job-retention", envDuration("JOB_RETENTION", 7*24*time.Hour), "how long ended jobs (done or error) are kept before the collector removes them (JOB_RETENTION)")
	fs.DurationVar(&c.collectInterval, "collect-interval", envDuration("COLLECT_INTERVAL", time.Hour), "how often the collector runs (COLLECT_INTERVAL)")
	retentionDays := 0
	if v := getenv("FILE_RETENTION_DAYS"); v != "" {
		if _, err := fmt.Sscan(v, &retentionDays); err != nil || retentionDays < 0 {
			envErrs = append(envErrs, fmt.Errorf("FILE_RETENTION_DAYS: %q is not a number of days", v))
		}
	}
	if v := getenv("ORG_STORAGE_QUOTA"); v != "" {
		if _, err := fmt.Sscan(v, &c.orgStorageQuota); err != nil || c.orgStorageQuota < 0 {
			envErrs = append(envErrs, fmt.Errorf("ORG_STORAGE_QUOTA: %q is not a number of bytes", v))
		}
	}
	c.orgJobLimit = store.DefaultOrgJobLimit
	if v := getenv("ORG_JOB_LIMIT"); v != "" {
		if _, err := fmt.Sscan(v, &c.orgJobLimit); err != nil || c.orgJobLimit < 1 {
			envErrs = append(envErrs, fmt.Errorf("ORG_JOB_LIMIT: %q is not a positive number", v))
		}
	}
	c.symbolCacheSize = store.DefaultSymbolCacheSize
	if v := getenv("SYMBOL_CACHE_SIZE"); v != "" {
		if _, err := fmt.Sscan(v, &c.symbolCacheSize); err != nil || c.symbolCacheSize < 0 {
			envErrs = append(envErrs, fmt.Errorf("SYMBOL_CACHE_SIZE: %q is not a number of bytes", v))
		}
	}
	fs.Int64Var(&c.symbolCacheSize, "symbol-cache-size", c.symbolCacheSize, "bytes of debug files the debuginfod and symbol-server routes keep (a file up to a quarter of it is kept); 0: none (SYMBOL_CACHE_SIZE)")
	fs.StringVar(&c.symbolCacheDir, "symbol-cache-dir", env("SYMBOL_CACHE_DIR", os.TempDir()), "folder under which the symbol routes keep their files, in a private directory removed at exit; memory, or a folder where none can be made: in memory (SYMBOL_CACHE_DIR)")
	fs.IntVar(&c.orgJobLimit, "org-job-limit", c.orgJobLimit, "most background jobs (assemblies) one organization may have queued or running; a request that would enqueue more is answered 503 with Retry-After (ORG_JOB_LIMIT)")
	fs.Int64Var(&c.orgStorageQuota, "org-storage-quota", c.orgStorageQuota, "most bytes of uploads one organization may keep; 0: no bound (ORG_STORAGE_QUOTA)")
	fs.IntVar(&retentionDays, "file-retention-days", retentionDays, "expire release files, bundles and debug files nobody read or wrote for this many days; 0: never (FILE_RETENTION_DAYS)")
	for _, l := range []struct {
		env, flag, usage string
		dst              *int64
		def              int64
	}{
		{"MAX_BUNDLE_SIZE", "max-bundle-size", "largest artifact bundle in bytes", &c.assembleLimits.MaxBundleSize, worker.DefaultMaxBundleSize},
		{"MAX_BUNDLE_MEMBERS", "max-bundle-members", "most members of an artifact bundle", &c.assembleLimits.MaxMembers, worker.DefaultMaxMembers},
		{"MAX_BUNDLE_UNCOMPRESSED_SIZE", "max-bundle-uncompressed-size", "most bytes an artifact bundle uncompresses to", &c.assembleLimits.MaxUncompressedSize, worker.DefaultMaxUncompressedSize},
		{"SYMBOLICATE_CACHE_BYTES", "symbolicate-cache-bytes", "most bytes of parsed source maps and mappings the resolution routes keep in memory", &c.symbolCacheBytes, symbolication.DefaultMapCacheBytes},
		{"DEBUG_FILE_CACHE_BYTES", "debug-file-cache-bytes", "most bytes of parsed debug files that native resolutions keep in memory", &c.debugFileCacheBytes, symbolication.DefaultDebugFileCacheBytes},
	} {
		def := l.def
		if v := getenv(l.env); v != "" {
			if _, err := fmt.Sscan(v, &def); err != nil || def <= 0 {
				return c, fmt.Errorf("%s: %q is not a positive number", l.env, v)
			}
		}
		fs.Int64Var(l.dst, l.flag, def, l.usage+" ("+l.env+")")
	}
	if v := getenv("MAX_CONNS"); v != "" {
		if _, err := fmt.Sscan(v, &c.maxConns); err != nil {
			return c, fmt.Errorf("MAX_CONNS: %q is not a number", v)
		}
	}
	if err := errors.Join(envErrs...); err != nil {
		return c, err
	}
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	if fs.NArg() > 0 {
		return c, fmt.Errorf("%s: unexpected argument %q", name, fs.Arg(0))
	}
	if retentionDays < 0 {
		return c, fmt.Errorf("FILE_RETENTION_DAYS: %d is negative", retentionDays)
	}
	c.fileRetention = time.Duration(retentionDays) * 24 * time.Hour
	if c.databaseURL == "" {
		return c, errors.New("DATABASE_URL is not set")
	}
	var err error
	if c.blobs, c.blobPrefix, err = openBlobStore(c.blobStore, getenv); err != nil {
		return c, err
	}
	if c.userRoutesScope != "any" && c.userRoutesScope != "required" {
		return c, fmt.Errorf("USER_ROUTES_SCOPE: %q is not any or required", c.userRoutesScope)
	}
	if c.recoverySeedStore != "memory" && c.recoverySeedStore != "postgres" {
		return c, fmt.Errorf("RECOVERY_SEED_STORE: %q is not memory or postgres", c.recoverySeedStore)
	}
	return c, nil
}

// newPendingSeeds returns the store of pending recovery-code seeds that c
// chooses: a map of this process, or a table that every replica on the
// database shares.
func newPendingSeeds(ctx context.Context, c config, st *store.Store) (authn.PendingSeedStore, error) {
	if c.recoverySeedStore == "memory" {
		return authn.NewPendingSeeds(c.recoveryCodeTTL, nil), nil
	}
	if err := st.CheckPendingSeeds(ctx); err != nil {
		if errors.Is(err, store.ErrNotMigrated) {
			return nil, errors.New("RECOVERY_SEED_STORE=postgres needs the table of pending seeds: run `errata migrate` first")
		}
		return nil, fmt.Errorf("database: %w", err)
	}
	return authn.NewDatabasePendingSeeds(st, c.secretKey, c.recoveryCodeTTL, nil), nil
}

func openStore(ctx context.Context, c config) (*store.Store, error) {
	return store.Open(ctx, store.Config{
		URL:              c.databaseURL,
		MaxConns:         int32(c.maxConns),
		StatementTimeout: c.statementTimeout,
		OrgStorageQuota:  c.orgStorageQuota,
		OrgJobLimit:      c.orgJobLimit,
		SymbolCacheSize:  c.symbolCacheSize,
		SymbolCacheDir:   symbolCacheDir(c.symbolCacheDir),
		AcquireTimeout:   c.acquireTimeout,
		Blobs:            c.blobs,
		BlobPrefix:       c.blobPrefix,

		IdleInTransactionTimeout: c.idleInTx,
	})
}

// symbolCacheDir is the folder of store.Config.SymbolCacheDir that
// SYMBOL_CACHE_DIR names: "" (memory) for memory.
func symbolCacheDir(v string) string {
	if v == "memory" {
		return ""
	}
	return v
}

// openBlobStore returns the blob store that where names ("postgres" or
// s3://BUCKET[/PREFIX], the S3_* variables coming from getenv) and the
// prefix of its keys; nil keeps the bytes in PostgreSQL. It does not
// contact the object store.
func openBlobStore(where string, getenv func(string) string) (store.BlobStore, string, error) {
	cfg, err := blobStoreConfig(where, getenv)
	if cfg == nil || err != nil {
		return nil, "", err
	}
	c, err := s3.New(*cfg)
	if err != nil {
		return nil, "", err
	}
	prefix := cfg.Prefix
	if prefix != "" {
		prefix += "/"
	}
	return c, prefix, nil
}

// blobStoreConfig reads where, as openBlobStore does: nil for PostgreSQL.
func blobStoreConfig(where string, getenv func(string) string) (*s3.Config, error) {
	if where == "" || where == "postgres" {
		return nil, nil
	}
	if !strings.HasPrefix(where, "s3://") {
		return nil, fmt.Errorf("BLOB_STORE: %q is not postgres or s3://BUCKET[/PREFIX]", where)
	}
	cfg, err := s3.ParseConfig(func(k string) string {
		if k == "BLOB_STORE" {
			return where
		}
		return getenv(k)
	})
	if err != nil {
		return nil, err
	}
	return &cfg, nil
}

// sameBlobStore reports whether the blob stores a and b name (as
// openBlobStore reads them) are the same place, however they are spelled:
// a copy from one to the other with --remove-source would remove every
// blob. The store checks again, by an object, before it removes anything.
func sameBlobStore(a, b string, getenv func(string) string) (bool, error) {
	ca, err := blobStoreConfig(a, getenv)
	if err != nil {
		return false, err
	}
	cb, err := blobStoreConfig(b, getenv)
	if err != nil {
		return false, err
	}
	if ca == nil || cb == nil {
		return ca == nil && cb == nil, nil
	}
	return ca.SameLocation(*cb), nil
}

// checkBlobStore makes sure at start that the object store's bucket exists
// and that the keys may use it. An object store that cannot be reached is
// only logged: uploads and downloads answer 503 until it is back.
func checkBlobStore(ctx context.Context, c config, log *slog.Logger) error {
	cl, ok := c.blobs.(*s3.Client)
	if !ok {
		return nil
	}
	err := cl.Check(ctx)
	var se *s3.Error
	switch {
	case errors.As(err, &se) && se.Refused():
		return fmt.Errorf("BLOB_STORE %s: %w", c.blobStore, err)
	case errors.Is(err, store.ErrUnavailable):
		log.Warn("the object store does not answer; uploads and downloads will answer 503 until it does", "blob_store", c.blobStore, "err", err)
	case err != nil:
		return fmt.Errorf("BLOB_STORE %s: %w", c.blobStore, err)
	default:
		log.Info("blobs live in an object store", "blob_store", c.blobStore)
	}
	return nil
}

func newLogger(level string, w io.Writer) (*slog.Logger, error) {
	var l slog.Level
	if err := l.UnmarshalText([]byte(level)); err != nil {
		return nil, fmt.Errorf("LOG_LEVEL: %w", err)
	}
	return slog.New(slog.NewJSONHandler(w, &slog.HandlerOptions{Level: l})), nil
}

// minSecretKeyLen is the shortest SECRET_KEY serve accepts: 32 bytes.
const minSecretKeyLen = 32

// runServe serves the API until ctx ends. In dev mode it first migrates and
// creates the demo organization, project, user and token, and prints how to
// try them.
func runServe(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer, dev bool) error {
	cfg, err := loadConfig("serve", args, getenv, stderr)
	if err != nil {
		return err
	}
	if cfg.secretKey == "" {
		if !dev {
			return errors.New("SECRET_KEY is not set (it signs confirmation links and encrypts recovery codes)")
		}
		cfg.secretKey = "errata-dev-secret-not-for-production"
	}
	if !dev {
		if len(cfg.secretKey) < minSecretKeyLen {
			return fmt.Errorf("SECRET_KEY has %d bytes, fewer than %d: make one with openssl rand -hex 32", len(cfg.secretKey), minSecretKeyLen)
		}
		// Without PUBLIC_URL, links in mail would follow the Host header of
		// the request that asked for them, which the client chooses.
		if cfg.publicURL == "" {
			return errors.New("PUBLIC_URL is not set (confirmation links are built on it, never on a request's Host header)")
		}
	}
	if cfg.publicURL != "" {
		if u, err := url.Parse(cfg.publicURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return fmt.Errorf("PUBLIC_URL: %q is not http(s)://host[:port]", cfg.publicURL)
		}
	}
	log, err := newLogger(cfg.logLevel, stderr)
	if err != nil {
		return err
	}
	st, err := openStore(ctx, cfg)
	if err != nil {
		return err
	}
	defer st.Close()
	if dev {
		if err := st.Migrate(ctx, schema); err != nil {
			return fmt.Errorf("migrate: %w", err)
		}
	}
	if err := st.CheckMigrated(ctx); err != nil {
		if errors.Is(err, store.ErrNotMigrated) {
			return errors.New("the database is not migrated: run `errata migrate` first")
		}
		return fmt.Errorf("database: %w", err)
	}
	seeds, err := newPendingSeeds(ctx, cfg, st)
	if err != nil {
		return err
	}
	if err := checkBlobStore(ctx, cfg, log); err != nil {
		return err
	}
	if err := st.ClaimBlobPrefix(ctx); errors.Is(err, store.ErrSharedPrefix) {
		return fmt.Errorf("BLOB_STORE %s: %w", cfg.blobStore, err)
	} else if err != nil {
		log.Warn("could not claim the object store's prefix; the collector leaves its objects alone until it can", "blob_store", cfg.blobStore, "err", err)
	}

	ln, err := net.Listen("tcp", cfg.addr)
	if err != nil {
		return err
	}
	var metricsLn net.Listener
	if cfg.metricsAddr != "" {
		if metricsLn, err = net.Listen("tcp", cfg.metricsAddr); err != nil {
			ln.Close()
			return fmt.Errorf("metrics: %w", err)
		}
		defer metricsLn.Close() // a no-op once its server shut down
	}
	if dev {
		if err := seedDemo(ctx, st, ln.Addr(), &cfg, stdout); err != nil {
			ln.Close()
			return err
		}
	}

	jobs := worker.New(st, log, worker.Config{Lease: cfg.jobLease})
	sender, err := mail.NewSender(cfg.emailURL, cfg.defaultFromEmail, log)
	if err != nil {
		ln.Close()
		return err
	}
	if ls, ok := sender.(*mail.LogSender); ok && dev {
		ls.Console = stdout
	}
	jobs.Handle(store.MailJobKind, mail.Deliver(st, sender))
	assembler := &worker.Assembler{Store: st, Log: log, Limits: cfg.assembleLimits}
	jobs.Handle(store.AssembleJobKind, assembler.Run)
	difAssembler := &worker.DifAssembler{Store: st, Log: log, MaxFileSize: cfg.assembleLimits.MaxBundleSize}
	jobs.Handle(store.DifAssembleJobKind, difAssembler.Run)
	collector := &worker.Collector{Store: st, Log: log, Grace: cfg.blobGrace, Retention: cfg.fileRetention, JobRetention: cfg.jobRetention}
	jobs.Handle(store.CollectJobKind, collector.Run)
	jobs.Start()
	scheduleCtx, stopSchedule := context.WithCancel(ctx)
	defer stopSchedule()
	go collector.Schedule(scheduleCtx, cfg.collectInterval, jobs.Notify)

	var metrics *handlers.Metrics
	if metricsLn != nil {
		metrics = handlers.NewMetrics(buildVersion(), st, jobs, log)
	}
	srv := &http.Server{
		ConnContext: handlers.WithConn,
		Handler: handlers.New(handlers.Deps{
			Store:          st,
			Auth:           &authn.Authenticator{Store: st, CacheFor: authn.TokenCacheTime},
			Log:            log,
			PublicURL:      cfg.publicURL,
			SecretKey:      cfg.secretKey,
			NotifyMail:     jobs.Notify,
			RecoverySeeds:  seeds,
			Jobs:           jobs,
			MaxBundleSize:  cfg.assembleLimits.MaxBundleSize,
			Metrics:        metrics,
			BodiesPerToken: cfg.bodiesPerToken,
			MapCache:       symbolication.NewMapCache(cfg.symbolCacheBytes),
			Version:        buildVersion(),
			DebugFileCache: symbolication.NewDebugFileCache(cfg.debugFileCacheBytes),

			UserRoutesNeedScope: cfg.userRoutesScope == "required",
		}),
		ReadHeaderTimeout: cfg.http.readHeader,
		ReadTimeout:       cfg.http.read,
		WriteTimeout:      cfg.http.write,
		IdleTimeout:       cfg.http.idle,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
	log.Info("serving", "addr", ln.Addr().String())
	serveErr := make(chan error, 2)
	go func() { serveErr <- srv.Serve(ln) }()
	var metricsSrv *http.Server
	if metrics != nil {
		metricsSrv = &http.Server{
			Handler:           metrics.Handler(),
			ReadHeaderTimeout: 5 * time.Second,
			ReadTimeout:       10 * time.Second,
			WriteTimeout:      30 * time.Second,
			IdleTimeout:       60 * time.Second,
			ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
		}
		log.Info("serving metrics", "addr", metricsLn.Addr().String())
		go func() { serveErr <- metricsSrv.Serve(metricsLn) }()
	}

	select {
	case err := <-serveErr:
		return err
	case <-ctx.Done():
	}
	// Shutdown: close the listener and drain in-flight requests while the
	// worker stops claiming jobs and finishes its running one; then close
	// the pool (deferred). Both share one deadline, SHUTDOWN_TIMEOUT:
	// requests still running then are cut off and a job still running is
	// cancelled (it runs again later), so that the process exits
	// promptly. The metrics listener stops last.
	log.Info("shutting down", "timeout", cfg.shutdownTimeout.String())
	sctx, cancel := context.WithTimeout(context.Background(), cfg.shutdownTimeout)
	defer cancel()
	workErr := make(chan error, 1)
	go func() { workErr <- jobs.Shutdown(sctx) }()
	var errs []error
	if err := srv.Shutdown(sctx); err != nil {
		srv.Close()
		errs = append(errs, fmt.Errorf("requests still running after %s were cut off: %w", cfg.shutdownTimeout, err))
	}
	if err := <-workErr; err != nil {
		errs = append(errs, fmt.Errorf("a job still running after %s was cancelled: %w", cfg.shutdownTimeout, err))
	}
	// Metrics are served until the end, so a scrape sees the drain.
	if metricsSrv != nil {
		if err := metricsSrv.Shutdown(sctx); err != nil {
			metricsSrv.Close()
		}
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	log.Info("shut down")
	return nil
}

// runHealthcheck asks the server listening on ADDR for GET /healthz and
// fails unless it answers 200 in time. It is the container image's
// HEALTHCHECK, which has no curl.
func runHealthcheck(ctx context.Context, args []string, getenv func(string) string, stderr io.Writer) error {
	def := getenv("ADDR")
	if def == "" {
		def = ":8000"
	}
	fs := flag.NewFlagSet("healthcheck", flag.ContinueOnError)
	fs.SetOutput(stderr)
	addr := fs.String("addr", def, "the server's listen address (ADDR)")
	timeout := fs.Duration("timeout", 2*time.Second, "how long to wait for the answer")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("healthcheck: unexpected argument %q", fs.Arg(0))
	}
	host, port, err := net.SplitHostPort(*addr)
	if err != nil {
		return fmt.Errorf("healthcheck: ADDR %q: %w", *addr, err)
	}
	// A server listening on every address answers on the loopback one.
	if ip := net.ParseIP(host); host == "" || ip != nil && ip.IsUnspecified() {
		host = "127.0.0.1"
	}
	url := "http://" + net.JoinHostPort(host, port) + "/healthz"
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return fmt.Errorf("healthcheck: %w", err)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("healthcheck: %w", err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusOK {
		return fmt.Errorf("healthcheck: GET %s answered %s", url, res.Status)
	}
	return nil
}

// seedDemo creates (or finds again) the demo data of `errata dev` and
// prints a fresh token with a curl line to try it.
func seedDemo(ctx context.Context, st *store.Store, addr net.Addr, cfg *config, stdout io.Writer) error {
	const email, org, project = "demo@errata.localhost", "demo", "demo-app"
	if _, err := st.CreateUser(ctx, email, "Demo User"); err != nil && !errors.Is(err, store.ErrConflict) {
		return fmt.Errorf("demo user: %w", err)
	}
	if _, err := st.CreateOrganization(ctx, org, "Demo", email); err != nil && !errors.Is(err, store.ErrConflict) {
		return fmt.Errorf("demo organization: %w", err)
	}
	if _, err := st.CreateProject(ctx, store.Operator, org, store.NewProject{Slug: project, Name: "Demo App"}); err != nil && !errors.Is(err, store.ErrConflict) {
		return fmt.Errorf("demo project: %w", err)
	}
	if _, err := st.CreateEnvironment(ctx, org, "production", project, false); err != nil {
		return fmt.Errorf("demo environment: %w", err)
	}
	token, hash := authn.NewToken()
	if _, err := st.CreateToken(ctx, email, hash, authn.Scopes, "dev"); err != nil {
		return fmt.Errorf("demo token: %w", err)
	}
	port := addr.(*net.TCPAddr).Port
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	if cfg.publicURL == "" {
		cfg.publicURL = base
	}
	fmt.Fprintf(stdout, "errata is serving on %s (organization %q, project %q, user %s)\n", base, org, project, email)
	fmt.Fprintf(stdout, "token: %s\n", token)
	fmt.Fprintf(stdout, "try:   curl -H 'Authorization: Bearer %s' %s/api/0/\n", token, base)
	// gdb, valgrind, debuginfod-find and llvm-symbolizer read this
	// variable; libcurl sends the token of the URL as Basic.
	fmt.Fprintf(stdout, "debuginfod: export DEBUGINFOD_URLS=%s\n", strings.Replace(base, "://", "://errata:"+token+"@", 1)+"/debuginfod/"+org)
	return nil
}
