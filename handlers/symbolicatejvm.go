package handlers

import (
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"errata/store"
	"errata/worker/dif/proguard"
)

// maxProguardBytes is the largest ProGuard mapping a request reads.
const maxProguardBytes = proguard.MaxSize

// jvmRequest is the body of symbolicate-jvm/.
type jvmRequest struct {
	Exceptions  []jvmException `json:"exceptions"`
	Stacktraces []struct {
		Frames []jvmFrameIn `json:"frames"`
	} `json:"stacktraces"`
	Modules []struct {
		Type *string `json:"type"`
		UUID *string `json:"uuid"`
	} `json:"modules"`
	Options struct {
		FrameOrder *string `json:"frame_order"`
	} `json:"options"`
}

type jvmException struct {
	Type   *string `json:"type"`
	Module *string `json:"module"`
}

type jvmFrameIn struct {
	Function      *string `json:"function"`
	Module        *string `json:"module"`
	Filename      *string `json:"filename"`
	AbsPath       *string `json:"abs_path"`
	Lineno        *int64  `json:"lineno"`
	Index         *int    `json:"index"`
	OriginalIndex *int    `json:"original_index"`
}

// jvmFrameOut is a frame of the answer.
type jvmFrameOut struct {
	Function      *string `json:"function"`
	Module        *string `json:"module"`
	Filename      *string `json:"filename"`
	AbsPath       *string `json:"abs_path"`
	Lineno        *int64  `json:"lineno"`
	OriginalIndex int     `json:"original_index"`
}

type jvmError struct {
	UUID string `json:"uuid"`
	Type string `json:"type"`
}

type jvmStacktraceOut struct {
	Frames []jvmFrameOut `json:"frames"`
}

type jvmResponse struct {
	Exceptions  []jvmException     `json:"exceptions"`
	Stacktraces []jvmStacktraceOut `json:"stacktraces"`
	Errors      []jvmError         `json:"errors"`
}

// handleSymbolicateJVM serves POST projects/{org}/{project}/symbolicate-jvm/:
// obfuscated Java frames and exception classes remapped through the
// project's ProGuard mappings of the request's UUIDs (SYMBOLS.md §7).
func handleSymbolicateJVM(d Deps) apiFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		sc, err := projectScope(r)
		if err != nil {
			return err
		}
		var req jvmRequest
		if err := decodeResolveBody(w, r, &req); err != nil {
			return err
		}
		uuids, err := checkJVMRequest(&req)
		if err != nil {
			return err
		}
		if _, err := d.Store.Project(r.Context(), sc.UserID, sc.OrgSlug, sc.ProjectSlug); err != nil {
			return err
		}
		out := &jvmResponse{Exceptions: []jvmException{}, Stacktraces: []jvmStacktraceOut{}, Errors: []jvmError{}}
		var mappings []*proguard.Mapping
		var read int64
		for _, id := range uuids {
			m, errType, err := loadProguard(r, d, sc, id, &read)
			if err != nil {
				return err
			}
			if errType != "" {
				out.Errors = append(out.Errors, jvmError{UUID: id, Type: errType})
				continue
			}
			mappings = append(mappings, m)
		}
		for _, e := range req.Exceptions {
			out.Exceptions = append(out.Exceptions, remapException(mappings, e))
		}
		callerFirst := req.Options.FrameOrder == nil || *req.Options.FrameOrder == "caller_first"
		for _, st := range req.Stacktraces {
			frames := []jvmFrameOut{}
			for i, f := range st.Frames {
				frames = append(frames, remapFrame(mappings, f, i, callerFirst)...)
			}
			out.Stacktraces = append(out.Stacktraces, jvmStacktraceOut{Frames: frames})
		}
		writeJSON(w, r, d.Log, http.StatusOK, out)
		return nil
	}
}

// checkJVMRequest validates the body beyond its types and returns the
// UUIDs of its ProGuard modules, canonical, each once.
func checkJVMRequest(req *jvmRequest) ([]string, error) {
	n := 0
	for _, st := range req.Stacktraces {
		n += len(st.Frames)
	}
	if n > maxResolveFrames {
		return nil, invalid(valueErr, fmt.Sprintf("At most %d frames a request", maxResolveFrames), "body", "stacktraces")
	}
	if len(req.Modules) > maxResolveModules {
		return nil, invalid(valueErr, fmt.Sprintf("At most %d modules a request", maxResolveModules), "body", "modules")
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
	if len(uuids) > maxResolveFiles {
		return nil, invalid(valueErr, fmt.Sprintf("At most %d mappings a request", maxResolveFiles), "body", "modules")
	}
	if o := req.Options.FrameOrder; o != nil && *o != "caller_first" && *o != "callee_first" {
		return nil, invalid(valueErr, "Expected caller_first or callee_first", "body", "options", "frame_order")
	}
	return uuids, nil
}

// loadProguard returns the parsed mapping uuid of the project, from the
// cache when it was parsed before; errType is "missing" when the project
// has none and "malformed" when it cannot be read.
func loadProguard(r *http.Request, d Deps, sc store.ProjectScope, uuid string, read *int64) (*proguard.Mapping, string, error) {
	f, err := d.Store.ProguardMapping(r.Context(), sc, uuid)
	if errors.Is(err, store.ErrNotFound) {
		return nil, "missing", nil
	}
	if err != nil {
		return nil, "", err
	}
	key := "proguard:" + f.SHA1
	if v, ok := d.MapCache.Get(key); ok {
		d.MapCache.Touch(r.Context(), d.Store, f)
		if m, ok := v.(*proguard.Mapping); ok {
			return m, "", nil
		}
		return nil, "malformed", nil
	}
	if f.Size > maxProguardBytes {
		return nil, "malformed", nil
	}
	if *read+f.Size > maxResolveBytes {
		return nil, "", errResolveBudget
	}
	*read += f.Size
	data, err := d.Store.ReadSourceFile(r.Context(), f, maxProguardBytes)
	if err != nil {
		return nil, "", err
	}
	m, err := proguard.Parse(data)
	if err != nil {
		d.MapCache.Put(key, false, int64(len(key)+64))
		return nil, "malformed", nil
	}
	d.MapCache.Put(key, m, int64(m.Size()+len(key)))
	return m, "", nil
}

// remapException remaps an exception's class, module.type.
func remapException(mappings []*proguard.Mapping, e jvmException) jvmException {
	if e.Type == nil {
		return e
	}
	full := *e.Type
	if e.Module != nil && *e.Module != "" {
		full = *e.Module + "." + full
	}
	for _, m := range mappings {
		if orig, ok := m.Class(full); ok {
			module, typ := splitClass(orig)
			out := jvmException{Type: &typ}
			if module != "" || e.Module != nil {
				out.Module = &module
			}
			return out
		}
	}
	return e
}

// splitClass splits a.b.C into a.b and C.
func splitClass(name string) (string, string) {
	if i := strings.LastIndexByte(name, '.'); i >= 0 {
		return name[:i], name[i+1:]
	}
	return "", name
}

// remapFrame returns the original frames of f, the i-th frame of its
// stack trace: several when methods were inlined there, in the order the
// request reads frames.
func remapFrame(mappings []*proguard.Mapping, f jvmFrameIn, i int, callerFirst bool) []jvmFrameOut {
	index := i
	if f.OriginalIndex != nil {
		index = *f.OriginalIndex
	} else if f.Index != nil {
		index = *f.Index
	}
	same := []jvmFrameOut{{Function: f.Function, Module: f.Module, Filename: f.Filename, AbsPath: f.AbsPath, Lineno: f.Lineno, OriginalIndex: index}}
	if f.Module == nil || f.Function == nil {
		return same
	}
	line := 0
	if f.Lineno != nil && *f.Lineno > 0 && *f.Lineno < 1<<31 {
		line = int(*f.Lineno)
	}
	for _, m := range mappings {
		frames, ok := m.Remap(proguard.Frame{Class: *f.Module, Method: *f.Function, Line: line})
		if !ok {
			continue
		}
		if callerFirst {
			slices.Reverse(frames)
		}
		out := make([]jvmFrameOut, 0, len(frames))
		for _, o := range frames {
			fo := jvmFrameOut{Function: ptr(o.Method), Module: ptr(o.Class), Filename: ptr(o.File), AbsPath: ptr(o.File), OriginalIndex: index}
			if f.Lineno != nil {
				fo.Lineno = ptr(int64(o.Line))
			}
			out = append(out, fo)
		}
		return out
	}
	return same
}
