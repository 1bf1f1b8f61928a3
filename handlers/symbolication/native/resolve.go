package native

import (
	"context"
	"slices"
	"strconv"
	"strings"

	"errata/handlers/symbolication"
	"errata/worker/dif"
)

// checkFrame checks the address and the addr_mode of frame i of stack
// trace si, for a request of nmods modules.
func checkFrame(f FrameIn, nmods, si, i int) error {
	if _, ok := parseAddr(f.InstructionAddr); !ok || len(f.InstructionAddr) == 0 {
		return symbolication.Invalid("Expected an address", "body", "stacktraces", si, "frames", i, "instruction_addr")
	}
	switch {
	case f.AddrMode == "" || f.AddrMode == "abs":
	case strings.HasPrefix(f.AddrMode, "rel:"):
		n, err := strconv.Atoi(f.AddrMode[len("rel:"):])
		if err != nil || n < 0 || n >= nmods {
			return symbolication.Invalid("addr_mode is abs or rel:N with N a module's index", "body", "stacktraces", si, "frames", i, "addr_mode")
		}
	default:
		return symbolication.Invalid("addr_mode is abs or rel:N", "body", "stacktraces", si, "frames", i, "addr_mode")
	}
	return nil
}

// resolveFrame answers the frame f (index i of stack trace si): one frame,
// or several for inlined calls (at most symbolication.MaxFrameExpansion,
// the innermost), in the request's order, its names cut to
// symbolication.MaxNameBytes, each charged to ans. The DWARF units it
// parses are charged to work; once the request's context is done it
// returns the context's error.
func resolveFrame(ctx context.Context, work *dif.Work, mods []*module, f FrameIn, i int, crashing, callerFirst bool, si int, ans *symbolication.Answer) ([]FrameOut, error) {
	res, err := resolveAddr(ctx, work, mods, f, i, crashing, si)
	if err != nil {
		return nil, err
	}
	for k := range res {
		o := &res[k]
		if err := ans.Charge(frameJSON, o.Status, o.InstructionAddr, o.AddrMode, o.SymAddr, o.Function, o.Symbol,
			o.Package, o.AbsPath, o.Filename); err != nil {
			return nil, err
		}
	}
	if callerFirst {
		slices.Reverse(res)
	}
	return res, nil
}

// resolveAddr answers the frame f as resolveFrame does, innermost first.
func resolveAddr(ctx context.Context, work *dif.Work, mods []*module, f FrameIn, i int, crashing bool, si int) ([]FrameOut, error) {
	addr, ok := parseAddr(f.InstructionAddr)
	if !ok || len(f.InstructionAddr) == 0 {
		return nil, symbolication.Invalid("Expected an address", "body", "stacktraces", si, "frames", i, "instruction_addr")
	}
	out := FrameOut{OriginalIndex: i, InstructionAddr: hexAddr(addr), AddrMode: f.AddrMode}
	var m *module
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
			return nil, symbolication.Invalid("addr_mode is abs or rel:N with N a module's index", "body", "stacktraces", si, "frames", i, "addr_mode")
		}
		m = mods[n]
		rel = addr + m.vmaddr
	default:
		return nil, symbolication.Invalid("addr_mode is abs or rel:N", "body", "stacktraces", si, "frames", i, "addr_mode")
	}
	if m == nil {
		out.Status = "unknown_image"
		return []FrameOut{out}, nil
	}
	out.Package = m.pkg
	if m.res == nil {
		out.Status = m.frameStatus
		return []FrameOut{out}, nil
	}
	lookup := rel
	if !crashing && (f.AdjustInstructionAddr == nil || *f.AdjustInstructionAddr) && lookup > 0 {
		lookup-- // a return address: the call is the byte before
	}
	frames, ok, err := m.res.ResolveWork(work, lookup)
	if err != nil && ctx.Err() != nil {
		return nil, ctx.Err() // the client left
	}
	if err != nil {
		out.Status = "malformed" // the part of the file that holds it cannot be read
		return []FrameOut{out}, nil
	}
	if !ok {
		out.Status = "missing_symbol"
		return []FrameOut{out}, nil
	}
	kept, omitted := symbolication.Expansion(len(frames))
	res := make([]FrameOut, kept)
	for k, fr := range frames[:kept] {
		o := out
		o.Status, o.mod = "symbolicated", m
		o.Function, o.Symbol = symbolication.CutName(fr.Function), symbolication.CutName(fr.Symbol)
		if fr.Function != "" || fr.Symbol != "" {
			if out.AddrMode == "" {
				o.SymAddr = hexAddr(fr.SymAddr - m.vmaddr + m.addr)
			} else {
				o.SymAddr = hexAddr(fr.SymAddr - m.vmaddr)
			}
		}
		o.Lineno, o.Colno = fr.Line, fr.Column
		p := m.framePaths(fr.File, fr.CompDir)
		o.AbsPath, o.Filename, o.path = p[0], p[1], fr.File
		res[k] = o
	}
	if kept > 0 {
		res[kept-1].FramesOmitted = omitted
	}
	return res, nil
}

// framePaths are the abs_path and the filename of a frame of m in file
// of a unit whose directory is compDir, cut to symbolication.MaxNameBytes:
// cleaned once for the frames of a request that name them.
func (m *module) framePaths(file, compDir string) [2]string {
	key := [2]string{file, compDir}
	if p, ok := m.paths[key]; ok {
		return p
	}
	abs := cleanPath(file)
	filename := abs
	if compDir != "" {
		if rest, ok := strings.CutPrefix(abs, strings.TrimSuffix(cleanPath(compDir), "/")+"/"); ok {
			filename = rest
		}
	}
	p := [2]string{symbolication.CutName(abs), symbolication.CutName(filename)}
	if m.paths == nil {
		m.paths = map[[2]string][2]string{}
	}
	m.paths[key] = p
	return p
}
