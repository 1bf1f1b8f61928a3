package handlers

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"path"
	"slices"
	"strconv"
	"strings"

	"errata/handlers/symbolication"
	"errata/store"
	"errata/worker/dif"
)

// Limits of one native resolution (SYMBOLS.md §8, §9).
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

// nativeRequest is the body of POST .../symbolicate/, in snake_case as
// symbolicator writes it.
type nativeRequest struct {
	Modules     []nativeModuleIn `json:"modules"`
	Stacktraces []struct {
		Frames []nativeFrameIn `json:"frames"`
	} `json:"stacktraces"`
	Options struct {
		ApplySourceContext *bool  `json:"apply_source_context"`
		FrameOrder         string `json:"frame_order"`
	} `json:"options"`
}

type nativeModuleIn struct {
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

type nativeFrameIn struct {
	InstructionAddr       json.RawMessage `json:"instruction_addr"`
	AddrMode              string          `json:"addr_mode"`
	AdjustInstructionAddr *bool           `json:"adjust_instruction_addr"`
}

// nativeFrameOut is one frame of the answer.
type nativeFrameOut struct {
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

	mod *nativeModule // whose files resolved it
}

type nativeFeatures struct {
	HasDebugInfo  bool `json:"has_debug_info"`
	HasSymbols    bool `json:"has_symbols"`
	HasUnwindInfo bool `json:"has_unwind_info"`
	HasSources    bool `json:"has_sources"`
}

// nativeCandidate is a stored debug file considered for a module.
type nativeCandidate struct {
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

type nativeModuleOut struct {
	Type        string            `json:"type"`
	CodeID      *string           `json:"code_id"`
	DebugID     *string           `json:"debug_id"`
	CodeFile    *string           `json:"code_file"`
	DebugFile   *string           `json:"debug_file"`
	ImageAddr   string            `json:"image_addr"`
	ImageSize   *uint64           `json:"image_size"`
	DebugStatus string            `json:"debug_status"`
	DebugReason string            `json:"debug_reason,omitempty"`
	Features    nativeFeatures    `json:"features"`
	Candidates  []nativeCandidate `json:"candidates"`
}

type nativeResponse struct {
	Status      string `json:"status"`
	Stacktraces []struct {
		Frames []nativeFrameOut `json:"frames"`
	} `json:"stacktraces"`
	Modules []nativeModuleOut `json:"modules"`
}

// nativeModule is a request's module as the resolution uses it.
type nativeModule struct {
	in            nativeModuleIn
	debugID       string // Sentry's form, "" when none
	codeID        string // lowercase, "" when none
	addr, vmaddr  uint64
	size          uint64 // 0: up to the next module
	res           *dif.Resolver
	resKey        string // the key the cache keeps res by (SHA-1, and debug id for a Mach-O)
	frameStatus   string // of frames in it that res does not answer
	out           *nativeModuleOut
	resolvedFiles []int64
	bundle        *store.ResolutionFile // a source bundle of the module
}

// handleSymbolicate serves POST /api/0/projects/{org}/{project}/symbolicate/:
// native stack traces resolved from the project's debug files.
func handleSymbolicate(d Deps) apiFunc {
	cache := d.DebugFileCache
	if cache == nil {
		cache = symbolication.NewDebugFileCache(symbolication.DefaultDebugFileCacheBytes)
	}
	return func(w http.ResponseWriter, r *http.Request) error {
		sc, err := projectScope(r)
		if err != nil {
			return err
		}
		var req nativeRequest
		if err := decodeSnakeJSON(w, r, &req); err != nil {
			return err
		}
		mods, err := nativeModules(req)
		if err != nil {
			return err
		}
		frames := 0
		for _, st := range req.Stacktraces {
			frames += len(st.Frames)
		}
		if frames > maxNativeFrames {
			return invalid(valueErr, fmt.Sprintf("A request may carry at most %d frames", maxNativeFrames), "body", "stacktraces")
		}
		// Every frame's address and mode, before any file is read.
		for si, st := range req.Stacktraces {
			for i, f := range st.Frames {
				if err := checkFrame(f, len(mods), si, i); err != nil {
					return err
				}
			}
		}
		callerFirst := false
		switch req.Options.FrameOrder {
		case "", "callee_first":
		case "caller_first":
			callerFirst = true
		default:
			return invalid(valueErr, "frame_order is callee_first or caller_first", "body", "options", "frame_order")
		}
		var debugIDs, codeIDs []string
		for _, m := range mods {
			if m.debugID != "" {
				debugIDs = append(debugIDs, m.debugID)
			}
			if m.codeID != "" {
				codeIDs = append(codeIDs, m.codeID)
			}
		}
		files, err := d.Store.ResolutionFiles(r.Context(), sc, debugIDs, codeIDs)
		if err != nil {
			return err
		}
		parsed := int64(0)
		var used []int64
		for _, m := range mods {
			if err := resolveModule(r, cache, d.Store, m, files, &parsed); err != nil {
				return err
			}
			used = append(used, m.resolvedFiles...)
		}
		// Only now, membership checked by ResolutionFiles: the files read
		// count as used for retention.
		if err := d.Store.MarkResolutionFilesUsed(r.Context(), sc, used); err != nil {
			return err
		}
		resp := nativeResponse{Status: "completed", Modules: make([]nativeModuleOut, len(mods))}
		for i, m := range mods {
			resp.Modules[i] = *m.out
		}
		resp.Stacktraces = make([]struct {
			Frames []nativeFrameOut `json:"frames"`
		}, len(req.Stacktraces))
		for si, st := range req.Stacktraces {
			out := []nativeFrameOut{}
			for i, f := range st.Frames {
				crashing := i == 0
				if callerFirst {
					crashing = i == len(st.Frames)-1
				}
				fs, err := resolveFrame(mods, f, i, crashing, callerFirst, si)
				if err != nil {
					return err
				}
				out = append(out, fs...)
			}
			resp.Stacktraces[si].Frames = out
		}
		// The resolvers parsed the units the frames fell in: the cache
		// counts what they hold now.
		for _, m := range mods {
			if m.res != nil {
				cache.Recount(m.resKey)
			}
		}
		if req.Options.ApplySourceContext == nil || *req.Options.ApplySourceContext {
			bundles, err := applySourceContext(r, d.Store, resp.Stacktraces)
			if err != nil {
				return err
			}
			if err := d.Store.MarkResolutionFilesUsed(r.Context(), sc, bundles); err != nil {
				return err
			}
		}
		writeJSON(w, r, d.Log, http.StatusOK, resp)
		return nil
	}
}

// parseAddr reads an address: a hex string ("0x..."), a decimal string or
// a JSON number. ok is false for anything else; an absent value is 0.
func parseAddr(raw json.RawMessage) (uint64, bool) {
	if len(raw) == 0 || string(raw) == "null" {
		return 0, true
	}
	var s string
	if raw[0] == '"' {
		if json.Unmarshal(raw, &s) != nil {
			return 0, false
		}
		if h, ok := strings.CutPrefix(strings.ToLower(s), "0x"); ok {
			v, err := strconv.ParseUint(h, 16, 64)
			return v, err == nil
		}
	} else {
		s = string(raw)
	}
	v, err := strconv.ParseUint(s, 10, 64)
	return v, err == nil
}

func hexAddr(v uint64) string { return "0x" + strconv.FormatUint(v, 16) }

// nativeModules checks the request's modules.
func nativeModules(req nativeRequest) ([]*nativeModule, error) {
	if len(req.Modules) > maxNativeModules {
		return nil, invalid(valueErr, fmt.Sprintf("A request may carry at most %d modules", maxNativeModules), "body", "modules")
	}
	mods := make([]*nativeModule, len(req.Modules))
	for i, in := range req.Modules {
		m := &nativeModule{in: in}
		loc := func(f string) []any { return []any{"body", "modules", i, f} }
		switch in.Type {
		case "elf", "macho", "pe":
		default:
			return nil, invalid(valueErr, "type is elf, macho or pe", loc("type")...)
		}
		if in.DebugID != "" {
			id, ok := dif.CanonicalDebugID(in.DebugID)
			if !ok {
				return nil, invalid(valueErr, "Expected a debug id", loc("debug_id")...)
			}
			m.debugID = id
		}
		if in.CodeID != "" {
			m.codeID = strings.ToLower(in.CodeID)
		}
		var ok bool
		if m.addr, ok = parseAddr(in.ImageAddr); !ok || len(in.ImageAddr) == 0 {
			return nil, invalid(valueErr, "Expected an address", loc("image_addr")...)
		}
		if m.size, ok = parseAddr(in.ImageSize); !ok {
			return nil, invalid(valueErr, "Expected a size", loc("image_size")...)
		}
		if m.vmaddr, ok = parseAddr(in.ImageVmaddr); !ok {
			return nil, invalid(valueErr, "Expected an address", loc("image_vmaddr")...)
		}
		str := func(s string) *string {
			if s == "" {
				return nil
			}
			return &s
		}
		m.out = &nativeModuleOut{Type: in.Type, CodeID: str(m.codeID), DebugID: str(m.debugID),
			CodeFile: str(in.CodeFile), DebugFile: str(in.DebugFile), ImageAddr: hexAddr(m.addr), Candidates: []nativeCandidate{}}
		if len(in.ImageSize) > 0 && string(in.ImageSize) != "null" {
			sz := m.size
			m.out.ImageSize = &sz
		}
		mods[i] = m
	}
	return mods, nil
}

// resolveModule finds the module's debug files among files and reads the
// first that has debug information.
func resolveModule(r *http.Request, cache *symbolication.DebugFileCache, st *store.Store, m *nativeModule, files []store.ResolutionFile, parsed *int64) error {
	var cands []store.ResolutionFile
	for _, f := range files {
		if m.debugID != "" && dif.SameDebugID(f.DebugID, m.debugID) || m.codeID != "" && f.CodeID != nil && *f.CodeID == m.codeID {
			cands = append(cands, f)
		}
	}
	// DWARF first (it has columns and inlined calls), then PDB, then the
	// DWARF a PE image may hold, then Breakpad; newest first in each.
	rank := func(f store.ResolutionFile) int {
		switch f.FileFormat {
		case "elf", "macho":
			return 0
		case "pdb":
			return 1
		case "pe":
			return 2
		}
		return 3
	}
	slices.SortStableFunc(cands, func(a, b store.ResolutionFile) int { return rank(a) - rank(b) })
	out := m.out
	out.DebugStatus, m.frameStatus = "missing", "missing"
	if len(cands) > 0 {
		m.frameStatus = "missing_symbol"
	}
	for _, f := range cands {
		if f.FileFormat == "sourcebundle" && m.bundle == nil {
			m.bundle = &f
		}
		c := nativeCandidate{ID: strconv.FormatInt(f.ID, 10), ObjectName: f.ObjectName, DebugID: f.DebugID, CodeID: f.CodeID,
			FileFormat: f.FileFormat, Features: f.Features, SHA1: f.Checksum, Status: "unused"}
		has := func(feature string) bool { return slices.Contains(f.Features, feature) }
		out.Features.HasSymbols = out.Features.HasSymbols || has("symtab")
		out.Features.HasUnwindInfo = out.Features.HasUnwindInfo || has("unwind")
		out.Features.HasSources = out.Features.HasSources || has("sources")
		switch {
		case !((f.FileFormat == "elf" || f.FileFormat == "macho") && has("debug") || f.FileFormat == "pdb" || f.FileFormat == "pe" ||
			f.FileFormat == "breakpad" && (has("debug") || has("symtab"))):
			c.Status = "no_debug_info"
		case m.res != nil:
		case f.Size > maxNativeFileSize:
			c.Status, c.Reason = "malformed", "the file is larger than the resolver reads"
		default:
			// A fat Mach-O is one file for several debug ids: each
			// architecture is parsed and kept on its own.
			key := f.Checksum
			if f.FileFormat == "macho" {
				key += "/" + f.DebugID
			}
			res, _, err := cache.Get(r.Context(), f.OrgID, key, func() (*dif.Resolver, error) {
				if *parsed+f.Size > maxNativeParse {
					return nil, errParseBudget
				}
				*parsed += f.Size
				fr, err := st.OpenFile(r.Context(), f.OrgID, f.FileID)
				if err != nil {
					return nil, err
				}
				switch f.FileFormat {
				case "breakpad":
					return dif.ReadBreakpadSymbols(io.NewSectionReader(fr, 0, fr.Size()))
				case "macho":
					return dif.ReadMachODWARFFor(fr, fr.Size(), f.DebugID)
				case "pdb":
					return dif.ReadPDBSymbols(fr, fr.Size())
				case "pe":
					return dif.ReadPEDWARF(fr, fr.Size())
				}
				return dif.ReadELFDWARF(fr, fr.Size())
			})
			var ue *dif.UnsupportedError
			switch {
			case err == nil:
				c.Status = "ok"
				m.res, m.resKey = res, key
				m.resolvedFiles = append(m.resolvedFiles, f.ID)
				out.DebugStatus, out.Features.HasDebugInfo = "found", true
			case errors.Is(err, errParseBudget):
				return invalid(valueErr, fmt.Sprintf("The request would parse more than %d bytes of debug files", maxNativeParse), "body", "modules")
			case r.Context().Err() != nil || errors.Is(err, store.ErrUnavailable):
				return err
			case errors.As(err, &ue):
				c.Status, c.Reason = "unsupported", ue.Reason
				m.resolvedFiles = append(m.resolvedFiles, f.ID)
				if out.DebugStatus == "missing" {
					out.DebugStatus, out.DebugReason = "unsupported", ue.Reason
				}
			case errors.Is(err, dif.ErrNoDWARF):
				c.Status = "no_debug_info"
			case errors.Is(err, store.ErrNotFound):
				continue // deleted while this request resolved: no longer a candidate
			default:
				c.Status, c.Reason = "malformed", err.Error()
				m.resolvedFiles = append(m.resolvedFiles, f.ID)
				if out.DebugStatus == "missing" {
					out.DebugStatus, out.DebugReason = "malformed", err.Error()
					m.frameStatus = "malformed"
				}
			}
		}
		out.Candidates = append(out.Candidates, c)
	}
	if m.res != nil {
		out.DebugReason = ""
	}
	return nil
}

// errParseBudget stops a request that would parse more than
// maxNativeParse bytes.
var errParseBudget error = &symbolication.LimitError{Limit: symbolication.ParseBytes, Max: maxNativeParse}

// checkFrame checks the address and the addr_mode of frame i of stack
// trace si, for a request of nmods modules.
func checkFrame(f nativeFrameIn, nmods, si, i int) error {
	if _, ok := parseAddr(f.InstructionAddr); !ok || len(f.InstructionAddr) == 0 {
		return invalid(valueErr, "Expected an address", "body", "stacktraces", si, "frames", i, "instruction_addr")
	}
	switch {
	case f.AddrMode == "" || f.AddrMode == "abs":
	case strings.HasPrefix(f.AddrMode, "rel:"):
		n, err := strconv.Atoi(f.AddrMode[len("rel:"):])
		if err != nil || n < 0 || n >= nmods {
			return invalid(valueErr, "addr_mode is abs or rel:N with N a module's index", "body", "stacktraces", si, "frames", i, "addr_mode")
		}
	default:
		return invalid(valueErr, "addr_mode is abs or rel:N", "body", "stacktraces", si, "frames", i, "addr_mode")
	}
	return nil
}

// resolveFrame answers the frame f (index i of stack trace si): one frame,
// or several for inlined calls, in the request's order.
func resolveFrame(mods []*nativeModule, f nativeFrameIn, i int, crashing, callerFirst bool, si int) ([]nativeFrameOut, error) {
	addr, ok := parseAddr(f.InstructionAddr)
	if !ok || len(f.InstructionAddr) == 0 {
		return nil, invalid(valueErr, "Expected an address", "body", "stacktraces", si, "frames", i, "instruction_addr")
	}
	out := nativeFrameOut{OriginalIndex: i, InstructionAddr: hexAddr(addr), AddrMode: f.AddrMode}
	var m *nativeModule
	var rel uint64
	switch {
	case f.AddrMode == "" || f.AddrMode == "abs":
		out.AddrMode = ""
		for _, c := range mods {
			if addr >= c.addr && (c.size == 0 || addr-c.addr < c.size) && (m == nil || c.addr > m.addr) {
				m = c
			}
		}
		if m != nil {
			rel = addr - m.addr + m.vmaddr
		}
	case strings.HasPrefix(f.AddrMode, "rel:"):
		n, err := strconv.Atoi(f.AddrMode[len("rel:"):])
		if err != nil || n < 0 || n >= len(mods) {
			return nil, invalid(valueErr, "addr_mode is abs or rel:N with N a module's index", "body", "stacktraces", si, "frames", i, "addr_mode")
		}
		m = mods[n]
		rel = addr + m.vmaddr
	default:
		return nil, invalid(valueErr, "addr_mode is abs or rel:N", "body", "stacktraces", si, "frames", i, "addr_mode")
	}
	if m == nil {
		out.Status = "unknown_image"
		return []nativeFrameOut{out}, nil
	}
	out.Package = m.in.CodeFile
	if m.res == nil {
		out.Status = m.frameStatus
		return []nativeFrameOut{out}, nil
	}
	lookup := rel
	if !crashing && (f.AdjustInstructionAddr == nil || *f.AdjustInstructionAddr) && lookup > 0 {
		lookup-- // a return address: the call is the byte before
	}
	frames, ok, err := m.res.Resolve(lookup)
	if err != nil {
		out.Status = "malformed" // the part of the file that holds it cannot be read
		return []nativeFrameOut{out}, nil
	}
	if !ok {
		out.Status = "missing_symbol"
		return []nativeFrameOut{out}, nil
	}
	res := make([]nativeFrameOut, len(frames))
	for k, fr := range frames {
		o := out
		o.Status, o.mod = "symbolicated", m
		o.Function, o.Symbol = fr.Function, fr.Symbol
		if fr.Function != "" || fr.Symbol != "" {
			if out.AddrMode == "" {
				o.SymAddr = hexAddr(fr.SymAddr - m.vmaddr + m.addr)
			} else {
				o.SymAddr = hexAddr(fr.SymAddr - m.vmaddr)
			}
		}
		o.AbsPath, o.Lineno, o.Colno = fr.File, fr.Line, fr.Column
		o.Filename = fr.File
		if fr.CompDir != "" {
			if rest, ok := strings.CutPrefix(fr.File, strings.TrimSuffix(fr.CompDir, "/")+"/"); ok {
				o.Filename = rest
			}
		}
		res[k] = o
	}
	if callerFirst {
		slices.Reverse(res)
	}
	return res, nil
}

// maxSourceContext bounds the bytes of sources one request reads from
// source bundles for context.
const maxSourceContext = 32 << 20

// applySourceContext fills the source context of the symbolicated frames
// whose module has a source bundle holding their file, and returns the
// bundles it read.
func applySourceContext(r *http.Request, st *store.Store, sts []struct {
	Frames []nativeFrameOut `json:"frames"`
}) ([]int64, error) {
	paths := map[*nativeModule][]string{}
	for _, s := range sts {
		for _, f := range s.Frames {
			if f.mod == nil || f.mod.bundle == nil || f.AbsPath == "" || f.Lineno < 1 {
				continue
			}
			// sentry-cli names the file by its clean path (no "./").
			for _, p := range []string{f.AbsPath, path.Clean(f.AbsPath)} {
				if !slices.Contains(paths[f.mod], p) {
					paths[f.mod] = append(paths[f.mod], p)
				}
			}
		}
	}
	budget := int64(maxSourceContext)
	var used []int64
	sources := map[*nativeModule]map[string]sourceText{}
	for m, ps := range paths {
		fr, err := st.OpenFile(r.Context(), m.bundle.OrgID, m.bundle.FileID)
		if err != nil {
			return nil, err
		}
		files, err := dif.SourceBundleFiles(fr, fr.Size(), ps, budget)
		if err != nil {
			if r.Context().Err() != nil || errors.Is(err, store.ErrUnavailable) {
				return nil, err
			}
			continue // a damaged bundle gives no context
		}
		used = append(used, m.bundle.ID)
		texts := map[string]sourceText{}
		for p, b := range files {
			budget -= int64(len(b))
			texts[p] = newSourceText(string(b))
		}
		sources[m] = texts
	}
	for _, s := range sts {
		for i := range s.Frames {
			f := &s.Frames[i]
			text, ok := sources[f.mod][f.AbsPath]
			if !ok {
				text = sources[f.mod][path.Clean(f.AbsPath)]
			}
			if f.mod == nil || f.Lineno < 1 {
				continue
			}
			if pre, line, post := text.context(f.Lineno-1, max(f.Colno-1, 0)); line != nil {
				f.PreContext, f.ContextLine, f.PostContext = pre, line, post
			}
		}
	}
	return used, nil
}

// sourceText is a source bundle's file with where each of its lines
// starts, so that the context of each frame is read from its own lines.
type sourceText struct {
	text   string
	starts []int
}

func newSourceText(text string) sourceText {
	starts := []int{0}
	for i := 0; i < len(text); i++ {
		if text[i] == '\n' {
			starts = append(starts, i+1)
		}
	}
	return sourceText{text: text, starts: starts}
}

// context is symbolication.Context of line (0-based) of the file, read
// from the first line it shows.
func (s sourceText) context(line, column int) (pre []string, ctx *string, post []string) {
	first := max(line-symbolication.ContextLines, 0)
	if first >= len(s.starts) {
		return nil, nil, nil
	}
	return symbolication.Context(s.text[s.starts[first]:], line-first, column, symbolication.StartsEmptyLine)
}
