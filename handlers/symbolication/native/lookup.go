package native

import (
	"context"
	"errors"
	"io"
	"slices"
	"strconv"

	"errata/handlers/symbolication"
	"errata/store"
	"errata/worker/dif"
)

// resolveModule finds the module's debug files among files and reads the
// first that has debug information, its resolver charged to budget.
func (e *Engine) resolveModule(ctx context.Context, m *module, files []store.ResolutionFile, parsed *int64, budget *symbolication.Budget) error {
	cands := candidates(m, files)
	out := m.out
	out.DebugStatus, m.frameStatus = "missing", "missing"
	if len(cands) > 0 {
		m.frameStatus = "missing_symbol"
	}
	for _, f := range cands {
		if f.FileFormat == "sourcebundle" && m.bundle == nil {
			m.bundle = &f
		}
		c := Candidate{ID: strconv.FormatInt(f.ID, 10), ObjectName: f.ObjectName, DebugID: f.DebugID, CodeID: f.CodeID,
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
		case budget.Left() <= 0:
			c.Status, c.Reason = "malformed", beyondBudget
			if out.DebugStatus == "missing" {
				out.DebugStatus, out.DebugReason = "malformed", beyondBudget
				m.frameStatus = "malformed"
			}
		default:
			// A fat Mach-O is one file for several debug ids: each
			// architecture is parsed and kept on its own.
			key := f.Checksum
			if f.FileFormat == "macho" {
				key += "/" + f.DebugID
			}
			res, _, err := e.Cache.Get(ctx, f.OrgID, key, func() (*dif.Resolver, error) {
				if *parsed+f.Size > maxNativeParse {
					return nil, errParseBudget
				}
				*parsed += f.Size
				fr, err := e.Store.OpenFile(ctx, f.OrgID, f.FileID)
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
			if err == nil && budget.Charge(res.Size()+symbolication.EntryOverhead) != nil {
				// The request holds no more: neither this resolver nor
				// any parsed after it.
				budget.SpendAll()
				res, err = nil, errors.New(beyondBudget)
			}
			var ue *dif.UnsupportedError
			switch {
			case err == nil:
				c.Status = "ok"
				m.res, m.resKey = res, key
				m.resolvedFiles = append(m.resolvedFiles, f.ID)
				out.DebugStatus, out.Features.HasDebugInfo = "found", true
			case errors.Is(err, symbolication.ErrBudget):
				return err
			case ctx.Err() != nil || errors.Is(err, store.ErrUnavailable):
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

// candidates returns the files, newest first, that are m's by debug id or
// code id, ranked: DWARF first (it has columns and inlined calls), then
// PDB, then the DWARF a PE image may hold, then Breakpad and the others;
// newest first in each.
func candidates(m *module, files []store.ResolutionFile) []store.ResolutionFile {
	var cands []store.ResolutionFile
	for _, f := range files {
		if m.debugID != "" && dif.SameDebugID(f.DebugID, m.debugID) || m.codeID != "" && f.CodeID != nil && *f.CodeID == m.codeID {
			cands = append(cands, f)
		}
	}
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
	return cands
}

// beyondBudget is the reason of a module's file whose resolver would
// take the request past its budget of held bytes.
const beyondBudget = "the request's budget of parsed files is spent"

// errParseBudget stops a request that would parse more than
// maxNativeParse bytes.
var errParseBudget error = &symbolication.LimitError{Limit: symbolication.ParseBytes, Max: maxNativeParse}
