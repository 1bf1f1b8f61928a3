package handlers

import (
	"net/http"

	"errata/authn"
	"errata/handlers/allauth"
	"errata/handlers/pages"
	"errata/handlers/symbolkey"
	"errata/store"
)

// route is one entry of the API: a method-and-path pattern of net/http, who
// may call it, and its handler.
type route struct {
	pattern string
	access  access
	handler apiFunc
}

// access is a route's rule for callers.
type access struct {
	open   bool     // no credential is read at all
	token  bool     // a valid token is required
	scopes []string // with token: the caller needs at least one of them; none means any token
	// basic also takes the token as the password of Basic credentials
	// (authn.AuthenticateBearerOrBasic), as debuggers send it.
	basic bool
	// recentSession: with token, the caller must be a signed-in session
	// (a token is 403) whose person authenticated within
	// authn.RecentAuthentication (else 401 "Reauthentication required").
	recentSession bool
	// sessionOnly: without token, a credential, when one is sent, must be
	// a signed-in session (a token is 403): a person acts, not a token.
	sessionOnly bool
}

var (
	// open routes ignore credentials: probes and links that carry their own proof.
	open = access{open: true}
	// optionalToken routes answer anyone but read a token when one is sent;
	// an invalid one is still 401.
	optionalToken = access{}
	// optionalSession routes answer anyone without a credential, or a
	// signed-in session; a token is 403.
	optionalSession = access{sessionOnly: true}
	// anyToken routes need a valid token and no particular scope.
	anyToken = access{token: true}
	// recentSession routes manage credentials: only a session that
	// authenticated recently may call them, never a token.
	recentSession = access{token: true, recentSession: true}
)

// scopes is the rule "a valid token with at least one of s".
func scopes(s ...string) access { return access{token: true, scopes: s} }

// Scope sets of the specification's table.
var (
	orgRead          = scopes("org:read", "org:write", "org:admin")
	projectRead      = scopes("project:read", "project:write", "project:admin")
	projectWrite     = scopes("project:write", "project:admin")
	projectReleases  = scopes("project:releases")
	releaseAssembler = scopes("project:releases", "project:write", "project:admin")
	// releaseReader is Sentry's ProjectReleasePermission for reads.
	releaseReader = scopes("project:read", "project:write", "project:admin", "project:releases")
	// repoReader lets a release token list repositories too:
	// sentry-cli's set-commits reads them first.
	repoReader = scopes("org:read", "org:write", "org:admin", "project:releases")
	orgWrite   = scopes("org:write", "org:admin")
	// projectAdmin is Sentry's scope for deleting a project.
	projectAdmin = scopes("project:admin")
	// debuggerRead is releaseReader for debuggers, which may send the
	// token as a Basic password: libcurl does for the user:TOKEN@host
	// URLs that debuginfod clients are given.
	debuggerRead = access{token: true, basic: true, scopes: releaseReader.scopes}
	// memberRead and memberWrite are Sentry's member scopes.
	memberRead  = scopes("member:read", "member:write", "member:admin")
	memberWrite = scopes("member:write", "member:admin")
)

// routes lists every route of errata. Each pattern is exact (it ends in
// {$} or names a file, like /healthz), so no route serves paths below it.
func routes(d Deps) []route {
	d.resolving = newResolveSlots() // shared by the three resolution routes
	// The user routes take any valid token (docs/api.md), unless the
	// deployment asks for a member scope (USER_ROUTES_SCOPE=required), so
	// that a leaked CI token cannot change an account.
	userRead, userWrite := anyToken, anyToken
	if d.UserRoutesNeedScope {
		userRead = scopes("member:read", "member:write", "member:admin")
		userWrite = scopes("member:write", "member:admin")
	}
	return []route{
		// Probes and the API root.
		{"GET /healthz", open, handleHealth()},
		{"GET /readyz", open, handleReady(d.Store)},
		{"GET /api/0/{$}", optionalToken, handleIndex(d)},
		// GET /metrics is not served here: Metrics.Handler serves it on
		// its own listener (METRICS_ADDR), never on the API's.

		// Organizations and projects, as sentry-cli's organizations list
		// and projects list read them.
		{"GET /api/0/organizations/{$}", orgRead, handleOrganizations(d)},
		{"GET /api/0/organizations/{organization_slug}/{$}", orgRead, handleOrganization(d)},
		{"GET /api/0/organizations/{organization_slug}/projects/{$}", orgRead, handleProjects(d)},
		// What the organization stores (docs/storage.md), errata's own.
		{"GET /api/0/organizations/{organization_slug}/storage/{$}", orgRead, handleOrganizationStorage(d)},
		{"GET /api/0/projects/{organization_slug}/{project_slug}/{$}", projectRead, handleProject(d)},
		// Their management without the admin CLI. A project is created
		// through its organization or a team (below); project:read, which
		// Sentry accepts where an organization lets members create
		// projects, creates nothing here.
		{"PUT /api/0/organizations/{organization_slug}/{$}", orgWrite, handleOrganizationUpdate(d)},
		// A new organization, owned by its creator: superusers, or every
		// person with ORG_CREATION=open (the store decides).
		{"POST /api/0/organizations/{$}", anyToken, handleOrganizationCreate(d)},
		{"POST /api/0/organizations/{organization_slug}/projects/{$}", projectWrite, handleProjectCreate(d)},
		{"PUT /api/0/projects/{organization_slug}/{project_slug}/{$}", projectWrite, handleProjectUpdate(d)},
		{"DELETE /api/0/projects/{organization_slug}/{project_slug}/{$}", projectAdmin, handleProjectDelete(d)},

		// Members and invitations (docs/members.md). {member_id} is a
		// membership's id, or "me" for the caller's. Which roles a caller
		// may assign, and to whom, is authn.CanAssign's; any member may
		// leave (DELETE of its own membership takes member:read), and the
		// last owner stays. The accept-invite routes read the invitation's
		// token as their proof: GET reads no credential; POST joins a
		// signed-in session's person, or creates a new person's account.
		{"GET /api/0/organizations/{organization_slug}/members/{$}", memberRead, handleMembers(d, false)},
		{"POST /api/0/organizations/{organization_slug}/members/{$}", memberWrite, handleMemberInvite(d)},
		{"GET /api/0/organizations/{organization_slug}/members/{member_id}/{$}", memberRead, handleMember(d)},
		{"PUT /api/0/organizations/{organization_slug}/members/{member_id}/{$}", memberWrite, handleMemberUpdate(d)},
		{"DELETE /api/0/organizations/{organization_slug}/members/{member_id}/{$}", memberRead, handleMemberDelete(d)},
		{"GET /api/0/projects/{organization_slug}/{project_slug}/members/{$}", projectRead, handleMembers(d, true)},
		{"GET /api/0/accept-invite/{organization_slug}/{member_id}/{token}/{$}", open, handleInvitation(d)},
		{"POST /api/0/accept-invite/{organization_slug}/{member_id}/{token}/{$}", optionalSession, handleInvitationAccept(d)},

		// Teams (docs/members.md, Teams), with the scopes of Sentry's
		// document: they group members and projects and decide no access.
		// A member joins and leaves teams itself with the route's scopes;
		// changing another member's teams, or making a team admin, takes
		// one of manageMemberTeams (handlers/teams.go).
		{"GET /api/0/organizations/{organization_slug}/teams/{$}", orgRead, handleTeams(d)},
		{"POST /api/0/organizations/{organization_slug}/teams/{$}", scopes("org:write", "org:admin", "team:write"), handleTeamCreate(d)},
		{"GET /api/0/organizations/{organization_slug}/user-teams/{$}", orgRead, handleUserTeams(d)},
		{"GET /api/0/teams/{organization_slug}/{team_slug}/{$}", scopes("team:read", "team:write", "team:admin"), handleTeam(d)},
		{"PUT /api/0/teams/{organization_slug}/{team_slug}/{$}", scopes("team:write", "team:admin"), handleTeamUpdate(d)},
		{"DELETE /api/0/teams/{organization_slug}/{team_slug}/{$}", scopes("team:admin"), handleTeamDelete(d)},
		{"GET /api/0/teams/{organization_slug}/{team_slug}/members/{$}", scopes("team:read", "team:write", "team:admin"), handleTeamMembers(d)},
		{"POST /api/0/organizations/{organization_slug}/members/{member_id}/teams/{team_slug}/{$}", scopes("org:read", "org:write", "team:write"), handleMemberTeamAdd(d)},
		{"PUT /api/0/organizations/{organization_slug}/members/{member_id}/teams/{team_slug}/{$}", scopes("org:read", "org:write", "org:admin",
			"member:read", "member:write", "member:admin", "team:write", "team:admin"), handleMemberTeamUpdate(d)},
		{"DELETE /api/0/organizations/{organization_slug}/members/{member_id}/teams/{team_slug}/{$}", scopes("org:read", "org:write", "org:admin", "team:admin"), handleMemberTeamDelete(d)},
		{"GET /api/0/teams/{organization_slug}/{team_slug}/projects/{$}", projectRead, handleTeamProjects(d)},
		{"POST /api/0/teams/{organization_slug}/{team_slug}/projects/{$}", projectWrite, handleTeamProjectCreate(d)},
		{"GET /api/0/projects/{organization_slug}/{project_slug}/teams/{$}", projectRead, handleProjectTeams(d)},
		{"POST /api/0/projects/{organization_slug}/{project_slug}/teams/{team_slug}/{$}", projectWrite, handleProjectTeamAdd(d)},
		{"DELETE /api/0/projects/{organization_slug}/{project_slug}/teams/{team_slug}/{$}", projectWrite, handleProjectTeamDelete(d)},

		// Environments, releases and deploys.
		{"GET /api/0/organizations/{organization_slug}/environments/{$}", orgRead, handleEnvironments(d)},
		{"GET /api/0/projects/{organization_slug}/{project_slug}/environments/{$}", projectRead, handleProjectEnvironments(d)},
		{"GET /api/0/projects/{organization_slug}/{project_slug}/environments/{name}/{$}", projectRead, handleProjectEnvironment(d)},
		{"PUT /api/0/projects/{organization_slug}/{project_slug}/environments/{name}/{$}", projectWrite, handleProjectEnvironmentUpdate(d)},
		{"POST /api/0/organizations/{organization_slug}/releases/{$}", projectReleases, handleReleaseCreate(d)},
		{"GET /api/0/organizations/{organization_slug}/releases/{$}", projectReleases, handleReleases(d)},
		{"GET /api/0/organizations/{organization_slug}/releases/{version}/{$}", projectReleases, handleRelease(d)},
		{"PUT /api/0/organizations/{organization_slug}/releases/{version}/{$}", projectReleases, handleReleaseUpdate(d)},
		{"DELETE /api/0/organizations/{organization_slug}/releases/{version}/{$}", projectReleases, handleReleaseDelete(d)},
		{"POST /api/0/projects/{organization_slug}/{project_slug}/releases/{$}", projectReleases, handleProjectReleaseCreate(d)},
		{"GET /api/0/projects/{organization_slug}/{project_slug}/releases/{$}", projectReleases, handleReleases(d)},
		{"GET /api/0/projects/{organization_slug}/{project_slug}/releases/{version}/{$}", projectReleases, handleRelease(d)},
		{"PUT /api/0/projects/{organization_slug}/{project_slug}/releases/{version}/{$}", projectReleases, handleReleaseUpdate(d)},
		{"DELETE /api/0/projects/{organization_slug}/{project_slug}/releases/{version}/{$}", projectReleases, handleReleaseDelete(d)},
		{"POST /api/0/organizations/{organization_slug}/releases/{version}/deploys/{$}", projectReleases, handleDeployCreate(d)},
		{"GET /api/0/organizations/{organization_slug}/releases/{version}/deploys/{$}", projectReleases, handleDeploys(d)},

		// Repositories and the commits of releases (sentry-cli's repos
		// list and releases set-commits).
		{"GET /api/0/organizations/{organization_slug}/repos/{$}", repoReader, handleRepositories(d)},
		{"POST /api/0/organizations/{organization_slug}/repos/{$}", orgWrite, handleRepositoryCreate(d)},
		{"GET /api/0/organizations/{organization_slug}/repos/{repo_id}/commits/{$}", orgRead, handleRepositoryCommits(d)},
		{"GET /api/0/organizations/{organization_slug}/releases/{version}/commits/{$}", projectReleases, handleReleaseCommits(d)},
		{"GET /api/0/projects/{organization_slug}/{project_slug}/releases/{version}/commits/{$}", projectReleases, handleReleaseCommits(d)},
		{"GET /api/0/organizations/{organization_slug}/releases/{version}/previous-with-commits/{$}", projectReleases, handlePreviousWithCommits(d)},
		{"GET /api/0/organizations/{organization_slug}/releases/{version}/commitfiles/{$}", projectReleases, handleReleaseFileChanges(d)},

		// Users, email addresses, notifications and recovery codes: any
		// valid token (the spec declares no scope), or with
		// USER_ROUTES_SCOPE=required a member scope (userRead,
		// userWrite); the subject is always the caller. Confirmation
		// links carry their own proof, the signed key, so they need no
		// token. Generating recovery codes shows secrets: a write.
		{"GET /api/0/users/{$}", userRead, handleUserList(d)},
		{"GET /api/0/users/{user_id}/{$}", userRead, handleUserDetail(d)},
		{"PUT /api/0/users/{user_id}/{$}", userWrite, handleUserUpdate(d)},
		{"DELETE /api/0/users/{user_id}/{$}", userWrite, handleUserDelete(d)},
		{"GET /api/0/users/{user_id}/emails/{$}", userRead, handleEmailList(d)},
		{"POST /api/0/users/{user_id}/emails/{$}", userWrite, handleEmailCreate(d)},
		{"PUT /api/0/users/{user_id}/emails/{$}", userWrite, handleEmailMakePrimary(d)},
		{"DELETE /api/0/users/{user_id}/emails/{$}", userWrite, handleEmailDelete(d)},
		{"POST /api/0/users/{user_id}/emails/confirm/{$}", userWrite, handleEmailConfirm(d)},
		{"GET /api/0/users/{user_id}/notifications/{$}", userRead, handleNotifications(d)},
		{"PUT /api/0/users/{user_id}/notifications/{$}", userWrite, handleNotificationsUpdate(d)},
		{"GET /api/0/generate-recovery-codes/{$}", userWrite, handleRecoveryCodesGenerate(d)},
		{"POST /api/0/generate-recovery-codes/{$}", userWrite, handleRecoveryCodesActivate(d)},
		{"POST /api/0/auth/email/verify/{$}", open, handleEmailVerify(d)},

		// The caller's own API tokens (docs/accounts.md): a session that
		// authenticated within the last 5 minutes, never a token, so that
		// a token cannot make tokens.
		{"GET /api/0/api-tokens/{$}", recentSession, handleAPITokens(d)},
		{"POST /api/0/api-tokens/{$}", recentSession, handleAPITokenCreate(d)},
		{"DELETE /api/0/api-tokens/{$}", recentSession, handleAPITokenDeleteByBody(d)},
		{"DELETE /api/0/api-tokens/{token_id}/{$}", recentSession, handleAPITokenDelete(d)},

		// Release files, chunk upload and assembly.
		{"GET /api/0/organizations/{organization_slug}/releases/{version}/files/{$}", projectReleases, handleReleaseFileList(d)},
		{"POST /api/0/organizations/{organization_slug}/releases/{version}/files/{$}", projectReleases, handleReleaseFileUpload(d)},
		{"GET /api/0/organizations/{organization_slug}/releases/{version}/files/{file_id}/{$}", projectReleases, handleReleaseFileGet(d)},
		{"PUT /api/0/organizations/{organization_slug}/releases/{version}/files/{file_id}/{$}", projectReleases, handleReleaseFileUpdate(d)},
		{"DELETE /api/0/organizations/{organization_slug}/releases/{version}/files/{file_id}/{$}", projectReleases, handleReleaseFileDelete(d)},
		{"GET /api/0/projects/{organization_slug}/{project_slug}/releases/{version}/files/{$}", projectReleases, handleReleaseFileList(d)},
		{"POST /api/0/projects/{organization_slug}/{project_slug}/releases/{version}/files/{$}", projectReleases, handleReleaseFileUpload(d)},
		{"GET /api/0/projects/{organization_slug}/{project_slug}/releases/{version}/files/{file_id}/{$}", projectReleases, handleReleaseFileGet(d)},
		{"PUT /api/0/projects/{organization_slug}/{project_slug}/releases/{version}/files/{file_id}/{$}", projectReleases, handleReleaseFileUpdate(d)},
		{"DELETE /api/0/projects/{organization_slug}/{project_slug}/releases/{version}/files/{file_id}/{$}", projectReleases, handleReleaseFileDelete(d)},
		{"DELETE /api/0/organizations/{organization_slug}/files/source-maps/{$}", releaseAssembler, handleSourceMapsDelete(d)},
		{"DELETE /api/0/projects/{organization_slug}/{project_slug}/files/source-maps/{$}", releaseAssembler, handleSourceMapsDelete(d)},
		{"GET /api/0/organizations/{organization_slug}/chunk-upload/{$}", anyToken, handleChunkUploadOptions(d)},
		{"POST /api/0/organizations/{organization_slug}/chunk-upload/{$}", releaseAssembler, handleChunkUpload(d)},
		{"POST /api/0/organizations/{organization_slug}/releases/{version}/assemble/{$}", releaseAssembler, handleReleaseAssemble(d)},
		{"POST /api/0/organizations/{organization_slug}/artifactbundle/assemble/{$}", releaseAssembler, handleArtifactBundleAssemble(d)},

		// Artifact bundles indexed by debug ids (source maps after
		// sentry-cli sourcemaps inject), per project.
		{"GET /api/0/projects/{organization_slug}/{project_slug}/files/artifact-bundles/{$}", releaseReader, handleArtifactBundles(d)},
		{"DELETE /api/0/projects/{organization_slug}/{project_slug}/files/artifact-bundles/{$}", releaseAssembler, handleArtifactBundleDelete(d)},
		{"GET /api/0/projects/{organization_slug}/{project_slug}/artifact-bundles/{bundle_id}/files/{$}", releaseReader, handleArtifactBundleFiles(d)},
		{"GET /api/0/projects/{organization_slug}/{project_slug}/artifact-bundles/{bundle_id}/files/{file_id}/{$}", releaseReader, handleArtifactBundleFile(d)},
		{"GET /api/0/projects/{organization_slug}/{project_slug}/artifact-lookup/{$}", releaseReader, handleArtifactLookup(d)},

		// Debug information files of a project: sentry-cli debug-files
		// upload (difs/assemble/ after chunk upload; 2.x without chunk
		// upload and upload-proguard post a zip to files/dsyms/),
		// dart-symbol-map upload and proguard upload; listing, download
		// (?id=) and delete.
		{"POST /api/0/projects/{organization_slug}/{project_slug}/files/difs/assemble/{$}", releaseAssembler, handleDifAssemble(d)},
		{"GET /api/0/projects/{organization_slug}/{project_slug}/files/dsyms/{$}", releaseReader, handleDebugFiles(d)},
		{"POST /api/0/projects/{organization_slug}/{project_slug}/files/dsyms/{$}", releaseAssembler, handleDebugFileUpload(d)},
		{"DELETE /api/0/projects/{organization_slug}/{project_slug}/files/dsyms/{$}", projectWrite, handleDebugFileDelete(d)},
		{"GET /api/0/projects/{organization_slug}/{project_slug}/files/dsyms/unknown/{$}", releaseReader, handleDebugFilesUnknown(d)},
		// The releases a ProGuard mapping was built for (sentry-cli 2.x's
		// deprecated upload-proguard --app-id, which leaves out the
		// trailing slash).
		{"POST /api/0/projects/{organization_slug}/{project_slug}/files/proguard-artifact-releases", releaseAssembler, handleProguardReleaseCreate(d)},
		{"POST /api/0/projects/{organization_slug}/{project_slug}/files/proguard-artifact-releases/{$}", releaseAssembler, handleProguardReleaseCreate(d)},
		{"GET /api/0/projects/{organization_slug}/{project_slug}/files/proguard-artifact-releases", releaseReader, handleProguardReleases(d)},
		{"GET /api/0/projects/{organization_slug}/{project_slug}/files/proguard-artifact-releases/{$}", releaseReader, handleProguardReleases(d)},

		// Resolution of stack traces through what the project stores
		// (docs/resolution.md).
		{"POST /api/0/projects/{organization_slug}/{project_slug}/symbolicate-js/{$}", releaseReader, handleSymbolicateJS(d)},
		{"POST /api/0/projects/{organization_slug}/{project_slug}/symbolicate-jvm/{$}", releaseReader, handleSymbolicateJVM(d)},
		// Native stack traces resolved from the project's debug files
		// (docs/resolution.md).
		{"POST /api/0/projects/{organization_slug}/{project_slug}/symbolicate/{$}", releaseReader, handleSymbolicate(d)},

		// The OpenAPI document of every route above; it carries no data,
		// so it needs no token.
		{"GET /api/0/openapi.json", open, handleOpenAPI()},
	}
}

// signInRoutes lists the routes of the sign-in API of people,
// django-allauth's headless API (docs/accounts.md), for the clients
// browser and app (another {client} is 404). allauth's own document
// describes them, not openapi.json. They are open to the token rule: they
// read the session themselves, and a browser's unsafe requests pass the
// CSRF check (handlers/allauth).
func signInRoutes(d Deps) []route {
	emailKeys := authn.NewEmailKeys(d.SecretKey)
	signIn := allauth.New(allauth.Deps{Store: d.Store, Auth: d.Auth, Log: d.Log,
		Passwords: d.Passwords, Throttle: d.Throttle, TrustedProxies: d.TrustedProxies,
		SignupOpen: d.SignupOpen, PublicURL: d.PublicURL, Now: d.Now,
		ResetKeys: authn.NewResetKeys(d.SecretKey), EmailKeys: emailKeys, NotifyMail: d.NotifyMail,
		ConfirmationMail: func(r *http.Request, userID int64, email string) (store.Mail, error) {
			return confirmationMail(d, r, emailKeys, userID, email)
		},
		TOTPSecrets: authn.NewTOTPCipher(d.SecretKey), RecoverySeeds: authn.NewSeedCipher(d.SecretKey)})
	return []route{
		{"GET /_allauth/{client}/v1/config", open, signIn.Config()},
		{"POST /_allauth/{client}/v1/auth/login", open, signIn.Login()},
		{"GET /_allauth/{client}/v1/auth/session", open, signIn.Session()},
		{"DELETE /_allauth/{client}/v1/auth/session", open, signIn.SignOut()},
		{"POST /_allauth/{client}/v1/auth/reauthenticate", open, signIn.Reauthenticate()},
		{"GET /_allauth/{client}/v1/auth/sessions", open, signIn.Sessions()},
		{"DELETE /_allauth/{client}/v1/auth/sessions", open, signIn.EndSessions()},
		{"POST /_allauth/{client}/v1/auth/signup", open, signIn.Signup()},
		{"GET /_allauth/{client}/v1/auth/email/verify", open, signIn.VerifyEmailInfo()},
		{"POST /_allauth/{client}/v1/auth/email/verify", open, signIn.VerifyEmail()},
		{"POST /_allauth/{client}/v1/auth/email/verify/resend", open, signIn.ResendVerification()},
		{"POST /_allauth/{client}/v1/auth/password/request", open, signIn.RequestPassword()},
		{"GET /_allauth/{client}/v1/auth/password/reset", open, signIn.PasswordResetInfo()},
		{"POST /_allauth/{client}/v1/auth/password/reset", open, signIn.ResetPassword()},
		{"POST /_allauth/{client}/v1/account/password/change", open, signIn.ChangePassword()},
		{"POST /_allauth/{client}/v1/auth/2fa/authenticate", open, signIn.TwoFactorAuthenticate()},
		{"POST /_allauth/{client}/v1/auth/2fa/reauthenticate", open, signIn.TwoFactorReauthenticate()},
		{"GET /_allauth/{client}/v1/account/authenticators", open, signIn.Authenticators()},
		{"GET /_allauth/{client}/v1/account/authenticators/totp", open, signIn.TOTP()},
		{"POST /_allauth/{client}/v1/account/authenticators/totp", open, signIn.ActivateTOTP()},
		{"DELETE /_allauth/{client}/v1/account/authenticators/totp", open, signIn.DeactivateTOTP()},
		{"GET /_allauth/{client}/v1/account/authenticators/recovery-codes", open, signIn.RecoveryCodes()},
		{"POST /_allauth/{client}/v1/account/authenticators/recovery-codes", open, signIn.RegenerateRecoveryCodes()},
	}
}

// pageRoutes lists the pages for people (handlers/pages,
// docs/pages.md). A pattern has no method: a page answers GET and HEAD,
// and POST for its forms, which post back to it. Open pages are the ones
// a signed-out person needs; every other page asks the API as its
// visitor, and a signed-out visitor is sent to sign-in. api is the
// API's mux, which the pages call in-process.
func pageRoutes(d Deps, api http.Handler) (*pages.Pages, []pageRoute) {
	p := pages.New(pages.Deps{API: api, Auth: d.Auth, Log: d.Log, Version: d.Version, PublicURL: d.PublicURL})
	const open, signedIn = true, false
	return p, []pageRoute{
		// Sign-in at / (or the person's home).
		{"/{$}", open, p.Home},

		// Signing in, out and back (handlers/pages/signin.go).
		{"/auth/2fa/{$}", open, p.TwoFactor},
		{"/auth/logout/{$}", signedIn, p.SignOut},
		{"/account/recover/{$}", open, p.Recover},
		{"/reset-password/{key}/{$}", open, p.ResetPassword},
		{"/account/reauthenticate/{$}", signedIn, p.Reauthenticate},
		{"/accept-invite/{organization_slug}/{member_id}/{token}/{$}", open, p.AcceptInvitation},
		{"/profile/confirm-email/{key}/{$}", open, p.ConfirmEmail},

		// The person's account (handlers/pages/account.go).
		{"/account/{$}", signedIn, p.Account},
		{"/account/emails/{$}", signedIn, p.Emails},
		{"/account/notifications/{$}", signedIn, p.Notifications},
		{"/account/password/{$}", signedIn, p.Password},
		{"/account/security/{$}", signedIn, p.Security},
		{"/account/security/totp/{$}", signedIn, p.TOTP},
		{"/account/security/recovery-codes/{$}", signedIn, p.RecoveryCodes},
		{"/account/sessions/{$}", signedIn, p.Sessions},
		{"/account/api-tokens/{$}", signedIn, p.APITokens},

		// An organization's pages (handlers/pages/organization.go).
		{"/organizations/{organization_slug}/{$}", signedIn, p.OrgHome},
		{"/organizations/{organization_slug}/members/{$}", signedIn, p.Members},
		{"/organizations/{organization_slug}/members/{member_id}/{$}", signedIn, p.Member},
		{"/organizations/{organization_slug}/teams/{$}", signedIn, p.Teams},
		{"/organizations/{organization_slug}/teams/{team_slug}/{$}", signedIn, p.Team},
		{"/organizations/{organization_slug}/projects/{$}", signedIn, p.Projects},

		// Releases and debug files.
		{"/organizations/{organization_slug}/releases/{$}", signedIn, p.Releases},
		{"/organizations/{organization_slug}/releases/{version}/{$}", signedIn, p.Release},
		{"/organizations/{organization_slug}/debug-files/{$}", signedIn, p.DebugFiles},

		// Resolving a stack trace (handlers/pages/resolve.go).
		{"/organizations/{organization_slug}/resolve/{$}", signedIn, p.Resolve},
	}
}

// pageRoute is a page of pageRoutes.
type pageRoute struct {
	pattern string
	open    bool
	serve   func(*pages.Visit) error
}

// handler wraps the page with the rules of every page (pages.Handler).
func (rt pageRoute) handler(p *pages.Pages) http.Handler {
	return p.Handler(pages.Route{Pattern: rt.pattern, Open: rt.open, Serve: rt.serve})
}

// directRoute is a route that the server dispatches before the mux
// (directRoutes).
type directRoute struct {
	pattern string
	access  access
	handler apiFunc
}

// Patterns of the direct routes, by which the log and the metrics name
// their requests. A request below /debuginfod/ is named by the route its
// path parses as (debuginfodRoutes), or patDebuginfod until it does.
const (
	patStylesheet = "GET /static/errata.css"
	patFavicon    = "GET /static/favicon.svg"
	patDebuginfod = "GET /debuginfod/{path...}"
	patDebuginfo  = "GET /debuginfod/{organization_slug}/buildid/{id}/debuginfo"
	patExecutable = "GET /debuginfod/{organization_slug}/buildid/{id}/executable"
	patSource     = "GET /debuginfod/{organization_slug}/buildid/{id}/source/{path...}"
	patSection    = "GET /debuginfod/{organization_slug}/buildid/{id}/section/{name}"
	patSymbols    = "GET /symbols/{organization_slug}/{file}/{key}/{file2}"
)

// directRoutes lists the routes served before the mux, which would clean
// the paths that debuggers send (with "..", "//" or an escaped "/") and
// answer them with a redirect to another path (docs/symbol-server.md). A
// route serves every path that starts with its pattern's path up to the
// first wildcard, or, when that is {$}, that path alone. They answer GET
// and HEAD: another method is a 405 below a prefix, and at an exact path
// goes on to the mux (a 404). Their errors come from the API's table
// (errors.go) as short text/plain answers, which debuggers show; a 401
// names the Basic scheme.
func directRoutes(d Deps) []directRoute {
	return []directRoute{
		// debuginfod, by build id: debuginfodRoutes lists its routes.
		{patDebuginfod, debuggerRead, handleDebuginfod(d)},
		// The symbol server of Windows debuggers and symbolicators, by
		// SSQP and symbol-store keys.
		{patSymbols, debuggerRead, handleSymbolServer(d)},
	}
}

// debuginfodRoutes are the routes below GET /debuginfod/{path...}, by the
// kind of file they serve (symbolkey.ParseDebuginfod reads it), with its
// access rule.
var debuginfodRoutes = map[string]string{
	symbolkey.Debuginfo:  patDebuginfo,
	symbolkey.Executable: patExecutable,
	symbolkey.Source:     patSource,
	symbolkey.Section:    patSection,
}
