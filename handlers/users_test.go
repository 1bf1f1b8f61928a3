package handlers

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"errata/authn"
	"errata/store"
	"errata/store/storetest"
)

// testSecret is the SECRET_KEY of the user tests.
const testSecret = "test-secret"

// testClock is a clock the test moves.
type testClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *testClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *testClock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// userAPI is the test API with a secret, a clock the test moves, a count of
// mail-worker wake-ups and a direct connection for what the API cannot set
// up or show.
type userAPI struct {
	*testAPI
	clock   *testClock
	db      *pgx.Conn
	mu      sync.Mutex
	notices int
}

func newUserAPI(t *testing.T) *userAPI {
	t.Helper()
	return newUserAPIWithSeeds(t, memorySeeds)
}

// newUserAPIWithSeeds is newUserAPI whose pending recovery-code seeds are
// those that seeds returns for the test's store and clock.
func newUserAPIWithSeeds(t *testing.T, seeds openSeeds) *userAPI {
	t.Helper()
	url := storetest.NewDatabase(t)
	st, err := store.Open(context.Background(), store.Config{URL: url})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(st.Close)
	db, err := pgx.Connect(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close(context.Background()) })
	clock := &testClock{now: time.Now()}
	a := &userAPI{clock: clock, db: db}
	h := New(Deps{
		Store:         st,
		Auth:          &authn.Authenticator{Store: st},
		Log:           slog.New(slog.NewJSONHandler(io.Discard, nil)),
		PublicURL:     "https://errata.example",
		Now:           clock.Now,
		SecretKey:     testSecret,
		NotifyMail:    func() { a.mu.Lock(); a.notices++; a.mu.Unlock() },
		RecoverySeeds: seeds(st, clock.Now),
	})
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	a.testAPI = &testAPI{t: t, st: st, srv: srv}
	return a
}

// wakeUps is how often the handlers woke the mail worker.
func (a *userAPI) wakeUps() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.notices
}

// exec runs SQL the API has no route for.
func (a *userAPI) exec(sql string, args ...any) {
	a.t.Helper()
	if _, err := a.db.Exec(context.Background(), sql, args...); err != nil {
		a.t.Fatalf("%s: %v", sql, err)
	}
}

// count runs a SELECT count(*) query.
func (a *userAPI) count(sql string, args ...any) int {
	a.t.Helper()
	var n int
	if err := a.db.QueryRow(context.Background(), sql, args...).Scan(&n); err != nil {
		a.t.Fatalf("%s: %v", sql, err)
	}
	return n
}

// addEmail adds an unverified address to the user id through the store.
func (a *userAPI) addEmail(id int64, email string) {
	a.t.Helper()
	if _, err := a.st.AddEmailAddress(context.Background(), id, email, store.Mail{Subject: "s", Text: "t", HTML: "h"}); err != nil {
		a.t.Fatalf("add email %s: %v", email, err)
	}
}

// account is a user with a token.
type account struct {
	id    int64
	email string
	token string
}

func (a *userAPI) account(email string) account {
	a.t.Helper()
	id := a.user(email)
	return account{id: id, email: email, token: a.token(email)}
}

func (ac account) path(rest string) string {
	return "/api/0/users/" + strconv.FormatInt(ac.id, 10) + "/" + rest
}

// TestUserSelector runs every user route with each kind of {user_id}: "me"
// and the caller's id act on the caller; another id is 404 where the route
// checks it and ignored where it does not; anything else is 422.
func TestUserSelector(t *testing.T) {
	a := newUserAPI(t)
	other := a.account("other@example.com")
	routes := []struct {
		method, path string
		body         func(n int) any
		ok           int
		checked      bool
	}{
		{"GET", "", nil, 200, false},
		{"PUT", "", func(int) any { return map[string]any{"name": "New"} }, 200, true},
		{"DELETE", "", nil, 204, true},
		{"GET", "emails/", nil, 200, true},
		{"POST", "emails/", func(n int) any { return map[string]any{"email": fmt.Sprintf("new%d@example.com", n)} }, 201, true},
		{"PUT", "emails/", func(n int) any { return map[string]any{"email": fmt.Sprintf("u%d@example.com", n)} }, 200, true},
		{"DELETE", "emails/", func(n int) any { return map[string]any{"email": fmt.Sprintf("second%d@example.com", n)} }, 204, true},
		{"POST", "emails/confirm/", func(n int) any { return map[string]any{"email": fmt.Sprintf("second%d@example.com", n)} }, 204, false},
		{"GET", "notifications/", nil, 200, false},
		{"PUT", "notifications/", func(int) any { return map[string]any{"subscribeByDefault": false} }, 200, false},
	}
	selectors := []struct {
		name string
		sel  func(me account) string
		want func(ok int, checked bool) int
	}{
		{"me acts on the caller", func(account) string { return "me" }, func(ok int, _ bool) int { return ok }},
		{"own id acts on the caller", func(me account) string { return strconv.FormatInt(me.id, 10) }, func(ok int, _ bool) int { return ok }},
		{"another id is 404 where checked", func(account) string { return strconv.FormatInt(other.id, 10) },
			func(ok int, checked bool) int {
				if checked {
					return 404
				}
				return ok
			}},
		{"missing id is 404 where checked", func(account) string { return "999999" },
			func(ok int, checked bool) int {
				if checked {
					return 404
				}
				return ok
			}},
		{"abc is 422", func(account) string { return "abc" }, func(int, bool) int { return 422 }},
		{"negative id is 422", func(account) string { return "-1" }, func(int, bool) int { return 422 }},
		{"id beyond int64 is 422", func(account) string { return "99999999999999999999" }, func(int, bool) int { return 422 }},
	}
	n := 0
	for _, rt := range routes {
		for _, s := range selectors {
			n++
			t.Run(rt.method+" "+rt.path+"/"+s.name, func(t *testing.T) {
				me := a.account(fmt.Sprintf("u%d@example.com", n))
				a.addEmail(me.id, fmt.Sprintf("second%d@example.com", n))
				var body any
				if rt.body != nil {
					body = rt.body(n)
				}
				res := a.do(rt.method, "/api/0/users/"+s.sel(me)+"/"+rt.path, me.token, body)
				want := s.want(rt.ok, rt.checked)
				switch want {
				case 422:
					res.golden(t, "user_id_invalid")
				case 404:
					res.expect(t, 404, `{"detail":"Not Found"}`)
				default:
					res.expect(t, want, nil)
				}
				// Whatever the selector, no other user is touched.
				if got := a.count(`SELECT count(*) FROM email_addresses WHERE user_id = $1`, other.id); got != 1 {
					t.Errorf("other user has %d addresses, want 1", got)
				}
			})
		}
	}
	t.Run("without a token every route is 401", func(t *testing.T) {
		for _, rt := range routes {
			a.do(rt.method, "/api/0/users/me/"+rt.path, "", nil).expect(t, 401, `{"detail":"Unauthorized"}`)
		}
		a.do("GET", "/api/0/users/", "", nil).expect(t, 401, `{"detail":"Unauthorized"}`)
	})
	t.Run("a token without scopes is enough", func(t *testing.T) {
		ac := a.account("noscope@example.com")
		tok, hash := authn.NewToken()
		if _, err := a.st.CreateToken(context.Background(), ac.email, hash, []string{"event:read"}, "t"); err != nil {
			t.Fatal(err)
		}
		a.do("GET", "/api/0/users/me/", tok, nil).expect(t, 200, nil)
	})
}

func TestUserList(t *testing.T) {
	a := newUserAPI(t)
	me := a.account("ann@example.com")
	a.account("bob@example.com")
	t.Run("lists only the caller", func(t *testing.T) {
		res := a.do("GET", "/api/0/users/", me.token, nil)
		res.expect(t, 200, nil)
		res.golden(t, "user_list")
		if got := res.header.Get("X-Hits"); got != "1" {
			t.Errorf("X-Hits = %q, want 1", got)
		}
		if got := res.header.Get("Link"); !strings.Contains(got, `rel="next"; results="false"`) {
			t.Errorf("Link = %q, want a next link without results", got)
		}
	})
	t.Run("bad limit is 422", func(t *testing.T) {
		a.do("GET", "/api/0/users/?limit=x", me.token, nil).expect(t, 422, nil)
	})
}

func TestUserDetail(t *testing.T) {
	a := newUserAPI(t)
	me := a.account("ann@example.com")
	a.exec(`INSERT INTO social_accounts (user_id, provider, uid, email, username)
		VALUES ($1, 'github', '1234', 'ann@example.com', 'ann')`, me.id)
	t.Run("shows the caller with its identities", func(t *testing.T) {
		a.do("GET", "/api/0/users/me/", me.token, nil).golden(t, "user_detail")
	})
	t.Run("another id still shows the caller", func(t *testing.T) {
		other := a.account("bob@example.com")
		a.do("GET", other.path(""), me.token, nil).golden(t, "user_detail")
	})
}

func TestUserUpdate(t *testing.T) {
	a := newUserAPI(t)
	me := a.account("ann@example.com")
	t.Run("assigns name and options", func(t *testing.T) {
		res := a.do("PUT", "/api/0/users/me/", me.token, map[string]any{
			"name": "Ann Smith",
			"options": map[string]any{"timezone": "Europe/Vienna", "stacktraceOrder": "-1",
				"language": "de", "clock24Hours": true, "preferredTheme": "dark"},
		})
		res.golden(t, "user_update")
	})
	t.Run("keys absent keep their values", func(t *testing.T) {
		res := a.do("PUT", "/api/0/users/me/", me.token, map[string]any{"options": map[string]any{"language": "en"}})
		res.golden(t, "user_update_partial")
	})
	t.Run("snake_case keys and null unset an option", func(t *testing.T) {
		res := a.do("PUT", "/api/0/users/me/", me.token, map[string]any{"options": map[string]any{"clock_24_hours": nil, "preferred_theme": nil}})
		res.golden(t, "user_update_unset")
	})
	t.Run("the update is stored", func(t *testing.T) {
		a.do("GET", "/api/0/users/me/", me.token, nil).golden(t, "user_detail_updated")
	})
	t.Run("stacktraceOrder is an integer; its text is accepted; other values are 422", func(t *testing.T) {
		for _, tc := range []struct {
			in     any
			status int
			want   any
		}{
			{2, http.StatusOK, float64(2)}, {"1", http.StatusOK, float64(1)}, {-1, http.StatusOK, float64(-1)},
			{nil, http.StatusOK, nil}, {3, http.StatusUnprocessableEntity, nil}, {"newest", http.StatusUnprocessableEntity, nil},
			{1.5, http.StatusUnprocessableEntity, nil}, {true, http.StatusUnprocessableEntity, nil},
		} {
			res := a.do("PUT", "/api/0/users/me/", me.token, map[string]any{"options": map[string]any{"stacktraceOrder": tc.in}})
			if res.status != tc.status {
				t.Errorf("%v: %d %s, want %d", tc.in, res.status, res.body, tc.status)
				continue
			}
			if tc.status == http.StatusOK {
				if got := res.field(t, "options").(map[string]any)["stacktraceOrder"]; got != tc.want {
					t.Errorf("%v: stacktraceOrder = %v, want %v", tc.in, got, tc.want)
				}
			}
		}
		// A value stored before the option was an integer reads as unset.
		a.exec(`UPDATE users SET opt_stacktrace_order = 'newest first' WHERE id = $1`, me.id)
		if got := a.do("GET", "/api/0/users/me/", me.token, nil).field(t, "options").(map[string]any)["stacktraceOrder"]; got != nil {
			t.Errorf("a legacy text value reads as %v, want null", got)
		}
	})
	bad := []struct {
		name   string
		body   any
		golden string
	}{
		{"unknown timezone is 422", map[string]any{"options": map[string]any{"timezone": "Mars/Olympus"}}, "user_update_bad_timezone"},
		{"Local is not a timezone", map[string]any{"options": map[string]any{"timezone": "Local"}}, "user_update_bad_timezone"},
		{"name over 255 characters is 422", map[string]any{"name": strings.Repeat("é", 256)}, "user_update_long_name"},
		{"null name is 422", map[string]any{"name": nil}, "user_update_null_name"},
		{"name of the wrong type is 422", map[string]any{"name": 5}, "user_update_name_type"},
		{"options that are not an object are 422", map[string]any{"options": "x"}, "user_update_options_type"},
		{"clock24Hours of the wrong type is 422", map[string]any{"options": map[string]any{"clock24Hours": "yes"}}, "user_update_clock_type"},
	}
	for _, tt := range bad {
		t.Run(tt.name, func(t *testing.T) {
			a.do("PUT", "/api/0/users/me/", me.token, tt.body).golden(t, tt.golden)
		})
	}
	t.Run("broken JSON is 400", func(t *testing.T) {
		a.do("PUT", "/api/0/users/me/", me.token, "{").expect(t, 400, `{"detail":"Cannot parse request body"}`)
	})
	t.Run("another id with a valid body is 404 and changes nothing", func(t *testing.T) {
		other := a.account("bob@example.com")
		a.do("PUT", other.path(""), me.token, map[string]any{"name": "X"}).expect(t, 404, `{"detail":"Not Found"}`)
		if n := a.count(`SELECT count(*) FROM users WHERE name = 'X'`); n != 0 {
			t.Errorf("%d users renamed", n)
		}
	})
}

func TestUserDelete(t *testing.T) {
	a := newUserAPI(t)
	owner := a.account("owner@example.com")
	a.org("acme", owner.email)
	t.Run("owner of an organization is 400", func(t *testing.T) {
		a.do("DELETE", "/api/0/users/me/", owner.token, nil).golden(t, "user_delete_owner")
	})
	t.Run("owner of one and member of another is 400", func(t *testing.T) {
		mixed := a.account("mixed@example.com")
		a.org("beta", mixed.email)
		a.member("acme", mixed.email, "member")
		a.do("DELETE", "/api/0/users/me/", mixed.token, nil).golden(t, "user_delete_owner")
	})
	t.Run("admin is not an owner and is deleted with everything of its own", func(t *testing.T) {
		ac := a.account("admin@example.com")
		a.member("acme", ac.email, "admin")
		a.addEmail(ac.id, "second@example.com")
		a.exec(`INSERT INTO recovery_codes (user_id, seed_encrypted) VALUES ($1, '\x00')`, ac.id)
		a.exec(`INSERT INTO social_accounts (user_id, provider, uid) VALUES ($1, 'github', 'x')`, ac.id)
		a.do("DELETE", ac.path(""), ac.token, nil).expect(t, 204, nil)
		for _, table := range []string{"email_addresses", "memberships", "api_tokens", "recovery_codes", "social_accounts"} {
			if n := a.count(`SELECT count(*) FROM `+table+` WHERE user_id = $1`, ac.id); n != 0 {
				t.Errorf("%s keeps %d rows of the deleted user", table, n)
			}
		}
		if n := a.count(`SELECT count(*) FROM users WHERE id = $1`, ac.id); n != 0 {
			t.Error("user still exists")
		}
		a.do("GET", "/api/0/users/me/", ac.token, nil).expect(t, 401, `{"detail":"Unauthorized"}`)
	})
	t.Run("the owner and the organization stay", func(t *testing.T) {
		a.do("GET", "/api/0/users/me/", owner.token, nil).expect(t, 200, nil)
		if n := a.count(`SELECT count(*) FROM memberships WHERE user_id = $1`, owner.id); n != 1 {
			t.Errorf("owner has %d memberships, want 1", n)
		}
	})
}

func TestNotifications(t *testing.T) {
	a := newUserAPI(t)
	me := a.account("ann@example.com")
	t.Run("default is subscribed", func(t *testing.T) {
		a.do("GET", "/api/0/users/me/notifications/", me.token, nil).golden(t, "user_notifications")
	})
	t.Run("PUT assigns the key", func(t *testing.T) {
		a.do("PUT", "/api/0/users/me/notifications/", me.token, map[string]any{"subscribeByDefault": false}).
			golden(t, "user_notifications_off")
	})
	t.Run("PUT without the key keeps it", func(t *testing.T) {
		a.do("PUT", "/api/0/users/me/notifications/", me.token, map[string]any{}).
			golden(t, "user_notifications_off")
	})
	t.Run("snake_case is accepted", func(t *testing.T) {
		a.do("PUT", "/api/0/users/me/notifications/", me.token, map[string]any{"subscribe_by_default": true}).
			golden(t, "user_notifications")
	})
	t.Run("the setting is stored", func(t *testing.T) {
		a.do("GET", "/api/0/users/me/notifications/", me.token, nil).golden(t, "user_notifications")
	})
	t.Run("wrong type is 422", func(t *testing.T) {
		a.do("PUT", "/api/0/users/me/notifications/", me.token, map[string]any{"subscribeByDefault": "no"}).
			golden(t, "user_notifications_type")
	})
	t.Run("null is 422", func(t *testing.T) {
		a.do("PUT", "/api/0/users/me/notifications/", me.token, map[string]any{"subscribeByDefault": nil}).
			golden(t, "user_notifications_null")
	})
	t.Run("another id is ignored", func(t *testing.T) {
		other := a.account("bob@example.com")
		a.do("PUT", other.path("notifications/"), me.token, map[string]any{"subscribeByDefault": false}).expect(t, 200, nil)
		a.do("GET", "/api/0/users/me/notifications/", other.token, nil).golden(t, "user_notifications")
		a.do("GET", "/api/0/users/me/notifications/", me.token, nil).golden(t, "user_notifications_off")
	})
}

// TestUserRoutesCanRequireAMemberScope: with UserRoutesNeedScope, a token of
// project scopes only (a CI token) can neither read nor change the account;
// member:read reads, member:write changes.
func TestUserRoutesCanRequireAMemberScope(t *testing.T) {
	a := newTestAPI(t)
	a.user("ann@example.com")
	d := Deps{Store: a.st, Auth: &authn.Authenticator{Store: a.st}, Log: a.lg, Now: time.Now, SecretKey: "test-secret",
		RecoverySeeds: authn.NewPendingSeeds(300*time.Second, time.Now), UserRoutesNeedScope: true}
	srv := httptest.NewServer(serve(d, routes(d)))
	t.Cleanup(srv.Close)
	strict := &testAPI{t: t, st: a.st, db: a.db, srv: srv, lg: a.lg}
	ci := a.token("ann@example.com", "project:releases")
	reader := a.token("ann@example.com", "member:read")
	writer := a.token("ann@example.com", "member:write")
	for _, tc := range []struct {
		method, path, token string
		body                any
		status              int
	}{
		{"GET", "/api/0/users/me/", ci, nil, 403},
		{"GET", "/api/0/users/me/", reader, nil, 200},
		{"PUT", "/api/0/users/me/", reader, map[string]any{"name": "Ann"}, 403},
		{"PUT", "/api/0/users/me/", writer, map[string]any{"name": "Ann"}, 200},
		{"GET", "/api/0/generate-recovery-codes/", reader, nil, 403},
		{"GET", "/api/0/generate-recovery-codes/", writer, nil, 200},
	} {
		if res := strict.do(tc.method, tc.path, tc.token, tc.body); res.status != tc.status {
			t.Errorf("%s %s with %s: %d, want %d", tc.method, tc.path, tc.token[:12], res.status, tc.status)
		}
	}
	// The spec's rule, the default: any valid token.
	if res := a.do("GET", "/api/0/users/me/", ci, nil); res.status != 200 {
		t.Errorf("by default a CI token reads the account: %d, want 200", res.status)
	}
}
