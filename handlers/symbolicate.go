package handlers

import (
	"net/http"

	"errata/handlers/symbolication"
	"errata/handlers/symbolication/native"
)

// handleSymbolicate serves POST /api/0/projects/{org}/{project}/symbolicate/:
// native stack traces resolved from the project's debug files
// (docs/resolution.md): the native engine's work.
func handleSymbolicate(d Deps) apiFunc {
	cache := d.DebugFileCache
	if cache == nil {
		cache = symbolication.NewDebugFileCache(symbolication.DefaultDebugFileCacheBytes)
	}
	engine := &native.Engine{Store: d.Store, Cache: cache}
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
		var req native.Request
		if err := decodeSnakeJSON(w, r, &req); err != nil {
			return err
		}
		if err := req.Validate(); err != nil {
			return err
		}
		if err := all(); err != nil {
			return err
		}
		resp, err := engine.Symbolicate(r.Context(), sc, &req)
		if err != nil {
			return err
		}
		writeJSON(w, r, d.Log, http.StatusOK, resp)
		return nil
	}
}
