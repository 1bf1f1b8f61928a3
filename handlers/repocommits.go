package handlers

import (
	"net/http"
	"strconv"
)

// pathRepoID reads the repo_id path value, a positive decimal integer.
func pathRepoID(r *http.Request) (int64, error) {
	id, err := strconv.ParseInt(r.PathValue("repo_id"), 10, 64)
	if err != nil || id <= 0 {
		return 0, invalid(typeError, "Input should be a valid integer", "path", "repo_id")
	}
	return id, nil
}

// handleRepositoryCommits serves GET organizations/{org}/repos/{repo_id}/commits/:
// a page of the repository's commits, newest first, in the shape of a
// release's commits.
func handleRepositoryCommits(d Deps) apiFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		org, err := pathSlug(r, "organization_slug")
		if err != nil {
			return err
		}
		repo, err := pathRepoID(r)
		if err != nil {
			return err
		}
		page, err := readPage(r)
		if err != nil {
			return err
		}
		commits, info, err := d.Store.RepositoryCommits(r.Context(), caller(r).UserID, org, repo, page)
		if err != nil {
			return err
		}
		writeCommitPage(w, r, d, commits, info)
		return nil
	}
}
