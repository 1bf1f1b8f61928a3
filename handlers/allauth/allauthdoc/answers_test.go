package allauthdoc

import (
	"slices"
	"strings"
	"testing"
)

// TestAllauthAnswerErrors holds the validator to hand-made answers: the
// right ones pass, each wrong one gets exactly its error.
func TestAllauthAnswerErrors(t *testing.T) {
	t.Parallel()
	d := Load(t)
	const (
		user    = `{"id": 1, "display": "Ada", "has_usable_password": true, "email": "ada@example.com"}`
		methods = `[{"method": "password", "at": 1711555057.06, "email": "ada@example.com"}]`
		session = `{"status": 200, "data": {"user": ` + user + `, "methods": ` + methods + `}, "meta": {"is_authenticated": true}}`
		totp    = `{"type": "totp", "created_at": 1711555057, "last_used_at": null}`
		codes   = `{"type": "recovery_codes", "created_at": 1711555057, "last_used_at": 1711555060.5, "total_code_count": 10, "unused_code_count": 9}`
	)
	cases := []struct {
		name, method, path string
		status             int
		body               string
		want               []string
	}{
		{"browser session", "GET", "/_allauth/browser/v1/auth/session", 200, session, nil},
		{"app session", "GET", "/_allauth/app/v1/auth/session", 200, session, nil},
		{"a query string is not part of the path", "GET", "/_allauth/app/v1/auth/session?x=1", 200, session, nil},
		{"an integer written with a fraction of zero", "GET", "/_allauth/app/v1/auth/session", 200,
			strings.Replace(session, `"status": 200`, `"status": 200.0`, 1), nil},
		{"missing required field", "GET", "/_allauth/app/v1/auth/session", 200,
			`{"status": 200, "data": {"user": ` + user + `, "methods": []}}`,
			[]string{`$: required field "meta" is missing`}},
		{"a number where an integer belongs", "GET", "/_allauth/app/v1/auth/session", 200,
			strings.Replace(session, `"status": 200`, `"status": 200.5`, 1),
			[]string{`$.status: 200.5 is not of type integer`}},
		{"a value outside the enum", "GET", "/_allauth/app/v1/auth/session", 200,
			strings.Replace(session, `"status": 200`, `"status": 201`, 1),
			[]string{`$.status: 201 is not one of [200]`}},
		{"wrong type", "POST", "/_allauth/browser/v1/auth/login", 400,
			`{"status": 400, "errors": [{"code": 7, "message": "no", "param": "email"}]}`,
			[]string{`$.errors[0].code: 7 is not of type string`}},
		{"oneOf matching none", "GET", "/_allauth/app/v1/auth/session", 200,
			strings.Replace(session, `"id": 1`, `"id": true`, 1),
			[]string{`$.data.user.id: matches none of oneOf: [0] $.data.user.id: true is not of type integer | [1] $.data.user.id: true is not of type string`}},
		{"oneOf over $ref and allOf", "GET", "/_allauth/browser/v1/account/authenticators", 200,
			`{"status": 200, "data": [` + totp + `, ` + codes + `]}`, nil},
		{"an authenticator of no documented kind", "GET", "/_allauth/browser/v1/account/authenticators", 200,
			`{"status": 200, "data": [{"type": "sms", "created_at": 1, "last_used_at": null}]}`,
			[]string{`$.data[0]: matches none of oneOf: [0] $.data[0].type: "sms" is not one of ["totp"] | [1] $.data[0]: required field "total_code_count" is missing | [2] $.data[0]: required field "id" is missing`}},
		{"null where the $ref's sibling says nullable", "GET", "/_allauth/browser/v1/account/authenticators", 200,
			`{"status": 200, "data": [` + totp + `]}`, nil},
		{"null where nothing says nullable", "GET", "/_allauth/browser/v1/account/authenticators", 200,
			`{"status": 200, "data": [` + strings.Replace(totp, `"created_at": 1711555057`, `"created_at": null`, 1) + `]}`,
			[]string{`$.data[0]: matches none of oneOf: [0] $.data[0].created_at: null is not of type number | [1] $.data[0].created_at: null is not of type number | [2] $.data[0].created_at: null is not of type number`}},
		{"TOTP not set up", "GET", "/_allauth/app/v1/account/authenticators/totp", 404,
			`{"status": 404, "meta": {"secret": "J4ZKKXTK7NOVU7EP", "totp_url": "otpauth://totp/errata:ada?secret=J4ZKKXTK7NOVU7EP"}}`, nil},
		{"TOTP not set up without its secret", "GET", "/_allauth/app/v1/account/authenticators/totp", 404,
			`{"status": 404, "meta": {"totp_url": "otpauth://totp/errata:ada"}}`,
			[]string{`$.meta: required field "secret" is missing`}},
		{"pending second factor", "POST", "/_allauth/browser/v1/auth/login", 401,
			`{"status": 401, "data": {"flows": [{"id": "login"}, {"id": "mfa_authenticate", "is_pending": true, "types": ["totp"]}]}, "meta": {"is_authenticated": false}}`, nil},
		{"a flow of no documented kind", "POST", "/_allauth/browser/v1/auth/login", 401,
			`{"status": 401, "data": {"flows": [{"id": "mfa_authenticate", "is_pending": false, "types": ["sms"]}]}, "meta": {"is_authenticated": false}}`,
			[]string{`$.data.flows[0].is_pending: false is not one of [true]`, `$.data.flows[0].types[0]: "sms" is not one of ["recovery_codes","totp","webauthn"]`}},
		{"browser-only path", "POST", "/_allauth/browser/v1/auth/2fa/trust", 400, `{"status": 400, "errors": []}`, nil},
		{"browser-only path asked by the app", "POST", "/_allauth/app/v1/auth/2fa/trust", 400, `{"status": 400, "errors": []}`,
			[]string{`the document has no operation POST /_allauth/app/v1/auth/2fa/trust`}},
		{"app-only path", "POST", "/_allauth/app/v1/tokens/refresh", 400, `{"status": 400}`, nil},
		{"app-only path asked by the browser", "POST", "/_allauth/browser/v1/tokens/refresh", 400, `{"status": 400}`,
			[]string{`the document has no operation POST /_allauth/browser/v1/tokens/refresh`}},
		{"a client of no documented kind", "GET", "/_allauth/desktop/v1/config", 200, `{}`,
			[]string{`the document has no operation GET /_allauth/desktop/v1/config`}},
		{"a method of no documented operation", "PUT", "/_allauth/app/v1/auth/session", 200, session,
			[]string{`the document has no operation PUT /_allauth/app/v1/auth/session`}},
		{"an undocumented status", "POST", "/_allauth/app/v1/auth/login", 500, `{"status": 500}`,
			[]string{`status 500 is not documented for POST /_allauth/{client}/v1/auth/login (documented: 200, 400, 401, 409)`}},
		{"an empty body", "GET", "/_allauth/app/v1/auth/session", 401, ``,
			[]string{`the body is not one JSON value: EOF`}},
		{"data after the value", "GET", "/_allauth/app/v1/auth/session", 200, session + `{}`,
			[]string{`the body is not one JSON value: data after the JSON value`}},
		{"a departure in the shape of a documented answer", "POST", "/_allauth/browser/v1/account/password/change", 200, session, nil},
		{"a departure held to that shape", "POST", "/_allauth/app/v1/account/password/change", 200,
			`{"status": 200, "data": {"user": ` + user + `, "methods": []}}`,
			[]string{`held to GET auth/session 200's shape: $: required field "meta" is missing`}},
		{"a departure without a shape is no documented answer", "POST", "/_allauth/app/v1/auth/login", 429, `{"status": 429}`,
			[]string{`status 429 is not documented for POST /_allauth/{client}/v1/auth/login (documented: 200, 400, 401, 409)`}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := d.Errors(c.method, c.path, c.status, []byte(c.body))
			if !slices.Equal(c.want, got) {
				t.Errorf("%s %s %d:\nwant %q\ngot  %q", c.method, c.path, c.status, c.want, got)
			}
		})
	}
}

// TestExcused holds CheckExcusing's excuses to departures: only an answer
// the document does not name, and only one without a shape to be held to.
func TestExcused(t *testing.T) {
	t.Parallel()
	d := Load(t)
	cases := []struct {
		method, path string
		status       int
		want         bool
	}{
		{"POST", "/_allauth/app/v1/auth/login", 429, true},
		{"POST", "/_allauth/browser/v1/auth/login?next=1", 413, true},
		{"DELETE", "/_allauth/app/v1/account/authenticators/totp", 404, true},
		{"POST", "/_allauth/browser/v1/auth/signup", 403, false}, // documented
		{"POST", "/_allauth/app/v1/auth/login", 400, false},      // documented
		{"POST", "/_allauth/app/v1/auth/login", 500, false},      // no departure
		{"GET", "/_allauth/app/v1/account/authenticators/totp", 404, false},
		{"POST", "/_allauth/app/v1/account/password/change", 200, false}, // held to a shape
		{"PUT", "/_allauth/app/v1/auth/login", 429, false},               // no such operation
	}
	for _, c := range cases {
		if got := d.Excused(c.method, c.path, c.status); got != c.want {
			t.Errorf("Excused(%s %s %d) = %v, want %v", c.method, c.path, c.status, got, c.want)
		}
	}
}
