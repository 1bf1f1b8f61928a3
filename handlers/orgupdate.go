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
	"replayAccessMembers", "avatarType", "avatar", "require2FA", "allowSharedIssues",
	"enhancedPrivacy", "scrapeJavaScript", "storeCrashReports", "allowJoinRequests",
	"dataScrubber", "dataScrubberDefaults", "sensitiveFields", "safeFields", "scrubIPAddresses",
	"relayPiiConfig", "trustedRelays", "relayDsnEndpoint", "issueAlertsThreadFlag",
	"metricAlertsThreadFlag", "cancelDeletion",
}

// organizationUpdateIn is the body of an organization update: the fields
// errata stores, and every key for refuseUnstored.
type organizationUpdateIn struct {
	Name opt[string] `json:"name"`
	Slug opt[string] `json:"slug"`
	keys bodyKeys
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
	return u, nil
}

// handleOrganizationUpdate serves PUT organizations/{org}/: it renames the
// organization or changes its slug (Sentry's updateOrganization, for the
// fields errata stores) and answers the organization as GET does.
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
		if errors.Is(err, store.ErrConflict) {
			return &apiError{status: http.StatusConflict, detail: "An organization with this slug already exists", cause: err}
		}
		if err != nil {
			return err
		}
		writeJSON(w, r, d.Log, http.StatusOK, newOrganizationJSON(o, publicBase(r, d.PublicURL)))
		return nil
	}
}
