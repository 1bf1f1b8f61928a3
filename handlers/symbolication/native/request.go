package native

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"errata/handlers/symbolication"
	"errata/worker/dif"
)

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

// modules checks the request's modules.
func modules(req *Request) ([]*module, error) {
	if len(req.Modules) > maxNativeModules {
		return nil, symbolication.Invalid(fmt.Sprintf("A request may carry at most %d modules", maxNativeModules), "body", "modules")
	}
	mods := make([]*module, len(req.Modules))
	for i, in := range req.Modules {
		m := &module{in: in, pkg: symbolication.CutName(in.CodeFile)}
		loc := func(f string) []any { return []any{"body", "modules", i, f} }
		switch in.Type {
		case "elf", "macho", "pe":
		default:
			return nil, symbolication.Invalid("type is elf, macho or pe", loc("type")...)
		}
		if in.DebugID != "" {
			id, ok := dif.CanonicalDebugID(in.DebugID)
			if !ok {
				return nil, symbolication.Invalid("Expected a debug id", loc("debug_id")...)
			}
			m.debugID = id
		}
		if in.CodeID != "" {
			m.codeID = strings.ToLower(in.CodeID)
		}
		var ok bool
		if m.addr, ok = parseAddr(in.ImageAddr); !ok || len(in.ImageAddr) == 0 {
			return nil, symbolication.Invalid("Expected an address", loc("image_addr")...)
		}
		if m.size, ok = parseAddr(in.ImageSize); !ok {
			return nil, symbolication.Invalid("Expected a size", loc("image_size")...)
		}
		if m.vmaddr, ok = parseAddr(in.ImageVmaddr); !ok {
			return nil, symbolication.Invalid("Expected an address", loc("image_vmaddr")...)
		}
		str := func(s string) *string {
			if s == "" {
				return nil
			}
			return &s
		}
		m.out = &ModuleOut{Type: in.Type, CodeID: str(m.codeID), DebugID: str(m.debugID),
			CodeFile: str(in.CodeFile), DebugFile: str(in.DebugFile), ImageAddr: hexAddr(m.addr), Candidates: []Candidate{}}
		if len(in.ImageSize) > 0 && string(in.ImageSize) != "null" {
			sz := m.size
			m.out.ImageSize = &sz
		}
		mods[i] = m
	}
	return mods, nil
}
