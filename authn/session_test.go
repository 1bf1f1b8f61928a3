package authn

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"errata/store"
	"errata/store/storetest"
)

func TestSessionIDs(t *testing.T) {
	id, hash := NewSessionID()
	if len(id) != 43 || strings.ContainsAny(id, "+/=") {
		t.Errorf("id %q: want 43 characters of base64url", id)
	}
	got, ok := ParseSessionID(id)
	if !ok || string(got) != string(hash) || string(hash) != string(Hash(id)) {
		t.Error("ParseSessionID does not give the hash NewSessionID gave")
	}
	other, _ := NewSessionID()
	if other == id {
		t.Error("two ids are equal")
	}
	token, _ := NewToken() // an API token is never taken for a session id
	for _, bad := range []string{"", id[:42], id + "A", strings.Repeat("+", 43), id[:42] + "=", token} {
		if _, ok := ParseSessionID(bad); ok {
			t.Errorf("ParseSessionID(%q) accepted", bad)
		}
	}
}

func FuzzParseSessionID(f *testing.F) {
	id, _ := NewSessionID()
	f.Add(id)
	f.Add("")
	f.Add(strings.Repeat("A", 43))
	f.Add(strings.Repeat("_", 44))
	f.Fuzz(func(t *testing.T, s string) {
		hash, ok := ParseSessionID(s)
		if ok != (hash != nil) {
			t.Fatalf("ok %v with hash %x", ok, hash)
		}
		if ok && (len(s) != 43 || len(hash) != 32) {
			t.Fatalf("accepted %q", s)
		}
	})
}

func TestSessionCookie(t *testing.T) {
	cases := []struct {
		publicURL, name string
		secure          bool
	}{
		{"", SessionCookieName, false},
		{"http://errata.test:8000", SessionCookieName, false},
		{"https://errata.example", SecureSessionCookieName, true},
	}
	for _, tc := range cases {
		a := &Authenticator{Sessions: SessionConfig{PublicURL: tc.publicURL}}
		until := time.Now().Add(time.Hour)
		c := a.SessionCookie("ID", until)
		if c.Name != tc.name || c.Secure != tc.secure || !c.HttpOnly || c.SameSite != http.SameSiteLaxMode ||
			c.Path != "/" || c.Domain != "" || !c.Expires.Equal(until) {
			t.Errorf("%q: cookie %+v", tc.publicURL, c)
		}
		if gone := a.SessionCookie("", time.Time{}); gone.MaxAge >= 0 || gone.Name != tc.name {
			t.Errorf("%q: removal %+v", tc.publicURL, gone)
		}
		csrf := a.CSRFCookie(httptest.NewRequest("GET", "/", nil))
		if csrf == nil || csrf.Name != CSRFCookieName || csrf.HttpOnly || csrf.Secure != tc.secure ||
			csrf.SameSite != http.SameSiteLaxMode || !wellFormedCSRF(csrf.Value) {
			t.Errorf("%q: CSRF cookie %+v", tc.publicURL, csrf)
		}
	}
}

// sessionEnv is a database with a user ann of organization acme, where she
// is a member, and owner of beta.
type sessionEnv struct {
	st   *store.Store
	url  string
	user int64
}

func newSessionEnv(t *testing.T) sessionEnv {
	t.Helper()
	ctx := context.Background()
	st, url := storetest.NewWithURL(t)
	user, err := st.CreateUser(ctx, "ann@example.com", "Ann")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.CreateUser(ctx, "own@example.com", "Owner"); err != nil {
		t.Fatal(err)
	}
	if _, err := st.CreateOrganization(ctx, "acme", "Acme", "own@example.com"); err != nil {
		t.Fatal(err)
	}
	if err := st.AddMember(ctx, "acme", "ann@example.com", "member"); err != nil {
		t.Fatal(err)
	}
	if _, err := st.CreateOrganization(ctx, "beta", "Beta", "ann@example.com"); err != nil {
		t.Fatal(err)
	}
	return sessionEnv{st: st, url: url, user: user}
}

// request returns a request carrying the session id as client sends it.
func sessionRequest(method, client, id string) *http.Request {
	r := httptest.NewRequest(method, "http://errata.test/api/0/", nil)
	if client == ClientApp {
		r.Header.Set(SessionTokenHeader, id)
	} else {
		r.AddCookie(&http.Cookie{Name: SessionCookieName, Value: id})
	}
	return r
}

func TestSessions(t *testing.T) {
	e := newSessionEnv(t)
	ctx := context.Background()
	a := &Authenticator{Store: e.st}

	t.Run("a session authenticates by cookie or header", func(t *testing.T) {
		id, s, err := a.StartSession(ctx, NewSession{UserID: e.user, Client: ClientBrowser, UserAgent: "curl", IP: "192.0.2.1"})
		if err != nil {
			t.Fatal(err)
		}
		if d := time.Until(s.ExpiresAt) - DefaultSessionLifetime; d > time.Minute || d < -time.Minute {
			t.Errorf("expires at %v, want in 14 days", s.ExpiresAt)
		}
		for _, client := range []string{ClientBrowser, ClientApp} {
			c, err := a.AuthenticateSession(sessionRequest("GET", client, id))
			if err != nil || c.UserID != e.user || c.SessionID != s.ID || c.TokenID != 0 || c.AuthenticatedAt.IsZero() {
				t.Errorf("%s: %+v, %v", client, c, err)
			}
		}
		if _, err := a.AuthenticateSession(sessionRequest("GET", ClientApp, "garbage")); !errors.Is(err, ErrNoCredential) {
			t.Errorf("a malformed id: %v, want ErrNoCredential", err)
		}
		if _, err := a.AuthenticateSession(httptest.NewRequest("GET", "/", nil)); !errors.Is(err, ErrNoCredential) {
			t.Errorf("no session: %v, want ErrNoCredential", err)
		}
	})

	t.Run("a cookie's unsafe request needs the CSRF token, the header's does not", func(t *testing.T) {
		id, _, err := a.StartSession(ctx, NewSession{UserID: e.user, Client: ClientBrowser})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := a.AuthenticateSession(sessionRequest("POST", ClientBrowser, id)); !errors.Is(err, ErrCSRF) {
			t.Errorf("cookie POST without a token: %v, want ErrCSRF", err)
		}
		r := sessionRequest("POST", ClientBrowser, id)
		token := NewCSRFToken()
		r.AddCookie(&http.Cookie{Name: CSRFCookieName, Value: token})
		r.Header.Set(CSRFHeader, token)
		if _, err := a.AuthenticateSession(r); err != nil {
			t.Errorf("cookie POST with its token: %v", err)
		}
		if _, err := a.AuthenticateSession(sessionRequest("POST", ClientApp, id)); err != nil {
			t.Errorf("X-Session-Token POST: %v", err)
		}
	})

	t.Run("a pending sign-in authenticates nothing until rotated", func(t *testing.T) {
		id, s, err := a.StartSession(ctx, NewSession{UserID: e.user, Client: ClientApp, Pending: true})
		if err != nil {
			t.Fatal(err)
		}
		if d := time.Until(s.ExpiresAt); d > PendingSignInTime || d < PendingSignInTime-time.Minute {
			t.Errorf("pending sign-in expires in %v, want 15 minutes", d)
		}
		if _, err := a.AuthenticateSession(sessionRequest("GET", ClientApp, id)); !errors.Is(err, ErrNoCredential) {
			t.Errorf("pending: %v, want ErrNoCredential", err)
		}
		if _, _, err := a.RotateSession(ctx, id, store.SessionAuthenticated); !errors.Is(err, ErrSessionGone) {
			t.Errorf("rotating a pending sign-in as a reauthentication: %v, want ErrSessionGone", err)
		}
		newID, s, err := a.RotateSession(ctx, id, store.SessionPending)
		if err != nil || s.State != store.SessionAuthenticated || time.Until(s.ExpiresAt) < DefaultSessionLifetime-time.Minute {
			t.Fatalf("rotation: %+v, %v", s, err)
		}
		if _, err := a.AuthenticateSession(sessionRequest("GET", ClientApp, id)); !errors.Is(err, ErrNoCredential) {
			t.Errorf("the old id: %v, want ErrNoCredential", err)
		}
		if c, err := a.AuthenticateSession(sessionRequest("GET", ClientApp, newID)); err != nil || c.SessionID != s.ID {
			t.Errorf("the new id: %+v, %v", c, err)
		}
	})

	t.Run("concurrent rotations of one id: one wins", func(t *testing.T) {
		id, _, err := a.StartSession(ctx, NewSession{UserID: e.user, Client: ClientApp})
		if err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		var mu sync.Mutex
		wins := 0
		for range 6 {
			wg.Go(func() {
				_, _, err := a.RotateSession(ctx, id, store.SessionAuthenticated)
				switch {
				case err == nil:
					mu.Lock()
					wins++
					mu.Unlock()
				case !errors.Is(err, ErrSessionGone):
					t.Errorf("rotation: %v", err)
				}
			})
		}
		wg.Wait()
		if wins != 1 {
			t.Errorf("%d rotations won, want 1", wins)
		}
	})

	t.Run("ended, idle and old sessions stop working", func(t *testing.T) {
		id, _, err := a.StartSession(ctx, NewSession{UserID: e.user, Client: ClientApp})
		if err != nil {
			t.Fatal(err)
		}
		if err := a.EndSession(ctx, id); err != nil {
			t.Fatal(err)
		}
		if _, err := a.Session(ctx, id); !errors.Is(err, ErrNoCredential) {
			t.Errorf("ended: %v, want ErrNoCredential", err)
		}
		short := &Authenticator{Store: e.st, Sessions: SessionConfig{IdleTimeout: time.Hour, Lifetime: 2 * time.Hour}}
		id, s, err := short.StartSession(ctx, NewSession{UserID: e.user, Client: ClientApp})
		if err != nil {
			t.Fatal(err)
		}
		storetest.Exec(t, e.url, `UPDATE sessions SET last_seen_at = now() - interval '61 minutes' WHERE id = $1`, s.ID)
		if _, err := short.Session(ctx, id); !errors.Is(err, ErrNoCredential) {
			t.Errorf("idle past the timeout: %v, want ErrNoCredential", err)
		}
		if _, err := a.Session(ctx, id); err != nil {
			t.Errorf("within the default idle timeout: %v", err)
		}
		storetest.Exec(t, e.url, `UPDATE sessions SET expires_at = now() WHERE id = $1`, s.ID)
		if _, err := a.Session(ctx, id); !errors.Is(err, ErrNoCredential) {
			t.Errorf("past its lifetime: %v, want ErrNoCredential", err)
		}
	})
}

func TestRoleScopes(t *testing.T) {
	member := RoleScopes("member")
	admin, manager, owner := RoleScopes("admin"), RoleScopes("manager"), RoleScopes("owner")
	for _, pair := range [][2][]string{{member, admin}, {admin, manager}, {manager, owner}} {
		for _, s := range pair[0] {
			if len(intersect([]string{s}, pair[1])) == 0 {
				t.Errorf("%s of a lower role is missing above it", s)
			}
		}
	}
	for _, s := range append([]string{"org:integrations"}, Scopes...) {
		if len(intersect([]string{s}, owner)) == 0 {
			t.Errorf("owner lacks %s", s)
		}
	}
	for role, want := range map[string][]string{
		"member":  {"org:read", "project:read", "project:releases", "event:admin"},
		"admin":   {"project:write", "project:admin", "team:admin", "org:integrations"},
		"manager": {"member:write", "member:admin", "org:write"},
	} {
		if got := intersect(want, RoleScopes(role)); len(got) != len(want) {
			t.Errorf("%s has %v of %v", role, got, want)
		}
	}
	for role, not := range map[string][]string{
		"member":  {"project:write", "org:write", "member:write", "org:admin"},
		"admin":   {"org:write", "member:write", "org:admin"},
		"manager": {"org:admin"},
	} {
		if got := intersect(not, RoleScopes(role)); len(got) != 0 {
			t.Errorf("%s has %v", role, got)
		}
	}
	if RoleScopes("king") != nil {
		t.Error("an unknown role has scopes")
	}
}

func TestScopesIn(t *testing.T) {
	e := newSessionEnv(t)
	ctx := context.Background()
	a := &Authenticator{Store: e.st, CacheFor: time.Hour}
	session := Caller{UserID: e.user, SessionID: 1}
	token := Caller{UserID: e.user, TokenID: 1, Scopes: []string{"org:read", "org:write", "project:write"}}
	cases := []struct {
		name   string
		caller Caller
		org    string
		want   []string
	}{
		{"a session holds its role's scopes", session, "acme", RoleScopes("member")},
		{"a session as owner", session, "beta", RoleScopes("owner")},
		{"a session outside organizations: the union", session, "", RolesScopes([]string{"member", "owner"})},
		{"a session in another organization: the union", session, "nope", RolesScopes([]string{"owner"})},
		{"a token's scopes within its role's", token, "acme", []string{"org:read"}},
		{"a token of an owner keeps its scopes", token, "beta", token.Scopes},
		{"a token outside organizations", token, "", token.Scopes},
		{"a token in another organization", token, "nope", token.Scopes},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := a.ScopesIn(ctx, tc.caller, tc.org)
			if err != nil {
				t.Fatal(err)
			}
			if strings.Join(got, " ") != strings.Join(tc.want, " ") {
				t.Errorf("ScopesIn = %v, want %v", got, tc.want)
			}
		})
	}
	t.Run("a role change holds once the user is forgotten", func(t *testing.T) {
		if err := e.st.AddMember(ctx, "acme", "ann@example.com", "manager"); err != nil {
			t.Fatal(err)
		}
		if got, _ := a.ScopesIn(ctx, session, "acme"); len(got) != len(RoleScopes("member")) {
			t.Errorf("within the cache: %v, want the cached member's", got)
		}
		a.ForgetUser(e.user)
		if got, _ := a.ScopesIn(ctx, session, "acme"); strings.Join(got, " ") != strings.Join(RoleScopes("manager"), " ") {
			t.Errorf("after ForgetUser: %v, want the manager's", got)
		}
	})
	t.Run("require2FA refuses a member without TOTP, as cached roles do", func(t *testing.T) {
		if _, err := e.st.ActivateTOTP(ctx, e.user, []byte{1}, 0, []byte{1}); err != nil {
			t.Fatal(err)
		}
		on, off := true, false
		if _, err := e.st.UpdateOrganization(ctx, e.user, "beta", store.OrganizationUpdate{Require2FA: &on}); err != nil {
			t.Fatal(err)
		}
		if _, err := a.ScopesIn(ctx, token, "beta"); err != nil {
			t.Fatalf("with TOTP: %v", err)
		}
		if err := e.st.DeleteTOTP(ctx, e.user); err != nil {
			t.Fatal(err)
		}
		a.ForgetUser(e.user)
		for _, c := range []Caller{session, token} {
			if _, err := a.ScopesIn(ctx, c, "beta"); !errors.Is(err, ErrTwoFactorRequired) {
				t.Errorf("without TOTP: %v, want ErrTwoFactorRequired", err)
			}
		}
		if _, err := a.ScopesIn(ctx, session, "acme"); err != nil {
			t.Errorf("an organization that does not require it: %v", err)
		}
		if _, err := e.st.UpdateOrganization(ctx, e.user, "beta", store.OrganizationUpdate{Require2FA: &off}); err != nil {
			t.Fatal(err)
		}
		if _, err := a.ScopesIn(ctx, session, "beta"); !errors.Is(err, ErrTwoFactorRequired) {
			t.Errorf("within the cache: %v, want the cached refusal", err)
		}
		a.ForgetOrganization("beta")
		if got, err := a.ScopesIn(ctx, session, "beta"); err != nil || strings.Join(got, " ") != strings.Join(RoleScopes("owner"), " ") {
			t.Errorf("after ForgetOrganization: %v, %v, want the owner's", got, err)
		}
	})
}
