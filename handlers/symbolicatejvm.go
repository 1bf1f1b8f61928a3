package handlers

import (
	"fmt"
	"net/http"
	"slices"

	"errata/handlers/symbolication"
	"errata/handlers/symbolication/jvm"
)

// handleSymbolicateJVM serves POST projects/{org}/{project}/symbolicate-jvm/:
// obfuscated Java frames and exception classes remapped through the
// project's ProGuard mappings of the request's UUIDs (docs/resolution.md):
// the jvm engine's work.
func handleSymbolicateJVM(d Deps) apiFunc {
	engine := &jvm.Engine{Store: d.Store, Cache: d.MapCache}
	return func(w http.ResponseWriter, r *http.Request) error {
		sc, err := projectScope(r)
		if err != nil {
			return err
		}
		all, release, err := startResolution(r, d, sc)
		if err != nil {
			return err
		}
		defer release()
		var req jvm.Request
		if err := decodeResolveBody(w, r, &req); err != nil {
			return err
		}
		uuids, err := checkJVMRequest(&req)
		if err != nil {
			return err
		}
		if err := all(); err != nil {
			return err
		}
		out, err := engine.Symbolicate(r.Context(), sc, &req, uuids)
		if err != nil {
			return err
		}
		writeJSON(w, r, d.Log, http.StatusOK, out)
		return nil
	}
}

// checkJVMRequest validates the body beyond its types and returns the
// UUIDs of its ProGuard modules, canonical, each once.
func checkJVMRequest(req *jvm.Request) ([]string, error) {
	n := 0
	for _, st := range req.Stacktraces {
		n += len(st.Frames)
	}
	if n > symbolication.MaxFrames {
		return nil, invalid(valueErr, fmt.Sprintf("At most %d frames a request", symbolication.MaxFrames), "body", "stacktraces")
	}
	if len(req.Modules) > symbolication.MaxModules {
		return nil, invalid(valueErr, fmt.Sprintf("At most %d modules a request", symbolication.MaxModules), "body", "modules")
	}
	var uuids []string
	for i, m := range req.Modules {
		if m.Type != nil && *m.Type != "proguard" {
			continue
		}
		if m.UUID == nil {
			return nil, invalid(missing, "Field required", "body", "modules", i, "uuid")
		}
		id, ok := canonicalUUID(*m.UUID)
		if !ok {
			return nil, invalid(valueErr, "Expected a UUID", "body", "modules", i, "uuid")
		}
		if !slices.Contains(uuids, id) {
			uuids = append(uuids, id)
		}
	}
	if len(uuids) > symbolication.MaxFiles {
		return nil, invalid(valueErr, fmt.Sprintf("At most %d mappings a request", symbolication.MaxFiles), "body", "modules")
	}
	if o := req.Options.FrameOrder; o != nil && *o != "caller_first" && *o != "callee_first" {
		return nil, invalid(valueErr, "Expected caller_first or callee_first", "body", "options", "frame_order")
	}
	return uuids, nil
}
