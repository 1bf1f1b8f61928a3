package jsscope

import (
	"bytes"
	"unicode"
	"unicode/utf8"
)

// tokKind is what a token is.
type tokKind uint8

const (
	tEOF     tokKind = iota
	tIdent           // an identifier or a keyword
	tPrivate         // #name
	tNum
	tStr
	tTemplate     // a template literal, or its part after the last ${}
	tTemplateHead // a template literal up to a ${, or a part between two
	tRegex
	tPunct
)

// token is a token of the source: its kind, bytes, and whether a line
// break comes before it.
type token struct {
	kind       tokKind
	start, end int
	nl         bool
}

// lexer cuts JavaScript into tokens. It never fails: text it cannot read
// (an unterminated string, a stray byte) becomes some token, and every
// call advances unless at the end.
type lexer struct {
	src []byte
	pos int
}

// next returns the next token; regexOK says a / there starts a regular
// expression rather than a division.
func (l *lexer) next(regexOK bool) token {
	nl := l.skipSpace()
	t := token{start: l.pos, nl: nl}
	if l.pos >= len(l.src) {
		t.kind, t.end = tEOF, l.pos
		return t
	}
	c := l.src[l.pos]
	switch {
	case isIdentByte(c) && !isDigit(c) || c == '\\' || c >= utf8.RuneSelf && l.identRuneAt(l.pos):
		l.ident()
		t.kind = tIdent
	case c == '#' && l.pos+1 < len(l.src) && (isIdentByte(l.src[l.pos+1]) || l.src[l.pos+1] >= utf8.RuneSelf):
		l.pos++
		l.ident()
		t.kind = tPrivate
	case isDigit(c) || c == '.' && l.pos+1 < len(l.src) && isDigit(l.src[l.pos+1]):
		l.number()
		t.kind = tNum
	case c == '"' || c == '\'':
		l.str(c)
		t.kind = tStr
	case c == '`':
		l.pos++
		t.kind = l.template()
	case c == '/' && regexOK:
		l.regex()
		t.kind = tRegex
	default:
		l.punct()
		t.kind = tPunct
	}
	t.end = l.pos
	return t
}

// templateTail reads the part of a template literal after a ${}
// expression, whose } was the last token.
func (l *lexer) templateTail(nl bool) token {
	t := token{start: l.pos - 1, nl: nl}
	t.kind = l.template()
	t.end = l.pos
	return t
}

// skipSpace skips white space and comments, reporting a line break.
func (l *lexer) skipSpace() (nl bool) {
	if l.pos == 0 && bytes.HasPrefix(l.src, []byte("#!")) {
		l.skipLine()
	}
	for l.pos < len(l.src) {
		c := l.src[l.pos]
		switch {
		case c == '\n' || c == '\r':
			nl = true
			l.pos++
		case c == ' ' || c == '\t' || c == '\v' || c == '\f':
			l.pos++
		case c == '/' && l.pos+1 < len(l.src) && l.src[l.pos+1] == '/':
			l.skipLine()
		case c == '/' && l.pos+1 < len(l.src) && l.src[l.pos+1] == '*':
			rest := l.src[l.pos+2:]
			end := bytes.Index(rest, []byte("*/"))
			if end < 0 {
				end = len(rest) // unterminated: the rest is comment
			}
			if bytes.ContainsAny(rest[:end], "\n\r") {
				nl = true
			}
			l.pos = min(l.pos+2+end+2, len(l.src))
		case c >= utf8.RuneSelf:
			r, n := utf8.DecodeRune(l.src[l.pos:])
			switch {
			case r == 0x2028 || r == 0x2029:
				nl = true
			case r == 0xFEFF || unicode.IsSpace(r):
			default:
				return nl
			}
			l.pos += n
		default:
			return nl
		}
	}
	return nl
}

func (l *lexer) skipLine() {
	for l.pos < len(l.src) && l.src[l.pos] != '\n' && l.src[l.pos] != '\r' {
		l.pos++
	}
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

func isIdentByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '$'
}

// identRuneAt reports whether the rune at i continues an identifier.
func (l *lexer) identRuneAt(i int) bool {
	r, _ := utf8.DecodeRune(l.src[i:])
	return r == 0x200C || r == 0x200D || unicode.IsLetter(r) || unicode.IsDigit(r) ||
		unicode.Is(unicode.Mn, r) || unicode.Is(unicode.Mc, r) || unicode.Is(unicode.Pc, r) || unicode.Is(unicode.Nl, r)
}

// ident reads an identifier, its \u escapes included.
func (l *lexer) ident() {
	start := l.pos
	for l.pos < len(l.src) {
		c := l.src[l.pos]
		switch {
		case isIdentByte(c):
			l.pos++
		case c == '\\':
			// \uXXXX or \u{X...}
			l.pos++
			if l.pos < len(l.src) && l.src[l.pos] == 'u' {
				l.pos++
			}
			if l.pos < len(l.src) && l.src[l.pos] == '{' {
				for l.pos < len(l.src) && l.src[l.pos] != '}' && l.pos-start < 64 {
					l.pos++
				}
				if l.pos < len(l.src) && l.src[l.pos] == '}' {
					l.pos++
				}
			}
		case c >= utf8.RuneSelf && l.identRuneAt(l.pos):
			_, n := utf8.DecodeRune(l.src[l.pos:])
			l.pos += n
		default:
			return
		}
	}
}

// number reads a numeric literal, its BigInt suffix included.
func (l *lexer) number() {
	s := l.src
	if s[l.pos] == '0' && l.pos+1 < len(s) && bytes.IndexByte([]byte("xXoObB"), s[l.pos+1]) >= 0 {
		l.pos += 2
		for l.pos < len(s) && isIdentByte(s[l.pos]) {
			l.pos++
		}
		return
	}
	digits := func() {
		for l.pos < len(s) && (isDigit(s[l.pos]) || s[l.pos] == '_') {
			l.pos++
		}
	}
	digits()
	if l.pos < len(s) && s[l.pos] == '.' {
		l.pos++
		digits()
	}
	if l.pos < len(s) && (s[l.pos] == 'e' || s[l.pos] == 'E') {
		l.pos++
		if l.pos < len(s) && (s[l.pos] == '+' || s[l.pos] == '-') {
			l.pos++
		}
		digits()
	}
	// A BigInt's n, or letters that make it invalid: one token.
	for l.pos < len(s) && isIdentByte(s[l.pos]) {
		l.pos++
	}
}

// str reads a string literal quoted by q; an unterminated one ends at its
// line's end.
func (l *lexer) str(q byte) {
	l.pos++
	for l.pos < len(l.src) {
		switch c := l.src[l.pos]; c {
		case '\\':
			l.pos += 2
			if l.pos < len(l.src) && l.src[l.pos-1] == '\r' && l.src[l.pos] == '\n' {
				l.pos++
			}
		case q:
			l.pos++
			return
		case '\n', '\r':
			return
		default:
			l.pos++
		}
	}
	l.pos = min(l.pos, len(l.src))
}

// template reads a template literal's text, after its ` or }, to its end
// (tTemplate) or to a ${ (tTemplateHead).
func (l *lexer) template() tokKind {
	for l.pos < len(l.src) {
		switch l.src[l.pos] {
		case '\\':
			l.pos += 2
		case '`':
			l.pos++
			return tTemplate
		case '$':
			l.pos++
			if l.pos < len(l.src) && l.src[l.pos] == '{' {
				l.pos++
				return tTemplateHead
			}
		default:
			l.pos++
		}
	}
	l.pos = min(l.pos, len(l.src))
	return tTemplate
}

// regex reads a regular expression literal and its flags; an
// unterminated one ends at its line's end.
func (l *lexer) regex() {
	l.pos++
	class := false
loop:
	for l.pos < len(l.src) {
		switch l.src[l.pos] {
		case '\\':
			l.pos += 2
		case '[':
			class = true
			l.pos++
		case ']':
			class = false
			l.pos++
		case '/':
			l.pos++
			if !class {
				break loop
			}
		case '\n', '\r':
			break loop
		default:
			l.pos++
		}
	}
	l.pos = min(l.pos, len(l.src))
	for l.pos < len(l.src) && isIdentByte(l.src[l.pos]) {
		l.pos++
	}
}

// puncts are the punctuators of more than one byte, longest first.
var puncts = [][]byte{
	[]byte(">>>="),
	[]byte("..."), []byte("==="), []byte("!=="), []byte("**="), []byte("<<="), []byte(">>="),
	[]byte(">>>"), []byte("&&="), []byte("||="), []byte("??="),
	[]byte("=>"), []byte("=="), []byte("!="), []byte("<="), []byte(">="), []byte("&&"),
	[]byte("||"), []byte("??"), []byte("?."), []byte("++"), []byte("--"), []byte("+="),
	[]byte("-="), []byte("*="), []byte("/="), []byte("%="), []byte("&="), []byte("|="),
	[]byte("^="), []byte("**"), []byte("<<"), []byte(">>"),
}

// punctsBy are puncts by their first byte.
var punctsBy = func() (by [256][][]byte) {
	for _, p := range puncts {
		by[p[0]] = append(by[p[0]], p)
	}
	return by
}()

// punct reads a punctuator, or one rune that is no token of JavaScript.
func (l *lexer) punct() {
	rest := l.src[l.pos:]
	for _, p := range punctsBy[rest[0]] {
		if bytes.HasPrefix(rest, p) {
			if p[0] == '?' && p[1] == '.' && len(rest) > 2 && isDigit(rest[2]) {
				continue // a ? .5 : 1
			}
			l.pos += len(p)
			return
		}
	}
	_, n := utf8.DecodeRune(rest)
	l.pos += n
}
