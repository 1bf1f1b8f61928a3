package store_test

import (
	"context"
	"crypto/sha256"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"errata/store"
	"errata/store/storetest"
)

// sessionHash is a stand-in for the SHA-256 of a session id.
func sessionHash(id string) []byte {
	sum := sha256.Sum256([]byte(id))
	return sum[:]
}

func TestSessionLifecycle(t *testing.T) {
	ctx := context.Background()
	st, db := storetest.NewWithURL(t)
	ann, err := st.CreateUser(ctx, "ann@example.com", "Ann")
	if err != nil {
		t.Fatal(err)
	}
	bob, err := st.CreateUser(ctx, "bob@example.com", "Bob")
	if err != nil {
		t.Fatal(err)
	}
	later := time.Now().Add(time.Hour)
	create := func(user int64, id string) store.Session {
		t.Helper()
		s, err := st.CreateSession(ctx, sessionHash(id), store.NewSession{
			UserID: user, Client: "browser", State: store.SessionAuthenticated, ExpiresAt: later,
			UserAgent: strings.Repeat("é", 300) + "\xff\x00", IP: "192.0.2.1",
		})
		if err != nil {
			t.Fatalf("create %s: %v", id, err)
		}
		return s
	}
	a1 := create(ann, "a1")
	if a1.UserAgent != strings.Repeat("é", 256) || a1.IP != "192.0.2.1" || a1.State != store.SessionAuthenticated {
		t.Errorf("created %+v, want the agent cut to 512 bytes and the address kept", a1)
	}

	t.Run("found by its hash alone", func(t *testing.T) {
		got, err := st.SessionByHash(ctx, sessionHash("a1"), time.Hour)
		if err != nil || got.ID != a1.ID || got.UserID != ann {
			t.Fatalf("SessionByHash = %+v, %v", got, err)
		}
		if _, err := st.SessionByHash(ctx, sessionHash("nope"), time.Hour); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("unknown hash: %v, want ErrNotFound", err)
		}
		if n := storetest.Count(t, db, `SELECT count(*) FROM sessions WHERE id_hash = $1`, []byte("a1")); n != 0 {
			t.Error("the id itself is stored")
		}
	})

	t.Run("idle and expired sessions are not found", func(t *testing.T) {
		s := create(ann, "idle")
		storetest.Exec(t, db, `UPDATE sessions SET last_seen_at = now() - interval '2 hours' WHERE id = $1`, s.ID)
		if _, err := st.SessionByHash(ctx, sessionHash("idle"), time.Hour); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("idle session: %v, want ErrNotFound", err)
		}
		if _, err := st.SessionByHash(ctx, sessionHash("idle"), 3*time.Hour); err != nil {
			t.Errorf("session within a longer idle timeout: %v", err)
		}
		e := create(ann, "expired")
		storetest.Exec(t, db, `UPDATE sessions SET expires_at = now() - interval '1 second' WHERE id = $1`, e.ID)
		if _, err := st.SessionByHash(ctx, sessionHash("expired"), time.Hour); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("expired session: %v, want ErrNotFound", err)
		}
		n, err := st.SweepSessions(ctx, time.Hour, 1)
		if err != nil || n != 1 {
			t.Errorf("SweepSessions = %d, %v; want 1, its batch", n, err)
		}
		n, err = st.SweepSessions(ctx, time.Hour, 100)
		if err != nil || n != 1 {
			t.Errorf("SweepSessions = %d, %v; want the other one", n, err)
		}
	})

	t.Run("an inactive user's session is not found", func(t *testing.T) {
		create(bob, "b-inactive")
		storetest.Exec(t, db, `UPDATE users SET is_active = false WHERE id = $1`, bob)
		defer storetest.Exec(t, db, `UPDATE users SET is_active = true WHERE id = $1`, bob)
		if _, err := st.SessionByHash(ctx, sessionHash("b-inactive"), time.Hour); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("inactive user's session: %v, want ErrNotFound", err)
		}
		if _, err := st.CreateSession(ctx, sessionHash("b-new"), store.NewSession{
			UserID: bob, Client: "app", State: store.SessionAuthenticated, ExpiresAt: later,
		}); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("a session of an inactive user: %v, want ErrNotFound", err)
		}
	})

	t.Run("touch writes at most once in its interval", func(t *testing.T) {
		storetest.Exec(t, db, `UPDATE sessions SET last_seen_at = now() - interval '30 seconds' WHERE id = $1`, a1.ID)
		if err := st.TouchSession(ctx, a1.ID, time.Minute); err != nil {
			t.Fatal(err)
		}
		if n := storetest.Count(t, db, `SELECT count(*) FROM sessions WHERE id = $1 AND last_seen_at < now() - interval '20 seconds'`, a1.ID); n != 1 {
			t.Error("a session seen 30 s ago was touched within a minute")
		}
		if err := st.TouchSession(ctx, a1.ID, 10*time.Second); err != nil {
			t.Fatal(err)
		}
		if n := storetest.Count(t, db, `SELECT count(*) FROM sessions WHERE id = $1 AND last_seen_at > now() - interval '5 seconds'`, a1.ID); n != 1 {
			t.Error("a session seen 30 s ago was not touched with an interval of 10 s")
		}
	})

	t.Run("an authenticated session is a sign-in, a pending one not yet", func(t *testing.T) {
		if n := storetest.Count(t, db, `SELECT count(*) FROM users WHERE id = $1 AND last_login IS NOT NULL`, ann); n != 1 {
			t.Error("ann's sign-ins did not set last_login")
		}
		cara, err := st.CreateUser(ctx, "cara@example.com", "Cara")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := st.CreateSession(ctx, sessionHash("cara-pending"), store.NewSession{
			UserID: cara, Client: "app", State: store.SessionPending, ExpiresAt: later,
		}); err != nil {
			t.Fatal(err)
		}
		if n := storetest.Count(t, db, `SELECT count(*) FROM users WHERE id = $1 AND last_login IS NOT NULL`, cara); n != 0 {
			t.Error("a pending sign-in set last_login")
		}
		storetest.Exec(t, db, `UPDATE users SET last_login = NULL WHERE id = $1`, ann)
	})

	t.Run("rotation: the old id stops working, one of two wins", func(t *testing.T) {
		p, err := st.CreateSession(ctx, sessionHash("pending"), store.NewSession{
			UserID: ann, Client: "app", State: store.SessionPending, ExpiresAt: time.Now().Add(15 * time.Minute),
		})
		if err != nil {
			t.Fatal(err)
		}
		storetest.Exec(t, db, `UPDATE sessions SET authenticated_at = now() - interval '1 hour' WHERE id = $1`, p.ID)
		if _, err := st.RotateSession(ctx, sessionHash("pending"), sessionHash("x"), store.Rotation{
			From: store.SessionAuthenticated, To: store.SessionAuthenticated,
		}); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("rotating a pending session as an authenticated one: %v, want ErrNotFound", err)
		}
		const racers = 8
		var wg sync.WaitGroup
		wins := make(chan store.Session, racers)
		for i := range racers {
			wg.Go(func() {
				s, err := st.RotateSession(ctx, sessionHash("pending"), sessionHash("rotated"+string(rune('a'+i))), store.Rotation{
					From: store.SessionPending, To: store.SessionAuthenticated, Authenticated: true, ExpiresAt: later,
				})
				if err == nil {
					wins <- s
				} else if !errors.Is(err, store.ErrNotFound) {
					t.Errorf("rotation: %v", err)
				}
			})
		}
		wg.Wait()
		close(wins)
		var won []store.Session
		for s := range wins {
			won = append(won, s)
		}
		if len(won) != 1 {
			t.Fatalf("%d of %d concurrent rotations of one id won, want 1", len(won), racers)
		}
		s := won[0]
		if s.ID != p.ID || s.State != store.SessionAuthenticated || time.Since(s.AuthenticatedAt) > time.Minute ||
			!s.ExpiresAt.Equal(later.Truncate(time.Microsecond)) {
			t.Errorf("rotated session %+v: want the same row, authenticated now, until %v", s, later)
		}
		if _, err := st.SessionByHash(ctx, sessionHash("pending"), time.Hour); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("the old id after rotation: %v, want ErrNotFound", err)
		}
		if n := storetest.Count(t, db, `SELECT count(*) FROM users WHERE id = $1 AND last_login > now() - interval '1 minute'`, ann); n != 1 {
			t.Error("the completed sign-in did not set last_login")
		}
	})

	t.Run("a user lists and ends only its own sessions", func(t *testing.T) {
		b := create(bob, "b1")
		mine, err := st.UserSessions(ctx, ann, time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range mine {
			if s.UserID != ann {
				t.Errorf("ann's list holds %+v", s)
			}
		}
		n, err := st.DeleteUserSessions(ctx, ann, []int64{b.ID, a1.ID})
		if err != nil || n != 1 {
			t.Errorf("DeleteUserSessions = %d, %v; want 1 (ann's own)", n, err)
		}
		if _, err := st.SessionByHash(ctx, sessionHash("b1"), time.Hour); err != nil {
			t.Errorf("bob's session after ann ended it: %v", err)
		}
		keep := create(ann, "keep")
		create(ann, "other")
		if n, err := st.EndSessions(ctx, ann, keep.ID); err != nil || n < 1 {
			t.Errorf("EndSessions = %d, %v", n, err)
		}
		if n := storetest.Count(t, db, `SELECT count(*) FROM sessions WHERE user_id = $1`, ann); n != 1 {
			t.Errorf("ann has %d sessions after EndSessions, want the one kept", n)
		}
		if err := st.DeleteSessionByHash(ctx, sessionHash("keep")); err != nil {
			t.Fatal(err)
		}
		if n := storetest.Count(t, db, `SELECT count(*) FROM sessions WHERE user_id = $1`, ann); n != 0 {
			t.Errorf("ann has %d sessions after the last was deleted", n)
		}
	})
}

func TestRolesAndSecondFactors(t *testing.T) {
	ctx := context.Background()
	st, db := storetest.NewWithURL(t)
	ann, _ := st.CreateUser(ctx, "ann@example.com", "Ann")
	if _, err := st.CreateOrganization(ctx, "acme", "Acme", "ann@example.com"); err != nil {
		t.Fatal(err)
	}
	if _, err := st.CreateOrganization(ctx, "beta", "Beta", "ann@example.com"); err != nil {
		t.Fatal(err)
	}
	if err := st.AddMember(ctx, "beta", "ann@example.com", "member"); err != nil {
		t.Fatal(err)
	}
	if a, err := st.MemberRole(ctx, ann, "acme"); err != nil || a.Role != "owner" || a.SecondFactorMissing {
		t.Errorf("MemberRole acme = %+v, %v", a, err)
	}
	if _, err := st.MemberRole(ctx, ann, "nope"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("MemberRole of another organization: %v, want ErrNotFound", err)
	}
	if roles, err := st.UserRoles(ctx, ann); err != nil || len(roles) != 2 || roles[0] != "member" || roles[1] != "owner" {
		t.Errorf("UserRoles = %v, %v; want member and owner", roles, err)
	}
	bob, _ := st.CreateUser(ctx, "bob@example.com", "Bob")
	if roles, err := st.UserRoles(ctx, bob); err != nil || len(roles) != 0 {
		t.Errorf("UserRoles of a user of no organization = %v, %v", roles, err)
	}
	if totp, codes, err := st.SecondFactors(ctx, ann); err != nil || totp || codes {
		t.Errorf("SecondFactors = %v %v %v, want none", totp, codes, err)
	}
	storetest.Exec(t, db, `INSERT INTO totp_authenticators (user_id, secret_encrypted, last_step) VALUES ($1, '\x00', 0)`, ann)
	if totp, codes, err := st.SecondFactors(ctx, ann); err != nil || !totp || codes {
		t.Errorf("SecondFactors = %v %v %v, want TOTP alone", totp, codes, err)
	}
}
