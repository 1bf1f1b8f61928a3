package handlers

import (
	"net/http"
)

// storageJSON is what an organization stores (docs/storage.md): its files
// per kind as uploaded, its blobs each counted once (what a quota
// bounds), and its quota in bytes, null when there is none.
type storageJSON struct {
	Kinds []storageKindJSON `json:"kinds"`
	Blobs int64             `json:"blobs"`
	Bytes int64             `json:"bytes"`
	Quota *int64            `json:"quota"`
}

// storageKindJSON is one kind of file of an organization: release
// files, artifact bundles, debug files, or unreferenced (awaiting the
// collector). A file of two kinds counts in each.
type storageKindJSON struct {
	Kind  string `json:"kind"`
	Files int64  `json:"files"`
	Bytes int64  `json:"bytes"`
}

// handleOrganizationStorage serves GET
// /api/0/organizations/{organization_slug}/storage/: what the
// organization stores, as `errata admin storage` reports it for one
// organization.
func handleOrganizationStorage(d Deps) apiFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		slug, err := pathSlug(r, "organization_slug")
		if err != nil {
			return err
		}
		st, err := d.Store.OrganizationStorage(r.Context(), caller(r).UserID, slug)
		if err != nil {
			return err
		}
		out := storageJSON{Kinds: make([]storageKindJSON, len(st.Uses)), Blobs: st.Blobs, Bytes: st.Bytes}
		for i, u := range st.Uses {
			out.Kinds[i] = storageKindJSON{Kind: u.Kind, Files: u.Files, Bytes: u.Bytes}
		}
		if st.Quota > 0 {
			out.Quota = &st.Quota
		}
		writeJSON(w, r, d.Log, http.StatusOK, out)
		return nil
	}
}
