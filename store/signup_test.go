package store_test

import (
	"context"
	"errors"
	"sync"
	"testing"

	"errata/store"
	"errata/store/storetest"
)

func TestSignUp(t *testing.T) {
	ctx := context.Background()
	st, db := storetest.NewWithURL(t)
	mail := func(int64) (store.Mail, error) { return store.Mail{Subject: "Confirm", Text: "link"}, nil }
	id, err := st.SignUp(ctx, "New@Example.com", "$argon2id$hash", mail)
	if err != nil {
		t.Fatal(err)
	}
	if n := storetest.Count(t, db, `
		SELECT count(*) FROM users u JOIN email_addresses a ON a.user_id = u.id
		WHERE u.id = $1 AND u.password_hash = '$argon2id$hash' AND a.is_primary AND NOT a.is_verified`, id); n != 1 {
		t.Error("the user is not stored with its hash and an unverified primary address")
	}
	if ms, err := st.Outbox(ctx, "new@example.com"); err != nil || len(ms) != 1 || ms[0].Subject != "Confirm" {
		t.Errorf("outbox %v, %v: want the confirmation", ms, err)
	}
	if _, err := st.SignUp(ctx, "new@EXAMPLE.com", "$argon2id$other", mail); !errors.Is(err, store.ErrEmailTaken) {
		t.Errorf("a second sign-up of the address: %v, want ErrEmailTaken", err)
	}
	failing := func(int64) (store.Mail, error) { return store.Mail{}, errors.New("no mail") }
	if _, err := st.SignUp(ctx, "other@example.com", "$argon2id$hash", failing); err == nil {
		t.Error("a sign-up whose mail fails succeeded")
	}
	if n := storetest.Count(t, db, `SELECT count(*) FROM users WHERE email = 'other@example.com'`); n != 0 {
		t.Error("a sign-up whose mail failed left its user")
	}
}

func TestResetPasswordOnce(t *testing.T) {
	ctx := context.Background()
	st, db := storetest.NewWithURL(t)
	id, err := st.CreateUser(ctx, "ann@example.com", "Ann")
	if err != nil {
		t.Fatal(err)
	}
	if email, hash, err := st.UserPasswordHash(ctx, id); err != nil || email != "ann@example.com" || hash != "" {
		t.Fatalf("UserPasswordHash = %q, %q, %v", email, hash, err)
	}
	storetest.Exec(t, db, `INSERT INTO sessions (id_hash, user_id, client, state, expires_at)
		VALUES (decode(repeat('ab', 32), 'hex'), $1, 'app', 'authenticated', now() + interval '1 hour')`, id)
	const racers = 6
	var wg sync.WaitGroup
	errs := make(chan error, racers)
	for i := range racers {
		wg.Go(func() { errs <- st.ResetPassword(ctx, id, "", "$argon2id$new"+string(rune('a'+i))) })
	}
	wg.Wait()
	close(errs)
	won := 0
	for err := range errs {
		switch {
		case err == nil:
			won++
		case !errors.Is(err, store.ErrNotFound):
			t.Errorf("reset: %v", err)
		}
	}
	if won != 1 {
		t.Errorf("%d of %d resets from one hash won, want 1", won, racers)
	}
	if n := storetest.Count(t, db, `SELECT count(*) FROM sessions WHERE user_id = $1`, id); n != 0 {
		t.Errorf("%d sessions after the reset, want none", n)
	}
	if ms, _ := st.Outbox(ctx, "ann@example.com"); len(ms) != 1 {
		t.Errorf("%d notices, want 1", len(ms))
	}
}
