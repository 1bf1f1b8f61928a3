package proguard

import (
	"encoding/json"
	"math"
	"strconv"
	"strings"
)

// R8's mapping metadata: JSON comments right below the class or method
// line they are about, "# {"id":"sourceFile","fileName":"Cart.kt"}", as
// R8's retrace documents them. R8 writes strict JSON; its documentation
// and its retrace's own tests also write gson's lenient form (single
// quotes, bare keys), which is read too. A comment errata does not know,
// or cannot read, is a comment: it changes nothing.

// The marks of a method (or, with an empty sig, of a class) in
// Mapping.flags.
const (
	flagSynthesized uint8 = 1 << iota // com.android.tools.r8.synthesized
	flagOutline                       // com.android.tools.r8.outline
)

// methodKey names a method of the original program: its class and
// "name(args)"; a class alone when sig is "".
type methodKey struct{ class, sig string }

// lineMeta is R8's metadata of one method line.
type lineMeta struct {
	rules []rewriteRule
	// positions maps a position in the outline this line calls to the
	// obfuscated line of the call site (com.android.tools.r8.outlineCallsite).
	positions map[int32]int32
}

// rewriteRule is a rewriteFrame rule errata can apply: a frame at this
// line that threw the exception of descriptor thrown
// ("Ljava/lang/NullPointerException;") loses its remove innermost frames.
// A rule with a condition or an argument errata does not know never
// applies, and is not kept.
type rewriteRule struct {
	thrown string
	remove int32
}

// maxMetadata is the longest comment read as R8's metadata: R8 writes a
// few hundred bytes; a longer one is a comment.
const maxMetadata = 64 << 10

// What R8's metadata holds once read, charged to Mapping.size beside the
// text (TestSizeIsWhatAMappingHolds measures them): a mark in the flags
// map, a line's lineMeta, one of its rules, one outline position.
const (
	flagCost     = 112
	lineMetaCost = 96
	ruleCost     = 48
	positionCost = 48
)

// readMetadata reads the comment s, without its "#", below class c's line
// (mt nil) or its method line mt.
func (m *Mapping) readMetadata(s string, c *class, mt *method) {
	if len(s) > maxMetadata || !strings.HasPrefix(s, "{") {
		return
	}
	var meta struct {
		ID         string           `json:"id"`
		FileName   string           `json:"fileName"`
		Conditions []string         `json:"conditions"`
		Actions    []string         `json:"actions"`
		Positions  map[string]int64 `json:"positions"`
	}
	if json.Unmarshal([]byte(s), &meta) != nil {
		strict, ok := lenientJSON(s)
		if !ok || json.Unmarshal(strict, &meta) != nil {
			return
		}
	}
	switch {
	case meta.ID == "sourceFile" && mt == nil:
		c.sourceFile = meta.FileName
		m.size += len(meta.FileName) + 16
	case meta.ID == "com.android.tools.r8.synthesized" && mt == nil:
		m.mark(methodKey{class: c.original}, flagSynthesized)
	case meta.ID == "com.android.tools.r8.synthesized":
		m.mark(keyOf(c, mt), flagSynthesized)
	case meta.ID == "com.android.tools.r8.outline" && mt != nil:
		m.mark(keyOf(c, mt), flagOutline)
	case meta.ID == "com.android.tools.r8.rewriteFrame" && mt != nil:
		if rule, ok := parseRewriteRule(meta.Conditions, meta.Actions); ok {
			m.lineMeta(mt).rules = append(m.lineMeta(mt).rules, rule)
			m.size += ruleCost + len(rule.thrown)
		}
	case meta.ID == "com.android.tools.r8.outlineCallsite" && mt != nil:
		for k, v := range meta.Positions {
			pos, ok := number(k)
			if !ok || v < 0 || v >= 1<<31 {
				continue
			}
			lm := m.lineMeta(mt)
			if lm.positions == nil {
				lm.positions = map[int32]int32{}
			}
			lm.positions[pos] = int32(v)
			m.size += positionCost
		}
	}
}

// mark adds flag to the marks of key.
func (m *Mapping) mark(key methodKey, flag uint8) {
	if m.flags == nil {
		m.flags = map[methodKey]uint8{}
	}
	if _, ok := m.flags[key]; !ok {
		m.size += flagCost
	}
	m.flags[key] |= flag
}

// lineMeta returns mt's metadata, made the first time.
func (m *Mapping) lineMeta(mt *method) *lineMeta {
	if mt.r8 == nil {
		mt.r8 = &lineMeta{}
		m.size += lineMetaCost
	}
	return mt.r8
}

// keyOf is the method of mt, a method line of class c: R8's marks apply to
// every line of it.
func keyOf(c *class, mt *method) methodKey {
	cls, _ := receiver(c, mt.sig)
	open := strings.IndexByte(mt.sig, '(')
	return methodKey{class: cls, sig: mt.sig[strings.LastIndexByte(mt.sig[:open], '.')+1:]}
}

// methodFlags returns the marks of the method of mt, a method line of
// class c, and of its class.
func (m *Mapping) methodFlags(c *class, mt *method) uint8 {
	if m.flags == nil {
		return 0
	}
	key := keyOf(c, mt)
	return m.flags[key] | m.flags[methodKey{class: key.class}]
}

// parseRewriteRule reads a rewriteFrame rule's conditions and actions:
// throws(descriptor), removeInnerFrames(n). False when it can never apply
// (no condition or action, a condition errata does not know, two
// exceptions) or one of them cannot be read, as R8's retrace refuses it;
// an action errata does not know does nothing.
func parseRewriteRule(conditions, actions []string) (rewriteRule, bool) {
	var r rewriteRule
	if len(conditions) == 0 || len(actions) == 0 {
		return r, false
	}
	for _, c := range conditions {
		d, ok := call(strings.TrimSpace(c), "throws")
		if !ok || d == "" || r.thrown != "" && r.thrown != d {
			return r, false
		}
		r.thrown = d
	}
	for _, a := range actions {
		a = strings.TrimSpace(a)
		if a == "" {
			return r, false
		}
		arg, ok := call(a, "removeInnerFrames")
		if !ok {
			continue
		}
		n, ok := number(arg)
		if !ok {
			return r, false
		}
		r.remove = int32(min(int64(r.remove)+int64(n), math.MaxInt32))
	}
	return r, true
}

// call returns the argument of s when s is "name(argument)".
func call(s, name string) (string, bool) {
	rest, ok := strings.CutPrefix(s, name+"(")
	if !ok || !strings.HasSuffix(rest, ")") {
		return "", false
	}
	return rest[:len(rest)-1], true
}

// removes is how many innermost frames the rules of this line remove of a
// frame that threw the exception of original class name thrown.
func (l *lineMeta) removes(thrown string) int {
	n := 0
	for _, r := range l.rules {
		if isDescriptorOf(r.thrown, thrown) {
			n = min(n+int(r.remove), math.MaxInt32)
		}
	}
	return n
}

// isDescriptorOf says desc is the descriptor of class: "Ljava/lang/Error;"
// of "java.lang.Error".
func isDescriptorOf(desc, class string) bool {
	if len(desc) != len(class)+2 || desc[0] != 'L' || desc[len(desc)-1] != ';' {
		return false
	}
	for i := 0; i < len(class); i++ {
		c := class[i]
		if c == '.' {
			c = '/'
		}
		if desc[i+1] != c {
			return false
		}
	}
	return true
}

// outlineCallsite returns the line of the call site of outline position
// pos that the method line of methods at line gives.
func outlineCallsite(methods []method, line, pos int) (int, bool) {
	if pos > math.MaxInt32 {
		return 0, false
	}
	for i := range methods {
		mt := &methods[i]
		if mt.r8 == nil || mt.r8.positions == nil || mt.end > 0 && (line < int(mt.start) || line > int(mt.end)) {
			continue
		}
		if callsite, ok := mt.r8.positions[int32(pos)]; ok {
			return int(callsite), true
		}
	}
	return 0, false
}

// lenientJSON rewrites gson's lenient JSON (single-quoted strings, bare
// keys and values) as JSON: false when a string does not end.
func lenientJSON(s string) ([]byte, bool) {
	out := make([]byte, 0, len(s)+len(s)/4)
	for i := 0; i < len(s); {
		switch ch := s[i]; {
		case ch == '"' || ch == '\'':
			out = append(out, '"')
			for i++; i < len(s) && s[i] != ch; i++ {
				switch {
				case s[i] == '\\' && i+1 < len(s):
					if s[i+1] == '\'' {
						out = append(out, '\'')
					} else {
						out = append(out, s[i], s[i+1])
					}
					i++
				case s[i] == '"':
					out = append(out, '\\', '"')
				default:
					out = append(out, s[i])
				}
			}
			if i >= len(s) {
				return nil, false
			}
			out = append(out, '"')
			i++
		case isWordByte(ch) && (ch < '0' || ch > '9'):
			j := i
			for j < len(s) && isWordByte(s[j]) {
				j++
			}
			switch word := s[i:j]; word {
			case "true", "false", "null":
				out = append(out, word...)
			default:
				out = strconv.AppendQuote(out, word)
			}
			i = j
		default:
			out = append(out, ch)
			i++
		}
	}
	return out, true
}

func isWordByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '$' || c == '.'
}

// fileOf returns the source file of the original class cls, remapped from
// a line of class outer (nil for none): R8's sourceFile metadata of cls
// when the mapping has it (the outermost class's name for R8's
// "R8$$SyntheticClass"), else made from the class name as Sentry does:
// "Name.kt" for a class Kotlin names NameKt (ComposableSingletons$NameKt
// too), else the outermost class's name with the extension of outer's
// source file, or of ref (the frame's own file name), or ".java".
func (m *Mapping) fileOf(cls string, outer *class, ref string) string {
	simple := cls[strings.LastIndexByte(cls, '.')+1:]
	base := simple
	if i := strings.IndexByte(simple, '$'); i > 0 {
		base = simple[:i]
	}
	if c, ok := m.byOrig[cls]; ok && c.sourceFile != "" {
		if c.sourceFile == "R8$$SyntheticClass" {
			return base
		}
		return c.sourceFile
	}
	for seg := range strings.SplitSeq(simple, "$") {
		if len(seg) > 2 && strings.HasSuffix(seg, "Kt") {
			return seg[:len(seg)-2] + ".kt"
		}
	}
	if outer != nil && outer.sourceFile != "" {
		ref = outer.sourceFile
	}
	if i := strings.LastIndexByte(ref, '.'); i >= 0 {
		return base + ref[i:]
	}
	return base + ".java"
}
