package handlers

import (
	"encoding/json"
	"errors"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"

	"errata/store"
)

// newSlugPattern is what a new organization or project slug may be:
// Sentry's rule (lowercase letters, digits, "_" and "-", not only digits,
// which would read as an id), and a first character that the path
// pattern of slugs accepts.
var newSlugPattern = regexp.MustCompile(`^[a-z0-9_][a-z0-9_-]*$`)

// checkNewSlug returns a 422 at loc unless s can be a new slug of at most
// maxLen characters.
func checkNewSlug(s string, maxLen int, loc ...any) error {
	allDigits := strings.Trim(s, "0123456789") == ""
	if len(s) > maxLen || !newSlugPattern.MatchString(s) || allDigits {
		return invalid(valueErr, "Enter a slug of at most "+strconv.Itoa(maxLen)+
			" lowercase letters, numbers, underscores or hyphens, not only numbers", loc...)
	}
	return nil
}

// checkDisplayName returns a 422 at loc unless s is a name of 1 to maxLen
// characters that is not blank.
func checkDisplayName(s string, maxLen int, loc ...any) error {
	if strings.TrimSpace(s) == "" || utf8.RuneCountInString(s) > maxLen || !isText(s) {
		return invalid(valueErr, "Enter a name of 1 to "+strconv.Itoa(maxLen)+" characters", loc...)
	}
	return nil
}

// Sentry's limits of an organization's slug and name.
const (
	maxOrganizationSlug = 50
	maxOrganizationName = 64
)

// organizationUnstored are the fields of Sentry's organization update that
// errata has no place for (settings of features it does not have):
// sending one is a 422 naming it, never an answer that drops it.
var organizationUnstored = []string{
	"isEarlyAdopter", "hideAiFeatures", "defaultRole", "openMembership", "eventsMemberAdmin",
	"alertsMemberWrite", "attachmentsRole", "debugFilesRole", "hasGranularReplayPermissions",
	"replayAccessMembers", "avatarType", "avatar", "allowSharedIssues",
	"enhancedPrivacy", "scrapeJavaScript", "storeCrashReports", "allowJoinRequests",
	"dataScrubber", "dataScrubberDefaults", "sensitiveFields", "safeFields", "scrubIPAddresses",
	"relayPiiConfig", "trustedRelays", "relayDsnEndpoint", "issueAlertsThreadFlag",
	"metricAlertsThreadFlag", "cancelDeletion",
}

// organizationUpdateIn is the body of an organization update: the fields
// errata stores, and every key for refuseUnstored.
type organizationUpdateIn struct {
	Name       opt[string] `json:"name"`
	Slug       opt[string] `json:"slug"`
	Require2FA opt[bool]   `json:"require2FA"`
	keys       bodyKeys
}

func (in *organizationUpdateIn) UnmarshalJSON(b []byte) error {
	type fields organizationUpdateIn // without this method
	if err := json.Unmarshal(b, (*fields)(in)); err != nil {
		return err
	}
	return json.Unmarshal(b, &in.keys)
}

// update validates the body and returns the change it asks for.
func (in organizationUpdateIn) update() (store.OrganizationUpdate, error) {
	var u store.OrganizationUpdate
	if err := in.keys.refuseUnstored(organizationUnstored); err != nil {
		return u, err
	}
	if in.Name.Set {
		if in.Name.Null {
			return u, invalid(typeError, "Input should be a valid string", "body", "name")
		}
		if err := checkDisplayName(in.Name.V, maxOrganizationName, "body", "name"); err != nil {
			return u, err
		}
		u.Name = &in.Name.V
	}
	if in.Slug.Set {
		if in.Slug.Null {
			return u, invalid(typeError, "Input should be a valid string", "body", "slug")
		}
		if err := checkNewSlug(in.Slug.V, maxOrganizationSlug, "body", "slug"); err != nil {
			return u, err
		}
		u.Slug = &in.Slug.V
	}
	if in.Require2FA.Set {
		if in.Require2FA.Null {
			return u, invalid(typeError, "Input should be a valid boolean", "body", "require2FA")
		}
		u.Require2FA = &in.Require2FA.V
	}
	return u, nil
}

// errNoSecondFactor is Sentry's answer to a caller without TOTP who asks
// to require two-factor authentication: it would lock itself out.
var errNoSecondFactor = badRequest("Cannot require two-factor authentication without personal two-factor enabled.")

// handleOrganizationUpdate serves PUT organizations/{org}/: it renames the
// organization, changes its slug or whether it requires two-factor
// authentication of its members (Sentry's updateOrganization, for the
// fields errata stores), and answers Sentry's detailed organization. A
// caller may require two-factor authentication only when it has TOTP
// itself (400, as Sentry). The role lookups of the organization are
// forgotten, so that the change holds at once in this process.
func handleOrganizationUpdate(d Deps) apiFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		slug, err := pathSlug(r, "organization_slug")
		if err != nil {
			return err
		}
		var in organizationUpdateIn
		if err := decodeJSON(w, r, &in); err != nil {
			return err
		}
		u, err := in.update()
		if err != nil {
			return err
		}
		o, err := d.Store.UpdateOrganization(r.Context(), caller(r).UserID, slug, u)
		switch {
		case errors.Is(err, store.ErrConflict):
			return errSlugTaken
		case errors.Is(err, store.ErrNoSecondFactor):
			return errNoSecondFactor
		case err != nil:
			return err
		}
		d.Auth.ForgetOrganization(slug)
		d.Auth.ForgetOrganization(o.Slug)
		writeJSON(w, r, d.Log, http.StatusOK, newOrganizationDetailJSON(o, caller(r).Scopes, publicBase(r, d.PublicURL)))
		return nil
	}
}

// errSlugTaken is the answer to a new organization slug that another
// organization has.
var errSlugTaken = &apiError{status: http.StatusConflict, detail: "An organization with this slug already exists"}

// organizationCreateIn is the body of POST organizations/ (Sentry's
// organization index): a name, and a slug made of it when none is sent.
// agreeTerms is accepted and changes nothing: errata shows no terms.
type organizationCreateIn struct {
	Name       opt[string] `json:"name"`
	Slug       opt[string] `json:"slug"`
	AgreeTerms opt[bool]   `json:"agreeTerms"`
	keys       bodyKeys
}

func (in *organizationCreateIn) UnmarshalJSON(b []byte) error {
	type fields organizationCreateIn // without this method
	if err := json.Unmarshal(b, (*fields)(in)); err != nil {
		return err
	}
	return json.Unmarshal(b, &in.keys)
}

// organizationCreateUnstored are the fields of Sentry's organization
// create that errata has no place for.
var organizationCreateUnstored = []string{"defaultOrganization", "aggregatedDataConsent", "idempotencyKey"}

// validate returns the slug and the name of the new organization.
func (in organizationCreateIn) validate() (slug, name string, err error) {
	if err := in.keys.refuseUnstored(organizationCreateUnstored); err != nil {
		return "", "", err
	}
	switch {
	case !in.Name.Set:
		return "", "", invalid(missing, "Field required", "body", "name")
	case in.Name.Null:
		return "", "", invalid(typeError, "Input should be a valid string", "body", "name")
	}
	if err := checkDisplayName(in.Name.V, maxOrganizationName, "body", "name"); err != nil {
		return "", "", err
	}
	if in.AgreeTerms.Set && in.AgreeTerms.Null {
		return "", "", invalid(typeError, "Input should be a valid boolean", "body", "agreeTerms")
	}
	if !in.Slug.Set || in.Slug.Null || in.Slug.V == "" {
		// Sentry's slug of the name; a name without letters or digits
		// makes none, and the name is what to change.
		slug = projectSlugFromName(in.Name.V)
		slug = strings.TrimRight(slug[:min(len(slug), maxOrganizationSlug)], "-")
		return slug, in.Name.V, checkNewSlug(slug, maxOrganizationSlug, "body", "name")
	}
	return in.Slug.V, in.Name.V, checkNewSlug(in.Slug.V, maxOrganizationSlug, "body", "slug")
}

// handleOrganizationCreate serves POST organizations/: it creates an
// organization whose owner is the caller and answers Sentry's detailed
// organization (201). Superusers may, and with ORG_CREATION=open every
// person, through a session or any token of theirs, as in Sentry
// (docs/members.md, "Organizations and roles"); another caller is 401, as
// Sentry answers. A taken slug is 409.
func handleOrganizationCreate(d Deps) apiFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		c := caller(r)
		var in organizationCreateIn
		if err := decodeJSON(w, r, &in); err != nil {
			return err
		}
		slug, name, err := in.validate()
		if err != nil {
			return err
		}
		o, err := d.Store.CreateOrganizationBy(r.Context(), c.UserID, slug, name, d.OrgCreationOpen)
		switch {
		case errors.Is(err, store.ErrConflict):
			return errSlugTaken
		case errors.Is(err, store.ErrCreationNotAllowed):
			// Sentry's answer, a 401.
			return &apiError{status: http.StatusUnauthorized, detail: "Organizations are not allowed to be created by this user."}
		case err != nil:
			return err
		}
		d.Auth.ForgetUser(c.UserID) // its roles, and a lookup of the slug before it existed
		access, err := d.Auth.ScopesIn(r.Context(), c, o.Slug)
		if err != nil {
			return err
		}
		writeJSON(w, r, d.Log, http.StatusCreated, newOrganizationDetailJSON(o, access, publicBase(r, d.PublicURL)))
		return nil
	}
}
