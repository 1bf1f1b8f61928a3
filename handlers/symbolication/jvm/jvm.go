package jvm

import (
	"context"
	"errors"
	"slices"
	"strings"

	"errata/handlers/symbolication"
	"errata/store"
	"errata/worker/dif/proguard"
)

// maxProguardBytes is the largest ProGuard mapping a request reads.
const maxProguardBytes = proguard.MaxSize

// Request is a JVM resolution request: the body of the route
// symbolicate-jvm/, in symbolicator's snake_case keys.
type Request struct {
	Exceptions  []Exception `json:"exceptions"`
	Stacktraces []struct {
		// Exception is the exception the stack trace threw, as
		// symbolicator's API takes it: R8's rewriteFrame rules apply to
		// its top frame. Without it, the i-th of Exceptions when there are
		// as many as stack traces.
		Exception *Exception `json:"exception"`
		Frames    []FrameIn  `json:"frames"`
	} `json:"stacktraces"`
	Modules []struct {
		Type *string `json:"type"`
		UUID *string `json:"uuid"`
	} `json:"modules"`
	Options struct {
		FrameOrder *string `json:"frame_order"`
	} `json:"options"`
}

// Exception is an exception of the request or the answer: its class,
// Module.Type.
type Exception struct {
	Type   *string `json:"type"`
	Module *string `json:"module"`
}

// FrameIn is a frame of the request.
type FrameIn struct {
	Function      *string `json:"function"`
	Module        *string `json:"module"`
	Filename      *string `json:"filename"`
	AbsPath       *string `json:"abs_path"`
	Lineno        *int64  `json:"lineno"`
	Index         *int    `json:"index"`
	OriginalIndex *int    `json:"original_index"`
}

// FrameOut is a frame of the answer.
type FrameOut struct {
	Function      *string `json:"function"`
	Module        *string `json:"module"`
	Filename      *string `json:"filename"`
	AbsPath       *string `json:"abs_path"`
	Lineno        *int64  `json:"lineno"`
	OriginalIndex int     `json:"original_index"`
	// FramesOmitted, on the outermost frame kept of an input frame's
	// original frames, is how many more the mapping gives, left out past
	// symbolication.MaxFrameExpansion.
	FramesOmitted int `json:"frames_omitted,omitempty"`
	// MethodSynthesized marks a frame of a method R8 synthesized, kept
	// because its input frame had no line (symbolicator's key).
	MethodSynthesized bool `json:"method_synthesized,omitempty"`
}

// frameJSON bounds the bytes a FrameOut's JSON takes beside its strings:
// keys, punctuation, nulls and numbers at their longest.
const frameJSON = 200

// Error says why a UUID of the request remapped nothing: "missing" (the
// project has no mapping of it) or "malformed".
type Error struct {
	UUID string `json:"uuid"`
	Type string `json:"type"`
}

// StacktraceOut is a stack trace of the answer: its exception remapped
// when the request gave one.
type StacktraceOut struct {
	Exception *Exception `json:"exception,omitempty"`
	Frames    []FrameOut `json:"frames"`
}

// Response is the answer of a JVM resolution.
type Response struct {
	Exceptions  []Exception     `json:"exceptions"`
	Stacktraces []StacktraceOut `json:"stacktraces"`
	Errors      []Error         `json:"errors"`
}

// Engine resolves JVM requests through the ProGuard mappings the store
// holds, keeping the parsed ones in Cache (nil keeps nothing).
type Engine struct {
	Store *store.Store
	Cache *symbolication.MapCache
}

// Symbolicate answers req, a request of project sc whose ProGuard modules
// are uuids (canonical, each once): its exception classes and frames
// remapped through the project's mappings of those UUIDs, in the order
// the request reads frames. A UUID the project has no mapping of, or
// whose mapping cannot be read, is an error of the answer, not of the
// request. The project must be visible to sc's user (store.ErrNotFound).
func (e *Engine) Symbolicate(ctx context.Context, sc store.ProjectScope, req *Request, uuids []string) (*Response, error) {
	if _, err := e.Store.Project(ctx, sc.UserID, sc.OrgSlug, sc.ProjectSlug); err != nil {
		return nil, err
	}
	out := &Response{Exceptions: []Exception{}, Stacktraces: []StacktraceOut{}, Errors: []Error{}}
	var mappings []*proguard.Mapping
	var read int64
	budget := symbolication.NewBudget(ctx, e.Cache.EntryBound())
	for _, id := range uuids {
		m, errType, err := e.loadProguard(ctx, sc, id, &read, budget)
		if err != nil {
			return nil, err
		}
		if errType != "" {
			out.Errors = append(out.Errors, Error{UUID: id, Type: errType})
			continue
		}
		mappings = append(mappings, m)
	}
	var ans symbolication.Answer
	work := proguard.MaxWork
	for _, ex := range req.Exceptions {
		ex = remapException(mappings, ex, &work)
		if err := ans.Charge(32, deref(ex.Type), deref(ex.Module)); err != nil {
			return nil, err
		}
		out.Exceptions = append(out.Exceptions, ex)
	}
	callerFirst := req.Options.FrameOrder == nil || *req.Options.FrameOrder == "caller_first"
	for i, st := range req.Stacktraces {
		var thrown *Exception
		switch {
		case st.Exception != nil:
			ex := remapException(mappings, *st.Exception, &work)
			if err := ans.Charge(32, deref(ex.Type), deref(ex.Module)); err != nil {
				return nil, err
			}
			thrown = &ex
		case len(out.Exceptions) == len(req.Stacktraces):
			thrown = &out.Exceptions[i]
		}
		frames, err := remapTrace(ctx, mappings, st.Frames, className(thrown), callerFirst, &ans, &work)
		if err != nil {
			return nil, err
		}
		remapped := StacktraceOut{Frames: frames}
		if st.Exception != nil {
			remapped.Exception = thrown
		}
		out.Stacktraces = append(out.Stacktraces, remapped)
	}
	return out, nil
}

// className is the class name of exception e, "" for none.
func className(e *Exception) string {
	if e == nil || e.Type == nil {
		return ""
	}
	if e.Module != nil && *e.Module != "" {
		return *e.Module + "." + *e.Type
	}
	return *e.Type
}

// deref is *s, "" for nil.
func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// loadProguard returns the parsed mapping uuid of the project, from the
// cache when it was parsed before; errType is "missing" when the project
// has none and "malformed" when it cannot be read. A parse is bounded by
// what the cache takes of one entry and what the request may still hold,
// and charged to budget: a mapping larger than the cache takes is
// malformed, and kept so, so that no request parses it again; one larger
// than what the request has left spends its budget.
func (e *Engine) loadProguard(ctx context.Context, sc store.ProjectScope, uuid string, read *int64, budget *symbolication.Budget) (*proguard.Mapping, string, error) {
	f, err := e.Store.ProguardMapping(ctx, sc, uuid)
	if errors.Is(err, store.ErrNotFound) {
		return nil, "missing", nil
	}
	if err != nil {
		return nil, "", err
	}
	key := "proguard:" + f.SHA1
	if v, ok := e.Cache.Get(key); ok {
		e.Cache.Touch(ctx, e.Store, f)
		if m, ok := v.(*proguard.Mapping); ok {
			return m, "", nil
		}
		return nil, "malformed", nil
	}
	bound := e.Cache.EntryBound()
	if f.Size > maxProguardBytes || f.Size+int64(len(key)) > bound {
		e.Cache.Put(key, false, int64(len(key)+64))
		return nil, "malformed", nil
	}
	if *read+f.Size > symbolication.MaxReadBytes {
		return nil, "", &symbolication.LimitError{Limit: symbolication.ReadBytes, Max: symbolication.MaxReadBytes}
	}
	*read += f.Size
	data, err := e.Store.ReadSourceFile(ctx, f, maxProguardBytes)
	if err != nil {
		return nil, "", err
	}
	limit := min(bound, budget.Left()) - int64(len(key))
	m, err := proguard.ParseWithin(data, int(limit))
	if errors.Is(err, proguard.ErrTooLarge) && limit+int64(len(key)) < bound {
		return nil, "", budget.Spent()
	}
	if err != nil {
		e.Cache.Put(key, false, int64(len(key)+64))
		return nil, "malformed", nil
	}
	size := int64(m.Size() + len(key))
	if err := budget.Charge(size); err != nil {
		return nil, "", err
	}
	e.Cache.Put(key, m, size)
	return m, "", nil
}

// remapException remaps an exception's class, module.type. Splitting
// and cutting the original name reads it: it takes a unit of work (the
// request's proguard.Context.Work) per 64 bytes of it, and leaves e as it
// came once the work is spent.
func remapException(mappings []*proguard.Mapping, e Exception, work *int) Exception {
	if e.Type == nil {
		return e
	}
	full := *e.Type
	if e.Module != nil && *e.Module != "" {
		full = *e.Module + "." + full
	}
	for _, m := range mappings {
		if orig, ok := m.Class(full); ok {
			if !(proguard.Context{Work: work}).Take(len(orig) >> 6) {
				return e
			}
			module, typ := splitClass(orig)
			module, typ = symbolication.CutName(module), symbolication.CutName(typ)
			out := Exception{Type: &typ}
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

// remapTrace returns the original frames of a stack trace's frames, in
// the order the request reads them (callerFirst or not), charged to ans.
// It reads them callee first, as R8's retrace does: thrown (the original
// class name of the exception the stack trace threw, "" for none) goes
// with the top frame, for R8's rewriteFrame rules, and an outline's frame
// gives its position to the frame that called it. The loop stops once
// ctx ends. work is what is left of the request's proguard.MaxWork: once
// it is spent, frames are left as they came.
func remapTrace(ctx context.Context, mappings []*proguard.Mapping, in []FrameIn, thrown string, callerFirst bool, ans *symbolication.Answer, work *int) ([]FrameOut, error) {
	out := []FrameOut{}
	outlines := make([]int, len(mappings))
	for k := range in {
		if err := ctx.Err(); err != nil {
			return nil, err // the client left
		}
		i := k
		if callerFirst {
			i = len(in) - 1 - k
		}
		fs, calledOutline := remapFrame(mappings, in[i], i, thrown, outlines, work)
		if !calledOutline {
			thrown = ""
		}
		for _, o := range fs {
			if err := ans.Charge(frameJSON, deref(o.Function), deref(o.Module), deref(o.Filename), deref(o.AbsPath)); err != nil {
				return nil, err
			}
		}
		out = append(out, fs...)
	}
	if callerFirst {
		slices.Reverse(out)
	}
	return out, nil
}

// remapFrame returns the original frames of f, the i-th frame of its
// stack trace, innermost first: several when methods were inlined there
// (at most symbolication.MaxFrameExpansion, the first the mapping gives,
// the outermost of them saying how many more it gives), none when R8's
// metadata leaves them all out, their names cut to
// symbolication.MaxNameBytes. thrown is the exception f threw when it is
// the top frame, outlines the outline positions the frame below gave, per
// mapping (read, then set to f's own). outline is true when f is an
// outline's frame that answers nothing: the exception goes on with the
// frame that called it. work is the request's budget of
// proguard.Context.Work.
func remapFrame(mappings []*proguard.Mapping, f FrameIn, i int, thrown string, outlines []int, work *int) (frames []FrameOut, outline bool) {
	index := i
	if f.OriginalIndex != nil {
		index = *f.OriginalIndex
	} else if f.Index != nil {
		index = *f.Index
	}
	same := []FrameOut{{Function: f.Function, Module: f.Module, Filename: f.Filename, AbsPath: f.AbsPath, Lineno: f.Lineno, OriginalIndex: index}}
	if f.Module == nil || f.Function == nil {
		return same, false
	}
	line := 0
	if f.Lineno != nil && *f.Lineno > 0 && *f.Lineno < 1<<31 {
		line = int(*f.Lineno)
	}
	in := proguard.Frame{Class: *f.Module, Method: *f.Function, File: deref(f.Filename), Line: line}
	for j, m := range mappings {
		// Sentry leaves out synthesized methods of frames with a line only.
		r, ok := m.RemapIn(in, proguard.Context{Thrown: thrown, Outline: outlines[j], DropSynthesized: f.Lineno != nil, Work: work}, symbolication.MaxFrameExpansion)
		outlines[j] = r.Outline
		if !ok {
			continue
		}
		out := make([]FrameOut, 0, len(r.Frames))
		for _, o := range r.Frames {
			file := ptr(symbolication.CutName(o.File))
			fo := FrameOut{Function: ptr(symbolication.CutName(o.Method)), Module: ptr(symbolication.CutName(o.Class)),
				Filename: file, AbsPath: file, OriginalIndex: index, MethodSynthesized: o.Synthesized}
			if !o.NoLine {
				fo.Lineno = ptr(int64(o.Line))
			}
			out = append(out, fo)
		}
		if len(out) > 0 {
			out[len(out)-1].FramesOmitted = r.N - len(out)
		}
		return out, r.Outline > 0 && len(out) == 0
	}
	return same, false
}

func ptr[T any](v T) *T { return &v }
