package handlers

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/netip"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"errata/authn"
	"errata/handlers/symbolication"
	"errata/store"
)

// Deps is everything the handlers use, built once in run().
type Deps struct {
	Store     *store.Store
	Auth      *authn.Authenticator
	Log       *slog.Logger
	PublicURL string           // scheme://host of links the server writes; "" derives it from the request
	Now       func() time.Time // the clock

	// Users, email confirmation and recovery codes.
	SecretKey     string                 // signs confirmation keys and encrypts recovery-code seeds
	NotifyMail    func()                 // wakes the mail worker after a message is queued; nil leaves it to its poll
	RecoverySeeds authn.PendingSeedStore // pending recovery-code seeds (memory, or PostgreSQL for replicas); nil is a map of 300 s of New's own
	// Jobs is woken after a request enqueued a background job; nil when
	// no worker runs in this process (another process's finds the job).
	Jobs interface{ Notify() }
	// MaxBundleSize is the largest upload that assembly accepts; 0 is
	// the default of the worker package.
	MaxBundleSize int64
	// Metrics counts every request for GET /metrics; nil, the default,
	// counts nothing and costs the request path nothing.
	Metrics *Metrics
	// UserRoutesNeedScope makes the user, email, notification and
	// recovery-code routes ask for a member scope instead of any token.
	UserRoutesNeedScope bool
	// BodiesPerToken bounds the uploads (multipart requests) that one token
	// has in flight; more answer 503 with Retry-After. 0 is
	// defaultBodiesPerToken.
	BodiesPerToken int
	// MapCache keeps the source maps and ProGuard mappings the JavaScript
	// and JVM resolution routes parsed; nil is a cache of
	// symbolication.DefaultMapCacheBytes of New's own.
	MapCache *symbolication.MapCache
	// Version is the build's version, which GET / names.
	Version string
	// DebugFileCache keeps the debug files native resolutions parsed;
	// nil is a cache of symbolication.DefaultDebugFileCacheBytes of New's
	// own.
	DebugFileCache *symbolication.DebugFileCache

	// Throttle applies the sign-in throttles (docs/accounts.md,
	// Throttling), shared by replicas through the store; nil is one of
	// New's own on Store. TrustedProxies are the proxies whose
	// X-Forwarded-For names the client address (authn.ClientAddr);
	// none, the default, counts by the connection's address.
	Throttle       *authn.Throttle
	TrustedProxies []netip.Prefix
	// Passwords verifies and hashes passwords at sign-in; nil is a
	// Hasher of New's own (NumCPU hashes at once, 5 s of waiting).
	Passwords *authn.Hasher
	// SignupOpen lets anyone sign up through the sign-in API
	// (SIGNUP=open); else people join by invitation.
	SignupOpen bool
	// InviteTTL is how long an invitation's link works; 0 is
	// DefaultInviteTTL.
	InviteTTL time.Duration
	// OrgCreationOpen lets every signed-in person create organizations
	// (ORG_CREATION=open); else only superusers may.
	OrgCreationOpen bool

	// resolving bounds the resolution requests that run at once; routes
	// makes it.
	resolving *symbolication.Slots[string]
}

// apiFunc is a handler that returns its error instead of writing it.
type apiFunc func(w http.ResponseWriter, r *http.Request) error

// New returns the whole HTTP surface: every route of routes.go behind
// authentication, scope checks, request logging and JSON 404/405 answers.
func New(d Deps) http.Handler {
	if d.Now == nil {
		d.Now = time.Now
	}
	if d.MapCache == nil {
		d.MapCache = symbolication.NewMapCache(symbolication.DefaultMapCacheBytes)
	}
	if d.RecoverySeeds == nil {
		d.RecoverySeeds = authn.NewPendingSeeds(300*time.Second, d.Now)
	}
	if d.Throttle == nil {
		d.Throttle = &authn.Throttle{Store: d.Store}
	}
	if d.Passwords == nil {
		d.Passwords = authn.NewHasher(0, 5*time.Second)
	}
	if d.DebugFileCache == nil {
		d.DebugFileCache = symbolication.NewDebugFileCache(symbolication.DefaultDebugFileCacheBytes)
	}
	return serve(d, append(routes(d), signInRoutes(d)...))
}

// serve builds the handler for rts, and for the direct routes
// (directRoutes), which it dispatches before the mux.
func serve(d Deps, rts []route) http.Handler {
	mux := http.NewServeMux()
	bodies := newBodyLimiter(d.BodiesPerToken)
	for _, rt := range rts {
		mux.Handle(rt.pattern, adapt(d, rt, bodies))
	}
	pg, prts := pageRoutes(d, mux)
	for _, rt := range prts {
		mux.Handle(rt.pattern, rt.handler(pg))
	}
	mux.Handle(patStylesheet, pg.Stylesheet())
	mux.Handle(patFavicon, pg.Favicon())
	drts := directRoutes(d)
	if d.Metrics != nil {
		tracked := slices.Clone(rts)
		for _, rt := range prts {
			tracked = append(tracked, route{pattern: rt.pattern})
		}
		tracked = append(tracked, route{pattern: patStylesheet}, route{pattern: patFavicon})
		for _, rt := range drts {
			tracked = append(tracked, route{pattern: rt.pattern})
		}
		for _, p := range debuginfodRoutes {
			tracked = append(tracked, route{pattern: p})
		}
		d.Metrics.track(tracked)
		d.Metrics.debugFiles.Store(d.DebugFileCache)
		d.Metrics.maps.Store(d.MapCache)
	}
	direct := directDispatch(d, drts)
	root := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if h := direct(r); h != nil {
			h.ServeHTTP(w, r)
			return
		}
		mux.ServeHTTP(w, r)
	})
	return logRequests(d.Log, d.Metrics, root)
}

// directDispatch returns the function that picks the direct route of a
// request, nil when none serves it: a route serves the paths that start
// with its pattern's path up to the first wildcard, or, when that is {$},
// GET and HEAD of that path alone.
func directDispatch(d Deps, drts []directRoute) func(*http.Request) http.Handler {
	type target struct {
		path  string
		exact bool
		h     http.Handler
	}
	targets := make([]target, len(drts))
	for i, rt := range drts {
		_, p, _ := strings.Cut(rt.pattern, " ")
		p, wildcard, found := strings.Cut(p, "{")
		targets[i] = target{path: p, exact: !found || wildcard == "$}", h: adaptDirect(d, rt)}
	}
	return func(r *http.Request) http.Handler {
		for _, t := range targets {
			switch {
			case t.exact && r.URL.Path == t.path && (r.Method == http.MethodGet || r.Method == http.MethodHead):
				return t.h
			case !t.exact && strings.HasPrefix(r.URL.Path, t.path):
				return t.h
			}
		}
		return nil
	}
}

// adaptDirect wraps a direct route's handler with the methods it answers
// (GET and HEAD), its access rule and the text error adapter. The handler
// may name the request by a route below its own (handleDebuginfod).
func adaptDirect(d Deps, rt directRoute) http.Handler {
	_, p, _ := strings.Cut(rt.pattern, " ")
	prefix, _, _ := strings.Cut(p, "{")
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.Pattern = rt.pattern
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			writeTextError(w, r, d.Log, errMethodNotAllowed)
			return
		}
		// A path below a direct route's prefix names the organization
		// first, as the handler reads it (symbolkey); the mux did not read
		// it, so authorize is told: the caller's scopes there are capped
		// by its role there, as on every other route.
		if rest, ok := strings.CutPrefix(r.URL.Path, prefix); ok {
			if org, _, _ := strings.Cut(rest, "/"); org != "" {
				if !isText(org) { // no statement is to receive it
					writeTextError(w, r, d.Log, badRequest("Invalid organization slug"))
					return
				}
				r.SetPathValue("organization_slug", org)
			}
		}
		ctx, err := authorize(d, rt.access, r)
		if err != nil {
			writeTextError(w, r, d.Log, err)
			return
		}
		rc := r.WithContext(ctx)
		err = rt.handler(w, rc)
		r.Pattern = rc.Pattern
		if err != nil {
			writeTextError(w, rc, d.Log, err)
		}
	})
}

// adapt wraps a route's handler with its access rule, the bound on bodies
// in flight per token and the error adapter.
func adapt(d Deps, rt route, bodies *bodyLimiter) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// An organization or project slug that PostgreSQL cannot hold as
		// text (invalid UTF-8, NUL) is pathSlug's 422 before any
		// statement, the role lookup of authorize's included, receives
		// it; the handlers read the other path values themselves.
		for _, name := range []string{"organization_slug", "project_slug"} {
			if !isText(r.PathValue(name)) {
				writeError(w, r, d.Log, invalid(valueErr, "Invalid slug", "path", name))
				return
			}
		}
		ctx, err := authorize(d, rt.access, r)
		if err != nil {
			writeError(w, r, d.Log, err)
			return
		}
		r = r.WithContext(ctx)
		if err := checkQueryText(r); err != nil {
			writeError(w, r, d.Log, err)
			return
		}
		if c, ok := authn.CallerFrom(ctx); ok && isUpload(r) {
			key := c.TokenID // a token's uploads, or a session's (negative ids)
			if c.SessionID != 0 {
				key = -c.SessionID
			}
			release, ok := bodies.acquire(r.Context(), key, uploadSlotWait)
			if !ok {
				writeError(w, r, d.Log, bodies.tooMany())
				return
			}
			defer release()
		}
		if err := rt.handler(w, r); err != nil {
			writeError(w, r, d.Log, err)
		}
	})
}

// checkQueryText refuses, on every route, a query key or value that
// PostgreSQL cannot hold as text (invalid UTF-8, NUL): 422 at its place,
// rather than a 500 from whichever statement would have received it.
func checkQueryText(r *http.Request) error {
	raw := r.URL.RawQuery
	if !strings.Contains(raw, "%") && isText(raw) {
		return nil // nothing escaped: the query is its own text
	}
	var bad []string
	for k, vs := range r.URL.Query() {
		if !isText(k) || slices.ContainsFunc(vs, func(v string) bool { return !isText(v) }) {
			bad = append(bad, k)
		}
	}
	if len(bad) == 0 {
		return nil
	}
	slices.Sort(bad)
	return invalid(valueErr, "Input should be text: UTF-8 without NUL characters", "query", bad[0])
}

// authorize applies a route's access rule: authentication, then scopes. On
// success it returns r's context, carrying the caller when there is one.
//
// The caller's scopes are decided here, in one place: in an organization
// (a route with {organization_slug}, numeric ids resolved first) those of
// authn.ScopesIn, the role's there for a session, a token's scopes within
// its role's; elsewhere a token's own and a session's roles' union. A
// caller who is not a member of the organization is left to the handler's
// 404.
func authorize(d Deps, a access, r *http.Request) (context.Context, error) {
	ctx := r.Context()
	if a.open {
		return ctx, nil
	}
	c, err := authenticate(d, a, r)
	switch {
	case errors.Is(err, authn.ErrNoCredential) && !a.token:
		return ctx, nil
	case errors.Is(err, authn.ErrNoCredential), errors.Is(err, authn.ErrBadCredential):
		return nil, errUnauthorized
	case errors.Is(err, authn.ErrCSRF):
		return nil, errPermissionDenied
	case err != nil:
		return nil, err
	}
	if a.sessionOnly && c.SessionID == 0 {
		return nil, errPermissionDenied // a person acts, not a token
	}
	if a.recentSession {
		// Credential management: a session, never a token, that proved
		// who it is recently (docs/accounts.md).
		if c.SessionID == 0 {
			return nil, errPermissionDenied
		}
		if !c.RecentlyAuthenticated(d.Now()) {
			return nil, &apiError{status: http.StatusUnauthorized, detail: "Reauthentication required"}
		}
	}
	if err := resolveIDs(d, r, c.UserID); err != nil {
		return nil, err
	}
	if c.Scopes, err = d.Auth.ScopesIn(ctx, c, r.PathValue("organization_slug")); err != nil {
		return nil, err
	}
	if len(a.scopes) > 0 && !c.HasAny(a.scopes) {
		return nil, errPermissionDenied
	}
	return authn.WithCaller(ctx, c), nil
}

// authenticate reads the credential of r: a token when r has an
// Authorization header (never judged by cookies), else a session (its
// cookie, with the CSRF check of unsafe methods, or X-Session-Token).
func authenticate(d Deps, a access, r *http.Request) (authn.Caller, error) {
	if r.Header.Get("Authorization") == "" {
		return d.Auth.AuthenticateSession(r)
	}
	if a.basic {
		return d.Auth.AuthenticateBearerOrBasic(r)
	}
	return d.Auth.Authenticate(r)
}

// caller returns the authenticated caller of r; routes that need a token
// always have one.
func caller(r *http.Request) authn.Caller {
	c, _ := authn.CallerFrom(r.Context())
	return c
}

// statusWriter records the status of a response and turns the mux's own
// text/plain 404 and 405 answers into the contract's JSON ones.
type statusWriter struct {
	http.ResponseWriter
	r       *http.Request
	status  int
	swallow bool // the mux's text body is being discarded
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status != 0 {
		return
	}
	w.status = code
	if w.r.Pattern == "" && (code == http.StatusNotFound || code == http.StatusMethodNotAllowed) {
		body := `{"detail":"Not Found"}` + "\n"
		if code == http.StatusMethodNotAllowed {
			body = `{"detail":"Method Not Allowed"}` + "\n"
		}
		if strings.HasPrefix(w.r.URL.Path, "/_allauth/") {
			// The sign-in API answers in allauth's envelope.
			body = `{"status":` + strconv.Itoa(code) + "}\n"
		}
		h := w.Header()
		h.Set("Content-Type", "application/json")
		h.Set("Content-Length", strconv.Itoa(len(body)))
		h.Del("X-Content-Type-Options")
		w.ResponseWriter.WriteHeader(code)
		w.ResponseWriter.Write([]byte(body)) //nolint:errcheck // the client went away
		w.swallow = true
		return
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.WriteHeader(http.StatusOK)
	}
	if w.swallow {
		return len(b), nil
	}
	return w.ResponseWriter.Write(b)
}

// ReadFrom hands a copy to the underlying writer's ReadFrom, which sends
// a file to a plain TCP connection with sendfile(2), from the page cache
// without copying it through errata's memory.
func (w *statusWriter) ReadFrom(src io.Reader) (int64, error) {
	if w.status == 0 {
		w.WriteHeader(http.StatusOK)
	}
	if w.swallow {
		return io.Copy(io.Discard, src)
	}
	if rf, ok := w.ResponseWriter.(io.ReaderFrom); ok {
		return rf.ReadFrom(src)
	}
	return io.Copy(struct{ io.Writer }{w.ResponseWriter}, src)
}

// Unwrap lets http.ResponseController reach the underlying writer.
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

var requestIDPattern = regexp.MustCompile(`^[A-Za-z0-9._-]{1,64}$`)

// logRequests gives each request an id, recovers panics into 500 answers
// and writes one JSON log line per request; with metrics (m not nil) it
// also counts the request. It logs the route pattern, never the path, which
// may carry a confirmation key.
func logRequests(log *slog.Logger, m *Metrics, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		id := r.Header.Get("X-Request-Id")
		if !requestIDPattern.MatchString(id) {
			b := make([]byte, 8)
			rand.Read(b)
			id = hex.EncodeToString(b)
		}
		h := w.Header()
		h.Set("X-Request-Id", id)
		// No answer is to be sniffed as another type; no API answer is to
		// be kept by a cache: some carry secrets (recovery codes) and all
		// are the caller's. A handler may say otherwise for its own
		// (the OpenAPI document).
		h.Set("X-Content-Type-Options", "nosniff")
		if strings.HasPrefix(r.URL.Path, "/api/") {
			h.Set("Cache-Control", "no-store")
		}
		sw := &statusWriter{ResponseWriter: w, r: r}
		defer func() {
			if p := recover(); p != nil {
				if p == http.ErrAbortHandler {
					panic(p)
				}
				log.Error("panic", "request_id", id, "panic", p)
				if sw.status == 0 {
					writeJSON(sw, r, log, http.StatusInternalServerError, detail{"Internal Server Error"})
				}
			}
			if m != nil {
				m.observe(r.Pattern, r.Method, sw.status, start)
			}
			pattern := r.Pattern
			if pattern == "" {
				pattern = "unmatched"
			}
			log.Info("request", "request_id", id, "method", r.Method, "route", pattern,
				"status", sw.status, "duration_ms", float64(time.Since(start).Microseconds())/1000)
		}()
		next.ServeHTTP(sw, r)
		if sw.status == 0 {
			sw.status = http.StatusOK
		}
	})
}

// resolveIDs replaces an organization or project path value that is a
// number by the slug of the caller's organization or project of that id:
// Sentry takes either wherever it takes a slug (sentry-cli sends ids for
// `-o 1` and `-p 1`). A value that names nothing of the caller's is left
// as it is, for the handler's 404; any other failure (the database is
// unreachable) is the request's error, a 503, not a 404.
func resolveIDs(d Deps, r *http.Request, userID int64) error {
	org, project := r.PathValue("organization_slug"), r.PathValue("project_slug")
	if !isDecimal(org) && !isDecimal(project) {
		return nil
	}
	orgSlug, projectSlug, err := d.Store.ResolveSlugs(r.Context(), userID, org, project)
	if errors.Is(err, store.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	r.SetPathValue("organization_slug", orgSlug)
	if project != "" {
		r.SetPathValue("project_slug", projectSlug)
	}
	return nil
}

// isDecimal reports whether s is a non-empty run of decimal digits.
func isDecimal(s string) bool {
	return s != "" && len(s) <= 19 && strings.Trim(s, "0123456789") == ""
}
