package main

import (
	"context"
	"encoding/base32"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"errata/authn"
)

// pendingSignIn signs the app person in as email, a user with TOTP, whose
// sign-in then waits for the second factor; it keeps the pending session.
func (p *person) pendingSignIn(s *errataServer, email string) {
	p.t.Helper()
	status, body := p.do(s, "POST", "auth/login", map[string]string{"email": email, "password": signInPassword})
	flows, _ := body["data"].(map[string]any)["flows"].([]any)
	if status != 401 || len(flows) == 0 || flows[len(flows)-1].(map[string]any)["id"] != "mfa_authenticate" {
		p.t.Fatalf("sign-in of %s: %d %v, want it pending its second factor", email, status, body)
	}
	p.token = body["meta"].(map[string]any)["session_token"].(string)
}

// secondFactor sends code to auth/2fa/authenticate and returns the status
// and body; on success the app person keeps the session's new id.
func (p *person) secondFactor(s *errataServer, code string) (int, map[string]any) {
	p.t.Helper()
	status, body := p.do(s, "POST", "auth/2fa/authenticate", map[string]string{"code": code})
	if status == 200 {
		p.token = body["meta"].(map[string]any)["session_token"].(string)
	}
	return status, body
}

// unusedCodes returns the recovery codes the signed-in person has left.
func (p *person) unusedCodes(s *errataServer) []string {
	p.t.Helper()
	status, body := p.do(s, "GET", "account/authenticators/recovery-codes", nil)
	if status != 200 {
		p.t.Fatalf("GET recovery-codes: %d %v", status, body)
	}
	var codes []string
	for _, c := range body["data"].(map[string]any)["unused_codes"].([]any) {
		codes = append(codes, c.(string))
	}
	return codes
}

// TestTwoFactor: TOTP and recovery codes at sign-in, against the server:
// enrolment through the app client with a code computed from meta.secret,
// a TOTP code good once, a recovery code good once and gone from the list,
// two sign-ins with one recovery code of which exactly one passes (50
// times), the seed's derivation unchanged, and an administrator's reset.
func TestTwoFactor(t *testing.T) {
	t.Parallel()
	s := startErrata(t, nil)
	ctx := context.Background()
	hash, err := authn.HashPassword(signInPassword)
	if err != nil {
		t.Fatal(err)
	}
	newUser := func(t *testing.T, email string) int64 {
		t.Helper()
		var id int64
		err := s.db(t).QueryRow(ctx, `
			WITH u AS (INSERT INTO users (email, password_hash) VALUES ($1, $2) RETURNING id)
			INSERT INTO email_addresses (user_id, email, is_verified, is_primary)
			SELECT id, $1, true, true FROM u RETURNING user_id`, email, hash).Scan(&id)
		if err != nil {
			t.Fatal(err)
		}
		return id
	}
	ok := func(t *testing.T, what string, status int, body map[string]any) {
		t.Helper()
		if status != 200 {
			t.Fatalf("%s: %d %v, want 200", what, status, body)
		}
	}
	refused := func(t *testing.T, what string, status int, body map[string]any) {
		t.Helper()
		errs, _ := body["errors"].([]any)
		if status != 400 || len(errs) != 1 || errs[0].(map[string]any)["code"] != "incorrect_code" {
			t.Fatalf("%s: %d %v, want 400 incorrect_code", what, status, body)
		}
	}

	ann := newPerson(t, "app")
	newUser(t, "ann@example.com")
	var secret []byte
	var step int64
	var codes []string // ann's recovery codes
	t.Run("enrolment through the app client", func(t *testing.T) {
		ann.signIn(s, "ann@example.com")
		status, offer := ann.do(s, "GET", "account/authenticators/totp", nil)
		meta, _ := offer["meta"].(map[string]any)
		encoded, _ := meta["secret"].(string)
		secret, err = base32.StdEncoding.WithPadding(base32.NoPadding).DecodeString(encoded)
		if status != 404 || err != nil || len(secret) != 20 || !strings.HasPrefix(meta["totp_url"].(string), "otpauth://totp/errata:") {
			t.Fatalf("the offer: %d %v (%v)", status, offer, err)
		}
		step = authn.TOTPStep(time.Now())
		status, body := ann.do(s, "POST", "account/authenticators/totp", map[string]string{"code": authn.TOTPCode(secret, step)})
		ok(t, "activation", status, body)
		if codes = ann.unusedCodes(s); len(codes) != 10 {
			t.Fatalf("%d recovery codes made with TOTP, want 10", len(codes))
		}
		status, body = ann.do(s, "DELETE", "auth/session", nil)
		expectStatus(t, "sign-out", status, 401, body)
	})

	t.Run("a TOTP code is refused the second time", func(t *testing.T) {
		code := authn.TOTPCode(secret, step+1)
		ann.pendingSignIn(s, "ann@example.com")
		status, body := ann.secondFactor(s, code)
		ok(t, "the code", status, body)
		status, body = ann.do(s, "GET", "auth/session", nil)
		ok(t, "the session", status, body)
		ann.do(s, "DELETE", "auth/session", nil)
		ann.pendingSignIn(s, "ann@example.com")
		status, body = ann.secondFactor(s, code)
		refused(t, "the code again", status, body)
	})

	t.Run("a used recovery code is refused and leaves the list", func(t *testing.T) {
		status, body := ann.secondFactor(s, codes[0])
		ok(t, "a recovery code", status, body)
		if left := ann.unusedCodes(s); len(left) != 9 || slices.Contains(left, codes[0]) {
			t.Errorf("unused codes %v, want 9 without %s", left, codes[0])
		}
		ann.do(s, "DELETE", "auth/session", nil)
		ann.pendingSignIn(s, "ann@example.com")
		status, body = ann.secondFactor(s, codes[0])
		refused(t, "the recovery code again", status, body)
	})

	// Users with TOTP and the recovery-code seed of 80 zeros, whose codes
	// are the contract's test vector, sealed as the server seals them.
	totpSecrets, seeds := authn.NewTOTPCipher(testSecretKey), authn.NewSeedCipher(testSecretKey)
	vector := []string{"40017382", "93474438", "17854111", "92512815", "36599119",
		"80501426", "17309950", "47803705", "23071834", "73248777"}
	seeded := func(t *testing.T, email string) {
		t.Helper()
		id := newUser(t, email)
		_, err := s.db(t).Exec(ctx, `INSERT INTO totp_authenticators (user_id, secret_encrypted, last_step) VALUES ($1, $2, 0)`,
			id, totpSecrets.Seal(id, authn.NewTOTPSecret()))
		if err == nil {
			_, err = s.db(t).Exec(ctx, `INSERT INTO recovery_codes (user_id, seed_encrypted) VALUES ($1, $2)`,
				id, seeds.Seal(id, strings.Repeat("0", 80)))
		}
		if err != nil {
			t.Fatal(err)
		}
	}

	t.Run("the seed's test vector gives the codes that sign in", func(t *testing.T) {
		seeded(t, "vector@example.com")
		p := newPerson(t, "app")
		p.pendingSignIn(s, "vector@example.com")
		status, body := p.secondFactor(s, vector[9])
		ok(t, "the vector's last code", status, body)
		if diff := cmp.Diff(vector[:9], p.unusedCodes(s)); diff != "" {
			t.Errorf("unused codes (-want +got):\n%s", diff)
		}
	})

	t.Run("of two sign-ins with one recovery code exactly one passes, 50 times", func(t *testing.T) {
		const rounds = 50
		for i := range rounds {
			email := fmt.Sprintf("race%d@example.com", i)
			seeded(t, email)
			pair := []*person{newPerson(t, "app"), newPerson(t, "app")}
			for _, p := range pair {
				p.pendingSignIn(s, email)
			}
			statuses := make([]int, len(pair))
			var wg sync.WaitGroup
			start := make(chan struct{})
			for j, p := range pair {
				wg.Go(func() {
					<-start
					statuses[j], _ = p.do(s, "POST", "auth/2fa/authenticate", map[string]string{"code": vector[i%10]})
				})
			}
			close(start)
			wg.Wait()
			slices.Sort(statuses)
			if !slices.Equal(statuses, []int{200, 400}) {
				t.Fatalf("round %d: the two sign-ins answered %v, want one 200 and one 400", i, statuses)
			}
		}
		if n := s.count(t, `
			SELECT count(*) FROM recovery_codes r JOIN users u ON u.id = r.user_id
			WHERE u.email LIKE 'race%' AND r.used_mask <> 0 AND r.used_mask & (r.used_mask - 1) = 0`); n != rounds {
			t.Errorf("%d users with exactly one code spent, want %d", n, rounds)
		}
	})

	t.Run("reset-2fa ends a pending sign-in and the next asks for the password alone", func(t *testing.T) {
		token := &errataServer{url: s.url, token: s.cli(t, "admin", "create-token", "--email", "ann@example.com", "--scopes", "org:read")}
		ann.do(s, "DELETE", "auth/session", nil)
		ann.pendingSignIn(s, "ann@example.com")
		s.cli(t, "admin", "reset-2fa", "--email", "ann@example.com")
		status, body := ann.secondFactor(s, codes[1])
		expectStatus(t, "the pending sign-in after the reset", status, 401, body)
		ann.token = ""
		ann.signIn(s, "ann@example.com")
		status, body = ann.do(s, "GET", "account/authenticators", nil)
		if status != 200 || len(body["data"].([]any)) != 0 {
			t.Errorf("authenticators after reset-2fa: %d %v", status, body)
		}
		if status, body := token.api(t, "GET", "/api/0/organizations/", nil); status != 200 {
			t.Errorf("the API token after reset-2fa: %d %s", status, body)
		}
	})
}
