package handlers

import (
	"net/http"
	"slices"
	"strconv"
	"strings"

	"errata/authn"
	"errata/store"
)

// organizationStatus is Sentry's status object of an organization.
type organizationStatus struct {
	ID   string `json:"id"`
	Name string `json:"name"`
}

// organizationAvatar is Sentry's avatar object; errata keeps no uploaded
// avatars, so it is always Sentry's letter avatar.
type organizationAvatar struct {
	AvatarType string  `json:"avatarType"`
	AvatarUUID *string `json:"avatarUuid"`
	AvatarURL  *string `json:"avatarUrl"`
}

// organizationLinks are the addresses of an organization: for a server
// without customer domains or regions, as errata is, Sentry writes its
// own URL (system.url-prefix, errata's PUBLIC_URL) for both.
type organizationLinks struct {
	OrganizationURL string `json:"organizationUrl"`
	RegionURL       string `json:"regionUrl"`
}

// organizationJSON is an organization as Sentry's API writes it: the
// fields sentry-cli's `organizations list` reads, whether it requires
// two-factor authentication, and errata's answers to the flags it does not
// have (no early adoption). The allow* flags say what errata lets members
// do: the member role invites nobody and creates no projects (member:write
// and project:write are an admin's and a manager's), and no superuser sees
// an organization it is not a member of. No organization has an SSO
// provider.
type organizationJSON struct {
	ID                         string             `json:"id"`
	Slug                       string             `json:"slug"`
	Name                       string             `json:"name"`
	DateCreated                jsonTime           `json:"dateCreated"`
	Status                     organizationStatus `json:"status"`
	IsEarlyAdopter             bool               `json:"isEarlyAdopter"`
	Require2FA                 bool               `json:"require2FA"`
	RequireEmailVerification   bool               `json:"requireEmailVerification"`
	Avatar                     organizationAvatar `json:"avatar"`
	AllowMemberInvite          bool               `json:"allowMemberInvite"`
	AllowMemberProjectCreation bool               `json:"allowMemberProjectCreation"`
	AllowSuperuserAccess       bool               `json:"allowSuperuserAccess"`
	Links                      organizationLinks  `json:"links"`
	HasAuthProvider            bool               `json:"hasAuthProvider"`
	Features                   []string           `json:"features"`
}

// newOrganizationJSON converts o; base is the server's own URL
// (publicBase).
func newOrganizationJSON(o store.Organization, base string) organizationJSON {
	return organizationJSON{
		ID: strconv.FormatInt(o.ID, 10), Slug: o.Slug, Name: o.Name, DateCreated: jsonTime(o.DateCreated),
		Status: organizationStatus{"active", "active"}, Features: []string{}, Require2FA: o.Require2FA,
		Avatar: organizationAvatar{AvatarType: "letter_avatar"},
		Links:  organizationLinks{OrganizationURL: base, RegionURL: base},
	}
}

// projectJSON is a project as Sentry's API writes it, with its teams.
type projectJSON struct {
	// Access are the caller's scopes on the project: its role's in the
	// organization, within its token's for a token (authn.ScopesIn).
	Access      []string `json:"access"`
	ID          string   `json:"id"`
	Slug        string   `json:"slug"`
	Name        string   `json:"name"`
	Platform    *string  `json:"platform"`
	DateCreated jsonTime `json:"dateCreated"`
	Status      string   `json:"status"`
	// Team is the first of Teams, null without one, as Sentry's lists allow.
	Team     *teamRefJSON  `json:"team"`
	Teams    []teamRefJSON `json:"teams"`
	Features []string      `json:"features"`
	projectEventFlags
	// Environments are the names of the environments the project shows.
	Environments []string `json:"environments"`
	// LatestRelease is Sentry's {"version": ...} of the project's latest
	// release, or null.
	LatestRelease *latestReleaseJSON `json:"latestRelease"`
}

// projectEventFlags are the fields Sentry's projects keep about their
// events and the caller, as errata can answer them: it ingests no events
// (no first event, no platform seen, none of the data these flags say a
// project has), keeps no bookmarks, and shows a project only to members
// of its organization, who may all see it.
type projectEventFlags struct {
	IsBookmarked               bool      `json:"isBookmarked"`
	IsMember                   bool      `json:"isMember"`
	HasAccess                  bool      `json:"hasAccess"`
	FirstEvent                 *jsonTime `json:"firstEvent"`
	FirstTransactionEvent      bool      `json:"firstTransactionEvent"`
	Platforms                  []string  `json:"platforms"`
	HasUserReports             bool      `json:"hasUserReports"`
	HasFeedbacks               bool      `json:"hasFeedbacks"`
	HasNewFeedbacks            bool      `json:"hasNewFeedbacks"`
	HasFlags                   bool      `json:"hasFlags"`
	HasLogs                    bool      `json:"hasLogs"`
	HasMinifiedStackTrace      bool      `json:"hasMinifiedStackTrace"`
	HasMonitors                bool      `json:"hasMonitors"`
	HasProfiles                bool      `json:"hasProfiles"`
	HasReplays                 bool      `json:"hasReplays"`
	HasSessions                bool      `json:"hasSessions"`
	HasTraceMetrics            bool      `json:"hasTraceMetrics"`
	HasInsightsAgentMonitoring bool      `json:"hasInsightsAgentMonitoring"`
	HasInsightsAppStart        bool      `json:"hasInsightsAppStart"`
	HasInsightsAssets          bool      `json:"hasInsightsAssets"`
	HasInsightsCaches          bool      `json:"hasInsightsCaches"`
	HasInsightsDb              bool      `json:"hasInsightsDb"`
	HasInsightsHTTP            bool      `json:"hasInsightsHttp"`
	HasInsightsMCP             bool      `json:"hasInsightsMCP"`
	HasInsightsQueues          bool      `json:"hasInsightsQueues"`
	HasInsightsScreenLoad      bool      `json:"hasInsightsScreenLoad"`
	HasInsightsVitals          bool      `json:"hasInsightsVitals"`
}

// latestReleaseJSON names a project's latest release.
type latestReleaseJSON struct {
	Version string `json:"version"`
}

// newProjectJSON converts p for a caller whose scopes on it are access.
func newProjectJSON(p store.Project, access []string) projectJSON {
	if access == nil {
		access = []string{}
	}
	out := projectJSON{
		Access: access,
		ID:     strconv.FormatInt(p.ID, 10), Slug: p.Slug, Name: p.Name, Platform: p.Platform, DateCreated: jsonTime(p.DateCreated),
		Status: "active", Teams: newTeamRefsJSON(p.Teams), Features: []string{}, Environments: p.Environments,
		projectEventFlags: projectEventFlags{IsMember: true, HasAccess: true, Platforms: []string{}},
	}
	if out.Environments == nil {
		out.Environments = []string{}
	}
	if len(out.Teams) > 0 {
		out.Team = &out.Teams[0]
	}
	if p.LatestRelease != nil {
		out.LatestRelease = &latestReleaseJSON{Version: *p.LatestRelease}
	}
	return out
}

// projectDetailJSON is a project as GET projects/{org}/{project}/ writes
// it, with its organization: Sentry's detail allows no null team, so
// without teams it is left out (docs/api.md, Conventions).
type projectDetailJSON struct {
	projectJSON
	Team         *struct{}        `json:"team,omitempty"` // hides projectJSON's
	Organization organizationJSON `json:"organization"`
}

// handleOrganizations serves GET organizations/: the caller's
// organizations, newest first; ?owner=true keeps those it owns, and
// ?query= those that match Sentry's query syntax (organizationFilter).
func handleOrganizations(d Deps) apiFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		page, err := readPage(r)
		if err != nil {
			return err
		}
		f, err := organizationFilter(r)
		if err != nil {
			return err
		}
		orgs, info, err := d.Store.Organizations(r.Context(), caller(r).UserID, f, page)
		if err != nil {
			return err
		}
		base := publicBase(r, d.PublicURL)
		out := make([]organizationJSON, 0, len(orgs))
		for _, o := range orgs {
			out = append(out, newOrganizationJSON(o, base))
		}
		setPageHeaders(w, r, d.PublicURL, info)
		writeJSON(w, r, d.Log, http.StatusOK, out)
		return nil
	}
}

// organizationFilter reads the filters of the organization list: owner
// (a boolean) and query, in Sentry's syntax: words that the name or the
// slug contains, and the keys id, slug and status (only active
// organizations exist). sortBy is refused: errata's lists are ordered by
// creation, and it counts no events.
func organizationFilter(r *http.Request) (store.OrganizationFilter, error) {
	var f store.OrganizationFilter
	q := r.URL.Query()
	if q.Has("sortBy") {
		return f, invalid(valueErr, "errata sorts organizations by creation date only", "query", "sortBy")
	}
	if q.Has("owner") {
		owner, err := strconv.ParseBool(q.Get("owner"))
		if err != nil {
			return f, invalid(typeError, "Input should be a valid boolean", "query", "owner")
		}
		f.OwnerOnly = owner
	}
	terms, err := queryTerms(q.Get("query"), "id", "slug", "status")
	if err != nil {
		return f, err
	}
	f.Text = terms[""]
	for _, id := range terms["id"] {
		n, err := strconv.ParseInt(id, 10, 64)
		if err != nil {
			return f, invalid(valueErr, "id: should be an integer", "query", "query")
		}
		f.IDs = append(f.IDs, n)
	}
	f.Slugs = terms["slug"]
	for _, status := range terms["status"] {
		switch status {
		case "active":
		case "pending_deletion", "deletion_in_progress":
			f.IDs = append(f.IDs, -1) // no organization is being deleted
		default:
			return f, invalid(valueErr, "status: should be active, pending_deletion or deletion_in_progress", "query", "query")
		}
	}
	return f, nil
}

// queryTerms splits a query in Sentry's search syntax into its free words
// (key "") and the values of key:value terms, whose key must be one of
// keys; a quoted value may hold spaces. Another key is a 422 naming the
// query: a filter errata does not apply is never ignored.
func queryTerms(query string, keys ...string) (map[string][]string, error) {
	terms := map[string][]string{}
	if len(query) > 200 || !isText(query) {
		return nil, invalid(valueErr, "Invalid query", "query", "query")
	}
	for rest := strings.TrimSpace(query); rest != ""; rest = strings.TrimSpace(rest) {
		word := rest
		if i := strings.IndexAny(rest, " \t"); i >= 0 {
			word, rest = rest[:i], rest[i:]
		} else {
			rest = ""
		}
		key, value, ok := strings.Cut(word, ":")
		if !ok {
			terms[""] = append(terms[""], word)
			continue
		}
		if strings.HasPrefix(value, `"`) {
			// A quoted value runs to the closing quote.
			full := value + rest
			if end := strings.Index(full[1:], `"`); end >= 0 {
				value, rest = full[1:end+1], full[end+2:]
			} else {
				value, rest = full[1:], ""
			}
		}
		if !slices.Contains(keys, key) {
			return nil, invalid(valueErr, "errata does not filter by "+key+": (it filters by "+strings.Join(keys, ", ")+" and free text)", "query", "query")
		}
		terms[key] = append(terms[key], value)
	}
	return terms, nil
}

// handleOrganization serves GET organizations/{org}/. Sentry's
// ?detailed=0 leaves out the projects and teams, which errata's answer
// never holds: another value asks for them, which errata cannot give.
func handleOrganization(d Deps) apiFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		slug, err := pathSlug(r, "organization_slug")
		if err != nil {
			return err
		}
		if q := r.URL.Query(); q.Has("detailed") && q.Get("detailed") != "0" {
			return invalid(valueErr, "errata answers organizations without their projects and teams: detailed=0", "query", "detailed")
		}
		o, err := d.Store.Organization(r.Context(), caller(r).UserID, slug)
		if err != nil {
			return err
		}
		writeJSON(w, r, d.Log, http.StatusOK, organizationOfCallerJSON{
			organizationJSON:       newOrganizationJSON(o, publicBase(r, d.PublicURL)),
			organizationCallerJSON: newOrganizationCallerJSON(o, caller(r).Scopes)})
		return nil
	}
}

// handleProjects serves GET organizations/{org}/projects/: the
// organization's projects, newest first; ?query= keeps those whose name or
// slug contains each of its words (Sentry's free text).
func handleProjects(d Deps) apiFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		slug, err := pathSlug(r, "organization_slug")
		if err != nil {
			return err
		}
		page, err := readPage(r)
		if err != nil {
			return err
		}
		terms, err := queryTerms(r.URL.Query().Get("query"))
		if err != nil {
			return err
		}
		projects, info, err := d.Store.Projects(r.Context(), caller(r).UserID, slug, terms[""], page)
		if err != nil {
			return err
		}
		out := make([]projectJSON, 0, len(projects))
		for _, p := range projects {
			out = append(out, newProjectJSON(p, caller(r).Scopes))
		}
		setPageHeaders(w, r, d.PublicURL, info)
		writeJSON(w, r, d.Log, http.StatusOK, out)
		return nil
	}
}

// handleProject serves GET projects/{org}/{project}/.
func handleProject(d Deps) apiFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		org, project, err := orgProjectSlugs(r)
		if err != nil {
			return err
		}
		p, err := d.Store.Project(r.Context(), caller(r).UserID, org, project)
		if err != nil {
			return err
		}
		writeJSON(w, r, d.Log, http.StatusOK, projectDetailJSON{projectJSON: newProjectJSON(p, caller(r).Scopes),
			Organization: newOrganizationJSON(p.Organization, publicBase(r, d.PublicURL))})
		return nil
	}
}

// organizationCallerJSON is the caller's place in an organization, which
// Sentry writes on the organization's detail: its role (orgRole) and its
// scopes there (access: the role's, within its token's for a token).
type organizationCallerJSON struct {
	OrgRole string   `json:"orgRole"`
	Access  []string `json:"access"`
}

func newOrganizationCallerJSON(o store.Organization, access []string) organizationCallerJSON {
	if access == nil {
		access = []string{}
	}
	return organizationCallerJSON{OrgRole: o.Role, Access: access}
}

// organizationOfCallerJSON is the answer of GET organizations/{org}/:
// the organization and the caller's place in it.
type organizationOfCallerJSON struct {
	organizationJSON
	organizationCallerJSON
}

// organizationDetailJSON is Sentry's detailed organization, the answer of
// PUT organizations/{org}/ and POST organizations/: the organization, the
// caller's place in it, its projects and teams, the roles of its members
// and teams, and Sentry's settings (organizationSettingsJSON).
type organizationDetailJSON struct {
	organizationJSON
	organizationCallerJSON
	organizationSettingsJSON
	Projects     []projectJSON  `json:"projects"`
	Teams        []teamJSON     `json:"teams"`
	OrgRoleList  []orgRoleJSON  `json:"orgRoleList"`
	TeamRoleList []teamRoleJSON `json:"teamRoleList"`
}

// organizationSettingsJSON are the settings of Sentry's detailed
// organization as errata has them. Those of what errata has no concept of
// (alerts, data scrubbing, relays, Seer and code review, crash reports,
// attachments, join requests, shared issues, SSO, sampling) are Sentry's
// documented empty values: false, "", 0, [], {} or null. The others say
// what errata does: access is organization-wide (openMembership), a new
// member's default role is member, and every member reads debug files
// (debugFilesRole).
type organizationSettingsJSON struct {
	AggregatedDataConsent            bool              `json:"aggregatedDataConsent"`
	AlertsMemberWrite                bool              `json:"alertsMemberWrite"`
	AllowJoinRequests                bool              `json:"allowJoinRequests"`
	AllowSharedIssues                bool              `json:"allowSharedIssues"`
	AttachmentsRole                  string            `json:"attachmentsRole"`
	AutoEnableCodeReview             bool              `json:"autoEnableCodeReview"`
	AutoOpenPrs                      bool              `json:"autoOpenPrs"`
	DataScrubber                     bool              `json:"dataScrubber"`
	DataScrubberDefaults             bool              `json:"dataScrubberDefaults"`
	DebugFilesRole                   string            `json:"debugFilesRole"`
	DefaultAutofixAutomationTuning   string            `json:"defaultAutofixAutomationTuning"`
	DefaultAutomatedRunStoppingPoint string            `json:"defaultAutomatedRunStoppingPoint"`
	DefaultCodeReviewTriggers        []string          `json:"defaultCodeReviewTriggers"`
	DefaultCodingAgent               string            `json:"defaultCodingAgent"`
	DefaultCodingAgentIntegrationID  *string           `json:"defaultCodingAgentIntegrationId"`
	DefaultRole                      string            `json:"defaultRole"`
	DefaultSeerScannerAutomation     bool              `json:"defaultSeerScannerAutomation"`
	EnableSeerCoding                 bool              `json:"enableSeerCoding"`
	EnhancedPrivacy                  bool              `json:"enhancedPrivacy"`
	EventsMemberAdmin                bool              `json:"eventsMemberAdmin"`
	Experiments                      map[string]string `json:"experiments"`
	HideAiFeatures                   bool              `json:"hideAiFeatures"`
	IsDefault                        bool              `json:"isDefault"`
	IsDynamicallySampled             bool              `json:"isDynamicallySampled"`
	IssueAlertsThreadFlag            bool              `json:"issueAlertsThreadFlag"`
	MetricAlertsThreadFlag           bool              `json:"metricAlertsThreadFlag"`
	OpenMembership                   bool              `json:"openMembership"`
	PendingAccessRequests            int               `json:"pendingAccessRequests"`
	RelayDsnEndpoint                 *string           `json:"relayDsnEndpoint"`
	RelayPiiConfig                   *string           `json:"relayPiiConfig"`
	RequiresSso                      bool              `json:"requiresSso"`
	SafeFields                       []string          `json:"safeFields"`
	ScrapeJavaScript                 bool              `json:"scrapeJavaScript"`
	ScrubIPAddresses                 bool              `json:"scrubIPAddresses"`
	SensitiveFields                  []string          `json:"sensitiveFields"`
	StoreCrashReports                int               `json:"storeCrashReports"`
	TrustedRelays                    []struct{}        `json:"trustedRelays"`
}

// errataSettings are the settings of every organization.
var errataSettings = organizationSettingsJSON{
	DebugFilesRole: "member", DefaultRole: "member", OpenMembership: true,
	DefaultCodeReviewTriggers: []string{}, Experiments: map[string]string{},
	SafeFields: []string{}, SensitiveFields: []string{}, TrustedRelays: []struct{}{},
}

// roleJSON is what Sentry's lists of organization and team roles write of
// each: allowed (and isAllowed) says whether the caller may give it.
type roleJSON struct {
	ID                 string   `json:"id"`
	Name               string   `json:"name"`
	Desc               string   `json:"desc"`
	Scopes             []string `json:"scopes"`
	Allowed            bool     `json:"allowed"`
	IsAllowed          bool     `json:"isAllowed"`
	IsRetired          bool     `json:"isRetired"`
	IsTeamRolesAllowed bool     `json:"isTeamRolesAllowed"`
}

// orgRoleJSON is a role of Sentry's orgRoleList (orgRoleList says which
// the caller may give).
type orgRoleJSON struct {
	roleJSON
	IsGlobalSnake   bool   `json:"is_global"`
	IsGlobal        bool   `json:"isGlobal"`
	MinimumTeamRole string `json:"minimumTeamRole"`
}

// teamRoleJSON is a role of Sentry's teamRoleList. Team roles are stored
// and shown; access stays organization-wide, so they grant nothing beyond
// the member's organization role.
type teamRoleJSON struct {
	roleJSON
	IsMinimumRoleFor *string `json:"isMinimumRoleFor"`
}

// orgRoleDescriptions are the names and descriptions of the roles, in
// Sentry's words where errata's scopes make them true (teams decide no
// access: an admin's scopes hold in every team).
var orgRoleDescriptions = map[string][2]string{
	"member":  {"Member", "Members can view and act on events, as well as view most other data within the organization."},
	"admin":   {"Admin", "Admins can manage projects and teams, but cannot invite members to the organization."},
	"manager": {"Manager", "Managers have admin access to every team and project, and can add and remove members."},
	"owner":   {"Owner", "Owners have unrestricted access to the organization, its data and its settings, and can add, change and remove members of any role."},
}

// orgRoleList is Sentry's list of organization roles for a caller of role
// callerRole: allowed says whether the caller may give the role, that is
// whether its role manages members (member:write) and authn.CanAssign
// lets it give that role (roles up to its own).
func orgRoleList(callerRole string) []orgRoleJSON {
	manages := slices.Contains(authn.RoleScopes(callerRole), "member:write")
	out := make([]orgRoleJSON, 0, len(store.Roles))
	for _, role := range store.Roles {
		d := orgRoleDescriptions[role]
		allowed := manages && authn.CanAssign(callerRole, role)
		global := role == "manager" || role == "owner"
		minimum := "admin"
		if role == "member" {
			minimum = "contributor"
		}
		out = append(out, orgRoleJSON{roleJSON: roleJSON{ID: role, Name: d[0], Desc: d[1],
			Scopes: slices.Clip(authn.RoleScopes(role)), Allowed: allowed, IsAllowed: allowed, IsTeamRolesAllowed: true},
			IsGlobalSnake: global, IsGlobal: global, MinimumTeamRole: minimum})
	}
	return out
}

// teamRoleList is Sentry's list of team roles for a caller of role
// callerRole: a team admin is named by those who hold team:admin in the
// organization. A contributor is the least team role of an organization
// member, a team admin that of an admin and above (teamRole in
// store/teams.go).
func teamRoleList(callerRole string) []teamRoleJSON {
	mayAdmin := slices.Contains(authn.RoleScopes(callerRole), "team:admin")
	member, admin := "member", "admin"
	return []teamRoleJSON{
		{roleJSON: roleJSON{ID: "contributor", Name: "Contributor",
			Desc:   "Contributors can view and act on events, as well as view most other data within the team's projects.",
			Scopes: slices.Clip(authn.RoleScopes("member")), Allowed: true, IsAllowed: true, IsTeamRolesAllowed: true},
			IsMinimumRoleFor: &member},
		{roleJSON: roleJSON{ID: "admin", Name: "Team Admin", Desc: "Admin privileges on the team, its members and its projects.",
			Scopes: slices.Clip(authn.RoleScopes("admin")), Allowed: mayAdmin, IsAllowed: mayAdmin, IsTeamRolesAllowed: true},
			IsMinimumRoleFor: &admin},
	}
}

// newOrganizationDetailJSON converts d for a caller whose scopes in it are
// access; base is the server's own URL (publicBase).
func newOrganizationDetailJSON(d store.OrganizationDetail, access []string, base string) organizationDetailJSON {
	out := organizationDetailJSON{
		organizationJSON:         newOrganizationJSON(d.Organization, base),
		organizationCallerJSON:   newOrganizationCallerJSON(d.Organization, access),
		organizationSettingsJSON: errataSettings,
		Projects:                 make([]projectJSON, 0, len(d.Projects)),
		Teams:                    make([]teamJSON, 0, len(d.Teams)),
		OrgRoleList:              orgRoleList(d.Role),
		TeamRoleList:             teamRoleList(d.Role),
	}
	caller := out.organizationCallerJSON.Access
	for _, p := range d.Projects {
		out.Projects = append(out.Projects, newProjectJSON(p, caller))
	}
	for _, t := range d.Teams {
		out.Teams = append(out.Teams, newTeamJSONWith(t, caller))
	}
	return out
}
