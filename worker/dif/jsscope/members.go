package jsscope

// Members of object literals and class bodies: their keys, modifiers and
// methods.

// setKey records the key of the member f reads.
func (f *frame) setKey(p part, word string, kind tokKind) {
	f.mem.key, f.mem.keyWord, f.mem.keyKind, f.mem.hasKey = p, word, kind, true
}

// isModifier tells the words that may come before a member's key.
func isModifier(w string) bool {
	return w == "get" || w == "set" || w == "async" || w == "static" || w == "accessor"
}

// modifier takes the key read so far as a modifier of the member, as a
// second key comes: false when it is none.
func (f *frame) modifier() bool {
	m := &f.mem
	if !m.hasKey || m.keyKind != tIdent || !isModifier(m.keyWord) {
		return false
	}
	switch m.keyWord {
	case "get":
		m.kind = kGetter
	case "set":
		m.kind = kSetter
	case "static":
		m.static = true
	}
	m.hasKey = false
	return true
}

// keyPart is a member's key as js-source-scopes' prop_name_to_component
// spells it: an identifier, <"str">, <1.5>, <1n>.
func (s *scanner) keyPart(t token) part {
	switch t.kind {
	case tIdent:
		return part{start: int32(t.start), end: int32(t.end)}
	case tPrivate:
		return part{start: int32(t.start + 1), end: int32(t.end)}
	case tStr, tNum:
		return part{text: "<" + s.literal(t) + ">"}
	}
	return part{text: "<computed>"}
}

// head reads a token of a member's head (a key or modifier): false when
// it is no part of one.
func (s *scanner) head(f *frame, t token) bool {
	m := &f.mem
	if m.hasKey && !f.modifier() {
		if f.kind == fObject {
			m.atKey = false
			return false
		}
		*m = member{atKey: true} // a class field without ;
	}
	if m.start == 0 {
		m.start = t.start + 1
	}
	switch t.kind {
	case tIdent, tStr, tNum, tPrivate:
		f.setKey(s.keyPart(t), s.word(t), t.kind)
		m.private = t.kind == tPrivate
		f.note(t, "")
		s.regexOK = false
	default: // [ of a computed key
		f.note(t, "")
		if b := s.push(fBracket, t.start, -1); b != nil {
			b.keyGroup = true
		}
		s.regexOK = true
	}
	return true
}

// memberHead reads t where it starts or continues the head of a member of
// an object literal or class body f alike: a key or modifier, the [ of a
// computed key, a generator's *, or the ( of a method whose key was read.
// ok is false when t is none of these; read is what the member's reader
// answers then.
func (s *scanner) memberHead(f *frame, t token) (read, ok bool) {
	switch t.kind {
	case tIdent, tStr, tNum, tPrivate:
		return s.head(f, t), true
	case tPunct:
		switch s.word(t) {
		case "[":
			return s.head(f, t), true
		case "*":
			f.note(t, "")
			return true, true
		case "(":
			if f.mem.hasKey {
				s.method(f, t)
				return true, true
			}
		}
	}
	return false, false
}

// objectMember reads t at the head of an object literal's member: false
// when t is read as an expression.
func (s *scanner) objectMember(f *frame, t token) bool {
	if read, ok := s.memberHead(f, t); ok {
		return read
	}
	m := &f.mem
	if t.kind == tPunct {
		switch s.word(t) {
		case ":":
			m.atKey = false
			if m.hasKey && m.keyKind == tIdent {
				f.st.key, f.st.hasKey = m.key, true
			}
			f.note(t, "")
			s.regexOK = true
			return true
		case ",":
			*m = member{atKey: true}
			f.note(t, "")
			s.regexOK = true
			return true
		case "}":
			return false
		}
	}
	m.atKey = false
	return false
}

// classMember reads t at the head of a class body's member: false when t
// is read as an expression.
func (s *scanner) classMember(f *frame, t token) bool {
	if read, ok := s.memberHead(f, t); ok {
		return read
	}
	m := &f.mem
	if t.kind == tPunct {
		switch s.word(t) {
		case "=":
			m.inInit = true
			f.note(t, "")
			s.regexOK = true
			return true
		case ";":
			*m = member{atKey: true}
			f.note(t, "")
			s.regexOK = true
			return true
		case "{":
			if m.hasKey && m.keyKind == tIdent && m.keyWord == "static" {
				*m = member{atKey: true}
				f.note(t, "")
				s.push(fBlock, t.start, -1) // a static block runs in its class's scope
				s.regexOK = true
				return true
			}
		}
	}
	return false
}

// method reads the ( of a method of the object literal or class body f:
// its scope and name, and its parameters.
func (s *scanner) method(f *frame, t token) {
	m := f.mem
	f.mem = member{atKey: f.kind == fClass}
	ctor := f.kind == fClass && !m.static && m.kind == kMethod && !m.private &&
		(m.keyWord == "constructor" || m.keyWord == `"constructor"` || m.keyWord == `'constructor'`)
	scope := -1
	getter := false
	start := max(m.start-1, 0)
	switch {
	case ctor: // its body is its class's scope
	case f.kind == fClass:
		rev := append(s.rev[:0], m.key)
		kind := m.kind
		if m.private {
			rev, kind = append(rev, part{text: "#"}), kMethod
		}
		scope = s.newScope(start, s.walk(len(s.frames)-1, rev, kind), false)
	case m.kind == kMethod:
		scope = s.newScope(start, s.walk(len(s.frames)-1, append(s.rev[:0], m.key), kMethod), false)
	default: // an object literal's getter or setter: the object's name, then its key
		getter = true
		rev := s.walk(len(s.frames)-1, s.rev[:0], kMethod)
		tail := []part{m.key}
		if len(rev) > 0 {
			tail = append(tail, part{text: "."})
		}
		rev = prefixKind(append(tail, rev...), m.kind)
		s.rev = rev[:0]
		scope = s.newScope(start, rev, false)
	}
	f.pend = pending{stage: pFnName, named: true, scope: scope, ctor: ctor, getter: getter}
	f.note(t, "")
	s.push(fParams, t.start, -1)
	s.regexOK = true
}
