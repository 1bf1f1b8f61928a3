package handlers

import (
	"context"
	"encoding/json"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"errata/authn"
	"errata/store"
)

var confirmLinkPattern = regexp.MustCompile(`https://errata\.example/profile/confirm-email/([A-Za-z0-9_-]+\.[A-Za-z0-9_-]+)/`)

// outbox returns the messages queued to address.
func (a *userAPI) outbox(address string) []store.Mail {
	a.t.Helper()
	ms, err := a.st.Outbox(context.Background(), address)
	if err != nil {
		a.t.Fatal(err)
	}
	return ms
}

// confirmKey returns the key of the link of the last message to address,
// after checking that its text and HTML parts carry the same link.
func (a *userAPI) confirmKey(address string) string {
	a.t.Helper()
	ms := a.outbox(address)
	if len(ms) == 0 {
		a.t.Fatalf("no message to %s", address)
	}
	m := ms[len(ms)-1]
	text := confirmLinkPattern.FindStringSubmatch(m.Text)
	html := confirmLinkPattern.FindStringSubmatch(m.HTML)
	if text == nil || html == nil || text[1] != html[1] {
		a.t.Fatalf("message to %s lacks the same link in both parts:\n%s\n%s", address, m.Text, m.HTML)
	}
	return text[1]
}

func TestEmailList(t *testing.T) {
	a := newUserAPI(t)
	me := a.account("ann@example.com")
	a.addEmail(me.id, "second@example.com")
	t.Run("lists the caller's addresses, primary first", func(t *testing.T) {
		a.do("GET", "/api/0/users/me/emails/", me.token, nil).golden(t, "email_list")
	})
	t.Run("returns at most 200 addresses", func(t *testing.T) {
		a.exec(`INSERT INTO email_addresses (user_id, email)
			SELECT $1, 'many' || i || '@example.com' FROM generate_series(1, 250) i`, me.id)
		res := a.do("GET", "/api/0/users/me/emails/", me.token, nil)
		res.expect(t, 200, nil)
		if n := len(res.json(t).([]any)); n != 200 {
			t.Errorf("%d addresses, want 200", n)
		}
	})
}

func TestEmailCreate(t *testing.T) {
	a := newUserAPI(t)
	me := a.account("ann@example.com")
	other := a.account("bob@example.com")
	a.addEmail(other.id, "pending@example.com")

	t.Run("creates an unverified address and queues its confirmation", func(t *testing.T) {
		res := a.do("POST", "/api/0/users/me/emails/", me.token, map[string]any{"email": "Ann.Work@Example.COM"})
		res.expect(t, 201, nil)
		res.golden(t, "email_create")
		ms := a.outbox("ann.work@example.com")
		if len(ms) != 1 {
			t.Fatalf("%d messages queued, want 1", len(ms))
		}
		if ms[0].To != "Ann.Work@example.com" || ms[0].Subject == "" || ms[0].DateSent != nil {
			t.Errorf("message = %+v", ms[0])
		}
		k, err := authn.NewEmailKeys(testSecret).Check(a.confirmKey("ann.work@example.com"), a.clock.Now())
		if err != nil {
			t.Fatal(err)
		}
		if k.UserID != me.id || k.Email != "Ann.Work@example.com" {
			t.Errorf("key names %d %q", k.UserID, k.Email)
		}
		if n := a.count(`SELECT count(*) FROM jobs WHERE kind = 'mail' AND state = 'queued'`); n != 2 {
			t.Errorf("%d mail jobs queued, want 2 (one per message)", n)
		}
		if a.wakeUps() == 0 {
			t.Error("the mail worker was not woken")
		}
	})
	t.Run("an address of another user that nobody verified is allowed", func(t *testing.T) {
		a.do("POST", "/api/0/users/me/emails/", me.token, map[string]any{"email": "pending@example.com"}).expect(t, 201, nil)
	})
	taken := []struct{ name, email string }{
		{"own address differing only in case is 400", "ANN.work@example.com"},
		{"own primary address is 400", "ann@example.com"},
		{"address verified by another user is 400", "bob@example.com"},
		{"address verified by another user in other case is 400", "BOB@EXAMPLE.COM"},
	}
	for _, tt := range taken {
		t.Run(tt.name, func(t *testing.T) {
			before := a.count(`SELECT count(*) FROM mail_outbox`)
			a.do("POST", "/api/0/users/me/emails/", me.token, map[string]any{"email": tt.email}).golden(t, "email_exists")
			if after := a.count(`SELECT count(*) FROM mail_outbox`); after != before {
				t.Errorf("a message was queued for a refused address")
			}
		})
	}
	invalid := []struct {
		name   string
		body   any
		golden string
	}{
		{"missing email is 422", map[string]any{}, "email_missing"},
		{"null email is 422", map[string]any{"email": nil}, "email_null"},
		{"number is 422", map[string]any{"email": 5}, "email_type"},
		{"no at sign is 422", map[string]any{"email": "ann"}, "email_invalid"},
		{"display name is 422", map[string]any{"email": "Ann <ann@example.org>"}, "email_invalid"},
		{"empty local part is 422", map[string]any{"email": "@example.org"}, "email_invalid"},
		{"spaces are 422", map[string]any{"email": "a nn@example.org"}, "email_invalid"},
		{"255 characters are 422", map[string]any{"email": strings.Repeat("a", 243) + "@example.org"}, "email_too_long"},
	}
	for _, tt := range invalid {
		t.Run(tt.name, func(t *testing.T) {
			a.do("POST", "/api/0/users/me/emails/", me.token, tt.body).golden(t, tt.golden)
		})
	}
	t.Run("254 characters are accepted", func(t *testing.T) {
		a.do("POST", "/api/0/users/me/emails/", me.token,
			map[string]any{"email": strings.Repeat("a", 242) + "@example.org"}).expect(t, 201, nil)
	})
}

func TestEmailMakePrimary(t *testing.T) {
	a := newUserAPI(t)
	me := a.account("ann@example.com")
	other := a.account("bob@example.com")
	a.addEmail(me.id, "unverified@example.com")
	a.addEmail(me.id, "work@example.com")
	a.exec(`UPDATE email_addresses SET is_verified = true WHERE email = 'work@example.com'`)

	t.Run("verified address becomes the only primary and the user's email", func(t *testing.T) {
		a.do("PUT", "/api/0/users/me/emails/", me.token, map[string]any{"email": "WORK@example.com"}).golden(t, "email_primary")
		a.do("GET", "/api/0/users/me/emails/", me.token, nil).golden(t, "email_list_after_primary")
		var u map[string]any
		json.Unmarshal(a.do("GET", "/api/0/users/me/", me.token, nil).body, &u)
		if u["email"] != "work@example.com" {
			t.Errorf("user email = %v, want work@example.com", u["email"])
		}
	})
	notFound := []struct{ name, email string }{
		{"unverified address is 404", "unverified@example.com"},
		{"another user's address is 404", other.email},
		{"unknown address is 404", "nobody@example.com"},
	}
	for _, tt := range notFound {
		t.Run(tt.name, func(t *testing.T) {
			a.do("PUT", "/api/0/users/me/emails/", me.token, map[string]any{"email": tt.email}).expect(t, 404, `{"detail":"Not Found"}`)
		})
	}
	t.Run("the other user's primary is untouched", func(t *testing.T) {
		a.do("GET", "/api/0/users/me/emails/", other.token, nil).expect(t, 200,
			`[{"email":"bob@example.com","isPrimary":true,"isVerified":true}]`)
	})
	t.Run("invalid body is 422", func(t *testing.T) {
		a.do("PUT", "/api/0/users/me/emails/", me.token, map[string]any{}).golden(t, "email_missing")
	})
	t.Run("concurrent changes of the primary address give no 5xx and one primary", func(t *testing.T) {
		for _, e := range []string{"a@example.com", "b@example.com", "c@example.com"} {
			a.addEmail(me.id, e)
		}
		a.exec(`UPDATE email_addresses SET is_verified = true WHERE user_id = $1`, me.id)
		var wg sync.WaitGroup
		statuses := make(chan int, 48)
		// Eight at once, six times.
		for g := range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range 6 {
					email := []string{"a@example.com", "b@example.com", "c@example.com", "work@example.com"}[(g+i)%4]
					statuses <- a.do("PUT", "/api/0/users/me/emails/", me.token, map[string]any{"email": email}).status
				}
			}()
		}
		wg.Wait()
		close(statuses)
		count := map[int]int{}
		for st := range statuses {
			count[st]++
		}
		if count[200] != 48 {
			t.Errorf("statuses %v, want 48×200", count)
		}
		var list []map[string]any
		json.Unmarshal(a.do("GET", "/api/0/users/me/emails/", me.token, nil).body, &list)
		primaries := 0
		for _, e := range list {
			if e["isPrimary"] == true {
				primaries++
			}
		}
		if primaries != 1 {
			t.Errorf("%d primary addresses, want 1", primaries)
		}
	})
}

func TestEmailDelete(t *testing.T) {
	a := newUserAPI(t)
	me := a.account("ann@example.com")
	other := a.account("bob@example.com")
	a.addEmail(me.id, "second@example.com")
	a.addEmail(other.id, "bobs-second@example.com")
	notFound := []struct{ name, email string }{
		{"primary address is 404", "ann@example.com"},
		{"another user's address is 404", "bobs-second@example.com"},
		{"another user's primary is 404", other.email},
		{"unknown address is 404", "nobody@example.com"},
	}
	for _, tt := range notFound {
		t.Run(tt.name, func(t *testing.T) {
			a.do("DELETE", "/api/0/users/me/emails/", me.token, map[string]any{"email": tt.email}).expect(t, 404, `{"detail":"Not Found"}`)
		})
	}
	t.Run("non-primary address is removed, whatever its case", func(t *testing.T) {
		a.do("DELETE", "/api/0/users/me/emails/", me.token, map[string]any{"email": "Second@Example.com"}).expect(t, 204, nil)
		a.do("GET", "/api/0/users/me/emails/", me.token, nil).expect(t, 200,
			`[{"email":"ann@example.com","isPrimary":true,"isVerified":true}]`)
	})
	t.Run("removing it again is 404", func(t *testing.T) {
		a.do("DELETE", "/api/0/users/me/emails/", me.token, map[string]any{"email": "second@example.com"}).expect(t, 404, nil)
	})
	t.Run("other user's addresses stay", func(t *testing.T) {
		if n := a.count(`SELECT count(*) FROM email_addresses WHERE user_id = $1`, other.id); n != 2 {
			t.Errorf("other user has %d addresses, want 2", n)
		}
	})
}

func TestEmailConfirm(t *testing.T) {
	a := newUserAPI(t)
	me := a.account("ann@example.com")
	other := a.account("bob@example.com")
	a.addEmail(me.id, "second@example.com")
	a.addEmail(other.id, "bobs-second@example.com")
	t.Run("unverified address gets its message again", func(t *testing.T) {
		a.do("POST", "/api/0/users/me/emails/confirm/", me.token, map[string]any{"email": "SECOND@example.com"}).expect(t, 204, nil)
		ms := a.outbox("second@example.com")
		if len(ms) != 2 {
			t.Fatalf("%d messages, want 2", len(ms))
		}
		a.confirmKey("second@example.com")
	})
	t.Run("another id in the path is ignored", func(t *testing.T) {
		a.do("POST", other.path("emails/confirm/"), me.token, map[string]any{"email": "second@example.com"}).expect(t, 204, nil)
		if n := len(a.outbox("second@example.com")); n != 3 {
			t.Fatalf("%d messages, want 3", n)
		}
	})
	notFound := []struct{ name, email string }{
		{"verified address is 404", "ann@example.com"},
		{"another user's unverified address is 404", "bobs-second@example.com"},
		{"unknown address is 404", "nobody@example.com"},
	}
	for _, tt := range notFound {
		t.Run(tt.name, func(t *testing.T) {
			before := a.count(`SELECT count(*) FROM mail_outbox`)
			a.do("POST", "/api/0/users/me/emails/confirm/", me.token, map[string]any{"email": tt.email}).expect(t, 404, `{"detail":"Not Found"}`)
			if after := a.count(`SELECT count(*) FROM mail_outbox`); after != before {
				t.Error("a message was queued")
			}
		})
	}
	t.Run("invalid address is 422", func(t *testing.T) {
		a.do("POST", "/api/0/users/me/emails/confirm/", me.token, map[string]any{"email": "x"}).golden(t, "email_invalid")
	})
}

// TestEmailJobsAreTransactional checks that a refused address leaves
// neither a message nor a job behind.
func TestEmailJobsAreTransactional(t *testing.T) {
	a := newUserAPI(t)
	me := a.account("ann@example.com")
	a.do("POST", "/api/0/users/me/emails/", me.token, map[string]any{"email": "ann@example.com"}).expect(t, 400, nil)
	got := []int{a.count(`SELECT count(*) FROM mail_outbox`), a.count(`SELECT count(*) FROM jobs`)}
	if diff := cmp.Diff([]int{0, 0}, got); diff != "" {
		t.Errorf("outbox and jobs (-want +got):\n%s", diff)
	}
}
