package handlers

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"reflect"
	"unicode/utf8"

	"errata/handlers/symbolication"
	"errata/handlers/symbolication/js"
)

// handleSymbolicateJS serves POST projects/{org}/{project}/symbolicate-js/:
// minified JavaScript frames resolved through the project's artifact
// bundles by debug id, then the release's files by URL
// (docs/resolution.md): the js engine's work.
func handleSymbolicateJS(d Deps) apiFunc {
	engine := &js.Engine{Store: d.Store, Cache: d.MapCache}
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
		bp := bodyBuffers.Get().(*[]byte)
		defer putBodyBuffer(bp)
		body, err := readBody(w, r, (*bp)[:0])
		*bp = body[:0]
		if err != nil {
			return err
		}
		// The fast decoding counts the body's values as jsonValues
		// does and takes none beyond the limit; a body it does not
		// take has the checks of checkResolveBody, then encoding/json.
		var req js.Request
		decoded := utf8.Valid(body) && decodeJSRequestFast(body, &req)
		if !decoded {
			if err := checkResolveBody(body); err != nil {
				return err
			}
			req = js.Request{}
			if err := decodeResolveJSON(body, &req); err != nil {
				return err
			}
		}
		if err := checkJSRequest(&req, decoded); err != nil {
			return err
		}
		if err := all(); err != nil {
			return err
		}
		out, err := engine.Symbolicate(r.Context(), sc, &req)
		if err != nil {
			return err
		}
		// The answer writes its own JSON: a thousand frames through
		// encoding/json's reflection cost more than resolving them.
		writeJSON(w, r, d.Log, http.StatusOK, appendFunc(out.AppendJSON))
		return nil
	}
}

// checkJSRequest validates what the body says beyond its types, and
// decodes its stack traces unless decodeJSRequestFast did (decoded).
func checkJSRequest(req *js.Request, decoded bool) error {
	if len(req.Stacktraces) == 0 || string(req.Stacktraces) == "null" {
		return invalid(missing, "Field required", "body", "stacktraces")
	}
	// decodeJSRequestFast has read the frames already (strings without
	// escapes, so without NUL).
	if !decoded {
		if err := json.Unmarshal(req.Stacktraces, &req.Traces); err != nil {
			return invalid(typeError, "Expected a list of stack traces with frames", "body", "stacktraces")
		}
		if bytes.Contains(req.Stacktraces, []byte(`\u0000`)) {
			if at, found := nulPath(reflect.ValueOf(&req.Traces)); found {
				return invalid(valueErr, "Input should not contain NUL characters", append([]any{"body", "stacktraces"}, at...)...)
			}
		}
	}
	n := 0
	for _, st := range req.Traces {
		n += len(st.Frames)
	}
	if n > symbolication.MaxFrames {
		return invalid(valueErr, fmt.Sprintf("At most %d frames a request", symbolication.MaxFrames), "body", "stacktraces")
	}
	if len(req.Modules) > symbolication.MaxModules {
		return invalid(valueErr, fmt.Sprintf("At most %d modules a request", symbolication.MaxModules), "body", "modules")
	}
	for i, m := range req.Modules {
		if m.DebugID != nil {
			id, ok := canonicalUUID(*m.DebugID)
			if !ok {
				return invalid(valueErr, "Expected a UUID", "body", "modules", i, "debug_id")
			}
			*req.Modules[i].DebugID = id
		}
	}
	if o := req.Options.FrameOrder; o != nil && *o != "caller_first" && *o != "callee_first" {
		return invalid(valueErr, "Expected caller_first or callee_first", "body", "options", "frame_order")
	}
	if req.Release != nil && (len(*req.Release) > 250 || !isText(*req.Release)) {
		return invalid(valueErr, "Invalid release", "body", "release")
	}
	if req.Dist != nil && (len(*req.Dist) > 64 || !isText(*req.Dist)) {
		return invalid(valueErr, "Invalid dist", "body", "dist")
	}
	return nil
}

// appendFunc is an AppendJSON method of another package's type as
// writeJSON takes it.
type appendFunc func(b []byte) ([]byte, error)

func (f appendFunc) appendJSON(b []byte) ([]byte, error) { return f(b) }
