package dif

import (
	"bytes"
	"encoding/binary"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Bounds of the names built from a PDB's type streams (pdbtypes.go): a
// name is cut at maxPDBName bytes (the answer cuts it further,
// docs/resolution.md), a type is followed maxTypeDepth records deep at
// most, and the names of one file take maxTypeSteps records in all, each
// type's name built once: past them, names lose what is left of their
// parameter lists. None depends on a number written in the file.
const (
	maxPDBName   = 2048
	maxTypeDepth = 24
	maxTypeSteps = 1 << 22
)

// pdbTypeIndex is the records of a TPI or IPI stream by type index.
type pdbTypeIndex struct {
	first uint32   // the type index of the first record
	recs  []byte   // the records
	offs  []uint32 // where each record starts in recs
}

// indexTypeRecords indexes the records of a TPI or IPI stream s. The
// offsets take 4 bytes for each record of at least 4 bytes: at most the
// stream's size, taken from the reader's budget.
func (p *pdbReader) indexTypeRecords(s []byte) (*pdbTypeIndex, error) {
	le := binary.LittleEndian
	t := &pdbTypeIndex{}
	if len(s) < 56 {
		return t, nil
	}
	hdr, n := uint64(le.Uint32(s[4:])), uint64(le.Uint32(s[16:]))
	if hdr < 56 || hdr > uint64(len(s)) {
		return t, nil
	}
	t.first = le.Uint32(s[8:])
	t.recs = s[hdr:]
	if n < uint64(len(t.recs)) {
		t.recs = t.recs[:n]
	}
	count := 0
	for pos := 0; pos+4 <= len(t.recs); count++ {
		n := int(le.Uint16(t.recs[pos:]))
		if n < 2 || pos+2+n > len(t.recs) {
			break
		}
		pos += 2 + n
	}
	if p.budget != nil {
		if err := p.budget.take(4 * uint64(count)); err != nil {
			return nil, err
		}
	}
	t.offs = make([]uint32, 0, count)
	for pos := 0; len(t.offs) < count; {
		t.offs = append(t.offs, uint32(pos))
		pos += 2 + int(le.Uint16(t.recs[pos:]))
	}
	return t, nil
}

// record returns the kind and the bytes after it of the record of type
// index ti, ok false when there is none.
func (t *pdbTypeIndex) record(ti uint32) (kind uint16, data []byte, ok bool) {
	if t == nil || ti < 0x1000 || ti < t.first || uint64(ti-t.first) >= uint64(len(t.offs)) {
		return 0, nil, false
	}
	at := int(t.offs[ti-t.first])
	n := int(binary.LittleEndian.Uint16(t.recs[at:]))
	return binary.LittleEndian.Uint16(t.recs[at+2:]), t.recs[at+4 : at+2+n], true
}

// pdbNamer builds names with their parameter lists from a PDB's type
// (TPI) and id (IPI) streams, as Sentry's symbolic prints them (its
// pdb-addr2line type formatter with its default flags): no return type,
// no calling convention, ", " between parameters, "*" and "&" right after
// the type, const after a pointer's sigil and before a plain type, a
// method's " const", classes, unions and enums by their name alone, and
// "`anonymous namespace'" for a scope written ?A0x followed by hex digits.
type pdbNamer struct {
	tpi, ipi *pdbTypeIndex
	ptrSize  uint64
	steps    int
	types    map[uint32]string // the name of each type built
	args     map[uint32]string // the parameter list of each function type built
	spend    func(int) error   // charges what the memos hold
	err      error
}

// errTypeName is a type that cannot be named: its record is not one the
// names need (a method id whose type is not a method, an argument list
// that is not one). The whole name then goes without its parameters, as
// symbolic gives it.
type errTypeName struct{}

func (errTypeName) Error() string { return "dif: a PDB type that cannot be named" }

// budgetLeft takes a step: false once the file's steps are spent.
func (n *pdbNamer) budgetLeft() bool {
	n.steps++
	return n.steps <= maxTypeSteps
}

// cutPDBName cuts s to maxPDBName bytes at most, at the start of a
// character.
func cutPDBName(s string) string {
	if len(s) <= maxPDBName {
		return s
	}
	n := maxPDBName
	for n > maxPDBName-utf8.UTFMax && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// function is the name of a procedure called name whose type is ti: name
// followed by its parameter list, or name alone when ti is no function
// type or its parameters cannot be named.
func (n *pdbNamer) function(name string, ti uint32) string {
	if ti == 0 {
		if name == "" {
			return "<name omitted>"
		}
		return name
	}
	kind, _, ok := n.tpi.record(ti)
	if !ok || (kind != 0x1008 && kind != 0x1009) {
		return name
	}
	args, err := n.params(ti)
	if err != nil {
		return name
	}
	if name == "" {
		name = "<name omitted>"
	}
	return cutPDBName(name + args)
}

// params is the parameter list of the LF_PROCEDURE or LF_MFUNCTION ti,
// with " const" after a const method's.
func (n *pdbNamer) params(ti uint32) (string, error) {
	if s, ok := n.args[ti]; ok {
		return s, nil
	}
	var b strings.Builder
	var err error
	kind, d, _ := n.tpi.record(ti)
	switch {
	case kind == 0x1008 && len(d) >= 12: // LF_PROCEDURE: return, attributes, count, arglist
		b.WriteByte('(')
		n.typeName(&b, binary.LittleEndian.Uint32(d[8:]), 0)
		b.WriteByte(')')
	case kind == 0x1009 && len(d) >= 20: // LF_MFUNCTION
		err = n.methodArgs(&b, d, true, 0)
	default:
		err = errTypeName{}
	}
	s := cutPDBName(b.String())
	if err == nil {
		if n.err = n.spend(48 + len(s)); n.err != nil {
			return "", n.err
		}
		n.args[ti] = s
	}
	return s, err
}

// id is the name of the inlinee id (LF_FUNC_ID, LF_MFUNC_ID) of the IPI
// stream: its scope or class, its name and its parameter list. ok is
// false when it cannot be named (symbolic then leaves the inlined call
// out).
func (n *pdbNamer) id(ti uint32) (string, bool) {
	var b strings.Builder
	if err := n.idName(&b, ti, 0); err != nil {
		return "", false
	}
	return cutPDBName(b.String()), true
}

func (n *pdbNamer) idName(b *strings.Builder, ti uint32, depth int) error {
	if depth > maxTypeDepth || !n.budgetLeft() {
		return nil
	}
	le := binary.LittleEndian
	kind, d, ok := n.ipi.record(ti)
	if !ok {
		b.WriteString("<missing type 0x" + strconv.FormatUint(uint64(ti), 16) + ">")
		return nil
	}
	switch kind {
	case 0x1601, 0x1602: // LF_FUNC_ID (scope, type, name), LF_MFUNC_ID (class, type, name)
		if len(d) < 8 {
			return errTypeName{}
		}
		// The parameter list, built once for each function type
		// however many ids name it.
		fnType := le.Uint32(d[4:])
		k, _, ok := n.tpi.record(fnType)
		method := kind == 0x1602
		if !ok || method && k != 0x1009 || !method && k != 0x1008 {
			return errTypeName{}
		}
		args, err := n.params(fnType)
		if err != nil {
			return err
		}
		if method {
			n.typeName(b, le.Uint32(d), depth+1)
			b.WriteString("::")
		} else if scope := le.Uint32(d); scope != 0 {
			if err := n.idName(b, scope, depth+1); err != nil {
				return err
			}
			b.WriteString("::")
		}
		// Past maxPDBName, what follows the scopes is cut: it is
		// not written, nor the record's name copied.
		if b.Len() <= maxPDBName {
			writeName(b, string(nameBytes(d[8:])))
			b.WriteString(args)
		}
	case 0x1605: // LF_STRING_ID: substrings, string
		if len(d) < 4 {
			return errTypeName{}
		}
		s := d[4:]
		if i := bytes.IndexByte(s, 0); i >= 0 {
			s = s[:i]
		}
		if h, ok := bytes.CutPrefix(s, []byte("?A0x")); ok && isHex32(h) {
			b.WriteString("`anonymous namespace'")
		} else if b.Len() <= maxPDBName {
			b.Write(nameBytes(s))
		}
	default:
		return errTypeName{}
	}
	return nil
}

// isHex32 reports whether h is a hexadecimal number of 32 bits, as
// strconv.ParseUint(h, 16, 32) reads it (leading zeros allowed).
func isHex32(h []byte) bool {
	digits := bytes.TrimLeft(h, "0")
	if len(h) == 0 || len(digits) > 8 {
		return false
	}
	for _, c := range digits {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
			return false
		}
	}
	return true
}

// nameBytes is the NUL-terminated name at the start of d, cut past
// maxPDBName bytes: one byte more than a name keeps, so that cutPDBName
// cuts the whole name where it would have cut it uncut.
func nameBytes(d []byte) []byte {
	if i := bytes.IndexByte(d, 0); i >= 0 {
		d = d[:i]
	}
	return d[:min(len(d), maxPDBName+1)]
}

func writeName(b *strings.Builder, name string) {
	if name == "" {
		name = "<name omitted>"
	}
	b.WriteString(name)
}

// methodArgs writes the parameter list of the LF_MFUNCTION record d
// (return, class, this, attributes, count, arglist, this adjustment),
// with " const" after it for a const method when allowConst.
func (n *pdbNamer) methodArgs(b *strings.Builder, d []byte, allowConst bool, depth int) error {
	le := binary.LittleEndian
	class, this, arglist := le.Uint32(d[4:]), le.Uint32(d[8:]), le.Uint32(d[16:])
	k, args, ok := n.tpi.record(arglist)
	if !ok || k != 0x1201 {
		return errTypeName{}
	}
	isConst, extra := false, uint32(0)
	if this != 0 && this != 0xffff {
		// The this pointer names the class, const for a const method;
		// a this pointer to another type is a first parameter
		// (Rust's associated functions are written so).
		isConst, extra = false, this
		if k, pd, ok := n.tpi.record(this); ok && k == 0x1002 && len(pd) >= 8 {
			under := le.Uint32(pd)
			if under == class {
				extra = 0
			} else if k, md, ok := n.tpi.record(under); ok && k == 0x1001 && len(md) >= 6 && le.Uint32(md) == class {
				isConst, extra = le.Uint16(md[4:])&1 != 0, 0
			}
		}
	}
	b.WriteByte('(')
	if extra != 0 {
		n.typeName(b, extra, depth+1)
	}
	n.argList(b, args, extra != 0, depth+1)
	b.WriteByte(')')
	if isConst && allowConst {
		b.WriteString(" const")
	}
	return nil
}

// argList writes the types of an LF_ARGLIST record d, ", " between them.
func (n *pdbNamer) argList(b *strings.Builder, d []byte, commaFirst bool, depth int) {
	if len(d) < 4 {
		return
	}
	count := uint64(binary.LittleEndian.Uint32(d))
	count = min(count, uint64(len(d)-4)/4)
	for i := range count {
		if i > 0 || commaFirst {
			b.WriteString(", ")
		}
		n.typeName(b, binary.LittleEndian.Uint32(d[4+4*i:]), depth)
		if b.Len() > maxPDBName {
			return
		}
	}
}

// typeName writes the name of type ti, built once.
func (n *pdbNamer) typeName(b *strings.Builder, ti uint32, depth int) {
	if s, ok := n.types[ti]; ok {
		b.WriteString(s)
		return
	}
	if depth > maxTypeDepth || !n.budgetLeft() || b.Len() > maxPDBName {
		return
	}
	var t strings.Builder
	if ti < 0x1000 {
		n.primitive(&t, ti, false)
	} else if kind, d, ok := n.tpi.record(ti); !ok {
		t.WriteString("<missing type 0x" + strconv.FormatUint(uint64(ti), 16) + ">")
	} else {
		n.typeRecord(&t, ti, kind, d, depth)
	}
	s := cutPDBName(t.String())
	if n.err == nil {
		if n.err = n.spend(48 + len(s)); n.err == nil {
			n.types[ti] = s
		}
	}
	b.WriteString(s)
}

// primitiveNames are the names of CodeView's primitive types (the low
// byte of a type index below 0x1000), as symbolic prints them.
var primitiveNames = map[uint32]string{
	0x00: "<NoType>", 0x03: "void", 0x08: "HRESULT",
	0x10: "signed char", 0x20: "unsigned char", 0x68: "int8_t", 0x69: "uint8_t",
	0x70: "char", 0x71: "wchar_t", 0x7a: "char16_t", 0x7b: "char32_t",
	0x11: "short", 0x21: "unsigned short", 0x72: "int16_t", 0x73: "uint16_t",
	0x12: "long", 0x22: "unsigned long", 0x74: "int", 0x75: "unsigned int",
	0x13: "long long", 0x23: "unsigned long long", 0x76: "int64_t", 0x77: "uint64_t",
	0x14: "int128_t", 0x24: "uint128_t", 0x78: "int128_t", 0x79: "uint128_t",
	0x46: "float16_t", 0x40: "float", 0x45: "float", 0x44: "float48_t", 0x41: "double",
	0x42: "long double", 0x43: "long double",
	0x50: "complex<float>", 0x51: "complex<double>", 0x52: "complex<long double>", 0x53: "complex<long double>",
	0x30: "bool", 0x31: "bool16_t", 0x32: "bool32_t", 0x33: "bool64_t",
}

// primitiveSizes are the sizes of the primitive types that are not 4
// bytes wide (0 for void).
var primitiveSizes = map[uint32]uint64{
	0x00: 0, 0x03: 0,
	0x10: 1, 0x20: 1, 0x68: 1, 0x69: 1, 0x70: 1, 0x30: 1,
	0x71: 2, 0x7a: 2, 0x11: 2, 0x21: 2, 0x72: 2, 0x73: 2, 0x46: 2, 0x31: 2,
	0x13: 8, 0x23: 8, 0x76: 8, 0x77: 8, 0x41: 8, 0x50: 8, 0x33: 8,
	0x14: 16, 0x24: 16, 0x78: 16, 0x79: 16, 0x43: 16, 0x51: 16,
	0x44: 6, 0x42: 10, 0x52: 20, 0x53: 32,
}

// primitive writes the primitive type ti, const when isConst.
func (n *pdbNamer) primitive(b *strings.Builder, ti uint32, isConst bool) {
	name, ok := primitiveNames[ti&0xff]
	if !ok || ti&0xf00 > 0x700 {
		b.WriteString("<missing type 0x" + strconv.FormatUint(uint64(ti), 16) + ">")
		return
	}
	switch {
	case ti&0xf00 != 0 && isConst:
		b.WriteString(name + " const*")
	case ti&0xf00 != 0:
		b.WriteString(name + "*")
	case isConst:
		b.WriteString("const " + name)
	default:
		b.WriteString(name)
	}
}

// typeRecord writes the type of record ti of the given kind and bytes.
func (n *pdbNamer) typeRecord(b *strings.Builder, ti uint32, kind uint16, d []byte, depth int) {
	le := binary.LittleEndian
	switch kind {
	case 0x1504, 0x1505, 0x1519: // LF_CLASS, LF_STRUCTURE, LF_INTERFACE
		if len(d) >= 16 {
			if rest, ok := skipNumericLeaf(d[16:]); ok {
				b.WriteString(cString(rest))
			}
		}
	case 0x1506: // LF_UNION: count, properties, fields, size, name
		if len(d) >= 8 {
			if rest, ok := skipNumericLeaf(d[8:]); ok {
				b.WriteString(cString(rest))
			}
		}
	case 0x1507: // LF_ENUM: count, properties, type, fields, name
		if len(d) >= 12 {
			b.WriteString(cString(d[12:]))
		}
	case 0x1009: // LF_MFUNCTION
		if len(d) >= 20 {
			b.WriteString("()")
			n.methodArgs(b, d, false, depth)
		}
	case 0x1008: // LF_PROCEDURE, written as symbolic writes it
		if len(d) >= 12 {
			b.WriteString("()(")
			n.typeName(b, le.Uint32(d[8:]), depth+1)
		}
	case 0x1201: // LF_ARGLIST
		n.argList(b, d, false, depth+1)
	case 0x1002: // LF_POINTER
		n.pointer(b, d, false, depth)
	case 0x1001: // LF_MODIFIER
		n.modifier(b, d, depth)
	case 0x1503: // LF_ARRAY
		n.array(b, d, depth)
	default:
		b.WriteString("<unhandled type kind 0x" + strconv.FormatUint(uint64(kind), 16) + ">")
	}
}

// modifier writes the LF_MODIFIER record d (type, flags: const is 1).
func (n *pdbNamer) modifier(b *strings.Builder, d []byte, depth int) {
	if len(d) < 6 {
		return
	}
	le := binary.LittleEndian
	under, isConst := le.Uint32(d), le.Uint16(d[4:])&1 != 0
	if under < 0x1000 {
		n.primitive(b, under, isConst)
		return
	}
	kind, ud, ok := n.tpi.record(under)
	switch {
	case !ok:
		b.WriteString("<missing type 0x" + strconv.FormatUint(uint64(under), 16) + ">")
	case kind == 0x1002:
		n.pointer(b, ud, isConst, depth)
	default:
		if isConst {
			b.WriteString("const ")
		}
		n.typeName(b, under, depth+1)
	}
}

// ptrAttrs is one level of a pointer: its sigil, and whether the pointer
// and what it points to are const.
type ptrAttrs struct {
	sigil                  string
	ptrConst, pointeeConst bool
}

var pointerSigils = [8]string{"*", "&", "::*", "::*", "&&", "*", "*", "*"}

func pointerAttrs(d []byte) ptrAttrs {
	a := binary.LittleEndian.Uint32(d[4:])
	return ptrAttrs{sigil: pointerSigils[a>>5&7], ptrConst: a&0x400 != 0}
}

// pointer writes the LF_POINTER record d (type, attributes), const
// itself when isConst: the type pointed to, then each level's sigil and
// const.
func (n *pdbNamer) pointer(b *strings.Builder, d []byte, isConst bool, depth int) {
	if len(d) < 8 {
		return
	}
	le := binary.LittleEndian
	attrs := []ptrAttrs{pointerAttrs(d)}
	attrs[0].ptrConst = attrs[0].ptrConst || isConst
	under := le.Uint32(d)
	for range maxTypeDepth {
		if !n.budgetLeft() {
			return
		}
		kind, ud, ok := n.tpi.record(under)
		if under < 0x1000 || !ok {
			break
		}
		if kind == 0x1002 && len(ud) >= 8 {
			attrs = append(attrs, pointerAttrs(ud))
			under = le.Uint32(ud)
			continue
		}
		if kind != 0x1001 || len(ud) < 6 {
			break
		}
		attrs[len(attrs)-1].pointeeConst = le.Uint16(ud[4:])&1 != 0
		next := le.Uint32(ud)
		if k, pd, ok := n.tpi.record(next); ok && next >= 0x1000 && k == 0x1002 && len(pd) >= 8 {
			attrs = append(attrs, pointerAttrs(pd))
			under = le.Uint32(pd)
			continue
		}
		under = next
		break
	}
	kind, ud, _ := n.tpi.record(under)
	switch {
	case under >= 0x1000 && kind == 0x1009 && len(ud) >= 20: // a pointer to a method
		n.returnType(b, le.Uint32(ud), le.Uint16(ud[12:]), depth)
		b.WriteByte('(')
		n.typeName(b, le.Uint32(ud[4:]), depth+1)
		writeAttrs(b, attrs, false)
		b.WriteByte(')')
		n.methodArgs(b, ud, false, depth)
	case under >= 0x1000 && kind == 0x1008 && len(ud) >= 12: // a pointer to a function
		n.returnType(b, le.Uint32(ud), le.Uint16(ud[4:]), depth)
		b.WriteByte('(')
		writeAttrs(b, attrs, false)
		b.WriteString(")(")
		n.typeName(b, le.Uint32(ud[8:]), depth+1)
		b.WriteByte(')')
	default:
		n.typeName(b, under, depth+1)
		writeAttrs(b, attrs, true)
	}
}

// returnType writes a function's return type and a space, unless it is a
// constructor (attributes 0x200) or has none.
func (n *pdbNamer) returnType(b *strings.Builder, ti uint32, attrs uint16, depth int) {
	if attrs&0x200 != 0 || ti == 0 || ti == 0xffff {
		return
	}
	n.typeName(b, ti, depth+1)
	b.WriteByte(' ')
}

// writeAttrs writes the levels of a pointer, the outermost last.
func writeAttrs(b *strings.Builder, attrs []ptrAttrs, spaceFirst bool) {
	first := true
	for i := len(attrs) - 1; i >= 0; i-- {
		a := attrs[i]
		if a.pointeeConst {
			if !first || spaceFirst {
				b.WriteByte(' ')
			}
			b.WriteString("const")
		}
		first = false
		b.WriteString(a.sigil)
		if a.ptrConst {
			b.WriteString(" const")
		}
	}
}

// array writes the LF_ARRAY record d (element type, index type, size in
// bytes, name): the element type, then each dimension's count.
func (n *pdbNamer) array(b *strings.Builder, d []byte, depth int) {
	le := binary.LittleEndian
	var dims []uint64
	elem := uint32(0)
	for range maxTypeDepth {
		if len(d) < 8 || !n.budgetLeft() {
			return
		}
		size, ok := numericLeaf(d[8:])
		if !ok {
			return
		}
		dims = append(dims, size)
		elem = le.Uint32(d)
		kind, ed, ok := n.tpi.record(elem)
		if elem < 0x1000 || !ok || kind != 0x1503 {
			break
		}
		d = ed
	}
	n.typeName(b, elem, depth+1)
	base := n.size(elem, 0)
	for i, dim := range dims {
		next := base
		if i+1 < len(dims) {
			next = dims[i+1]
		}
		if next == 0 {
			b.WriteString("[]")
		} else {
			b.WriteString("[" + strconv.FormatUint(dim/next, 10) + "]")
		}
	}
}

// size is the size in bytes of type ti, 0 when unknown (a class known
// only by a forward reference among them).
func (n *pdbNamer) size(ti uint32, depth int) uint64 {
	if depth > maxTypeDepth || !n.budgetLeft() {
		return 0
	}
	le := binary.LittleEndian
	if ti < 0x1000 {
		if ti&0xf00 != 0 {
			return n.ptrSize
		}
		if s, ok := primitiveSizes[ti&0xff]; ok {
			return s
		}
		return 4
	}
	kind, d, ok := n.tpi.record(ti)
	if !ok {
		return 0
	}
	switch kind {
	case 0x1504, 0x1505, 0x1519: // LF_CLASS, LF_STRUCTURE, LF_INTERFACE
		if len(d) >= 16 && le.Uint16(d[2:])&0x80 == 0 { // not a forward reference
			s, _ := numericLeaf(d[16:])
			return s
		}
	case 0x1506: // LF_UNION
		if len(d) >= 8 && le.Uint16(d[2:])&0x80 == 0 {
			s, _ := numericLeaf(d[8:])
			return s
		}
	case 0x1008, 0x1009:
		return n.ptrSize
	case 0x1002:
		if len(d) >= 8 {
			a := le.Uint32(d[4:])
			if s := uint64(a >> 13 & 0x3f); s != 0 {
				return s
			}
			switch a & 0x1f {
			case 0x0a, 0x0b: // near and far 32-bit pointers
				return 4
			case 0x0c: // 64-bit pointers
				return 8
			}
		}
	case 0x1503:
		if len(d) >= 8 {
			s, _ := numericLeaf(d[8:])
			return s
		}
	case 0x1507: // LF_ENUM: its underlying type's
		if len(d) >= 8 {
			return n.size(le.Uint32(d[4:]), depth+1)
		}
	case 0x1001:
		if len(d) >= 4 {
			return n.size(le.Uint32(d), depth+1)
		}
	}
	return 0
}

// numericLeaf reads a CodeView numeric leaf at the start of d.
func numericLeaf(d []byte) (uint64, bool) {
	if len(d) < 2 {
		return 0, false
	}
	le := binary.LittleEndian
	v := le.Uint16(d)
	rest, ok := skipNumericLeaf(d)
	if !ok {
		return 0, false
	}
	switch n := len(d) - 2 - len(rest); {
	case v < 0x8000:
		return uint64(v), true
	case n == 1:
		return uint64(d[2]), true
	case n == 2:
		return uint64(le.Uint16(d[2:])), true
	case n == 4:
		return uint64(le.Uint32(d[2:])), true
	default:
		return le.Uint64(d[2:]), true
	}
}

// undecorateWindows removes the decoration of a C function's name on
// 32-bit Windows (_f for __cdecl, _f@8 for __stdcall, @f@8 for
// __fastcall, f@@8 for __vectorcall), as symbolic does for every name of
// a Windows file; a C++ name or one with a scope or parameters stays.
func undecorateWindows(name string) string {
	if strings.HasPrefix(name, "?") || strings.ContainsAny(name, ":(<") {
		return name
	}
	isNumber := func(s string) bool {
		_, err := strconv.ParseUint(s, 10, 32)
		return err == nil
	}
	if i := strings.LastIndex(name, "@@"); i >= 0 && isNumber(name[i+2:]) {
		return name[:i]
	}
	if name != "" && (name[0] == '@' || name[0] == '_') {
		rest := name[1:]
		if i := strings.LastIndexByte(rest, '@'); i >= 0 && isNumber(rest[i+1:]) {
			return rest[:i]
		}
		if name[0] == '_' {
			return rest
		}
	}
	return name
}
