package handlers

import (
	"net/http"
	"strings"

	"errata/store"
)

// assembleIn is the body of both assemble routes; the artifact-bundle one
// adds projects, version and dist.
type assembleIn struct {
	Checksum *string   `json:"checksum"`
	Chunks   *[]string `json:"chunks"`
	Projects []string  `json:"projects"`
	Version  *string   `json:"version"`
	Dist     *string   `json:"dist"`
}

// isSHA1 reports whether s is 40 lowercase hex digits.
func isSHA1(s string) bool {
	return len(s) == 40 && strings.Trim(s, "0123456789abcdef") == ""
}

// readAssemble decodes and checks an assemble body.
func readAssemble(w http.ResponseWriter, r *http.Request) (store.AssemblyRequest, error) {
	var in assembleIn
	if err := decodeJSON(w, r, &in); err != nil {
		return store.AssemblyRequest{}, err
	}
	var errs validationError
	if in.Checksum == nil {
		errs = append(errs, fieldError{missing, []any{"body", "checksum"}, "Field required"})
	} else if !isSHA1(strings.ToLower(*in.Checksum)) {
		errs = append(errs, fieldError{valueErr, []any{"body", "checksum"}, "Expected a SHA-1 in hex"})
	}
	if in.Chunks == nil {
		errs = append(errs, fieldError{missing, []any{"body", "chunks"}, "Field required"})
	} else {
		for i, c := range *in.Chunks {
			if !isSHA1(strings.ToLower(c)) {
				errs = append(errs, fieldError{valueErr, []any{"body", "chunks", i}, "Expected a SHA-1 in hex"})
			}
		}
	}
	if len(errs) > 0 {
		return store.AssemblyRequest{}, errs
	}
	req := store.AssemblyRequest{
		Checksum: strings.ToLower(*in.Checksum), Chunks: make([]string, len(*in.Chunks)),
		Version: in.Version, Dist: in.Dist, Projects: in.Projects,
	}
	for i, c := range *in.Chunks {
		req.Chunks[i] = strings.ToLower(c)
	}
	return req, nil
}

// notifyJobs wakes the worker of this process, if there is one.
func notifyJobs(d Deps) {
	if d.Jobs != nil {
		d.Jobs.Notify()
	}
}

// assembleOut is the answer of both assemble routes.
type assembleOut struct {
	State         string   `json:"state"`
	MissingChunks []string `json:"missingChunks"`
}

// handleReleaseAssemble serves POST organizations/{org}/releases/{version}/assemble/:
// it enqueues the assembly and, as docs/api.md says, always answers "ok" with no
// missing chunks.
func handleReleaseAssemble(d Deps) apiFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		org, err := pathSlug(r, "organization_slug")
		if err != nil {
			return err
		}
		version, err := pathVersion(r)
		if err != nil {
			return err
		}
		req, err := readAssemble(w, r)
		if err != nil {
			return err
		}
		if err := d.Store.EnqueueReleaseAssembly(r.Context(), caller(r).UserID, org, version, req); err != nil {
			return err
		}
		notifyJobs(d)
		writeJSON(w, r, d.Log, http.StatusOK, assembleOut{State: "ok", MissingChunks: []string{}})
		return nil
	}
}

// artifactBundleOut is the answer of the artifact-bundle route, which
// always carries detail.
type artifactBundleOut struct {
	State         string   `json:"state"`
	MissingChunks []string `json:"missingChunks"`
	Detail        *string  `json:"detail"`
}

// handleArtifactBundleAssemble serves POST organizations/{org}/artifactbundle/assemble/:
// not_found with the chunks still to upload, else the state of the
// assembly: created, assembling, ok or error with a detail.
func handleArtifactBundleAssemble(d Deps) apiFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		org, err := pathSlug(r, "organization_slug")
		if err != nil {
			return err
		}
		req, err := readAssemble(w, r)
		if err != nil {
			return err
		}
		st, err := d.Store.AssembleArtifactBundle(r.Context(), caller(r).UserID, org, req)
		if err != nil {
			return err
		}
		out := artifactBundleOut{State: "not_found", MissingChunks: st.MissingChunks}
		if out.MissingChunks == nil {
			out.MissingChunks = []string{}
		}
		if st.Job != nil {
			switch st.Job.State {
			case "queued":
				out.State = "created"
				notifyJobs(d)
			case "running":
				out.State = "assembling"
			case "done":
				out.State = "ok"
			default:
				out.State, out.Detail = "error", st.Job.LastError
			}
		}
		writeJSON(w, r, d.Log, http.StatusOK, out)
		return nil
	}
}
