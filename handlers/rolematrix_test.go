package handlers

// The role matrix: every route of routes.go and every direct route, asked
// by each role of an organization through a session, a token of every
// scope and tokens of fewer scopes than the role, against the table of
// SECURITY.md ("Roles") that says who may do what.

import (
	"bufio"
	"bytes"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"errata/authn"
)

// matrixRoles are the roles of an organization, lowest first.
var matrixRoles = []string{"member", "admin", "manager", "owner"}

// roleCredential is one way a person of a role calls errata: a session
// (sessionID set) or a token of scopes.
type roleCredential struct {
	what      string
	sessionID string
	token     string
	scopes    []string // the token's
}

// roleCaller is a user of one role in acme, and its credentials.
type roleCaller struct {
	role  string
	id    int64
	creds []roleCredential
}

// roleTokens are the tokens each role's user holds besides its session:
// one of every scope, tokens of fewer scopes than any role grants, and one
// of scopes that a member's role does not grant.
var roleTokens = []struct {
	what   string
	scopes []string
}{
	{"a token of every scope", authn.Scopes},
	{"a token of project:read alone", []string{"project:read"}},
	{"a token of project:releases alone", []string{"project:releases"}},
	// More than a member's role grants: within it, nothing.
	{"a token of project:write and org:write alone", []string{"project:write", "org:write"}},
}

// newRoleCaller makes a user of role in acme, signed in as the app client,
// with the tokens of roleTokens.
func newRoleCaller(t *testing.T, f *matrixFixture, role string) roleCaller {
	t.Helper()
	email := role + "-of-the-role-matrix@acme.example"
	u := f.account(t, email)
	f.testAPI.member("acme", email, role)
	session, _ := f.startSession(t, u.id)
	c := roleCaller{role: role, id: u.id, creds: []roleCredential{{what: "a session", sessionID: session}}}
	for _, tok := range roleTokens {
		c.creds = append(c.creds, roleCredential{what: tok.what, token: f.tokenFor(t, u.id, tok.scopes), scopes: tok.scopes})
	}
	return c
}

// roleMatrixRoute is a route the role matrix asks: its pattern, access
// rule and whether it is a direct route (text errors).
type roleMatrixRoute struct {
	pattern string
	access  access
	direct  bool
}

// roleMatrixRoutes returns every route of routes.go and every direct
// route, the debuginfod prefix by the routes below it.
func roleMatrixRoutes() []roleMatrixRoute {
	d := Deps{SecretKey: testSecret}
	var rts []roleMatrixRoute
	for _, rt := range routes(d) {
		rts = append(rts, roleMatrixRoute{rt.pattern, rt.access, false})
	}
	for _, rt := range directRoutes(d) {
		if rt.pattern != patDebuginfod {
			rts = append(rts, roleMatrixRoute{rt.pattern, rt.access, true})
			continue
		}
		for _, p := range debuginfodRoutes {
			rts = append(rts, roleMatrixRoute{p, rt.access, true})
		}
	}
	slices.SortFunc(rts, func(a, b roleMatrixRoute) int { return strings.Compare(a.pattern, b.pattern) })
	return rts
}

var (
	// routeLine is a route of routes.go whose rule is a variable; a rule
	// written in place (scopes(...)) has no name.
	routeLine = regexp.MustCompile(`\{"([A-Z]+ [^"]+)", ([a-z][A-Za-z]*), `)
	// directLine is a direct route, by the constant of its pattern.
	directLine = regexp.MustCompile(`\{(pat[A-Za-z]+), ([a-z][A-Za-z]*), `)
	patConst   = regexp.MustCompile(`(pat[A-Za-z]+)\s*= "([^"]+)"`)
)

// ruleNames reads, from the source of routes.go, the name of each route's
// access rule by its pattern, when the rule is a variable.
func ruleNames(t *testing.T) map[string]string {
	t.Helper()
	src, err := os.ReadFile("routes.go")
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]string{}
	for _, m := range routeLine.FindAllSubmatch(src, -1) {
		names[string(m[1])] = string(m[2])
	}
	patterns := map[string]string{}
	for _, m := range patConst.FindAllSubmatch(src, -1) {
		patterns[string(m[1])] = string(m[2])
	}
	for _, m := range directLine.FindAllSubmatch(src, -1) {
		p, ok := patterns[string(m[1])]
		if !ok {
			t.Fatalf("routes.go: no pattern %s", m[1])
		}
		names[p] = string(m[2])
	}
	for _, p := range debuginfodRoutes {
		names[p] = names[patDebuginfod]
	}
	return names
}

// roleMatrixValues are path values of the direct routes and of the routes
// the other matrices check apart; they name nothing stored.
var roleMatrixValues = map[string]string{
	"token_id": "999999999",
	"key":      "0123456789ABCDEF0123456789ABCDEF1",
	"id":       "0123456789abcdef0123456789abcdef01234567",
	"path":     "src/main.c",
	"file":     "hello.pdb",
	"file2":    "hello.pdb",
}

// roleMatrixRequest is the request of pattern in acme: a read names the
// standard records, so that it succeeds; any other method names records
// that do not exist and sends a body that does not parse, so that it
// changes nothing whoever may send it.
func roleMatrixRequest(t *testing.T, f *matrixFixture, pattern string) (path string, body []byte) {
	t.Helper()
	method, path, _ := strings.Cut(pattern, " ")
	values := map[string]string{}
	for k, v := range roleMatrixValues {
		values[k] = v
	}
	for k, v := range missingValues {
		values[k] = v
	}
	if method == http.MethodGet {
		for k, v := range f.standard() {
			values[k] = v
		}
		values["user_id"] = "me"
	} else {
		body = []byte("{")
	}
	values["organization_slug"] = "acme"
	path = strings.TrimSuffix(path, "{$}")
	for _, m := range regexp.MustCompile(`\{([a-z_0-9]+)(\.\.\.)?\}`).FindAllStringSubmatch(path, -1) {
		v, ok := values[m[1]]
		if !ok {
			t.Fatalf("%s: no value for {%s}: add one to missingValues", pattern, m[1])
		}
		path = strings.Replace(path, m[0], url.PathEscape(v), 1)
	}
	return path, body
}

// sendAs sends the request of pattern with the credential c.
func (f *matrixFixture) sendAs(t *testing.T, pattern string, c roleCredential) response {
	t.Helper()
	method, _, _ := strings.Cut(pattern, " ")
	path, body := roleMatrixRequest(t, f, pattern)
	req, err := http.NewRequest(method, f.srv.URL+path, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.sessionID != "" {
		req.Header.Set(authn.SessionTokenHeader, c.sessionID)
	} else {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	return f.exchange(t, req)
}

// expectedAccess is what the rule a of a route lets a caller of role do
// with credential c, the rule of ScopesIn: a session holds its role's
// scopes (outside organizations the union of its roles', here its one
// role's), a token in an organization those of its scopes that its role
// grants, outside organizations its own. roleScopes is the table of
// SECURITY.md.
func expectedAccess(a access, inOrg bool, roleScopes []string, c roleCredential) bool {
	switch {
	case a.sessionOnly:
		return c.sessionID != ""
	case !a.token:
		return true
	case a.recentSession:
		return c.sessionID != ""
	}
	var held []string
	switch {
	case c.sessionID != "":
		held = roleScopes
	case !inOrg:
		held = c.scopes
	default:
		for _, s := range c.scopes {
			if slices.Contains(roleScopes, s) {
				held = append(held, s)
			}
		}
	}
	return len(a.scopes) == 0 || slices.ContainsFunc(a.scopes, func(s string) bool { return slices.Contains(held, s) })
}

// accessGroup names the routes of one access rule, as the first column of
// SECURITY.md's table does: the scopes a route takes one of, in the order
// of authn.Scopes, or what else it needs.
func accessGroup(a access) string {
	switch {
	case a.sessionOnly:
		return "no credential or a session"
	case !a.token:
		return "no credential"
	case a.recentSession:
		return "a recent session"
	case len(a.scopes) == 0:
		return "any token"
	}
	return scopeList(a.scopes)
}

// scopeList writes scopes in the order of authn.Scopes (org:integrations
// last), each in backquotes.
func scopeList(scopes []string) string {
	var out []string
	for _, s := range append(slices.Clip(authn.Scopes), "org:integrations") {
		if slices.Contains(scopes, s) {
			out = append(out, "`"+s+"`")
		}
	}
	for _, s := range scopes {
		if !slices.Contains(authn.Scopes, s) && s != "org:integrations" {
			out = append(out, "`"+s+"`") // an unknown scope still shows
		}
	}
	return strings.Join(out, " ")
}

// roleTable is the table of SECURITY.md's section Roles: each role's
// scopes, and per access group whether each role may call its routes.
type roleTable struct {
	scopes map[string][]string
	may    map[string]map[string]bool // group -> role -> may
	rules  map[string][]string        // group -> the rules its routes cell names
}

var (
	backquoted = regexp.MustCompile("`([^`]*)`")
	identifier = regexp.MustCompile(`^[a-z][A-Za-z]*$`)
)

// readRoleTable parses the first table of SECURITY.md's section "## Roles".
// Its header is | a route takes | routes | member | admin | manager | owner |;
// its first row, "scopes of the role", gives each role's scopes ("admin's,
// and `x` `y`" is admin's and those); each other row gives an access group
// (accessGroup), the names of its rules in routes.go (`orgRead`), and yes
// or no per role.
func readRoleTable(t *testing.T) roleTable {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "SECURITY.md"))
	if err != nil {
		t.Fatal(err)
	}
	var rows [][]string
	inSection := false
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if strings.HasPrefix(line, "## ") {
			if inSection {
				break
			}
			inSection = line == "## Roles"
			continue
		}
		if !inSection {
			continue
		}
		if !strings.HasPrefix(line, "|") {
			if len(rows) > 0 {
				break // the end of the first table
			}
			continue
		}
		cells := strings.Split(strings.Trim(line, "|"), "|")
		for i := range cells {
			cells[i] = strings.TrimSpace(cells[i])
		}
		rows = append(rows, cells)
	}
	if len(rows) < 3 {
		t.Fatalf("SECURITY.md: no table in section Roles")
	}
	header := append([]string{"a route takes", "routes"}, matrixRoles...)
	if diff := cmp.Diff(header, rows[0]); diff != "" {
		t.Fatalf("SECURITY.md, Roles: the table's header (-want +got):\n%s", diff)
	}
	rows = rows[2:] // the header and its rule
	tbl := roleTable{scopes: map[string][]string{}, may: map[string]map[string]bool{}, rules: map[string][]string{}}
	if rows[0][0] != "scopes of the role" {
		t.Fatalf("SECURITY.md, Roles: the first row is %q, want the scopes of the role", rows[0][0])
	}
	for i, role := range matrixRoles {
		cell := rows[0][2+i]
		var scopes []string
		if base, rest, ok := strings.Cut(cell, "'s, and "); ok {
			if scopes, ok = tbl.scopes[base]; !ok {
				t.Fatalf("SECURITY.md, Roles: %s's scopes name %q, not a role before it", role, base)
			}
			scopes, cell = slices.Clone(scopes), rest
		}
		for _, m := range backquoted.FindAllStringSubmatch(cell, -1) {
			scopes = append(scopes, m[1])
		}
		tbl.scopes[role] = scopes
	}
	for _, row := range rows[1:] {
		if len(row) != len(header) {
			t.Fatalf("SECURITY.md, Roles: row %q has %d cells, want %d", row, len(row), len(header))
		}
		group := row[0]
		if _, dup := tbl.may[group]; dup {
			t.Errorf("SECURITY.md, Roles: two rows for %s", group)
		}
		tbl.may[group] = map[string]bool{}
		for _, m := range backquoted.FindAllStringSubmatch(row[1], -1) {
			if identifier.MatchString(m[1]) {
				tbl.rules[group] = append(tbl.rules[group], m[1])
			}
		}
		for i, role := range matrixRoles {
			switch row[2+i] {
			case "yes":
				tbl.may[group][role] = true
			case "no":
			default:
				t.Errorf("SECURITY.md, Roles: %s, %s: %q is neither yes nor no", group, role, row[2+i])
			}
		}
	}
	return tbl
}

// sortedScopes returns scopes sorted, for comparing sets.
func sortedScopes(scopes []string) []string {
	s := slices.Clone(scopes)
	slices.Sort(s)
	return s
}

// TestRoleMatrix asks every route of routes.go and every direct route
// (debuginfod, the symbol server), as a user of each role of acme, through
// a session, a token of every scope and tokens of fewer scopes than the
// role (roleTokens). Each answer is what ScopesIn's rule says for the
// route's access rule: refused exactly when the caller's scopes in acme,
// its role's for a session and for a token its scopes that the role grants,
// hold none the route takes (403, with the body of a refusal), else not
// refused (not 401 or 403: a read names the standard records, other
// methods a record that does not exist and a body that does not parse, so
// that nothing changes). The expected scopes of each role are those of
// SECURITY.md's table, which must equal authn.RoleScopes; each row must name
// the rules (variables of routes.go) of its routes; what each role's
// session was observed to do on each access group must be the table's yes
// or no, and the table must have a row for each access group and no other.
// A new route is in the matrix as soon as routes.go has it.
func TestRoleMatrix(t *testing.T) {
	tbl := readRoleTable(t)
	for _, role := range matrixRoles {
		if diff := cmp.Diff(sortedScopes(authn.RoleScopes(role)), sortedScopes(tbl.scopes[role])); diff != "" {
			t.Errorf("SECURITY.md, Roles: the scopes of %s against authn.RoleScopes (-authn +SECURITY.md):\n%s", role, diff)
		}
	}
	rts := roleMatrixRoutes()
	f := newMatrixFixture(t)
	var callers []roleCaller
	for _, role := range matrixRoles {
		callers = append(callers, newRoleCaller(t, f, role))
	}

	names := ruleNames(t)
	ruled := map[string][]string{} // group -> the names of its routes' rules
	for _, rt := range rts {
		group := accessGroup(rt.access)
		if n := names[rt.pattern]; n != "" && !slices.Contains(ruled[group], n) {
			ruled[group] = append(ruled[group], n)
		}
	}
	var mu sync.Mutex
	observed := map[string]map[string][]bool{} // group -> role -> what each route answered its session
	start := time.Now()
	requests := 0
	t.Run("routes", func(t *testing.T) {
		for _, rt := range rts {
			group := accessGroup(rt.access)
			inOrg := strings.Contains(rt.pattern, "{organization_slug}")
			t.Run(rt.pattern, func(t *testing.T) {
				t.Parallel()
				for _, c := range callers {
					for _, cred := range c.creds {
						want := expectedAccess(rt.access, inOrg, tbl.scopes[c.role], cred)
						res := f.sendAs(t, rt.pattern, cred)
						refused := res.status == http.StatusForbidden
						switch {
						case want && (refused || res.status == http.StatusUnauthorized):
							t.Errorf("%s with %s: status %d, want it allowed: %s", c.role, cred.what, res.status, res.body)
						case !want && !refused:
							t.Errorf("%s with %s: status %d, want 403: %s", c.role, cred.what, res.status, res.body)
						case !want && rt.direct && string(res.body) != "Permission denied\n":
							t.Errorf("%s with %s: body %q, want the text of a refusal", c.role, cred.what, res.body)
						case !want && !rt.direct:
							res.expect(t, http.StatusForbidden, `{"detail":"Permission denied"}`)
						}
						mu.Lock()
						requests++
						if cred.sessionID != "" {
							if observed[group] == nil {
								observed[group] = map[string][]bool{}
							}
							observed[group][c.role] = append(observed[group][c.role], !refused)
						}
						mu.Unlock()
					}
				}
			})
		}
	})
	t.Logf("%d routes × %d roles × %d credentials: %d requests in %v",
		len(rts), len(matrixRoles), len(callers[0].creds), requests, time.Since(start).Round(time.Millisecond))

	// What each role's session was observed to do, per access group,
	// against the table.
	for group, byRole := range observed {
		may, ok := tbl.may[group]
		if !ok {
			t.Errorf("SECURITY.md, Roles: no row for the routes that take %s", group)
			continue
		}
		if diff := cmp.Diff(sortedScopes(ruled[group]), sortedScopes(tbl.rules[group])); diff != "" {
			t.Errorf("SECURITY.md, Roles: the rules named for %s against routes.go (-routes.go +SECURITY.md):\n%s", group, diff)
		}
		for _, role := range matrixRoles {
			answers := byRole[role]
			allowed := !slices.Contains(answers, false)
			if slices.Contains(answers, true) != allowed {
				t.Errorf("%s: %s's session was allowed some of its routes and refused others", group, role)
				continue
			}
			if allowed != may[role] {
				t.Errorf("SECURITY.md, Roles: %s, %s says %s, but its session was %s",
					group, role, yesNo(may[role]), map[bool]string{true: "allowed", false: "refused"}[allowed])
			}
		}
	}
	for group := range tbl.may {
		if _, ok := observed[group]; !ok {
			t.Errorf("SECURITY.md, Roles: the row %s names no access rule of routes.go", group)
		}
	}
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

// TestDirectRoutesRequire2FA checks that the direct routes, which the mux
// does not read, hold an organization's require2FA as every route does: a
// member without TOTP is 401 on debuginfod and the symbol server there,
// by token and by session, before any file is looked for.
func TestDirectRoutesRequire2FA(t *testing.T) {
	a := newTestAPI(t)
	a.user("owner@acme.example")
	a.org("acme", "owner@acme.example")
	id := a.user("member@acme.example")
	a.member("acme", "member@acme.example", "member")
	a.exec(`UPDATE organizations SET require_2fa = true WHERE slug = 'acme'`)
	session, _ := a.startSession(t, id)
	f := &matrixFixture{testAPI: a}
	for _, pattern := range []string{patDebuginfo, patSymbols} {
		for _, c := range []roleCredential{
			{what: "a token of every scope", token: a.token("member@acme.example")},
			{what: "a session", sessionID: session},
		} {
			if res := f.sendAs(t, pattern, c); res.status != http.StatusUnauthorized {
				t.Errorf("%s with %s: status %d, want 401: %s", pattern, c.what, res.status, res.body)
			}
		}
	}
}
