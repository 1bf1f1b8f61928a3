package store_test

import (
	"context"
	"errors"
	"sync"
	"testing"

	"errata/store"
	"errata/store/storetest"
)

// concurrently runs fn n times at once and returns how many returned true;
// an error fails the test.
func concurrently(t *testing.T, n int, fn func() (bool, error)) int {
	t.Helper()
	var wg sync.WaitGroup
	oks := make(chan bool, n)
	errs := make(chan error, n)
	start := make(chan struct{})
	for range n {
		wg.Go(func() {
			<-start
			ok, err := fn()
			oks <- ok
			errs <- err
		})
	}
	close(start)
	wg.Wait()
	close(oks)
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	passed := 0
	for ok := range oks {
		if ok {
			passed++
		}
	}
	return passed
}

// newUser creates the user of email and returns its id.
func newUser(t *testing.T, st *store.Store, email string) int64 {
	t.Helper()
	id, err := st.CreateUser(context.Background(), email, "")
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// notices returns the subjects of the mails queued for email, oldest first.
func notices(t *testing.T, st *store.Store, email string) []string {
	t.Helper()
	mails, err := st.Outbox(context.Background(), email)
	if err != nil {
		t.Fatal(err)
	}
	var subjects []string
	for _, m := range mails {
		subjects = append(subjects, m.Subject)
	}
	return subjects
}

func TestTOTPAuthenticator(t *testing.T) {
	ctx := context.Background()
	st, db := storetest.NewWithURL(t)
	ann, bob := newUser(t, st, "ann@example.com"), newUser(t, st, "bob@example.com")

	t.Run("a user without TOTP has none", func(t *testing.T) {
		if _, err := st.TOTPAuthenticator(ctx, ann); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("TOTPAuthenticator = %v, want ErrNotFound", err)
		}
	})
	t.Run("a session keeps the first secret offered until activation", func(t *testing.T) {
		storetest.Exec(t, db, `
			INSERT INTO sessions (id_hash, user_id, client, state, expires_at)
			VALUES (sha256('offer'::bytea), $1, 'app', 'authenticated', now() + interval '1 day')`, ann)
		const session = 1
		if got, err := st.OfferedTOTPSecret(ctx, session); got != nil || err != nil {
			t.Fatalf("OfferedTOTPSecret before an offer = %q, %v", got, err)
		}
		for _, offer := range []string{"first", "second"} {
			if got, err := st.OfferTOTPSecret(ctx, session, []byte(offer)); string(got) != "first" || err != nil {
				t.Errorf("OfferTOTPSecret(%s) = %q, %v; want the first kept", offer, got, err)
			}
		}
		if got, err := st.OfferedTOTPSecret(ctx, session); string(got) != "first" || err != nil {
			t.Errorf("OfferedTOTPSecret = %q, %v", got, err)
		}
		if _, err := st.OfferTOTPSecret(ctx, 999, []byte("x")); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("OfferTOTPSecret to no session = %v, want ErrNotFound", err)
		}
	})
	t.Run("activation keeps the confirming step and makes recovery codes when there are none", func(t *testing.T) {
		created, err := st.ActivateTOTP(ctx, ann, []byte("sealed secret"), 1000, []byte("sealed seed"))
		if err != nil || !created {
			t.Fatalf("ActivateTOTP = %v, %v; want recovery codes created", created, err)
		}
		a, err := st.TOTPAuthenticator(ctx, ann)
		if err != nil || string(a.SecretEncrypted) != "sealed secret" || a.LastStep != 1000 || a.LastUsedAt != nil {
			t.Errorf("TOTPAuthenticator = %+v, %v", a, err)
		}
		rc, err := st.RecoveryCodes(ctx, ann)
		if err != nil || string(rc.SeedEncrypted) != "sealed seed" || rc.UsedMask != 0 {
			t.Errorf("RecoveryCodes = %+v, %v", rc, err)
		}
		if got := notices(t, st, "ann@example.com"); len(got) != 1 || got[0] != "Two-factor authentication was turned on" {
			t.Errorf("notices %q, want the one of TOTP", got)
		}
		if got, err := st.OfferedTOTPSecret(ctx, 1); got != nil || err != nil {
			t.Errorf("the offered secret after activation: %q, %v; want it forgotten", got, err)
		}
	})
	t.Run("activating twice is a conflict", func(t *testing.T) {
		if _, err := st.ActivateTOTP(ctx, ann, []byte("other"), 2000, []byte("other seed")); !errors.Is(err, store.ErrConflict) {
			t.Errorf("second ActivateTOTP = %v, want ErrConflict", err)
		}
		if a, _ := st.TOTPAuthenticator(ctx, ann); string(a.SecretEncrypted) != "sealed secret" || a.LastStep != 1000 {
			t.Errorf("the refused activation changed the authenticator: %+v", a)
		}
		if got := notices(t, st, "ann@example.com"); len(got) != 1 {
			t.Errorf("notices %q after a refused activation", got)
		}
	})
	t.Run("activation keeps recovery codes the user has", func(t *testing.T) {
		if err := st.ReplaceRecoveryCodes(ctx, bob, []byte("bob's seed")); err != nil {
			t.Fatal(err)
		}
		if ok, err := st.SpendRecoveryCode(ctx, bob, 3); !ok || err != nil {
			t.Fatalf("SpendRecoveryCode = %v, %v", ok, err)
		}
		created, err := st.ActivateTOTP(ctx, bob, []byte("bob's secret"), 5, []byte("unused seed"))
		if err != nil || created {
			t.Fatalf("ActivateTOTP = %v, %v; want the existing codes kept", created, err)
		}
		if rc, _ := st.RecoveryCodes(ctx, bob); string(rc.SeedEncrypted) != "bob's seed" || rc.UsedMask != 1<<3 {
			t.Errorf("RecoveryCodes = %+v, want bob's seed with code 3 used", rc)
		}
	})
	t.Run("an unknown user cannot activate", func(t *testing.T) {
		if _, err := st.ActivateTOTP(ctx, 999, []byte("s"), 1, []byte("s")); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("ActivateTOTP = %v, want ErrNotFound", err)
		}
	})
	t.Run("a step not later than the last one is refused", func(t *testing.T) {
		for _, step := range []int64{999, 1000} {
			if ok, err := st.AcceptTOTPStep(ctx, ann, step); ok || err != nil {
				t.Errorf("AcceptTOTPStep(%d) = %v, %v; want refused", step, ok, err)
			}
		}
		if ok, err := st.AcceptTOTPStep(ctx, ann, 1001); !ok || err != nil {
			t.Errorf("AcceptTOTPStep(1001) = %v, %v; want accepted", ok, err)
		}
		if a, _ := st.TOTPAuthenticator(ctx, ann); a.LastStep != 1001 || a.LastUsedAt == nil {
			t.Errorf("after the accepted step: %+v", a)
		}
		if ok, err := st.AcceptTOTPStep(ctx, ann, 1001); ok || err != nil {
			t.Errorf("AcceptTOTPStep(1001) again = %v, %v; want refused", ok, err)
		}
	})
	t.Run("of 50 concurrent accepts of one step exactly one passes", func(t *testing.T) {
		if n := concurrently(t, 50, func() (bool, error) { return st.AcceptTOTPStep(ctx, ann, 1002) }); n != 1 {
			t.Errorf("%d of 50 accepts passed, want 1", n)
		}
	})
	t.Run("a user without TOTP accepts no step", func(t *testing.T) {
		if ok, err := st.AcceptTOTPStep(ctx, 999, 1); ok || err != nil {
			t.Errorf("AcceptTOTPStep = %v, %v", ok, err)
		}
	})
	t.Run("deleting TOTP deletes the recovery codes", func(t *testing.T) {
		if err := st.DeleteTOTP(ctx, ann); err != nil {
			t.Fatal(err)
		}
		if _, err := st.TOTPAuthenticator(ctx, ann); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("TOTPAuthenticator after delete = %v", err)
		}
		if _, err := st.RecoveryCodes(ctx, ann); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("RecoveryCodes after delete = %v", err)
		}
		if got := notices(t, st, "ann@example.com"); len(got) != 2 || got[1] != "Two-factor authentication was turned off" {
			t.Errorf("notices %q", got)
		}
		if err := st.DeleteTOTP(ctx, ann); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("second DeleteTOTP = %v, want ErrNotFound", err)
		}
		if _, err := st.TOTPAuthenticator(ctx, bob); err != nil {
			t.Errorf("bob's TOTP after ann's delete: %v", err)
		}
	})

	t.Run("a reset removes the factors and the sessions of that user only", func(t *testing.T) {
		storetest.Exec(t, db, `
			INSERT INTO sessions (id_hash, user_id, client, state, expires_at)
			SELECT sha256(('s' || u || g)::bytea), u, 'app', 'authenticated', now() + interval '1 day'
			FROM (VALUES ($1::bigint), ($2::bigint)) v(u), generate_series(1, 3) g`, ann, bob)
		if _, err := st.ActivateTOTP(ctx, ann, []byte("ann again"), 1, []byte("ann's seed")); err != nil {
			t.Fatal(err)
		}
		if err := st.ResetSecondFactors(ctx, "BOB@example.com"); err != nil {
			t.Fatal(err)
		}
		for _, q := range []struct {
			query string
			want  int
		}{
			{`SELECT count(*) FROM totp_authenticators WHERE user_id = 2`, 0},
			{`SELECT count(*) FROM recovery_codes WHERE user_id = 2`, 0},
			{`SELECT count(*) FROM sessions WHERE user_id = 2`, 0},
			{`SELECT count(*) FROM totp_authenticators WHERE user_id = 1`, 1},
			{`SELECT count(*) FROM recovery_codes WHERE user_id = 1`, 1},
			{`SELECT count(*) FROM sessions WHERE user_id = 1`, 4},
		} {
			if n := storetest.Count(t, db, q.query); n != q.want {
				t.Errorf("%s = %d, want %d", q.query, n, q.want)
			}
		}
		if got := notices(t, st, "bob@example.com"); len(got) == 0 || got[len(got)-1] != "Two-factor authentication was reset" {
			t.Errorf("bob's notices %q", got)
		}
		if err := st.ResetSecondFactors(ctx, "nobody@example.com"); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("ResetSecondFactors of an unknown email = %v, want ErrNotFound", err)
		}
	})
}

func TestSpendRecoveryCode(t *testing.T) {
	ctx := context.Background()
	st := storetest.New(t)
	ann := newUser(t, st, "ann@example.com")
	if err := st.ReplaceRecoveryCodes(ctx, ann, []byte("seed")); err != nil {
		t.Fatal(err)
	}

	t.Run("of 50 concurrent spends of one code exactly one passes", func(t *testing.T) {
		if n := concurrently(t, 50, func() (bool, error) { return st.SpendRecoveryCode(ctx, ann, 4) }); n != 1 {
			t.Errorf("%d of 50 spends passed, want 1", n)
		}
		rc, err := st.RecoveryCodes(ctx, ann)
		if err != nil || rc.UsedMask != 1<<4 || rc.LastUsedAt == nil {
			t.Errorf("RecoveryCodes = %+v, %v; want code 4 used", rc, err)
		}
		if got := notices(t, st, "ann@example.com"); len(got) != 1 || got[0] != "A recovery code was used" {
			t.Errorf("notices %q, want one for the one spend", got)
		}
	})
	t.Run("another code is still good once", func(t *testing.T) {
		for i, want := range []bool{true, false} {
			if ok, err := st.SpendRecoveryCode(ctx, ann, 9); ok != want || err != nil {
				t.Errorf("spend %d of code 9 = %v, %v; want %v", i, ok, err, want)
			}
		}
		if rc, _ := st.RecoveryCodes(ctx, ann); rc.UsedMask != 1<<4|1<<9 {
			t.Errorf("used mask %b", rc.UsedMask)
		}
	})
	t.Run("a new set has every code unused", func(t *testing.T) {
		if err := st.RegenerateRecoveryCodes(ctx, ann, []byte("new seed")); err != nil {
			t.Fatal(err)
		}
		rc, err := st.RecoveryCodes(ctx, ann)
		if err != nil || string(rc.SeedEncrypted) != "new seed" || rc.UsedMask != 0 || rc.LastUsedAt != nil {
			t.Errorf("RecoveryCodes = %+v, %v", rc, err)
		}
		if got := notices(t, st, "ann@example.com"); len(got) != 3 || got[2] != "New recovery codes were generated" {
			t.Errorf("notices %q", got)
		}
		if ok, err := st.SpendRecoveryCode(ctx, ann, 4); !ok || err != nil {
			t.Errorf("code 4 of the new set = %v, %v", ok, err)
		}
	})
	t.Run("a user without codes spends nothing", func(t *testing.T) {
		if ok, err := st.SpendRecoveryCode(ctx, 999, 0); ok || err != nil {
			t.Errorf("SpendRecoveryCode = %v, %v", ok, err)
		}
	})
	t.Run("an index out of range is an error", func(t *testing.T) {
		for _, i := range []int{-1, 31, 64} {
			if ok, err := st.SpendRecoveryCode(ctx, ann, i); ok || err == nil {
				t.Errorf("SpendRecoveryCode(%d) = %v, %v; want an error", i, ok, err)
			}
		}
	})
}
