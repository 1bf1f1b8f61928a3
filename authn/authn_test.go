package authn

import (
	"context"
	"encoding/base64"
	"errors"
	"net/http/httptest"
	"testing"
	"time"

	"errata/store"
	"errata/store/storetest"
)

// tokenEnv is a database with one user and a token of theirs.
type tokenEnv struct {
	st    *store.Store
	url   string
	user  int64
	token string
}

func newTokenEnv(t *testing.T) tokenEnv {
	t.Helper()
	st, url := storetest.NewWithURL(t)
	user, err := st.CreateUser(context.Background(), "dev@example.com", "Dev")
	if err != nil {
		t.Fatal(err)
	}
	token, hash := NewToken()
	if _, err := st.CreateToken(context.Background(), "dev@example.com", hash, []string{"org:read"}, "test"); err != nil {
		t.Fatal(err)
	}
	return tokenEnv{st: st, url: url, user: user, token: token}
}

// authenticate runs a with the env's token.
func (e tokenEnv) authenticate(a *Authenticator) error {
	r := httptest.NewRequest("GET", "/api/0/", nil)
	r.Header.Set("Authorization", "Bearer "+e.token)
	c, err := a.Authenticate(r)
	if err == nil && c.UserID != e.user {
		return errors.New("authenticated as another user")
	}
	return err
}

// deactivate makes the env's user inactive in the database.
func (e tokenEnv) deactivate(t *testing.T) {
	t.Helper()
	storetest.Exec(t, e.url, `UPDATE users SET is_active = false WHERE id = $1`, e.user)
}

func TestTokenCache(t *testing.T) {
	t.Run("without a cache a deactivated user's token stops at once", func(t *testing.T) {
		e := newTokenEnv(t)
		a := &Authenticator{Store: e.st}
		if err := e.authenticate(a); err != nil {
			t.Fatal(err)
		}
		e.deactivate(t)
		if err := e.authenticate(a); !errors.Is(err, ErrBadCredential) {
			t.Fatalf("err = %v, want ErrBadCredential", err)
		}
	})
	t.Run("a cached token works until its time is up", func(t *testing.T) {
		e := newTokenEnv(t)
		a := &Authenticator{Store: e.st, CacheFor: 200 * time.Millisecond}
		if err := e.authenticate(a); err != nil {
			t.Fatal(err)
		}
		e.deactivate(t)
		if err := e.authenticate(a); err != nil {
			t.Fatalf("within the cache time: %v", err)
		}
		time.Sleep(250 * time.Millisecond)
		if err := e.authenticate(a); !errors.Is(err, ErrBadCredential) {
			t.Fatalf("after the cache time: err = %v, want ErrBadCredential", err)
		}
	})
	t.Run("ForgetUser ends a cached token at once", func(t *testing.T) {
		e := newTokenEnv(t)
		a := &Authenticator{Store: e.st, CacheFor: time.Hour}
		if err := e.authenticate(a); err != nil {
			t.Fatal(err)
		}
		e.deactivate(t)
		a.ForgetUser(e.user)
		if err := e.authenticate(a); !errors.Is(err, ErrBadCredential) {
			t.Fatalf("err = %v, want ErrBadCredential", err)
		}
	})
	t.Run("an unknown token is not cached", func(t *testing.T) {
		e := newTokenEnv(t)
		a := &Authenticator{Store: e.st, CacheFor: time.Hour}
		unknown, hash := NewToken()
		r := httptest.NewRequest("GET", "/api/0/", nil)
		r.Header.Set("Authorization", "Bearer "+unknown)
		if _, err := a.Authenticate(r); !errors.Is(err, ErrBadCredential) {
			t.Fatalf("unknown token: err = %v, want ErrBadCredential", err)
		}
		if _, err := e.st.CreateToken(context.Background(), "dev@example.com", hash, []string{"org:read"}, "later"); err != nil {
			t.Fatal(err)
		}
		if _, err := a.Authenticate(r); err != nil {
			t.Fatalf("the token once created: %v", err)
		}
	})
	t.Run("a cached token is not touched again within the minute", func(t *testing.T) {
		e := newTokenEnv(t)
		a := &Authenticator{Store: e.st, CacheFor: time.Hour}
		if err := e.authenticate(a); err != nil {
			t.Fatal(err)
		}
		storetest.Exec(t, e.url, `UPDATE api_tokens SET last_used = now() - interval '2 minutes'`)
		// The cache believes the token was used just now: no touch.
		if err := e.authenticate(a); err != nil {
			t.Fatal(err)
		}
		tok, err := e.st.TokenByHash(context.Background(), Hash(e.token))
		if err != nil {
			t.Fatal(err)
		}
		if time.Since(*tok.LastUsed) < time.Minute {
			t.Errorf("last_used = %v: touched again within the minute", tok.LastUsed)
		}
	})
}

// TestAuthenticateBearerOrBasic: the routes of debuggers take the token as
// a Basic password too, under any user name; the API's Authenticate
// refuses Basic.
func TestAuthenticateBearerOrBasic(t *testing.T) {
	e := newTokenEnv(t)
	a := &Authenticator{Store: e.st}
	basic := func(userPass string) string {
		return "Basic " + base64.StdEncoding.EncodeToString([]byte(userPass))
	}
	for _, tc := range []struct {
		name, header string
		want         error // nil: the env's user
	}{
		{"Bearer", "Bearer " + e.token, nil},
		{"Basic with the token as password", basic("gdb:" + e.token), nil},
		{"Basic in lower case, no user name", "basic " + basic(":" + e.token)[len("Basic "):], nil},
		{"Basic with spaces around the token", basic("gdb: " + e.token + " "), nil},
		{"no credential", "", ErrNoCredential},
		{"Basic that is not base64", "Basic %%%", ErrBadCredential},
		{"Basic without a colon", basic(e.token), ErrBadCredential},
		{"Basic with an empty password", basic("gdb:"), ErrBadCredential},
		{"Basic with a password that is no token", basic("gdb:nothing"), ErrBadCredential},
		{"Basic alone", "Basic", ErrBadCredential},
		{"another scheme", "Token " + e.token, ErrBadCredential},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := httptest.NewRequest("GET", "/debuginfod/", nil)
			if tc.header != "" {
				r.Header.Set("Authorization", tc.header)
			}
			c, err := a.AuthenticateBearerOrBasic(r)
			if tc.want != nil {
				if !errors.Is(err, tc.want) {
					t.Fatalf("err = %v, want %v", err, tc.want)
				}
				return
			}
			if err != nil || c.UserID != e.user {
				t.Fatalf("caller %+v, err %v; want user %d", c, err, e.user)
			}
		})
	}
	t.Run("Authenticate refuses Basic", func(t *testing.T) {
		r := httptest.NewRequest("GET", "/api/0/", nil)
		r.Header.Set("Authorization", basic("gdb:"+e.token))
		if _, err := a.Authenticate(r); !errors.Is(err, ErrBadCredential) {
			t.Fatalf("err = %v, want ErrBadCredential", err)
		}
	})
}

// TestTokenExpiry: a token past its expires_at does not authenticate, and
// a cached one stops at its expiry, not a cache period later.
func TestTokenExpiry(t *testing.T) {
	t.Run("a token past its expiry is refused by the lookup", func(t *testing.T) {
		e := newTokenEnv(t)
		a := &Authenticator{Store: e.st}
		storetest.Exec(t, e.url, `UPDATE api_tokens SET expires_at = now() - interval '1 second'`)
		if err := e.authenticate(a); !errors.Is(err, ErrBadCredential) {
			t.Fatalf("err = %v, want ErrBadCredential", err)
		}
	})
	t.Run("a token before its expiry works", func(t *testing.T) {
		e := newTokenEnv(t)
		a := &Authenticator{Store: e.st}
		storetest.Exec(t, e.url, `UPDATE api_tokens SET expires_at = now() + interval '1 hour'`)
		if err := e.authenticate(a); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("a cached token stops at its expiry", func(t *testing.T) {
		e := newTokenEnv(t)
		a := &Authenticator{Store: e.st, CacheFor: time.Hour}
		expires := time.Now().Add(300 * time.Millisecond)
		storetest.Exec(t, e.url, `UPDATE api_tokens SET expires_at = $1`, expires)
		if err := e.authenticate(a); err != nil {
			t.Fatalf("before its expiry: %v", err)
		}
		time.Sleep(time.Until(expires) + 20*time.Millisecond)
		if err := e.authenticate(a); !errors.Is(err, ErrBadCredential) {
			t.Fatalf("after its expiry, within the cache time: err = %v, want ErrBadCredential", err)
		}
	})
	t.Run("ForgetToken ends a cached token at once", func(t *testing.T) {
		e := newTokenEnv(t)
		a := &Authenticator{Store: e.st, CacheFor: time.Hour}
		if err := e.authenticate(a); err != nil {
			t.Fatal(err)
		}
		tok, err := e.st.TokenByHash(context.Background(), Hash(e.token))
		if err != nil {
			t.Fatal(err)
		}
		if err := e.st.DeleteUserToken(context.Background(), e.user, tok.ID); err != nil {
			t.Fatal(err)
		}
		a.ForgetToken(tok.ID)
		if err := e.authenticate(a); !errors.Is(err, ErrBadCredential) {
			t.Fatalf("err = %v, want ErrBadCredential", err)
		}
	})
}

// TestRecentlyAuthenticated: only a session is recently authenticated, and
// only within RecentAuthentication of its last proof.
func TestRecentlyAuthenticated(t *testing.T) {
	now := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name   string
		caller Caller
		want   bool
	}{
		{"a token", Caller{UserID: 1, TokenID: 2}, false},
		{"a token with a time", Caller{UserID: 1, TokenID: 2, AuthenticatedAt: now}, false},
		{"a session just authenticated", Caller{UserID: 1, SessionID: 3, AuthenticatedAt: now}, true},
		{"a session at the limit", Caller{UserID: 1, SessionID: 3, AuthenticatedAt: now.Add(-RecentAuthentication)}, true},
		{"a session past the limit", Caller{UserID: 1, SessionID: 3, AuthenticatedAt: now.Add(-RecentAuthentication - time.Second)}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.caller.RecentlyAuthenticated(now); got != tc.want {
				t.Errorf("RecentlyAuthenticated = %t, want %t", got, tc.want)
			}
		})
	}
}
