package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net/netip"
	"net/url"
	"os"
	"strconv"
	"time"

	"errata/authn"
	"errata/handlers/symbolication"
	"errata/store"
	"errata/worker"
)

// config is errata's configuration. Every field comes from a setting of
// the table in settings: an environment variable, and a flag of the same
// meaning that takes precedence over it (docs/configuration.md).
type config struct {
	databaseURL      string
	addr             string
	metricsAddr      string
	publicURL        string
	secretKey        string
	emailURL         string
	defaultFromEmail string
	logLevel         slog.Level
	maxConns         int
	statementTimeout time.Duration
	shutdownTimeout  time.Duration
	recoveryCodeTTL  time.Duration
	jobLease         time.Duration
	http             httpTimeouts
	assembleLimits   worker.AssembleLimits
	// mapCacheBytes bounds the parsed source maps and mappings the resolution routes keep.
	mapCacheBytes int64
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
	// it is empty, as SYMBOL_CACHE_DIR=memory makes it, or the directory
	// cannot be made).
	symbolCacheSize int64
	symbolCacheDir  string
	// acquireTimeout and idleInTx bound how long a statement waits for a
	// connection and how long a transaction may idle; bodiesPerToken how
	// many requests with a body one token has in flight.
	acquireTimeout time.Duration
	idleInTx       time.Duration
	bodiesPerToken int
	// memoryLimit is the runtime's soft memory limit (-1: none), from
	// MEMORY_LIMIT (memlimit.go).
	memoryLimit int64
	// debugFileCacheBytes bounds the parsed debug files that native
	// resolutions keep in memory (DEBUG_FILE_CACHE_BYTES).
	debugFileCacheBytes int64
	// userRoutesScope is "any" (any valid token, the rule of the API
	// errata follows) or "required" (a member scope) for the user routes.
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

	// trustedProxies are the proxies whose X-Forwarded-For names the
	// client address that sign-in throttles count by (none: the
	// connection's address).
	trustedProxies []netip.Prefix
	// signup is "invite" (people join by invitation) or "open" (anyone
	// signs up through the sign-in API); sessionIdle and sessionLifetime
	// end a session unused that long, or that old.
	signup string
	// orgCreation is "superuser" (only superusers create organizations
	// through the API) or "open" (every signed-in person may).
	orgCreation     string
	sessionIdle     time.Duration
	sessionLifetime time.Duration
	// inviteTTL is how long an invitation's link works.
	inviteTTL time.Duration
}

// httpTimeouts bound how long one connection may hold the server: a client
// that sends its headers or its body too slowly is cut off.
type httpTimeouts struct {
	readHeader time.Duration // the request line and headers
	read       time.Duration // the whole request, body included
	write      time.Duration // from the end of the headers to the end of the response
	idle       time.Duration // a keep-alive connection between requests
}

// setting is one line of the configuration: an environment variable, its
// flag, its default, what it means, and how its value is read into a
// config. parse returns a badValue, or an error that names the variable.
type setting struct {
	env, flag, def, doc string
	parse               func(v string) error
}

// The commands that read the configuration. What serve requires (a long
// SECRET_KEY, PUBLIC_URL, a LOG_LEVEL it knows), dev lets go or gives a
// default, and migrate does not read.
const (
	cmdServe   = "serve"
	cmdDev     = "dev"
	cmdMigrate = "migrate"
)

// minSecretKeyLen is the shortest SECRET_KEY serve accepts: 32 bytes.
const minSecretKeyLen = 32

// settings is errata's configuration, one setting a line, read into c for
// the command cmd. The S3_* variables are read with BLOB_STORE.
func settings(c *config, cmd string, getenv func(string) string) []setting {
	serving := cmd == cmdServe || cmd == cmdDev
	return []setting{
		{"DATABASE_URL", "database-url", "", "PostgreSQL URL", func(v string) error {
			c.databaseURL = v
			if v == "" {
				return errors.New("DATABASE_URL is not set")
			}
			return nil
		}},
		{"ADDR", "addr", ":8000", "listen address", anyText(&c.addr)},
		{"METRICS_ADDR", "metrics-addr", "", "listen address of GET /metrics alone; empty: no metrics", anyText(&c.metricsAddr)},
		{"PUBLIC_URL", "public-url", "", "scheme://host[:port] of links the server writes", func(v string) error {
			c.publicURL = v
			switch {
			case !serving:
				return nil
			// Without PUBLIC_URL, links in mail would follow the Host
			// header of the request that asked for them, which the
			// client chooses.
			case v == "" && cmd == cmdServe:
				return errors.New("PUBLIC_URL is not set (confirmation links are built on it, never on a request's Host header)")
			case v != "":
				if u, err := url.Parse(v); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
					return badValue{v, "http(s)://host[:port]"}
				}
			}
			return nil
		}},
		{"SECRET_KEY", "secret-key", "", "secret for signed keys and encryption at rest", func(v string) error {
			c.secretKey = v
			switch {
			case cmd == cmdDev && v == "":
				c.secretKey = devSecretKey
			case cmd != cmdServe:
			case v == "":
				return errors.New("SECRET_KEY is not set (it signs confirmation links and encrypts recovery codes)")
			case len(v) < minSecretKeyLen:
				return fmt.Errorf("SECRET_KEY has %d bytes, fewer than %d: make one with openssl rand -hex 32", len(v), minSecretKeyLen)
			}
			return nil
		}},
		{"EMAIL_URL", "email-url", "", "smtp://user:pass@host:port; empty logs mail instead", anyText(&c.emailURL)},
		{"DEFAULT_FROM_EMAIL", "default-from-email", "errata@localhost", "sender of mail", anyText(&c.defaultFromEmail)},
		{"LOG_LEVEL", "log-level", "info", "debug, info, warn or error", func(v string) error {
			if err := c.logLevel.UnmarshalText([]byte(v)); err != nil && serving {
				return fmt.Errorf("LOG_LEVEL: %w", err)
			}
			return nil
		}},
		{"MAX_CONNS", "max-conns", "0", "database pool size; 0: pgxpool's default, the larger of 4 and the CPU count", atLeast(&c.maxConns, math.MinInt, "a number")},
		{"STATEMENT_TIMEOUT", "statement-timeout", "30s", "PostgreSQL statement_timeout", positiveDuration(&c.statementTimeout)},
		{"SHUTDOWN_TIMEOUT", "shutdown-timeout", "20s", "how long SIGTERM waits for requests and jobs", positiveDuration(&c.shutdownTimeout)},
		{"RECOVERY_CODE_TTL", "recovery-code-ttl", "5m0s", "how long generated recovery codes wait for confirmation", positiveDuration(&c.recoveryCodeTTL)},
		{"BLOB_STORE", "blob-store", "postgres", "where the bytes of uploads live: postgres, or s3://BUCKET[/PREFIX] with S3_ENDPOINT, S3_REGION, S3_ACCESS_KEY_ID, S3_SECRET_ACCESS_KEY, S3_PATH_STYLE", func(v string) error {
			c.blobStore = v
			var err error
			c.blobs, c.blobPrefix, err = openBlobStore(v, getenv)
			return err
		}},
		{"RECOVERY_SEED_STORE", "recovery-seed-store", "memory", "where generated recovery codes wait: memory (one process) or postgres (several replicas)", oneOf(&c.recoverySeedStore, "memory", "postgres")},
		{"JOB_LEASE", "job-lease", "30s", "how long a job stays claimed without renewal; a crashed server's job runs again after it", positiveDuration(&c.jobLease)},
		{"READ_HEADER_TIMEOUT", "read-header-timeout", "5s", "how long a client may take to send a request's headers", positiveDuration(&c.http.readHeader)},
		{"READ_TIMEOUT", "read-timeout", "1m0s", "how long a client may take to send a whole request, body included", positiveDuration(&c.http.read)},
		{"WRITE_TIMEOUT", "write-timeout", "2m0s", "how long the server may take to send a response", positiveDuration(&c.http.write)},
		{"IDLE_TIMEOUT", "idle-timeout", "2m0s", "how long an idle keep-alive connection stays open", positiveDuration(&c.http.idle)},
		{"TRUSTED_PROXIES", "trusted-proxies", "", "CIDRs or addresses of the proxies in front of errata, comma-separated: from them, the client address is X-Forwarded-For's last hop that is not one of them; empty: the connection's address", func(v string) (err error) {
			if c.trustedProxies, err = authn.ParseTrustedProxies(v); err != nil {
				return badValue{v, "comma-separated CIDRs or addresses (" + err.Error() + ")"}
			}
			return nil
		}},
		{"POOL_ACQUIRE_TIMEOUT", "pool-acquire-timeout", "5s", "how long a request waits for a free database connection before it is answered 503", positiveDuration(&c.acquireTimeout)},
		{"IDLE_IN_TRANSACTION_TIMEOUT", "idle-in-transaction-timeout", "10s", "PostgreSQL idle_in_transaction_session_timeout of every connection", positiveDuration(&c.idleInTx)},
		{"BODIES_PER_TOKEN", "bodies-per-token", "16", "how many uploads (multipart requests) one token may have in flight; more are answered 503 with Retry-After", positive(&c.bodiesPerToken)},
		{"BLOB_GRACE", "blob-grace", "24h0m0s", "how long an upload that nothing uses is kept before the collector removes it", positiveDuration(&c.blobGrace)},
		{"USER_ROUTES_SCOPE", "user-routes-scope", "any", "any: user, email and recovery-code routes take any valid token (docs/api.md); required: they need member:read (reads) or member:write (changes)", oneOf(&c.userRoutesScope, "any", "required")},
		{"JOB_RETENTION", "job-retention", "168h0m0s", "how long ended jobs (done or error) are kept before the collector removes them", positiveDuration(&c.jobRetention)},
		{"COLLECT_INTERVAL", "collect-interval", "1h0m0s", "how often the collector runs", positiveDuration(&c.collectInterval)},
		{"SYMBOL_CACHE_SIZE", "symbol-cache-size", strconv.FormatInt(store.DefaultSymbolCacheSize, 10), "bytes of debug files the debuginfod and symbol-server routes keep (a file up to a quarter of it is kept); 0: none", byteCount(&c.symbolCacheSize)},
		{"SYMBOL_CACHE_DIR", "symbol-cache-dir", os.TempDir(), "folder under which the symbol routes keep their files, in a private directory removed at exit; memory, or a folder where none can be made: in memory", func(v string) error {
			c.symbolCacheDir = v
			if v == "memory" {
				c.symbolCacheDir = "" // store.Config's in memory
			}
			return nil
		}},
		{"ORG_JOB_LIMIT", "org-job-limit", strconv.Itoa(store.DefaultOrgJobLimit), "most background jobs (assemblies) one organization may have queued or running; a request that would enqueue more is answered 503 with Retry-After", positive(&c.orgJobLimit)},
		{"ORG_STORAGE_QUOTA", "org-storage-quota", "0", "most bytes of uploads one organization may keep; 0: no bound", byteCount(&c.orgStorageQuota)},
		{"FILE_RETENTION_DAYS", "file-retention-days", "0", "expire release files, bundles and debug files nobody read or wrote for this many days; 0: never", func(v string) error {
			var days int
			if _, err := fmt.Sscan(v, &days); err != nil || days < 0 {
				return badValue{v, "a number of days"}
			}
			c.fileRetention = time.Duration(days) * 24 * time.Hour
			return nil
		}},
		{"MAX_BUNDLE_SIZE", "max-bundle-size", strconv.FormatInt(worker.DefaultMaxBundleSize, 10), "largest artifact bundle in bytes", positive(&c.assembleLimits.MaxBundleSize)},
		{"MAX_BUNDLE_MEMBERS", "max-bundle-members", strconv.FormatInt(worker.DefaultMaxMembers, 10), "most members of an artifact bundle", positive(&c.assembleLimits.MaxMembers)},
		{"MAX_BUNDLE_UNCOMPRESSED_SIZE", "max-bundle-uncompressed-size", strconv.FormatInt(worker.DefaultMaxUncompressedSize, 10), "most bytes an artifact bundle uncompresses to", positive(&c.assembleLimits.MaxUncompressedSize)},
		{"SYMBOLICATE_CACHE_BYTES", "symbolicate-cache-bytes", strconv.FormatInt(symbolication.DefaultMapCacheBytes, 10), "most bytes of parsed source maps and mappings the resolution routes keep in memory", positive(&c.mapCacheBytes)},
		{"MEMORY_LIMIT", "memory-limit", "auto", "the Go runtime's soft memory limit: auto (80% of the container's memory limit, else 1 GiB), off, or bytes; GOMEMLIMIT, when set, wins", func(v string) (err error) {
			c.memoryLimit, err = memoryLimit(v, "/sys/fs/cgroup")
			return err
		}},
		{"SIGNUP", "signup", "invite", "invite: people join by invitation; open: anyone may sign up through /_allauth/{client}/v1/auth/signup", oneOf(&c.signup, "invite", "open")},
		{"ORG_CREATION", "org-creation", "superuser", "superuser: only superusers create organizations through POST /api/0/organizations/; open: every signed-in person may, and owns what it creates", oneOf(&c.orgCreation, "superuser", "open")},
		{"SESSION_IDLE_TIMEOUT", "session-idle-timeout", "24h0m0s", "a signed-in session unused this long ends", positiveDuration(&c.sessionIdle)},
		{"SESSION_LIFETIME", "session-lifetime", "336h0m0s", "a signed-in session ends this long after sign-in, used or not", positiveDuration(&c.sessionLifetime)},
		{"INVITE_TTL", "invite-ttl", "168h0m0s", "an invitation's link works this long after it was sent", positiveDuration(&c.inviteTTL)},
		{"DEBUG_FILE_CACHE_BYTES", "debug-file-cache-bytes", strconv.FormatInt(symbolication.DefaultDebugFileCacheBytes, 10), "most bytes of parsed debug files that native resolutions keep in memory", positive(&c.debugFileCacheBytes)},
	}
}

// loadConfig reads the configuration of the command cmd from its flags
// (args) and getenv: each setting's flag, else its variable, else its
// default. It reports every bad setting at once, in one error.
func loadConfig(cmd string, args []string, getenv func(string) string, stderr io.Writer) (config, error) {
	var c config
	table := settings(&c, cmd, getenv)
	name := cmd
	if cmd == cmdDev {
		name = cmdServe // dev takes the flags of serve
	}
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	flags := make([]settingFlag, len(table))
	for i, s := range table {
		flags[i].def = s.def
		if v := getenv(s.env); v != "" {
			flags[i].def = v
		}
		fs.Var(&flags[i], s.flag, s.doc+" ("+s.env+")")
	}
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	if fs.NArg() > 0 {
		return c, fmt.Errorf("%s: unexpected argument %q", name, fs.Arg(0))
	}
	var errs []error
	for i, s := range table {
		err := s.parse(flags[i].value())
		if bad, ok := errors.AsType[badValue](err); ok {
			err = fmt.Errorf("%s: %w", s.env, bad)
		}
		if err != nil {
			errs = append(errs, err)
		}
	}
	return c, errors.Join(errs...)
}

// settingFlag is the flag of a setting: the text given on the command
// line, else its default (the variable's value, else the setting's
// default), parsed with the rest by loadConfig.
type settingFlag struct {
	def string
	set *string
}

func (f *settingFlag) String() string { return f.def }

func (f *settingFlag) Set(v string) error {
	f.set = &v
	return nil
}

// value is the text of the setting.
func (f *settingFlag) value() string {
	if f.set != nil {
		return *f.set
	}
	return f.def
}

// badValue is the error of a value that a setting refuses. loadConfig
// names the setting by its variable, whether the value came from the
// variable or the flag: SHUTDOWN_TIMEOUT: "10" is not a positive
// duration such as 30s or 2m.
type badValue struct{ value, want string }

func (e badValue) Error() string { return fmt.Sprintf("%q is not %s", e.value, e.want) }

// The parsers of the settings of most kinds. Numbers are read as
// fmt.Sscan reads them.

// anyText is a setting of any text.
func anyText(dst *string) func(string) error {
	return func(v string) error {
		*dst = v
		return nil
	}
}

// oneOf is a setting of a or b.
func oneOf(dst *string, a, b string) func(string) error {
	return func(v string) error {
		*dst = v
		if v != a && v != b {
			return badValue{v, a + " or " + b}
		}
		return nil
	}
}

// positiveDuration is a setting of a positive duration.
func positiveDuration(dst *time.Duration) func(string) error {
	return func(v string) error {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			return badValue{v, "a positive duration such as 30s or 2m"}
		}
		*dst = d
		return nil
	}
}

// positive is a setting of a positive number.
func positive[T int | int64](dst *T) func(string) error {
	return atLeast(dst, 1, "a positive number")
}

// byteCount is a setting of a number of bytes, 0 or more.
func byteCount(dst *int64) func(string) error {
	return atLeast(dst, 0, "a number of bytes")
}

// atLeast is a setting of a number no less than least; want says what
// the number is.
func atLeast[T int | int64](dst *T, least T, want string) func(string) error {
	return func(v string) error {
		var n T
		if _, err := fmt.Sscan(v, &n); err != nil || n < least {
			return badValue{v, want}
		}
		*dst = n
		return nil
	}
}
