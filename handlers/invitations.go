package handlers

import (
	"bytes"
	"errors"
	"html/template"
	"net/http"
	"strconv"
	"time"
	"unicode/utf8"

	"errata/authn"
	"errata/handlers/allauth"
	"errata/store"
)

// Invitations (docs/members.md, "Invitations"): a pending member, mailed a
// link that carries its token; the token is the proof of the routes that
// accept it.

// DefaultInviteTTL is how long an invitation's link works unless
// INVITE_TTL says otherwise.
const DefaultInviteTTL = 7 * 24 * time.Hour

// invitationDeps fills what the member and invitation routes use and a
// Deps may leave out (New fills some; tests serve routes without it):
// InviteTTL, Throttle and Passwords.
func invitationDeps(d Deps) Deps {
	if d.InviteTTL <= 0 {
		d.InviteTTL = DefaultInviteTTL
	}
	if d.Throttle == nil {
		d.Throttle = &authn.Throttle{Store: d.Store}
	}
	if d.Passwords == nil {
		d.Passwords = authn.NewHasher(0, 5*time.Second)
	}
	return d
}

// inviteLink is the link of the invitation of member id with token.
func inviteLink(d Deps, r *http.Request, id int64, token string) string {
	return publicBase(r, d.PublicURL) + "/accept-invite/" + r.PathValue("organization_slug") + "/" +
		strconv.FormatInt(id, 10) + "/" + token + "/"
}

// invitationKeys gives the store the token of an invitation and, when
// send, its mail.
func invitationKeys(d Deps, r *http.Request, keys *authn.InviteKeys, send bool) store.InviteKeys {
	return func(id int64, expires time.Time) ([]byte, []byte, *store.Mail, error) {
		token, hash, sealed := keys.New(id)
		if !send {
			return hash, sealed, nil, nil
		}
		m, err := invitationMail(inviteLink(d, r, id, token), r.PathValue("organization_slug"), expires)
		return hash, sealed, m, err
	}
}

// invitationHTML is the HTML part of an invitation.
var invitationHTML = template.Must(template.New("invite").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Join {{.Org}} on errata</title></head>
<body style="font-family: sans-serif; line-height: 1.5">
<p>Hello,</p>
<p>you are invited to join the organization <strong>{{.Org}}</strong> on errata.</p>
<p><a href="{{.Link}}">Accept the invitation</a></p>
<p>The link works until {{.Until}}. If you did not expect this, ignore this message.</p>
</body></html>
`))

// invitationMail composes the invitation to the organization org whose
// link is link; the store addresses it to the invited address.
func invitationMail(link, org string, expires time.Time) (*store.Mail, error) {
	until := expires.UTC().Format("2 January 2006, 15:04 UTC")
	var html bytes.Buffer
	if err := invitationHTML.Execute(&html, struct{ Org, Link, Until string }{org, link, until}); err != nil {
		return nil, err
	}
	text := "Hello,\n\n" +
		"you are invited to join the organization " + org + " on errata. To accept, open this link:\n\n" +
		link + "\n\n" +
		"The link works until " + until + ". If you did not expect this, ignore this message.\n"
	return &store.Mail{Subject: "Join " + org + " on errata", Text: text, HTML: html.String()}, nil
}

// throttleInvitation counts an invitation of the user inviter
// (authn.InvitationsPerInviter): beyond the rule, 429. An inviter who is
// no member of the route's organization counts nothing: 404.
func throttleInvitation(d Deps, r *http.Request, inviter int64) error {
	if _, err := d.Auth.RoleIn(r.Context(), inviter, r.PathValue("organization_slug")); err != nil {
		return err
	}
	at, err := d.Throttle.Attempt(r.Context(), authn.InvitationsPerInviter.ForUser(inviter))
	if err != nil {
		return err
	}
	if rule, refused := at.Refused(); refused {
		return &apiError{status: http.StatusTooManyRequests, retryAfter: int(rule.Window.Seconds()),
			detail: "Too many invitations: at most " + strconv.Itoa(rule.Limit) + " every " + rule.Window.String()}
	}
	return nil
}

// handleMemberInvite serves POST
// /api/0/organizations/{organization_slug}/members/ {email, orgRole?,
// teamRoles?, sendInvite?, reinvite?}: a pending member of that address and
// role (up to the caller's own), on the teams of teamRoles (or teams), its
// invitation mailed unless sendInvite is false. An address invited already is invited again with a new token
// unless reinvite is false (409); an address of a member who joined is
// 409. Invitations are throttled per inviter (429).
func handleMemberInvite(d Deps) apiFunc {
	d = invitationDeps(d)
	keys := authn.NewInviteKeys(d.SecretKey)
	return func(w http.ResponseWriter, r *http.Request) error {
		var in memberIn
		if err := decodeJSON(w, r, &in); err != nil {
			return err
		}
		switch {
		case !in.Email.Set:
			return invalid(missing, "Field required", "body", "email")
		case in.Email.Null:
			return invalid(typeError, "Input should be a valid string", "body", "email")
		}
		email, err := normalizeEmail(in.Email.V)
		if err != nil {
			return err
		}
		role, err := in.role()
		if err != nil {
			return err
		}
		if role == "" {
			role = "member"
		}
		teams, err := in.teams()
		if err != nil {
			return err
		}
		c := caller(r)
		if err := throttleInvitation(d, r, c.UserID); err != nil {
			return err
		}
		send := !in.SendInvite.Set || in.SendInvite.Null || in.SendInvite.V
		m, err := d.Store.InviteMember(r.Context(), c.UserID, r.PathValue("organization_slug"), store.Invitation{
			Email: email, Role: role, Expires: d.Now().Add(d.InviteTTL),
			Reinvite: !in.Reinvite.Set || in.Reinvite.Null || in.Reinvite.V, Teams: teams,
		}, authn.CanAssign, invitationKeys(d, r, keys, send))
		if errors.Is(err, store.ErrAlreadyMember) {
			return &apiError{status: http.StatusConflict, detail: "The address is a member, or invited, already"}
		}
		if err != nil {
			return memberError(err, "body", "orgRole")
		}
		if send && d.NotifyMail != nil {
			d.NotifyMail()
		}
		writeJSON(w, r, d.Log, http.StatusCreated, newMemberOut(m, d.Now()))
		return nil
	}
}

// invitationOut is what an invitation's link shows.
type invitationOut struct {
	Organization struct {
		Slug string `json:"slug"`
		Name string `json:"name"`
	} `json:"organization"`
	Email      string `json:"email"`
	Role       string `json:"role"`
	HasAccount bool   `json:"hasAccount"`
	Needs2FA   bool   `json:"needs2fa"`
}

// invitationOf reads the path of an accept-invite route: the member's id
// and the token's hash. A malformed one names no invitation: 404.
func invitationOf(r *http.Request) (int64, []byte, error) {
	v, token := r.PathValue("member_id"), r.PathValue("token")
	id, err := strconv.ParseInt(v, 10, 64)
	if !isDecimal(v) || err != nil || !authn.WellFormedInviteToken(token) {
		return 0, nil, errNotFound
	}
	return id, authn.Hash(token), nil
}

// handleInvitation serves GET
// /api/0/accept-invite/{organization_slug}/{member_id}/{token}/: what the
// invitation offers. It reads no credential: the token is the proof; a
// wrong, used or expired one is 404.
func handleInvitation(d Deps) apiFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		id, hash, err := invitationOf(r)
		if err != nil {
			return err
		}
		in, err := d.Store.Invitation(r.Context(), r.PathValue("organization_slug"), id, hash)
		if err != nil {
			return err
		}
		var out invitationOut
		out.Organization.Slug, out.Organization.Name = in.OrgSlug, in.OrgName
		out.Email, out.Role, out.HasAccount, out.Needs2FA = in.Email, in.Role, in.HasAccount, in.Needs2FA
		writeJSON(w, r, d.Log, http.StatusOK, out)
		return nil
	}
}

// acceptIn is the body of POST on an invitation: nothing from a signed-in
// person, a password (and a name) from a new one.
type acceptIn struct {
	Password opt[string] `json:"password"`
	Name     opt[string] `json:"name"`
}

// handleInvitationAccept serves POST
// /api/0/accept-invite/{organization_slug}/{member_id}/{token}/ and spends
// the token. A signed-in session (its cookie with the CSRF token, or
// X-Session-Token) joins its person: 204; one who is a member already is
// 409. Without a session, {password, name?} creates the account of the
// invited address, verified, joins it and signs it in, answering as
// /_allauth/{client}/v1/auth/login does: for a browser (a request with the
// csrftoken cookie, which must then pass the CSRF check) with the session
// cookie, else for an app with meta.session_token. An address that has an
// account is 409: its person signs in and accepts. A token is 403
// (optionalSession): a person accepts, not a token. A wrong, used or expired token is 404.
func handleInvitationAccept(d Deps) apiFunc {
	d = invitationDeps(d)
	signIn := allauth.New(allauth.Deps{Store: d.Store, Auth: d.Auth, Log: d.Log, TrustedProxies: d.TrustedProxies})
	return func(w http.ResponseWriter, r *http.Request) error {
		c, signedIn := authn.CallerFrom(r.Context()) // a session: a token is refused by the route's rule
		id, hash, err := invitationOf(r)
		if err != nil {
			return err
		}
		var in acceptIn
		if err := decodeJSON(w, r, &in); err != nil {
			return err
		}
		org := r.PathValue("organization_slug")
		if signedIn {
			err := d.Store.AcceptInvitation(r.Context(), org, id, hash, c.UserID)
			if errors.Is(err, store.ErrAlreadyMember) {
				return &apiError{status: http.StatusConflict, detail: "You are a member of the organization already"}
			}
			if err != nil {
				return err
			}
			d.Auth.ForgetUser(c.UserID)
			noContent(w)
			return nil
		}
		client := authn.ClientApp
		if _, err := r.Cookie(authn.CSRFCookieName); err == nil {
			client = authn.ClientBrowser
			if err := d.Auth.CheckCSRF(r); err != nil {
				return errPermissionDenied
			}
		}
		inv, err := d.Store.Invitation(r.Context(), org, id, hash)
		if err != nil {
			return err
		}
		switch {
		case !in.Password.Set:
			return invalid(missing, "Field required: a new person sets a password, a signed-in one sends {}", "body", "password")
		case in.Password.Null:
			return invalid(typeError, "Input should be a valid string", "body", "password")
		case in.Name.Null:
			return invalid(typeError, "Input should be a valid string", "body", "name")
		case utf8.RuneCountInString(in.Name.V) > maxUserString || !isText(in.Name.V):
			return invalid(valueErr, "String should have at most 255 characters of text", "body", "name")
		}
		if err := authn.CheckNewPassword(in.Password.V, inv.Email); err != nil {
			return invalid(valueErr, err.Error(), "body", "password")
		}
		if inv.HasAccount {
			return &apiError{status: http.StatusConflict, detail: "An account has this address: sign in, then accept"}
		}
		passwordHash, err := d.Passwords.Hash(r.Context(), in.Password.V)
		if errors.Is(err, authn.ErrBusy) {
			return &apiError{status: http.StatusServiceUnavailable, detail: "Service Unavailable", retryAfter: 5}
		}
		if err != nil {
			return err
		}
		userID, err := d.Store.AcceptInvitationAsNewUser(r.Context(), org, id, hash, in.Name.V, passwordHash)
		if errors.Is(err, store.ErrEmailTaken) {
			return &apiError{status: http.StatusConflict, detail: "An account has this address: sign in, then accept"}
		}
		if err != nil {
			return err
		}
		return signIn.StartSignedIn(w, r, client, userID)
	}
}
