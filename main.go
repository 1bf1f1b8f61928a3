// Command errata is a Sentry-compatible management API server.
//
//	errata [serve]            serve the API (the default)
//	errata migrate            apply schema.sql to DATABASE_URL
//	errata dev                migrate, create demo data, print a token, serve
//	errata admin <command>    bootstrap users, organizations, projects, tokens
//	errata version            print the version of this build
//	errata healthcheck        exit 0 when the server on ADDR answers /healthz
//
// Configuration comes from the environment; the flags of serve mirror it
// (config.go, docs/configuration.md). This file is how serve puts errata
// together; each other command has a file of its own.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"errata/authn"
	"errata/handlers"
	"errata/handlers/symbolication"
	"errata/store"
	"errata/worker"
	"errata/worker/mail"
)

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
		return runServe(ctx, cmdServe, args, getenv, stdout, stderr)
	case "dev":
		return runServe(ctx, cmdDev, args, getenv, stdout, stderr) // dev.go
	case "migrate":
		return runMigrate(ctx, args, getenv, stdout, stderr) // migrate.go
	case "admin":
		return runAdmin(ctx, args, getenv, stdout, stderr) // admin.go
	case "version":
		return runVersion(args, stdout) // version.go
	case "healthcheck":
		return runHealthcheck(ctx, args, getenv, stderr) // healthcheck.go
	}
	return fmt.Errorf("unknown command %q (want serve, migrate, dev, admin, version or healthcheck)", cmd)
}

// runServe serves the API until ctx ends; cmd is cmdServe, or cmdDev for
// `errata dev`, which also migrates, creates demo data and prints mail on
// stdout (dev.go).
//
// It builds errata in the order its parts need each other: configuration,
// the store, the listeners, the worker, the engines (the caches of the
// resolution routes), the handlers; then it serves. When ctx ends it shuts
// down in this order (docs/deployment.md):
//
//  1. the API server stops accepting connections and drains its requests
//     while the worker stops claiming jobs and finishes the ones running,
//     both within one deadline, SHUTDOWN_TIMEOUT: requests still running
//     then are cut off and a job still running is cancelled (it runs again
//     later), so that the process exits promptly;
//  2. the metrics server, last of the servers, so a scrape sees the drain;
//  3. the collector's schedule;
//  4. the store: its pool, and the symbol routes' cache directory.
func runServe(ctx context.Context, cmd string, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	// Configuration: every setting read and checked at once (config.go).
	cfg, err := loadConfig(cmd, args, getenv, stderr)
	if err != nil {
		return err
	}
	log := slog.New(slog.NewJSONHandler(stderr, &slog.HandlerOptions{Level: cfg.logLevel}))

	// Store: a migrated database, where recovery seeds wait, where blobs live.
	st, err := openStore(ctx, cfg)
	if err != nil {
		return err
	}
	defer st.Close() // shutdown step 4
	if cmd == cmdDev {
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
	if err := checkBlobStore(ctx, cfg, log); err != nil { // blobstore.go
		return err
	}
	if err := st.ClaimBlobPrefix(ctx); errors.Is(err, store.ErrSharedPrefix) {
		return fmt.Errorf("BLOB_STORE %s: %w", cfg.blobStore, err)
	} else if err != nil {
		log.Warn("could not claim the object store's prefix; the collector leaves its objects alone until it can", "blob_store", cfg.blobStore, "err", err)
	}

	// Listeners, before anything runs: an address in use stops the start
	// here, and dev prints the address it got (and links mail to it).
	ln, err := net.Listen("tcp", cfg.addr)
	if err != nil {
		return err
	}
	defer ln.Close() // a no-op once its server shut down
	var metricsLn net.Listener
	if cfg.metricsAddr != "" {
		if metricsLn, err = net.Listen("tcp", cfg.metricsAddr); err != nil {
			return fmt.Errorf("metrics: %w", err)
		}
		defer metricsLn.Close()
	}
	if cmd == cmdDev {
		if err := seedDemo(ctx, st, ln.Addr(), &cfg, stdout); err != nil {
			return err
		}
	}

	// Worker: each kind of job with what runs it, and the collector's
	// schedule.
	jobs := worker.New(st, log, worker.Config{Lease: cfg.jobLease})
	sender, err := mail.NewSender(cfg.emailURL, cfg.defaultFromEmail, log)
	if err != nil {
		return err
	}
	if ls, ok := sender.(*mail.LogSender); ok && cmd == cmdDev {
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
	defer stopSchedule() // shutdown step 3
	go collector.Schedule(scheduleCtx, cfg.collectInterval, jobs.Notify)

	// Engines: what the resolution routes keep across requests, the
	// parsed source maps and mappings, and the parsed debug files; the
	// runtime collects before the process passes its memory limit
	// (MEMORY_LIMIT, memlimit.go).
	log.Info("memory limit", "limit", applyMemoryLimit(cfg.memoryLimit, getenv))
	mapCache := symbolication.NewMapCache(cfg.mapCacheBytes)
	debugFileCache := symbolication.NewDebugFileCache(cfg.debugFileCacheBytes)

	// Handlers: the API, and /metrics on its own address.
	var metrics *handlers.Metrics
	if metricsLn != nil {
		metrics = handlers.NewMetrics(buildVersion(), st, jobs, log)
	}
	api := handlers.New(handlers.Deps{
		Store: st,
		Auth: &authn.Authenticator{Store: st, CacheFor: authn.TokenCacheTime, Sessions: authn.SessionConfig{
			IdleTimeout: cfg.sessionIdle, Lifetime: cfg.sessionLifetime, PublicURL: cfg.publicURL,
		}},
		Log:            log,
		PublicURL:      cfg.publicURL,
		SecretKey:      cfg.secretKey,
		NotifyMail:     jobs.Notify,
		RecoverySeeds:  seeds,
		Jobs:           jobs,
		MaxBundleSize:  cfg.assembleLimits.MaxBundleSize,
		Metrics:        metrics,
		BodiesPerToken: cfg.bodiesPerToken,
		MapCache:       mapCache,
		Version:        buildVersion(),
		DebugFileCache: debugFileCache,
		Throttle:       &authn.Throttle{Store: st},
		TrustedProxies: cfg.trustedProxies,

		UserRoutesNeedScope: cfg.userRoutesScope == "required",
		// Sign-in: sessions (Auth.Sessions), open sign-up, and at most
		// NumCPU argon2id hashes at once, a sign-in waiting 5 s at most
		// for one.
		SignupOpen:      cfg.signup == "open",
		OrgCreationOpen: cfg.orgCreation == "open",
		Passwords:       authn.NewHasher(0, 5*time.Second),
		// Invitations: how long their links work.
		InviteTTL: cfg.inviteTTL,
	})

	// Serve, until ctx ends or a server fails.
	srv := &http.Server{
		ConnContext:       handlers.WithConn,
		Handler:           api,
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

	// Shutdown, in the order above.
	log.Info("shutting down", "timeout", cfg.shutdownTimeout.String())
	sctx, cancel := context.WithTimeout(context.Background(), cfg.shutdownTimeout)
	defer cancel()
	// Step 1: requests and jobs, side by side.
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
	// Step 2: metrics are served until the end, so a scrape sees the drain.
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

// openStore opens the store that c configures; it does not wait for the
// database.
func openStore(ctx context.Context, c config) (*store.Store, error) {
	return store.Open(ctx, store.Config{
		URL:              c.databaseURL,
		MaxConns:         int32(c.maxConns),
		StatementTimeout: c.statementTimeout,
		OrgStorageQuota:  c.orgStorageQuota,
		OrgJobLimit:      c.orgJobLimit,
		SymbolCacheSize:  c.symbolCacheSize,
		SymbolCacheDir:   c.symbolCacheDir,
		AcquireTimeout:   c.acquireTimeout,
		Blobs:            c.blobs,
		BlobPrefix:       c.blobPrefix,

		IdleInTransactionTimeout: c.idleInTx,
	})
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
