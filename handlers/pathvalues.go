package handlers

import (
	"net/http"
	"regexp"
	"strconv"
	"strings"

	"errata/store"
)

// slugPattern is what an organization or project slug in a path may be.
var slugPattern = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9._-]{0,99}$`)

// pathSlug returns the slug path value name, or a 422 when it cannot be a
// slug.
func pathSlug(r *http.Request, name string) (string, error) {
	s := r.PathValue(name)
	if !slugPattern.MatchString(s) {
		return "", invalid(valueErr, "Invalid slug", "path", name)
	}
	return s, nil
}

// orgProjectSlugs returns the organization and project slugs of a project
// route.
func orgProjectSlugs(r *http.Request) (org, project string, err error) {
	if org, err = pathSlug(r, "organization_slug"); err != nil {
		return "", "", err
	}
	project, err = pathSlug(r, "project_slug")
	return org, project, err
}

// projectScope reads the organization and project of a project route.
func projectScope(r *http.Request) (store.ProjectScope, error) {
	org, project, err := orgProjectSlugs(r)
	return store.ProjectScope{UserID: caller(r).UserID, OrgSlug: org, ProjectSlug: project}, err
}

// releaseSlugs returns the organization slug of a release route and, on a
// project route, the project slug ("" on an organization route).
func releaseSlugs(r *http.Request) (org, project string, err error) {
	if strings.Contains(r.Pattern, "{project_slug}") {
		return orgProjectSlugs(r)
	}
	org, err = pathSlug(r, "organization_slug")
	return org, "", err
}

// releasePath returns the organization, project (empty on organization
// routes) and version of a route about one release.
func releasePath(r *http.Request) (org, project, version string, err error) {
	if org, project, err = releaseSlugs(r); err != nil {
		return "", "", "", err
	}
	version, err = pathVersion(r)
	return org, project, version, err
}

// pathVersion returns the version path value, decoded, or a 422 when no
// release can have it.
func pathVersion(r *http.Request) (string, error) {
	v := r.PathValue("version")
	if !validVersion(v) {
		return "", invalid(valueErr, "Invalid release version", "path", "version")
	}
	return v, nil
}

// pathFileID reads the file_id path value, a positive decimal integer.
func pathFileID(r *http.Request) (int64, error) {
	id, err := strconv.ParseInt(r.PathValue("file_id"), 10, 64)
	if err != nil || id <= 0 {
		return 0, invalid(typeError, "Input should be a valid integer", "path", "file_id")
	}
	return id, nil
}
