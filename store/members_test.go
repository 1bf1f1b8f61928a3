package store_test

import (
	"context"
	"crypto/sha256"
	"errors"
	"sync"
	"testing"
	"time"

	"errata/store"
	"errata/store/storetest"
)

// invited makes a pending member of acme for email, invited by the owner
// ownerID, whose token hashes to the SHA-256 of token; it returns its id.
func invited(t *testing.T, st *store.Store, ownerID int64, email, token string) int64 {
	t.Helper()
	hash := sha256.Sum256([]byte(token))
	keys := func(int64, time.Time) ([]byte, []byte, *store.Mail, error) { return hash[:], nil, nil, nil }
	m, err := st.InviteMember(context.Background(), ownerID, "acme", store.Invitation{
		Email: email, Role: "member", Expires: time.Now().Add(time.Hour), Reinvite: true},
		func(string, string) bool { return true }, keys)
	if err != nil {
		t.Fatal(err)
	}
	return m.ID
}

// TestAcceptInvitationOnce: of accepts at once of one invitation, by
// several people, exactly one wins; the others find no invitation.
func TestAcceptInvitationOnce(t *testing.T) {
	ctx := context.Background()
	st, db := storetest.NewWithURL(t)
	owner, err := st.CreateUser(ctx, "owner@example.com", "Owner")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.CreateOrganization(ctx, "acme", "Acme", "owner@example.com"); err != nil {
		t.Fatal(err)
	}
	id := invited(t, st, owner, "new@example.com", "token")
	hash := sha256.Sum256([]byte("token"))
	const n = 8
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		user, err := st.CreateUser(ctx, "p"+string(rune('a'+i))+"@example.com", "")
		if err != nil {
			t.Fatal(err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = st.AcceptInvitation(ctx, "acme", id, hash[:], user)
		}()
	}
	wg.Wait()
	won := 0
	for _, err := range errs {
		switch {
		case err == nil:
			won++
		case !errors.Is(err, store.ErrNotFound):
			t.Errorf("an accept: %v, want nil or ErrNotFound", err)
		}
	}
	if won != 1 {
		t.Errorf("%d accepts won, want 1", won)
	}
	if c := storetest.Count(t, db, `SELECT count(*) FROM memberships WHERE id = $1 AND user_id IS NOT NULL
		AND invite_token_hash IS NULL AND email IS NULL`, id); c != 1 {
		t.Error("the accepted membership keeps its token or address")
	}
	if err := st.AcceptInvitation(ctx, "acme", id, hash[:], owner); !errors.Is(err, store.ErrNotFound) &&
		!errors.Is(err, store.ErrAlreadyMember) {
		t.Errorf("accepting again: %v", err)
	}
}

// TestLastOwnerUnderConcurrency: two owners demoting each other at once,
// many times over, always leave one owner.
func TestLastOwnerUnderConcurrency(t *testing.T) {
	ctx := context.Background()
	st, db := storetest.NewWithURL(t)
	ann, err := st.CreateUser(ctx, "ann@example.com", "")
	if err != nil {
		t.Fatal(err)
	}
	max, err := st.CreateUser(ctx, "max@example.com", "")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.CreateOrganization(ctx, "acme", "Acme", "ann@example.com"); err != nil {
		t.Fatal(err)
	}
	member := func(user int64) int64 {
		return int64(storetest.Count(t, db, `SELECT id FROM memberships WHERE user_id = $1`, user))
	}
	anyRole := func(string, string) bool { return true }
	for round := range 20 {
		if err := st.AddMember(ctx, "acme", "ann@example.com", "owner"); err != nil {
			t.Fatal(err)
		}
		if err := st.AddMember(ctx, "acme", "max@example.com", "owner"); err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		for _, pair := range [][2]int64{{ann, max}, {max, ann}} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, err := st.UpdateMember(ctx, pair[0], "acme", member(pair[1]), store.MemberUpdate{Role: "member"}, anyRole, nil)
				if err != nil && !errors.Is(err, store.ErrLastOwner) {
					t.Errorf("round %d: a demotion: %v", round, err)
				}
			}()
		}
		wg.Wait()
		if n := storetest.Count(t, db, `SELECT count(*) FROM memberships WHERE role = 'owner'`); n != 1 {
			t.Fatalf("round %d: %d owners, want 1", round, n)
		}
	}
}
