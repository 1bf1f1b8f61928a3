package handlers

import (
	"errors"
	"net/http"
	"unicode/utf8"

	"errata/store"
)

// maxReleaseFileRename is the longest new name of a release file, in
// characters: Sentry's limit for a rename (uploads may be longer).
const maxReleaseFileRename = 200

// releaseFileUpdateIn is the body of a release-file update: Sentry's
// document has only the name.
type releaseFileUpdateIn struct {
	Name opt[string] `json:"name"`
}

// handleReleaseFileUpdate serves PUT organizations/{org}/releases/{version}/files/{file_id}/
// and its project twin: it renames the file, keeping its dist. A name
// another file of the release has with the same dist is 409, as for an
// upload.
func handleReleaseFileUpdate(d Deps) apiFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		sc, err := releaseFileScope(r)
		if err != nil {
			return err
		}
		id, err := pathFileID(r)
		if err != nil {
			return err
		}
		var in releaseFileUpdateIn
		if err := decodeJSON(w, r, &in); err != nil {
			return err
		}
		switch {
		case !in.Name.Set:
			return invalid(missing, "Field required", "body", "name")
		case in.Name.Null:
			return invalid(typeError, "Input should be a valid string", "body", "name")
		case in.Name.V == "" || utf8.RuneCountInString(in.Name.V) > maxReleaseFileRename || !isText(in.Name.V):
			return invalid(valueErr, "A name of 1 to 200 characters is required", "body", "name")
		}
		rf, err := d.Store.RenameReleaseFile(r.Context(), sc, id, in.Name.V)
		if errors.Is(err, store.ErrConflict) {
			return &apiError{status: http.StatusConflict, detail: "A file with that name already exists", cause: err}
		}
		if err != nil {
			return err
		}
		writeJSON(w, r, d.Log, http.StatusOK, newReleaseFileJSON(rf))
		return nil
	}
}
