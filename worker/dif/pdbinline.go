package dif

import (
	"bytes"
	"encoding/binary"
	"errors"
)

// pdbAnnotations appends to out the ranges that an inlined call's binary
// annotations describe, as Microsoft's cvinfo.h defines them: each of
// CodeOffset, ChangeCodeOffset, ChangeCodeOffsetAndLineOffset and
// ChangeCodeLengthAndCodeOffset starts a range at the code offset (from
// the procedure's start) with the line offset and file the annotations
// have reached; a range ends where the next starts or where a code length
// says. A range whose end is never said is dropped, as llvm-symbolizer
// drops it. Every annotation takes a byte at least: the ranges are at most
// the bytes of ann.
func pdbAnnotations(ann []byte, out []pdbRange) []pdbRange {
	// operand reads a compressed unsigned number: 1, 2 or 4 bytes by its
	// high bits.
	operand := func() (uint32, bool) {
		switch b := ann; {
		case len(b) >= 1 && b[0]&0x80 == 0:
			ann = b[1:]
			return uint32(b[0]), true
		case len(b) >= 2 && b[0]&0xc0 == 0x80:
			ann = b[2:]
			return uint32(b[0]&0x3f)<<8 | uint32(b[1]), true
		case len(b) >= 4 && b[0]&0xe0 == 0xc0:
			ann = b[4:]
			return uint32(b[0]&0x1f)<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3]), true
		}
		return 0, false
	}
	signed := func(v uint32) int32 {
		if v&1 != 0 {
			return -int32(v >> 1)
		}
		return int32(v >> 1)
	}
	first := len(out)
	var code, file uint32
	var line int32
	open := -1 // the range whose end is not known yet
	end := func(at uint32) {
		if open >= 0 {
			out[open].hi = at
			open = -1
		}
	}
	start := func() {
		end(code)
		out = append(out, pdbRange{lo: code, lineOff: line, fileOff: file})
		open = len(out) - 1
	}
read:
	for {
		op, ok := operand()
		if !ok || op == 0 { // the end, or padding
			break
		}
		v, ok := operand()
		if !ok {
			break
		}
		switch op {
		case 1: // CodeOffset
			code = v
			start()
		case 3: // ChangeCodeOffset
			code += v
			start()
		case 4: // ChangeCodeLength
			code += v
			end(code)
		case 5: // ChangeFile
			file = v
		case 6: // ChangeLineOffset
			line += signed(v)
		case 11: // ChangeCodeOffsetAndLineOffset: code delta in the low 4 bits
			code += v & 0xf
			line += signed(v >> 4)
			start()
		case 12: // ChangeCodeLengthAndCodeOffset: the length, then the offset
			off, ok := operand()
			if !ok {
				break read
			}
			code += off
			start()
			end(code + v)
		case 2, 7, 8, 9, 10, 13: // code offset base, line end, range kind, columns
		default:
			break read
		}
	}
	// Keep the ranges with an end after their start.
	kept := out[:first]
	for _, r := range out[first:] {
		if r.hi > r.lo {
			kept = append(kept, r)
		}
	}
	return kept
}

// resolveInlinees gives the ranges of a module's inlined calls their
// lines and files: the inlinee's declaration line (DEBUG_S_INLINEELINES
// of the module's C13 subsections c13s) plus the annotations' line offset,
// in the annotations' file or else the inlinee's. A call whose inlinee the
// module has no entry for is marked noLines. Only the entries of inlinees
// the module's calls name are kept while reading.
func resolveInlinees(procs []pdbProc, c13s []byte, fileName func(uint32) string, spend func(int) error) error {
	type decl struct {
		line, file uint32
		found      bool
	}
	want := map[uint32]decl{}
	for i := range procs {
		for _, s := range procs[i].sites {
			want[s.inlinee] = decl{}
		}
	}
	if len(want) == 0 {
		return nil
	}
	le := binary.LittleEndian
	for pos := 0; pos+8 <= len(c13s); {
		kind, n := le.Uint32(c13s[pos:]), uint64(le.Uint32(c13s[pos+4:]))
		if n > uint64(len(c13s)-pos-8) {
			break
		}
		body := c13s[pos+8 : pos+8+int(n)]
		pos += (8 + int(n) + 3) &^ 3
		if kind != 0xf6 || len(body) < 4 { // DEBUG_S_INLINEELINES
			continue
		}
		extra := le.Uint32(body) == 1 // CV_INLINEE_SOURCE_LINE_SIGNATURE_EX: extra files follow
		for d := body[4:]; len(d) >= 12; {
			ti, file, line := le.Uint32(d), le.Uint32(d[4:]), le.Uint32(d[8:])
			d = d[12:]
			if extra {
				if len(d) < 4 || uint64(le.Uint32(d)) > uint64(len(d)-4)/4 {
					break
				}
				d = d[4+4*int(le.Uint32(d)):]
			}
			if e, ok := want[ti]; ok && !e.found {
				want[ti] = decl{line: line, file: file, found: true}
			}
		}
	}
	files := map[uint32]string{} // one string a file
	for i := range procs {
		for k := range procs[i].sites {
			s := &procs[i].sites[k]
			d := want[s.inlinee]
			if !d.found {
				s.noLines = true
				continue
			}
			for j := range s.ranges {
				r := &s.ranges[j]
				// As llvm-symbolizer adds them: 32 bits, a line of 24.
				r.line = (d.line + uint32(r.lineOff)) & 0xffffff
				off := r.fileOff
				if off == 0 {
					off = d.file
				}
				f, ok := files[off]
				if !ok {
					f = fileName(off)
					if err := spend(48 + len(f)); err != nil {
						return err
					}
					files[off] = f
				}
				r.file = f
			}
		}
	}
	return nil
}

// nameInlinees names the inlined calls of idx as llvm-symbolizer names
// them: the IPI stream's LF_FUNC_ID name after its parent scope's
// LF_STRING_ID and "::", or its LF_MFUNC_ID name after its class's name in
// the TPI stream and "::". Only the records of inlinees that calls name
// are kept while reading. An IPI or TPI stream that is missing or damaged
// leaves names out; one beyond the budget is ErrBudget.
func (p *pdbReader) nameInlinees(idx *pdbIndex, spend func(int) error) error {
	type parts struct {
		name         string
		scope, class uint32
	}
	want := map[uint32]parts{}
	for i := range idx.procs {
		for _, s := range idx.procs[i].sites {
			want[s.inlinee] = parts{}
		}
	}
	if len(want) == 0 {
		return nil
	}
	stream := func(i uint64) ([]byte, error) {
		s, err := p.stream(i)
		if errors.Is(err, ErrBudget) {
			return nil, err
		}
		return s, nil
	}
	ipi, err := stream(4)
	if err != nil {
		return err
	}
	le := binary.LittleEndian
	scopes, classes := map[uint32]string{}, map[uint32]string{}
	pdbTypeRecords(ipi, func(ti uint32, kind uint16, d []byte) {
		if _, ok := want[ti]; !ok || len(d) < 8 {
			return
		}
		switch kind {
		case 0x1601: // LF_FUNC_ID: scope, type, name
			pt := parts{name: cString(d[8:]), scope: le.Uint32(d)}
			if pt.scope != 0 {
				scopes[pt.scope] = ""
			}
			want[ti] = pt
		case 0x1602: // LF_MFUNC_ID: class, type, name
			pt := parts{name: cString(d[8:]), class: le.Uint32(d)}
			classes[pt.class] = ""
			want[ti] = pt
		}
	})
	if len(scopes) > 0 {
		pdbTypeRecords(ipi, func(ti uint32, kind uint16, d []byte) {
			if _, ok := scopes[ti]; ok && kind == 0x1605 && len(d) >= 4 { // LF_STRING_ID: id, string
				scopes[ti] = cString(d[4:])
			}
		})
	}
	if len(classes) > 0 {
		tpi, err := stream(2)
		if err != nil {
			return err
		}
		pdbTypeRecords(tpi, func(ti uint32, kind uint16, d []byte) {
			if _, ok := classes[ti]; !ok {
				return
			}
			var at int
			switch kind {
			case 0x1504, 0x1505, 0x1519: // LF_CLASS, LF_STRUCTURE, LF_INTERFACE
				at = 16 // count, properties, fields, derived, vshape
			case 0x1506: // LF_UNION
				at = 8 // count, properties, fields
			default:
				return
			}
			if at > len(d) {
				return
			}
			if rest, ok := skipNumericLeaf(d[at:]); ok {
				classes[ti] = cString(rest)
			}
		})
	}
	names := make(map[uint32]string, len(want))
	for ti, pt := range want {
		name := pt.name
		if s := scopes[pt.scope]; pt.scope != 0 && s != "" {
			name = s + "::" + name
		} else if c := classes[pt.class]; pt.class != 0 && c != "" {
			name = c + "::" + name
		}
		if err := spend(48 + len(name)); err != nil {
			return err
		}
		names[ti] = name
	}
	for i := range idx.procs {
		for k := range idx.procs[i].sites {
			s := &idx.procs[i].sites[k]
			s.name = names[s.inlinee]
		}
	}
	return nil
}

// pdbTypeRecords calls fn with each record of a TPI or IPI stream s: its
// type index, kind and bytes after the kind.
func pdbTypeRecords(s []byte, fn func(ti uint32, kind uint16, data []byte)) {
	le := binary.LittleEndian
	if len(s) < 56 {
		return
	}
	hdr, ti, n := uint64(le.Uint32(s[4:])), le.Uint32(s[8:]), uint64(le.Uint32(s[16:]))
	if hdr < 56 || hdr > uint64(len(s)) {
		return
	}
	recs := s[hdr:]
	if n < uint64(len(recs)) {
		recs = recs[:n]
	}
	for pos := 0; pos+4 <= len(recs); ti++ {
		n := int(le.Uint16(recs[pos:]))
		if n < 2 || pos+2+n > len(recs) {
			return
		}
		fn(ti, le.Uint16(recs[pos+2:]), recs[pos+4:pos+2+n])
		pos += 2 + n
	}
}

// skipNumericLeaf returns what follows a CodeView numeric leaf at the
// start of d.
func skipNumericLeaf(d []byte) ([]byte, bool) {
	if len(d) < 2 {
		return nil, false
	}
	v := binary.LittleEndian.Uint16(d)
	n := 0
	switch {
	case v < 0x8000:
	case v == 0x8000: // LF_CHAR
		n = 1
	case v == 0x8001 || v == 0x8002: // LF_SHORT, LF_USHORT
		n = 2
	case v == 0x8003 || v == 0x8004: // LF_LONG, LF_ULONG
		n = 4
	case v == 0x8009 || v == 0x800a: // LF_QUADWORD, LF_UQUADWORD
		n = 8
	default:
		return nil, false
	}
	if 2+n > len(d) {
		return nil, false
	}
	return d[2+n:], true
}

// cString is the bytes of b up to its first NUL.
func cString(b []byte) string {
	if i := bytes.IndexByte(b, 0); i >= 0 {
		b = b[:i]
	}
	return string(b)
}

// rangeAt is the range of the call's code that holds off, or nil.
func (s *pdbSite) rangeAt(off uint32) *pdbRange {
	for i := range s.ranges {
		if r := &s.ranges[i]; r.lo <= off && off < r.hi {
			return r
		}
	}
	return nil
}
