package pages

import (
	"strconv"
	"strings"

	"errata/handlers/symbolication"
)

// Kinds of stack trace, each resolved by its route of the resolution API
// (docs/resolution.md).
const (
	kindJS     = "js"     // symbolicate-js/
	kindJVM    = "jvm"    // symbolicate-jvm/
	kindNative = "native" // symbolicate/
)

// maxTextFrames bounds the frames (and Java stack traces) read from a
// pasted text: one more than the API takes (docs/resolution.md, "At most
// 10,000 frames"), so that the API answers a longer trace with its own
// message, and the parse of a hostile text stops there.
const maxTextFrames = symbolication.MaxFrames + 1

// textTrace is a stack trace read from text, its frames innermost first
// as the runtime printed them.
type textTrace struct {
	// Exception is the class of a Java exception ("Caused by: ..."
	// starts another trace), "" for JavaScript.
	Exception string
	// Message is what the runtime printed of the error before its
	// frames: JavaScript's "Error: ..." line, Java's exception message.
	Message string
	Frames  []textFrame
}

// textFrame is one frame of a text trace: a JavaScript frame's function,
// URL, line and column; a Java frame's class (Module), method
// (Function), file and line.
type textFrame struct {
	Function, AbsPath string
	Module, Filename  string
	Line, Col         int64 // 0: none printed
}

// parseStackTrace reads a JavaScript (V8 and Node's "at f (url:1:2)",
// Firefox and Safari's "f@url:1:2") or Java ("\tat a.b.C.m(File.java:3)",
// "Caused by: ...") stack trace from text. The kind is Java when Java's
// frames are the most of those read. It reads at most maxTextFrames
// frames and stack traces together, and errs with a message for a person
// when it finds no frame.
func parseStackTrace(text string) (string, []textTrace, error) {
	var js, java []textTrace
	jsFrames, javaFrames, n := 0, 0, 0
	var message string // the first line that is no frame
	for rest := text; rest != "" && n < maxTextFrames; {
		var line string
		line, rest, _ = strings.Cut(rest, "\n")
		line = strings.TrimSpace(strings.TrimSuffix(line, "\r"))
		if line == "" {
			continue
		}
		if f, ok := javaFrame(line); ok {
			if len(java) == 0 {
				java = append(java, textTrace{})
			}
			t := &java[len(java)-1]
			t.Frames = append(t.Frames, f)
			javaFrames++
			n++
			continue
		}
		if f, ok := jsFrame(line); ok {
			if len(js) == 0 {
				js = append(js, textTrace{Message: message})
			}
			js[0].Frames = append(js[0].Frames, f)
			jsFrames++
			n++
			continue
		}
		if message == "" {
			message = line
		}
		if strings.HasPrefix(line, "...") { // Java's "... 3 more"
			continue
		}
		cause, isCause := strings.CutPrefix(line, "Caused by: ")
		if !isCause {
			cause, isCause = strings.CutPrefix(line, "Suppressed: ")
		}
		switch {
		case isCause:
			java = append(java, javaException(cause))
			n++
		case len(java) == 0:
			// The first line: "java.lang.X: msg", or "Exception in
			// thread "main" java.lang.X: msg" as the JVM prints it.
			if _, after, ok := strings.Cut(line, `" `); ok && strings.HasPrefix(line, "Exception in thread \"") {
				line = after
			}
			if isClassName(className(line)) {
				java = append(java, javaException(line))
			}
		}
	}
	switch {
	case javaFrames > 0 && javaFrames >= jsFrames:
		// Traces without frames (a cause whose frames are all "... n
		// more") say nothing to resolve.
		kept := java[:0]
		for _, t := range java {
			if len(t.Frames) > 0 {
				kept = append(kept, t)
			}
		}
		return kindJVM, kept, nil
	case jsFrames > 0:
		return kindJS, js, nil
	}
	return "", nil, errNoFrames
}

// parseError is a message for the person who pasted a stack trace.
type parseError string

func (e parseError) Error() string { return string(e) }

const errNoFrames = parseError("No stack frames found in the text. Paste a JavaScript stack trace " +
	"(\"at f (https://example.com/app.min.js:1:2)\" or \"f@https://example.com/app.min.js:1:2\"), a Java " +
	"stack trace (\"at a.b.C.m(SourceFile:3)\"), or the JSON of a resolution request.")

// javaException reads an exception line "a.b.C: message" (or "a.b.C").
func javaException(line string) textTrace {
	name := className(line)
	_, msg, _ := strings.Cut(line, ": ")
	return textTrace{Exception: name, Message: msg}
}

// className is the class name an exception line starts with.
func className(line string) string {
	name, _, _ := strings.Cut(line, ":")
	return strings.TrimSpace(name)
}

// isClassName says whether s looks like a Java class name: identifier
// characters and dots, with at least one dot (a bare word is a message).
func isClassName(s string) bool {
	if s == "" || !strings.Contains(s, ".") || strings.HasPrefix(s, ".") || strings.HasSuffix(s, ".") {
		return false
	}
	for _, r := range s {
		if !(r == '.' || r == '$' || r == '_' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r > 0x7f) {
			return false
		}
	}
	return true
}

// javaFrame reads "at a.b.C.m(File.java:3)" as the JVM prints it, also
// with a class loader or module before a "/" ("at java.base/java.lang.
// Thread.run(Thread.java:833)"), "(Unknown Source)" and "(Native
// Method)".
func javaFrame(line string) (textFrame, bool) {
	rest, ok := strings.CutPrefix(line, "at ")
	if !ok || !strings.HasSuffix(rest, ")") {
		return textFrame{}, false
	}
	open := strings.IndexByte(rest, '(')
	if open <= 0 {
		return textFrame{}, false
	}
	qualified, where := rest[:open], rest[open+1:len(rest)-1]
	if i := strings.LastIndexByte(qualified, '/'); i >= 0 {
		qualified = qualified[i+1:]
	}
	dot := strings.LastIndexByte(qualified, '.')
	if dot <= 0 || !isClassName(qualified[:dot]) || !isJavaMethod(qualified[dot+1:]) {
		return textFrame{}, false
	}
	f := textFrame{Module: qualified[:dot], Function: qualified[dot+1:]}
	file, line2, hasLine := strings.Cut(where, ":")
	if file != "Unknown Source" && file != "Native Method" {
		f.Filename = file
	}
	if hasLine {
		n, err := strconv.ParseInt(line2, 10, 64)
		if err != nil || n < 0 {
			return textFrame{}, false
		}
		f.Line = n
	}
	return f, true
}

// isJavaMethod says whether s is a method's name as a stack trace prints
// it ("m", "<init>", "lambda$m$0").
func isJavaMethod(s string) bool {
	if s == "<init>" || s == "<clinit>" {
		return true
	}
	return s != "" && !strings.Contains(s, ".") && isClassName("a."+s)
}

// jsFrame reads a JavaScript frame: V8's "at f (url:1:2)", "at url:1:2",
// "at async f (url:1:2)", "at f (eval at g (url:1:2), <anonymous>:1:3)",
// "at f (native)"; Firefox's and Safari's "f@url:1:2" and "@url:1:2".
// The decorations of Firefox's evals are the API's to read
// (docs/resolution.md, "Decorations").
func jsFrame(line string) (textFrame, bool) {
	if rest, ok := strings.CutPrefix(line, "at "); ok {
		var f textFrame
		loc := rest
		if strings.HasSuffix(rest, ")") {
			if i := strings.Index(rest, " ("); i > 0 {
				f.Function, loc = rest[:i], rest[i+2:len(rest)-1]
			}
		}
		f.Function = strings.TrimPrefix(f.Function, "async ")
		loc = strings.TrimPrefix(loc, "async ")
		if strings.HasPrefix(loc, "eval at ") {
			// An eval's frame is its call site's, the innermost
			// "(url:line:col)" of its chain of evals.
			if open := strings.LastIndexByte(loc, '('); open >= 0 {
				if end := strings.IndexByte(loc[open:], ')'); end > 0 {
					loc = loc[open+1 : open+end]
				}
			}
		}
		f.AbsPath, f.Line, f.Col = position(loc)
		// A frame without a position is V8's "<anonymous>" or "native"
		// (a built-in function); other text after "at " is no frame.
		if f.Line == 0 && loc != "<anonymous>" && loc != "native" || f.AbsPath == "" {
			return textFrame{}, false
		}
		return f, true
	}
	at := strings.IndexByte(line, '@')
	if at < 0 {
		return textFrame{}, false
	}
	path, ln, col := position(line[at+1:])
	if ln == 0 || path == "" {
		return textFrame{}, false
	}
	return textFrame{Function: line[:at], AbsPath: path, Line: ln, Col: col}, true
}

// position splits "url:line:col" (or "url:line", or a URL alone) into
// its parts; a missing line or column is 0. A number out of range makes
// no position: "", 0, 0.
func position(loc string) (string, int64, int64) {
	bad := false
	last := func(s string) (string, int64, bool) {
		i := strings.LastIndexByte(s, ':')
		if i < 0 || s[i+1:] == "" || strings.Trim(s[i+1:], "0123456789") != "" {
			return s, 0, false
		}
		n, err := strconv.ParseInt(s[i+1:], 10, 64)
		if err != nil || n <= 0 {
			bad = true
			return s, 0, false
		}
		return s[:i], n, true
	}
	path, a, ok := last(loc)
	if !ok {
		if bad {
			return "", 0, 0
		}
		return loc, 0, 0
	}
	if p2, b, ok := last(path); ok {
		return p2, b, a
	}
	if bad {
		return "", 0, 0
	}
	return path, a, 0
}
