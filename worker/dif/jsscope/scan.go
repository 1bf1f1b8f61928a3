package jsscope

import (
	"math/big"
	"strconv"
	"strings"
)

// The scanner's bounds (doc.go): whatever the file says, it holds at most
// these, and stops where it would hold more.
const (
	// MaxBytes is the most bytes scanned: the largest minified file the
	// JavaScript engine reads.
	MaxBytes = 32 << 20
	// MaxDepth is the deepest nesting of brackets followed; a name's walk
	// reads at most this many.
	MaxDepth = 512
	// MaxScopes is the most scopes kept: a bundle of 1 MB has about 10,000.
	MaxScopes = 1 << 17
	// MaxParts is the most parts of names kept, all scopes together.
	MaxParts = 1 << 19
	// MaxTextBytes is the most bytes of name text kept, all names together.
	MaxTextBytes = 4 << 20
	// MaxNameParts and MaxNameBytes bound one name (a longer one is
	// dropped: its scope is kept unnamed).
	MaxNameParts = 32
	MaxNameBytes = 1024
)

// frameKind is what a bracket opened, or the body of an arrow function
// without braces.
type frameKind uint8

const (
	fTop       frameKind = iota
	fBlock               // a statement block, a static block, an object getter's body
	fBody                // the body of a function, an arrow or a method
	fCtor                // a constructor's body: in its class's scope
	fObject              // an object literal
	fClass               // a class body
	fParen               // ( ) of an expression or a call
	fParams              // ( ) of a function's parameters
	fHeader              // ( ) of if, for, while, with, switch, catch
	fBracket             // [ ]
	fTemplate            // ${ } of a template literal
	fArrowExpr           // the expression body of an arrow function
)

// part is a part of a name: an identifier of the source (text "", its
// bytes start:end) or text the rules add ("." , "<object>.", "get ").
type part struct {
	text       string
	start, end int32
}

func (p part) isIdent() bool { return p.text == "" }

// method kinds of a class member, for the get and set prefixes.
const (
	kMethod uint8 = iota
	kGetter
	kSetter
)

// state is what a frame's current expression says of a function found in
// it: the target of the assignment or declaration it is the value of, the
// key of the object literal's property it is the value of, and the member
// chain being read (a.b[0].c), which an assignment may take as its target.
type state struct {
	assign    []part
	hasAssign bool
	key       part
	hasKey    bool
	chain     []part
	chainOK   bool
	afterDot  bool // the next identifier is a property name
}

func (st *state) reset() {
	st.assign, st.hasAssign, st.hasKey = nil, false, false
	st.chain, st.chainOK, st.afterDot = st.chain[:0], false, false
}

// member is the head of an object literal's or a class body's member
// being read: its key and modifiers.
type member struct {
	atKey   bool // reading a member's head (not its value)
	key     part // as prop_name_to_component spells it
	keyWord string
	keyKind tokKind
	hasKey  bool
	kind    uint8
	static  bool
	private bool
	inInit  bool // class field initializer
	start   int  // the byte its head starts at
}

// pending stages of a function or class whose parts come next.
const (
	pNone        uint8 = iota
	pFnName            // after `function`: * or its name, then (
	pAfterParams       // its parameters read: { comes next
	pArrowBody         // after =>
	pClass             // after `class`: its name, heritage, then {
)

type pending struct {
	stage  uint8
	scope  int  // -1: none (a constructor)
	ctor   bool // the body is a constructor's
	named  bool // pFnName: the name was read
	getter bool // an object literal's getter or setter: its body is no function's
	cls    classInfo
	first  bool // pClass: the next token is the first after `class`
	start  int  // pClass: the byte of `class`
}

type classInfo struct {
	name    part
	hasName bool
	decl    bool
	start   int
}

// tokInfo is what a frame keeps of one of its last tokens: a closed
// bracket counts as one token starting at its opener.
type tokInfo struct {
	kind  tokKind
	punct byte // the bracket of a closed group: ')', ']', '}'
	start int
	word  string // an identifier's text when a keyword that matters
}

type frame struct {
	kind      frameKind
	open      int
	scope     int
	st        state
	last      tokInfo
	prev      tokInfo
	ntok      int
	lastEnd   int
	stmt      bool // the next token starts a statement
	ternary   int
	pend      pending
	mem       member
	cls       classInfo
	noAssign  bool // parameters: `a = f` is a default, no assignment
	declBody  bool // the body of a declaration: a / after it is a regex
	keyGroup  bool // [ ] of a computed key
	up        int  // the nearest frame around it that may add to a name
	chainPrev bool // [ ]: a member of the chain before it
	one       token
}

// built is a scope found: its bytes and the parts of its name in
// scanner.parts; end < 0 until it is closed.
type built struct {
	start, end int
	p0, p1     int
}

type scanner struct {
	lex     lexer
	frames  []frame
	scopes  []built
	parts   []part
	text    int // bytes of name text
	regexOK bool
	stopped bool
	stopAt  int
	rev     []part // scratch of walk
	walked  int    // frames the walks read, for the tests
}

// scan finds the scopes of src, which it reads up to MaxBytes.
func scan(src []byte) *scanner {
	partial := false
	if len(src) > MaxBytes {
		src, partial = src[:MaxBytes], true
	}
	s := &scanner{lex: lexer{src: src}, regexOK: true}
	s.frames = make([]frame, 1, 16)
	s.frames[0] = frame{kind: fTop, scope: -1, stmt: true}
	s.stopAt = len(src)
	for !s.stopped {
		t := s.lex.next(s.regexOK)
		if t.kind == tEOF {
			break
		}
		s.token(t)
	}
	if partial && !s.stopped {
		s.stop(len(src))
	}
	// Scopes still open end where the scan ended.
	for len(s.frames) > 1 {
		s.pop(s.stopAt)
	}
	return s
}

// stop ends the scan at byte at: beyond it, the index knows nothing.
func (s *scanner) stop(at int) {
	if !s.stopped {
		s.stopped, s.stopAt = true, at
	}
}

func (s *scanner) top() *frame { return &s.frames[len(s.frames)-1] }

// interned are the words and punctuators the scanner compares tokens
// with, so that reading them allocates nothing.
var interned = func() map[string]string {
	m := map[string]string{}
	for _, w := range strings.Fields(`function class this async if for while with switch catch
		return throw var let const do else try finally case default break continue import
		export debugger in of instanceof typeof void delete new yield await extends get set
		static accessor constructor { } ( ) [ ] ; , < > + - * / % & | ^ ! ~ ? : = . @ #`) {
		m[w] = w
	}
	for _, p := range puncts {
		m[string(p)] = string(p)
	}
	return m
}()

// singles are the interned tokens of one byte.
var singles = func() (by [256]string) {
	for w := range interned {
		if len(w) == 1 {
			by[w[0]] = w
		}
	}
	return by
}()

// keyword is t's text when it is one of the interned words, else "".
func (s *scanner) keyword(t token) string {
	b := s.lex.src[t.start:t.end]
	if len(b) < 2 || b[0] < 'a' || b[0] > 'y' { // most names of minified code
		return ""
	}
	switch string(b) { // compared without a hash or an allocation
	case "function", "class", "this", "async", "if", "for", "while", "with", "switch", "catch", "return", "throw", "var", "let", "const", "do", "else", "try", "finally", "case", "default", "break", "continue", "import", "export", "debugger", "in", "of", "instanceof", "typeof", "void", "delete", "new", "yield", "await", "extends", "get", "set", "static", "accessor", "constructor":
		return interned[string(b)]
	}
	return ""
}

// word is t's text.
func (s *scanner) word(t token) string {
	b := s.lex.src[t.start:t.end]
	if len(b) == 1 && singles[b[0]] != "" {
		return singles[b[0]]
	}
	if w, ok := interned[string(b)]; ok {
		return w
	}
	return string(b)
}

func (s *scanner) isPunct(t token, p string) bool {
	return t.kind == tPunct && string(s.lex.src[t.start:t.end]) == p
}

// push opens a frame at byte open, ending scope (or -1).
func (s *scanner) push(kind frameKind, open, scope int) *frame {
	if len(s.frames) >= MaxDepth {
		s.stop(open)
		return nil
	}
	n := len(s.frames)
	if n < cap(s.frames) {
		s.frames = s.frames[:n+1]
		chain := s.frames[n].st.chain[:0]
		s.frames[n] = frame{}
		s.frames[n].st.chain = chain
	} else {
		s.frames = append(s.frames, frame{})
	}
	f := &s.frames[n]
	f.kind, f.open, f.scope, f.lastEnd = kind, open, scope, open+1
	// The frames around f do not change while it is open: a name's walk
	// from it skips those that add nothing to a name.
	if p := &s.frames[n-1]; n-1 == 0 || p.named() {
		f.up = n - 1
	} else {
		f.up = p.up
	}
	switch kind {
	case fBlock, fBody, fCtor:
		f.stmt = true
	case fObject, fClass:
		f.mem.atKey = true
	case fParams:
		f.noAssign = true
	}
	return f
}

// pop closes the top frame at byte end (exclusive), ending its scope.
func (s *scanner) pop(end int) {
	f := s.top()
	if f.scope >= 0 {
		s.scopes[f.scope].end = end
	}
	kind, open, declBody := f.kind, f.open, f.declBody
	keyGroup, chainPrev, ntok, one := f.keyGroup, f.chainPrev, f.ntok, f.one
	s.frames = s.frames[:len(s.frames)-1]
	p := s.top()
	p.lastEnd = end
	closer := byte('}')
	switch kind {
	case fParen, fParams, fHeader:
		closer = ')'
	case fBracket:
		closer = ']'
	}
	p.prev, p.last = p.last, tokInfo{kind: tPunct, punct: closer, start: open}
	p.ntok++
	s.regexOK = false
	switch kind {
	case fBlock:
		p.stmt = true
		s.regexOK = true
		p.st.reset()
	case fBody, fClass, fCtor:
		if declBody {
			p.stmt = true
			s.regexOK = true
			p.st.reset()
		}
	case fHeader:
		p.stmt = true
		s.regexOK = true
		p.st.reset()
	case fParams:
		if p.pend.stage == pFnName {
			p.pend.stage = pAfterParams
		}
	case fBracket:
		if keyGroup {
			p.setKey(part{text: "<computed>"}, "", tPunct)
			return
		}
		if chainPrev && p.st.chainOK && len(p.st.chain) < MaxNameParts {
			var q part
			switch {
			case ntok == 1 && one.kind == tIdent:
				p.st.chain = append(p.st.chain, part{text: "["}, part{start: int32(one.start), end: int32(one.end)}, part{text: "]"})
				return
			case ntok == 1 && (one.kind == tNum || one.kind == tStr):
				q = part{text: "[" + s.literal(one) + "]"}
			default:
				q = part{text: "[<computed>]"}
			}
			p.st.chain = append(p.st.chain, q)
			return
		}
	}
	p.st.chainOK = false
}

// literal is a string or number literal as Rust's Debug and Display print
// its value ("a" and 1.5), as js-source-scopes writes computed members.
func (s *scanner) literal(t token) string {
	raw := s.word(t)
	if t.kind == tStr {
		if len(raw) < 2 || raw[len(raw)-1] != raw[0] {
			return raw
		}
		inner := raw[1 : len(raw)-1]
		if raw[0] == '\'' {
			inner = strings.ReplaceAll(strings.ReplaceAll(inner, `\'`, `'`), `"`, `\"`)
		}
		v, err := strconv.Unquote(`"` + inner + `"`)
		if err != nil {
			return raw
		}
		return strconv.Quote(v)
	}
	return numberText(raw)
}

// numberText is a numeric literal's value as Rust prints an f64 (1.7, 42)
// or a BigInt (42n).
func numberText(raw string) string {
	clean := strings.ReplaceAll(raw, "_", "")
	if len(clean) > 64 {
		return raw
	}
	if strings.HasSuffix(clean, "n") {
		var b big.Int
		if _, ok := b.SetString(clean[:len(clean)-1], 0); ok {
			return b.String() + "n"
		}
		return raw
	}
	if len(clean) > 2 && clean[0] == '0' && strings.ContainsAny(clean[1:2], "xXoObB") {
		if v, err := strconv.ParseUint(clean, 0, 64); err == nil {
			return strconv.FormatUint(v, 10)
		}
		return raw
	}
	if v, err := strconv.ParseFloat(clean, 64); err == nil {
		return strconv.FormatFloat(v, 'f', -1, 64)
	}
	return raw
}

// note records t as f's last token.
func (f *frame) note(t token, word string) {
	f.prev, f.last = f.last, tokInfo{kind: t.kind, start: t.start, word: word}
	f.lastEnd = t.end
	if f.ntok == 0 {
		f.one = t
	}
	f.ntok++
}

// blockLike frames hold statements.
func (f *frame) blockLike() bool {
	return f.kind == fTop || f.kind == fBlock || f.kind == fBody || f.kind == fCtor
}

// named tells a frame that may add to a name or end its walk.
func (f *frame) named() bool {
	return f.st.hasAssign || f.kind == fObject || f.kind == fClass || f.stops()
}

// stops tells the frames where a name's walk ends: the body or the
// parameters of another function.
func (f *frame) stops() bool {
	return f.kind == fBody || f.kind == fCtor || f.kind == fParams || f.kind == fArrowExpr
}

// token reads one token.
func (s *scanner) token(t token) {
	f := s.top()
	for f.kind == fArrowExpr && s.endsArrowExpr(f, t) {
		s.pop(f.lastEnd)
		f = s.top()
	}
	if f.pend.stage != pNone && s.pending(f, t) {
		return
	}
	f = s.top()
	if f.kind == fObject && f.mem.atKey && s.objectMember(f, t) {
		return
	}
	if f.kind == fClass && !f.mem.inInit && s.classMember(f, t) {
		return
	}
	if f.kind == fClass && f.mem.inInit && (s.isPunct(t, ";") || t.nl && f.ntok > 0 && canEnd(f.last) && startsMember(t)) {
		f.mem = member{atKey: true}
		f.st.reset()
		if s.isPunct(t, ";") {
			f.note(t, "")
			s.regexOK = true
			return
		}
		s.classMember(f, t)
		return
	}
	stmt := f.stmt
	f.stmt = false
	afterDot := f.st.afterDot
	f.st.afterDot = false
	switch t.kind {
	case tIdent:
		s.ident(f, t, stmt, afterDot)
	case tTemplateHead:
		f.note(t, "")
		f.st.chainOK = false
		s.push(fTemplate, t.end-2, -1)
		s.regexOK = true
	case tPunct:
		s.punct(f, t, stmt)
	default:
		f.note(t, "")
		f.st.chainOK = false
		s.regexOK = false
	}
}

// endsArrowExpr reports whether t is past the end of the expression body
// of an arrow function: a comma, a semicolon, a colon outside its own ?:,
// a closing bracket it did not open, or a line break where the expression
// cannot go on.
func (s *scanner) endsArrowExpr(f *frame, t token) bool {
	if t.kind == tPunct {
		switch s.word(t) {
		case ",", ";", ")", "]", "}":
			return true
		case ":":
			return f.ternary == 0
		}
	}
	return t.nl && f.ntok > 0 && canEnd(f.last) && startsMember(t)
}

// canEnd tells a token that may end an expression.
func canEnd(i tokInfo) bool {
	switch i.kind {
	case tIdent:
		return !isOperatorWord(i.word)
	case tPunct:
		return i.punct != 0
	}
	return i.kind != tEOF
}

// startsMember tells a token that cannot continue an expression after a
// line break (where a semicolon is inserted).
func startsMember(t token) bool {
	return t.kind == tIdent || t.kind == tPrivate || t.kind == tNum || t.kind == tStr
}

func isOperatorWord(w string) bool {
	switch w {
	case "in", "of", "instanceof", "typeof", "void", "delete", "new", "return", "throw",
		"case", "do", "else", "yield", "await", "extends":
		return true
	}
	return false
}

// statementWords end what an expression before them said.
func isStatementWord(w string) bool {
	switch w {
	case "return", "throw", "var", "let", "const", "if", "for", "while", "do", "else", "try",
		"finally", "switch", "case", "default", "break", "continue", "with", "catch",
		"import", "export", "debugger":
		return true
	}
	return false
}

func (s *scanner) ident(f *frame, t token, stmt, afterDot bool) {
	w := s.keyword(t)
	if afterDot {
		f.note(t, "")
		// A chain longer than a name may be names nothing: it is not kept.
		f.st.chainOK = f.st.chainOK && len(f.st.chain) < MaxNameParts
		if f.st.chainOK {
			f.st.chain = append(f.st.chain, part{text: "."}, part{start: int32(t.start), end: int32(t.end)})
		}
		s.regexOK = false
		return
	}
	switch w {
	case "function":
		s.startFunction(f, t, stmt)
		return
	case "class":
		s.startClass(f, t, stmt)
		return
	case "this":
		f.st.chain = append(f.st.chain[:0], part{text: "this"})
		f.st.chainOK = true
	default:
		switch {
		case isStatementWord(w):
			f.st.reset()
			f.stmt = w == "else" || w == "do" || w == "try" || w == "finally" || w == "catch"
		case isOperatorWord(w):
			f.st.chainOK = false
		default:
			f.st.chain = append(f.st.chain[:0], part{start: int32(t.start), end: int32(t.end)})
			f.st.chainOK = true
		}
	}
	keep := ""
	switch w {
	case "async", "if", "for", "while", "with", "switch", "catch":
		keep = w
	default:
		if isOperatorWord(w) {
			keep = w
		}
	}
	f.note(t, keep)
	s.regexOK = isOperatorWord(w)
}

func (s *scanner) punct(f *frame, t token, stmt bool) {
	w := s.word(t)
	switch w {
	case "{":
		f.note(t, "")
		switch {
		case f.pend.stage == pClass:
			s.classBody(f, t)
		case stmt && f.blockLike():
			f.st.reset()
			s.push(fBlock, t.start, -1)
		default:
			f.st.chainOK = false
			s.push(fObject, t.start, -1)
		}
		s.regexOK = true
		return
	case "(":
		kind := fParen
		switch f.last.word {
		case "if", "for", "while", "with", "switch", "catch":
			if f.last.kind == tIdent && f.ntok > 0 {
				kind = fHeader
			}
		}
		f.note(t, "")
		f.st.chainOK = false
		s.push(kind, t.start, -1)
		s.regexOK = true
		return
	case "[":
		prev := f.st.chainOK
		f.note(t, "")
		if b := s.push(fBracket, t.start, -1); b != nil {
			b.chainPrev = prev
		}
		s.regexOK = true
		return
	case "}", ")", "]":
		s.close(f, t)
		return
	case "=>":
		s.arrow(f, t)
		f.note(t, "")
		s.regexOK = true
		return
	}
	f.note(t, "")
	s.regexOK = w != "++" && w != "--"
	switch w {
	case ";":
		f.st.reset()
		f.ternary = 0
		f.stmt = f.blockLike()
	case ",":
		f.st.hasAssign, f.st.hasKey, f.st.chainOK = false, false, false
		f.ternary = 0
		if f.kind == fObject {
			f.mem = member{atKey: true}
		}
	case "?":
		f.ternary++
		f.st.chainOK = false
	case ":":
		switch {
		case f.ternary > 0:
			f.ternary--
		case f.blockLike():
			f.st.reset() // a label, or case x:
			f.stmt = true
		}
		f.st.chainOK = false
	case ".", "?.":
		f.st.afterDot = true
		if w == "?." {
			f.st.chainOK = false
		}
	case "=", "+=", "-=", "*=", "/=", "%=", "**=", "<<=", ">>=", ">>>=", "&=", "|=", "^=", "&&=", "||=", "??=":
		if f.st.chainOK && !f.noAssign {
			f.st.assign = append([]part(nil), f.st.chain...)
			f.st.hasAssign = true
		}
		f.st.chainOK = false
	default:
		f.st.chainOK = false
	}
}

// close reads a closing bracket: it closes the frame it belongs to, the
// frames above that one too when they were left open (at most a few:
// beyond, the bracket is ignored).
func (s *scanner) close(f *frame, t token) {
	want := func(k frameKind) bool {
		switch s.lex.src[t.start] {
		case '}':
			return k == fBlock || k == fBody || k == fCtor || k == fObject || k == fClass || k == fTemplate
		case ')':
			return k == fParen || k == fParams || k == fHeader
		}
		return k == fBracket
	}
	n := len(s.frames)
	i := n - 1
	for ; i > 0 && i >= n-8; i-- {
		if want(s.frames[i].kind) {
			break
		}
	}
	if i <= 0 || i < n-8 {
		f.note(t, "")
		s.regexOK = false
		return // a stray bracket
	}
	for len(s.frames)-1 > i {
		s.pop(t.start)
	}
	if s.top().kind == fTemplate {
		s.frames = s.frames[:len(s.frames)-1]
		tail := s.lex.templateTail(t.nl)
		p := s.top()
		if tail.kind == tTemplateHead {
			s.push(fTemplate, tail.end-2, -1)
			s.regexOK = true
			return
		}
		p.note(tail, "")
		p.st.chainOK = false
		s.regexOK = false
		return
	}
	s.pop(t.end)
}

// newScope starts a scope at byte start named by the parts in rev
// (reversed): false when a bound is reached.
func (s *scanner) newScope(start int, rev []part, addNew bool) int {
	if len(s.scopes) >= MaxScopes {
		s.stop(start)
		return -1
	}
	p0 := len(s.parts)
	if addNew && len(rev) > 0 {
		rev = append(rev, part{text: "new "})
	}
	size := 0
	for _, p := range rev {
		if p.isIdent() {
			size += int(p.end - p.start)
		} else {
			size += len(p.text)
		}
	}
	if len(rev) > MaxNameParts || size > MaxNameBytes {
		rev = rev[:0] // kept unnamed
		size = 0
	}
	if len(s.parts)+len(rev) > MaxParts || s.text+size > MaxTextBytes {
		s.stop(start)
		return -1
	}
	for i := len(rev) - 1; i >= 0; i-- {
		s.parts = append(s.parts, rev[i])
	}
	s.text += size
	s.scopes = append(s.scopes, built{start: start, end: -1, p0: p0, p1: len(s.parts)})
	return len(s.scopes) - 1
}

// rename gives scope i the identifier ident in place of its name's last
// part, as name_from_ident_or_ctx does.
func (s *scanner) rename(i int, ident part) {
	if i < 0 {
		return
	}
	b := &s.scopes[i]
	if b.p1 != len(s.parts) {
		return
	}
	if b.p1 > b.p0 {
		s.parts = s.parts[:len(s.parts)-1]
	}
	s.parts = append(s.parts, ident)
	b.p1 = len(s.parts)
}

// walk returns the name of a function found now in frame i, rev the parts
// found below it (reversed), as js-source-scopes' infer_name_from_ctx walks
// a node's ancestors: the innermost assignment or declaration ends it (x
// = or a.b =), object keys add to it, classes name their members, and the
// body of another function ends it.
func (s *scanner) walk(i int, rev []part, kind uint8) []part {
	sep := func() {
		if len(rev) > 0 {
			rev = append(rev, part{text: "."})
		}
	}
	inObj := false
	for ; i >= 0; i-- {
		if len(rev) > MaxNameParts {
			return rev // too long a name: newScope leaves it out
		}
		s.walked++
		f := &s.frames[i]
		if f.st.hasAssign {
			sep()
			for j := len(f.st.assign) - 1; j >= 0; j-- {
				rev = append(rev, f.st.assign[j])
			}
			return prefixKind(rev, kind)
		}
		switch f.kind {
		case fObject:
			if f.st.hasKey {
				sep()
				rev = append(rev, f.st.key)
			}
			inObj = true
		case fClass:
			if f.cls.hasName {
				sep()
				rev = append(rev, f.cls.name)
			}
			if f.cls.decl {
				return prefixKind(rev, kind)
			}
		}
		if f.stops() || i == 0 {
			break
		}
		i = f.up + 1 // the loop's i-- makes it f.up
	}
	if inObj && len(rev) > 0 {
		rev = append(rev, part{text: "<object>."})
	}
	return prefixKind(rev, kind)
}

func prefixKind(rev []part, kind uint8) []part {
	switch kind {
	case kGetter:
		rev = append(rev, part{text: "get "})
	case kSetter:
		rev = append(rev, part{text: "set "})
	}
	return rev
}

// startFunction reads the keyword function.
func (s *scanner) startFunction(f *frame, t token, stmt bool) {
	start := t.start
	if f.last.word == "async" && f.ntok > 0 {
		start = f.last.start
	}
	if stmt {
		f.st.reset()
	}
	f.note(t, "")
	f.st.chainOK = false
	i := s.newScope(start, s.walk(len(s.frames)-1, s.rev[:0], kMethod), false)
	f.pend = pending{stage: pFnName, scope: i, cls: classInfo{decl: stmt}}
	s.regexOK = false
}

// startClass reads the keyword class.
func (s *scanner) startClass(f *frame, t token, stmt bool) {
	if stmt {
		f.st.reset()
	}
	f.note(t, "")
	f.st.chainOK = false
	f.pend = pending{stage: pClass, scope: -1, cls: classInfo{decl: stmt}, first: true, start: t.start}
	s.regexOK = false
}

// classBody opens the body of the class pending in f.
func (s *scanner) classBody(f *frame, t token) {
	c := f.pend.cls
	c.start = f.pend.start
	f.pend = pending{}
	rev := s.rev[:0]
	if c.hasName {
		rev = append(rev, c.name)
	}
	if !c.decl {
		rev = s.walk(len(s.frames)-1, rev, kMethod)
	}
	i := s.newScope(c.start, rev, true)
	if b := s.push(fClass, t.start, i); b != nil {
		b.cls, b.declBody = c, c.decl
	}
}

// pending reads t as the next part of the function, arrow or class f
// waits for; false when t is not read here.
func (s *scanner) pending(f *frame, t token) bool {
	p := &f.pend
	switch p.stage {
	case pFnName:
		switch {
		case s.isPunct(t, "*"):
			f.note(t, "")
			return true
		case t.kind == tIdent && !p.named:
			s.rename(p.scope, part{start: int32(t.start), end: int32(t.end)})
			p.named = true
			f.note(t, "")
			return true
		case s.isPunct(t, "("):
			f.note(t, "")
			s.push(fParams, t.start, -1)
			s.regexOK = true
			return true // the stage moves on when the parameters close
		}
	case pAfterParams:
		if s.isPunct(t, "{") {
			scope, ctor, decl := p.scope, p.ctor, p.cls.decl
			f.note(t, "")
			kind := fBody
			switch {
			case ctor:
				kind = fCtor
			case p.getter:
				kind = fBlock
			}
			f.pend = pending{}
			if b := s.push(kind, t.start, scope); b != nil {
				b.declBody = decl
			}
			s.regexOK = true
			return true
		}
	case pArrowBody:
		scope := p.scope
		f.pend = pending{}
		if s.isPunct(t, "{") {
			f.note(t, "")
			s.push(fBody, t.start, scope)
			s.regexOK = true
			return true
		}
		if b := s.push(fArrowExpr, t.start, scope); b != nil {
			b.lastEnd = t.start
		}
		return false
	case pClass:
		first := p.first
		p.first = false
		if first && t.kind == tIdent && s.word(t) != "extends" {
			p.cls.name, p.cls.hasName = part{start: int32(t.start), end: int32(t.end)}, true
			f.note(t, "")
			return true
		}
		return false // the heritage, or the body's {
	}
	// What the file holds is no function: forget it.
	if i := p.scope; i >= 0 && s.scopes[i].end < 0 {
		s.scopes[i].end = -2 // dropped
	}
	f.pend = pending{}
	return false
}

// arrow reads =>: its parameters are f's last token (an identifier or a
// parenthesized group), after async maybe.
func (s *scanner) arrow(f *frame, t token) {
	params := f.last
	start := -1
	switch {
	case f.ntok == 0:
	case params.kind == tIdent && (params.word == "" || params.word == "async"):
		start = params.start
	case params.kind == tPunct && params.punct == ')':
		start = params.start
	}
	if start < 0 {
		return
	}
	if f.ntok > 1 && f.prev.kind == tIdent && f.prev.word == "async" {
		start = f.prev.start
	}
	f.st.chainOK = false
	i := s.newScope(start, s.walk(len(s.frames)-1, s.rev[:0], kMethod), false)
	f.pend = pending{stage: pArrowBody, scope: i}
}
