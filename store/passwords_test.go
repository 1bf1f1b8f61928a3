package store_test

import (
	"context"
	"errors"
	"testing"

	"errata/store"
	"errata/store/storetest"
)

// insertSession adds a session of userID straight into the table and
// returns its id: the sessions' own store code is not what is tested here.
func insertSession(t *testing.T, db string, userID int64, n byte) int64 {
	t.Helper()
	storetest.Exec(t, db, `
		INSERT INTO sessions (id_hash, user_id, client, state, expires_at)
		VALUES (decode(repeat(lpad(to_hex($2::int), 2, '0'), 32), 'hex'), $1, 'browser', 'authenticated', now() + interval '1 day')`,
		userID, int(n))
	return int64(storetest.Count(t, db, `SELECT max(id) FROM sessions`))
}

// passwordUser creates an active user with address email.
func passwordUser(t *testing.T, st *store.Store, email string) int64 {
	t.Helper()
	id, err := st.CreateUser(context.Background(), email, "")
	if err != nil {
		t.Fatal(err)
	}
	return id
}

func TestPasswordHash(t *testing.T) {
	ctx := context.Background()
	st, db := storetest.NewWithURL(t)
	ann := passwordUser(t, st, "Ann@Example.com")
	if id, hash, err := st.PasswordHash(ctx, "ann@example.COM"); err != nil || id != ann || hash != "" {
		t.Errorf("PasswordHash of a user without a password = %d, %q, %v; want %d, \"\", nil", id, hash, err, ann)
	}
	if err := st.SetPassword(ctx, ann, "$argon2id$hash", 0); err != nil {
		t.Fatal(err)
	}
	if id, hash, err := st.PasswordHash(ctx, "ann@example.com"); err != nil || id != ann || hash != "$argon2id$hash" {
		t.Errorf("PasswordHash = %d, %q, %v; want %d, the hash set", id, hash, err, ann)
	}
	if _, _, err := st.PasswordHash(ctx, "nobody@example.com"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("PasswordHash of an unknown address: %v, want ErrNotFound", err)
	}
	storetest.Exec(t, db, `UPDATE users SET is_active = false WHERE id = $1`, ann)
	if _, _, err := st.PasswordHash(ctx, "ann@example.com"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("PasswordHash of an inactive user: %v, want ErrNotFound", err)
	}
	if err := st.SetPassword(ctx, ann, "$argon2id$other", 0); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("SetPassword of an inactive user: %v, want ErrNotFound", err)
	}
	if err := st.SetPassword(ctx, 999999, "$argon2id$other", 0); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("SetPassword of an unknown user: %v, want ErrNotFound", err)
	}
}

func TestSetPasswordEndsSessionsAndTells(t *testing.T) {
	ctx := context.Background()
	st, db := storetest.NewWithURL(t)
	ann := passwordUser(t, st, "ann@example.com")
	bob := passwordUser(t, st, "bob@example.com")
	keep := insertSession(t, db, ann, 1)
	insertSession(t, db, ann, 2)
	insertSession(t, db, ann, 3)
	bobs := insertSession(t, db, bob, 4)

	if err := st.SetPassword(ctx, ann, "$argon2id$one", keep); err != nil {
		t.Fatal(err)
	}
	if n := storetest.Count(t, db, `SELECT count(*) FROM sessions WHERE user_id = $1`, ann); n != 1 {
		t.Errorf("%d sessions of ann left, want only the one kept", n)
	}
	if n := storetest.Count(t, db, `SELECT count(*) FROM sessions WHERE id = $1`, keep); n != 1 {
		t.Errorf("the kept session was ended")
	}
	mail, err := st.Outbox(ctx, "ann@example.com")
	if err != nil {
		t.Fatal(err)
	}
	if len(mail) != 1 || mail[0].Subject != "Your errata password was changed" {
		t.Errorf("ann's outbox = %+v, want one notice of the change", mail)
	}

	// An administrator's reset keeps no session.
	if err := st.SetPassword(ctx, ann, "$argon2id$two", 0); err != nil {
		t.Fatal(err)
	}
	if n := storetest.Count(t, db, `SELECT count(*) FROM sessions WHERE user_id = $1`, ann); n != 0 {
		t.Errorf("%d sessions of ann left after a reset that keeps none", n)
	}
	if n := storetest.Count(t, db, `SELECT count(*) FROM sessions WHERE id = $1`, bobs); n != 1 {
		t.Errorf("bob's session was ended by ann's change")
	}
	if mail, _ := st.Outbox(ctx, "ann@example.com"); len(mail) != 2 {
		t.Errorf("ann has %d notices, want one per change", len(mail))
	}
	if mail, _ := st.Outbox(ctx, "bob@example.com"); len(mail) != 0 {
		t.Errorf("bob was told of ann's change: %+v", mail)
	}
}

func TestRehashPassword(t *testing.T) {
	ctx := context.Background()
	st, db := storetest.NewWithURL(t)
	ann := passwordUser(t, st, "ann@example.com")
	if err := st.SetPassword(ctx, ann, "$argon2id$old", 0); err != nil {
		t.Fatal(err)
	}
	session := insertSession(t, db, ann, 1)
	if err := st.RehashPassword(ctx, ann, "$argon2id$old", "$argon2id$new"); err != nil {
		t.Fatal(err)
	}
	if _, hash, _ := st.PasswordHash(ctx, "ann@example.com"); hash != "$argon2id$new" {
		t.Errorf("after a rehash the hash is %q, want the new one", hash)
	}
	// A rehash that lost a race with a change of password changes nothing.
	if err := st.RehashPassword(ctx, ann, "$argon2id$old", "$argon2id$stale"); err != nil {
		t.Fatal(err)
	}
	if _, hash, _ := st.PasswordHash(ctx, "ann@example.com"); hash != "$argon2id$new" {
		t.Errorf("a stale rehash replaced the hash with %q", hash)
	}
	if n := storetest.Count(t, db, `SELECT count(*) FROM sessions WHERE id = $1`, session); n != 1 {
		t.Errorf("a rehash ended the session")
	}
	if mail, _ := st.Outbox(ctx, "ann@example.com"); len(mail) != 1 {
		t.Errorf("ann has %d notices, want only the one of SetPassword", len(mail))
	}
}
