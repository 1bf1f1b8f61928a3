package handlers

import (
	"context"
	"encoding/json"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"errata/authn"
	"errata/store"
)

// generateCodes asks for a new set of recovery codes.
func (a *userAPI) generateCodes(token string) []string {
	a.t.Helper()
	res := a.do("GET", "/api/0/generate-recovery-codes/", token, nil)
	res.expect(a.t, 200, nil)
	var out struct{ Codes []string }
	if err := json.Unmarshal(res.body, &out); err != nil {
		a.t.Fatal(err)
	}
	return out.Codes
}

var codePattern = regexp.MustCompile(`^[0-9]{8}$`)

// openSeeds returns the pending recovery-code seeds of a test API.
type openSeeds func(st *store.Store, now func() time.Time) authn.PendingSeedStore

func memorySeeds(_ *store.Store, now func() time.Time) authn.PendingSeedStore {
	return authn.NewPendingSeeds(300*time.Second, now)
}

func databaseSeeds(st *store.Store, now func() time.Time) authn.PendingSeedStore {
	return authn.NewDatabasePendingSeeds(st, testSecret, 300*time.Second, now)
}

// TestRecoveryCodes runs the same requests with the seeds in memory and in
// PostgreSQL.
func TestRecoveryCodes(t *testing.T) {
	for _, seeds := range []struct {
		name string
		open openSeeds
	}{{"memory", memorySeeds}, {"postgres", databaseSeeds}} {
		t.Run(seeds.name, func(t *testing.T) { testRecoveryCodes(t, seeds.open) })
	}
}

func testRecoveryCodes(t *testing.T, seeds openSeeds) {
	a := newUserAPIWithSeeds(t, seeds)
	me := a.account("ann@example.com")
	other := a.account("bob@example.com")
	const path = "/api/0/generate-recovery-codes/"

	t.Run("POST before GET is 400", func(t *testing.T) {
		a.do("POST", path, me.token, map[string]any{"code": "12345678"}).golden(t, "recovery_none")
	})
	t.Run("without a token is 401", func(t *testing.T) {
		a.do("GET", path, "", nil).expect(t, 401, `{"detail":"Unauthorized"}`)
	})
	codes := a.generateCodes(me.token)
	t.Run("GET returns ten codes of eight digits", func(t *testing.T) {
		if len(codes) != 10 {
			t.Fatalf("%d codes", len(codes))
		}
		for _, c := range codes {
			if !codePattern.MatchString(c) {
				t.Errorf("code %q", c)
			}
		}
	})
	t.Run("GET does not activate them", func(t *testing.T) {
		if n := a.count(`SELECT count(*) FROM recovery_codes`); n != 0 {
			t.Errorf("%d records", n)
		}
	})
	t.Run("wrong code is 400", func(t *testing.T) {
		a.do("POST", path, me.token, map[string]any{"code": "00000000"}).golden(t, "recovery_invalid")
	})
	t.Run("another user's code is 400", func(t *testing.T) {
		a.do("POST", path, other.token, map[string]any{"code": codes[0]}).golden(t, "recovery_none")
	})
	t.Run("missing code is 422", func(t *testing.T) {
		a.do("POST", path, me.token, map[string]any{}).golden(t, "recovery_missing")
	})
	t.Run("number code is 422", func(t *testing.T) {
		a.do("POST", path, me.token, map[string]any{"code": 12345678}).expect(t, 422, nil)
	})
	t.Run("a code of a replaced set is 400", func(t *testing.T) {
		old := codes
		codes = a.generateCodes(me.token)
		if cmp.Equal(old, codes) {
			t.Fatal("GET returned the same codes twice")
		}
		a.do("POST", path, me.token, map[string]any{"code": old[4]}).golden(t, "recovery_invalid")
	})
	t.Run("a held code activates the set, encrypted", func(t *testing.T) {
		a.do("POST", path, me.token, map[string]any{"code": codes[7]}).expect(t, 204, nil)
		rc, err := a.st.RecoveryCodes(context.Background(), me.id)
		if err != nil {
			t.Fatal(err)
		}
		if rc.UsedMask != 0 {
			t.Errorf("used mask %d, want 0", rc.UsedMask)
		}
		seed, err := authn.NewSeedCipher(testSecret).Open(me.id, rc.SeedEncrypted)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(rc.SeedEncrypted), seed) {
			t.Error("the seed is stored in clear")
		}
		if diff := cmp.Diff(codes, authn.RecoveryCodes(seed)); diff != "" {
			t.Errorf("stored seed gives other codes (-want +got):\n%s", diff)
		}
	})
	t.Run("the held seed is gone after success", func(t *testing.T) {
		a.do("POST", path, me.token, map[string]any{"code": codes[7]}).golden(t, "recovery_none")
	})
	t.Run("a new set replaces the active one", func(t *testing.T) {
		before, _ := a.st.RecoveryCodes(context.Background(), me.id)
		a.exec(`UPDATE recovery_codes SET used_mask = 5 WHERE user_id = $1`, me.id)
		next := a.generateCodes(me.token)
		a.do("POST", path, me.token, map[string]any{"code": next[0]}).expect(t, 204, nil)
		after, _ := a.st.RecoveryCodes(context.Background(), me.id)
		if after.UsedMask != 0 || cmp.Equal(before.SeedEncrypted, after.SeedEncrypted) {
			t.Errorf("record not replaced: mask %d", after.UsedMask)
		}
		if n := a.count(`SELECT count(*) FROM recovery_codes WHERE user_id = $1`, me.id); n != 1 {
			t.Errorf("%d records, want 1", n)
		}
	})
	t.Run("an expired seed is 400", func(t *testing.T) {
		late := a.generateCodes(other.token)
		a.clock.advance(300 * time.Second)
		a.do("POST", path, other.token, map[string]any{"code": late[0]}).golden(t, "recovery_none")
	})
	t.Run("a seed within its lifetime works", func(t *testing.T) {
		fresh := a.generateCodes(other.token)
		a.clock.advance(299 * time.Second)
		a.do("POST", path, other.token, map[string]any{"code": fresh[9]}).expect(t, 204, nil)
	})
}
