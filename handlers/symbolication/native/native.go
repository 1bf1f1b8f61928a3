package native

import (
	"context"
	"encoding/json"
	"fmt"

	"errata/handlers/symbolication"
	"errata/store"
	"errata/worker/dif"
)

// Limits of one native resolution (docs/resolution.md).
const (
	// maxNativeFrames bounds the frames of a request, all stack traces
	// together; maxNativeModules its modules.
	maxNativeFrames  = 5000
	maxNativeModules = 500
	// maxNativeFileSize is the largest debug file a resolution parses;
	// a larger one is malformed (beyond the budget).
	maxNativeFileSize = 4 << 30
	// maxNativeParse bounds the bytes of the files one request parses
	// (those the cache did not hold).
	maxNativeParse = 8 << 30
)

// Request is a native resolution request: the body of the route
// symbolicate/, in snake_case as symbolicator writes it.
type Request struct {
	Modules     []ModuleIn     `json:"modules"`
	Stacktraces []StacktraceIn `json:"stacktraces"`
	Options     struct {
		ApplySourceContext *bool  `json:"apply_source_context"`
		FrameOrder         string `json:"frame_order"`
	} `json:"options"`
}

// StacktraceIn is a stack trace of the request.
type StacktraceIn struct {
	Frames []FrameIn `json:"frames"`
}

// ModuleIn is a module of the request: an image loaded at ImageAddr,
// whose debug files are found by DebugID or CodeID.
type ModuleIn struct {
	Type        string          `json:"type"`
	CodeID      string          `json:"code_id"`
	DebugID     string          `json:"debug_id"`
	CodeFile    string          `json:"code_file"`
	DebugFile   string          `json:"debug_file"`
	Arch        string          `json:"arch"`
	ImageAddr   json.RawMessage `json:"image_addr"`
	ImageSize   json.RawMessage `json:"image_size"`
	ImageVmaddr json.RawMessage `json:"image_vmaddr"`
}

// FrameIn is a frame of the request.
type FrameIn struct {
	InstructionAddr       json.RawMessage `json:"instruction_addr"`
	AddrMode              string          `json:"addr_mode"`
	AdjustInstructionAddr *bool           `json:"adjust_instruction_addr"`
}

// FrameOut is one frame of the answer.
type FrameOut struct {
	Status          string   `json:"status"`
	OriginalIndex   int      `json:"original_index"`
	InstructionAddr string   `json:"instruction_addr"`
	AddrMode        string   `json:"addr_mode,omitempty"`
	SymAddr         string   `json:"sym_addr,omitempty"`
	Function        string   `json:"function,omitempty"`
	Symbol          string   `json:"symbol,omitempty"`
	Package         string   `json:"package,omitempty"`
	AbsPath         string   `json:"abs_path,omitempty"`
	Filename        string   `json:"filename,omitempty"`
	Lineno          int      `json:"lineno,omitempty"`
	Colno           int      `json:"colno,omitempty"`
	PreContext      []string `json:"pre_context,omitempty"`
	ContextLine     *string  `json:"context_line,omitempty"`
	PostContext     []string `json:"post_context,omitempty"`
	// FramesOmitted, on the outermost frame kept of an input frame's
	// inlined calls, is how many more it has, left out past
	// symbolication.MaxFrameExpansion.
	FramesOmitted int `json:"frames_omitted,omitempty"`

	mod  *module // whose files resolved it
	path string  // the file's path as the debug information joins it, before cleanPath
}

// frameJSON bounds the bytes a FrameOut's JSON takes beside its strings:
// keys, punctuation and numbers at their longest.
const frameJSON = 320

// Features says what the debug files of a module hold.
type Features struct {
	HasDebugInfo  bool `json:"has_debug_info"`
	HasSymbols    bool `json:"has_symbols"`
	HasUnwindInfo bool `json:"has_unwind_info"`
	HasSources    bool `json:"has_sources"`
}

// Candidate is a stored debug file considered for a module.
type Candidate struct {
	ID         string   `json:"id"`
	ObjectName string   `json:"object_name"`
	DebugID    string   `json:"debug_id"`
	CodeID     *string  `json:"code_id"`
	FileFormat string   `json:"file_format"`
	Features   []string `json:"features"`
	SHA1       string   `json:"sha1"`
	// Status: "ok" (used), "malformed", "unsupported", "no_debug_info"
	// (it has none to read) or "unused" (another candidate served).
	Status string `json:"status"`
	Reason string `json:"reason,omitempty"`
}

// ModuleOut is a module of the answer, with its candidates.
type ModuleOut struct {
	Type        string      `json:"type"`
	CodeID      *string     `json:"code_id"`
	DebugID     *string     `json:"debug_id"`
	CodeFile    *string     `json:"code_file"`
	DebugFile   *string     `json:"debug_file"`
	ImageAddr   string      `json:"image_addr"`
	ImageSize   *uint64     `json:"image_size"`
	DebugStatus string      `json:"debug_status"`
	DebugReason string      `json:"debug_reason,omitempty"`
	Features    Features    `json:"features"`
	Candidates  []Candidate `json:"candidates"`
}

// StacktraceOut is a stack trace of the answer.
type StacktraceOut struct {
	Frames []FrameOut `json:"frames"`
}

// Response is the answer of a native resolution.
type Response struct {
	Status      string          `json:"status"`
	Stacktraces []StacktraceOut `json:"stacktraces"`
	Modules     []ModuleOut     `json:"modules"`
}

// module is a request's module as the resolution uses it.
type module struct {
	in            ModuleIn
	debugID       string // Sentry's form, "" when none
	codeID        string // lowercase, "" when none
	pkg           string // the package of its frames: CodeFile cut to symbolication.MaxNameBytes
	addr, vmaddr  uint64
	size          uint64 // 0: up to the next module
	res           *dif.Resolver
	resKey        string // the key the cache keeps res by (SHA-1, and debug id for a Mach-O)
	frameStatus   string // of frames in it that res does not answer
	out           *ModuleOut
	resolvedFiles []int64
	bundle        *store.ResolutionFile // a source bundle of the module
	// paths are the abs_path and filename of each file and unit
	// directory its frames name, cut, cleaned once for the request.
	paths map[[2]string][2]string
}

// Validate checks the request's modules, frames and options before any
// file is read: an *symbolication.InvalidError names the first value it
// does not take.
func (req *Request) Validate() error {
	mods, err := modules(req)
	if err != nil {
		return err
	}
	frames := 0
	for _, st := range req.Stacktraces {
		frames += len(st.Frames)
	}
	if frames > maxNativeFrames {
		return symbolication.Invalid(fmt.Sprintf("A request may carry at most %d frames", maxNativeFrames), "body", "stacktraces")
	}
	// Every frame's address and mode, before any file is read.
	for si, st := range req.Stacktraces {
		for i, f := range st.Frames {
			if err := checkFrame(f, len(mods), si, i); err != nil {
				return err
			}
		}
	}
	switch req.Options.FrameOrder {
	case "", "callee_first", "caller_first":
	default:
		return symbolication.Invalid("frame_order is callee_first or caller_first", "body", "options", "frame_order")
	}
	return nil
}

// Engine resolves native requests through the debug files the store
// holds, keeping the parsed ones in Cache.
type Engine struct {
	Store *store.Store
	Cache *symbolication.DebugFileCache
}

// Symbolicate answers req, a request of project sc that Validate took:
// each module's debug files found by debug id or code id among the
// project's, ranked, the first with debug information parsed (or found
// in the cache), and each frame resolved through it, inlined calls as
// frames of their own, with the source context of its line from the
// module's source bundle unless the request turns it off. The files read
// count as used for retention. A request whose parses would pass
// maxNativeParse bytes, or whose answer symbolication.MaxAnswerBytes, is a
// *symbolication.LimitError. The resolvers the
// request holds, found in the cache or parsed, are charged to its
// symbolication.Budget at what they hold (dif.Resolver.Size, decompressed
// sections included): a module whose resolver would take the request past
// it, and every module after it, is answered as beyond the budget
// (frames and candidate malformed), and no file is parsed after it.
func (e *Engine) Symbolicate(ctx context.Context, sc store.ProjectScope, req *Request) (*Response, error) {
	mods, err := modules(req)
	if err != nil {
		return nil, err
	}
	callerFirst := req.Options.FrameOrder == "caller_first"
	var debugIDs, codeIDs []string
	for _, m := range mods {
		if m.debugID != "" {
			debugIDs = append(debugIDs, m.debugID)
		}
		if m.codeID != "" {
			codeIDs = append(codeIDs, m.codeID)
		}
	}
	files, err := e.Store.ResolutionFiles(ctx, sc, debugIDs, codeIDs)
	if err != nil {
		return nil, err
	}
	parsed := int64(0)
	budget := symbolication.NewBudget(ctx, e.Cache.Bound())
	var used []int64
	for _, m := range mods {
		if err := e.resolveModule(ctx, m, files, &parsed, budget); err != nil {
			return nil, err
		}
		used = append(used, m.resolvedFiles...)
	}
	// Only now, membership checked by ResolutionFiles: the files read
	// count as used for retention.
	if err := e.Store.MarkResolutionFilesUsed(ctx, sc, used); err != nil {
		return nil, err
	}
	resp := Response{Status: "completed", Modules: make([]ModuleOut, len(mods))}
	for i, m := range mods {
		resp.Modules[i] = *m.out
	}
	// The DWARF units the frames fall in are parsed on first use: charged
	// to this request's Work, in the organization's parse slots, and
	// stopped when the client leaves.
	var org int64 // the project's organization: every file's
	if len(files) > 0 {
		org = files[0].OrgID
	}
	work := dif.NewWork(ctx, func() (func(), error) { return e.Cache.AcquireParse(ctx, org) })
	resp.Stacktraces = make([]StacktraceOut, len(req.Stacktraces))
	var ans symbolication.Answer
	if err := chargeModules(&ans, resp.Modules); err != nil {
		return nil, err
	}
	for si, st := range req.Stacktraces {
		out := []FrameOut{}
		for i, f := range st.Frames {
			if err := ctx.Err(); err != nil {
				return nil, err // the client left
			}
			crashing := i == 0
			if callerFirst {
				crashing = i == len(st.Frames)-1
			}
			fs, err := resolveFrame(ctx, work, mods, f, i, crashing, callerFirst, si, &ans)
			if err != nil {
				return nil, err
			}
			out = append(out, fs...)
		}
		resp.Stacktraces[si].Frames = out
	}
	// The resolvers parsed the units the frames fell in: the cache
	// counts what they hold now.
	for _, m := range mods {
		if m.res != nil {
			e.Cache.Recount(m.resKey)
		}
	}
	if req.Options.ApplySourceContext == nil || *req.Options.ApplySourceContext {
		bundles, err := e.applySourceContext(ctx, resp.Stacktraces)
		if err != nil {
			return nil, err
		}
		if err := chargeContext(&ans, resp.Stacktraces); err != nil {
			return nil, err
		}
		if err := e.Store.MarkResolutionFilesUsed(ctx, sc, bundles); err != nil {
			return nil, err
		}
	}
	return &resp, nil
}

// Bounds of the bytes a module's and a candidate's JSON take beside their
// strings: keys, punctuation, literals and numbers at their longest.
const (
	moduleJSON    = 320
	candidateJSON = 160
)

// chargeModules charges ans with the answer's modules and their
// candidates.
func chargeModules(ans *symbolication.Answer, mods []ModuleOut) error {
	str := func(s *string) string {
		if s == nil {
			return ""
		}
		return *s
	}
	for _, m := range mods {
		if err := ans.Charge(moduleJSON, m.Type, str(m.CodeID), str(m.DebugID), str(m.CodeFile), str(m.DebugFile),
			m.ImageAddr, m.DebugStatus, m.DebugReason); err != nil {
			return err
		}
		for _, c := range m.Candidates {
			if err := ans.Charge(candidateJSON+len(c.Features), c.ID, c.ObjectName, c.DebugID, str(c.CodeID), c.FileFormat,
				c.SHA1, c.Status, c.Reason); err != nil {
				return err
			}
			if err := ans.Charge(0, c.Features...); err != nil {
				return err
			}
		}
	}
	return nil
}

// chargeContext charges ans with the source context of the frames of sts.
func chargeContext(ans *symbolication.Answer, sts []StacktraceOut) error {
	for _, st := range sts {
		for i := range st.Frames {
			f := &st.Frames[i]
			if f.ContextLine == nil {
				continue
			}
			if err := ans.Charge(len(f.PreContext)+len(f.PostContext), *f.ContextLine); err != nil {
				return err
			}
			if err := ans.Charge(0, f.PreContext...); err != nil {
				return err
			}
			if err := ans.Charge(0, f.PostContext...); err != nil {
				return err
			}
		}
	}
	return nil
}
