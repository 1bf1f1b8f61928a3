package pages

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
)

// resolveView is the page "Resolve a stack trace": the form, kept as the
// person filled it, and the answer when there is one.
type resolveView struct {
	Projects               []project
	Project, Release, Text string
	Result                 *resolveResult
}

// project is a project of the organization's list.
type project struct {
	Slug string `json:"slug"`
	Name string `json:"name"`
}

// resolveResult is what the API answered, for the page.
type resolveResult struct {
	Kind   string // "JavaScript", "Java", "Native"
	Route  string // the API's path
	Source string // how the page read the text
	Notes  []string
	// Errors are the answer's errors: a file or mapping of the request
	// that resolved nothing, and why.
	Errors  []string
	Modules []moduleView
	Traces  []traceView
}

// moduleView is a native module of the answer.
type moduleView struct{ File, DebugID, Status, Reason string }

// traceView is a stack trace of the answer, its frames innermost first.
type traceView struct {
	Title              string
	Exception, Message string
	// Obfuscated is the exception's class as sent, when remapped.
	Obfuscated string
	Frames     []frameView
}

// frameView is a frame of the answer.
type frameView struct {
	Status   string
	Resolved bool
	Function string
	Where    string // file:line:col
	AbsPath  string // when it says more than Where
	Sent     string // the frame as sent: minified or obfuscated
	SentAs   string // what Sent is: "Minified", "Obfuscated", "Address"
	InApp    string
	Notes    []string
	Context  []contextLine
}

// contextLine is a line of a frame's source context.
type contextLine struct {
	Number  int64
	Text    string
	Current bool
}

// Resolve serves GET and POST /organizations/{organization_slug}/resolve/:
// a form to paste a stack trace (a plain-text JavaScript or Java trace,
// or the JSON a resolution route takes) and pick the project and
// release, and the trace resolved by the API's resolution route
// (docs/resolution.md), every frame with its status and source context.
func (p *Pages) Resolve(v *Visit) error {
	org := v.R.PathValue("organization_slug")
	var info organization
	if _, err := v.Call("GET", "/api/0/organizations/"+url.PathEscape(org)+"/", nil, &info); err != nil {
		return err
	}
	view := View{Title: "Resolve a stack trace", Org: org, OrgName: info.Name}
	var projects []project
	if _, err := v.Call("GET", "/api/0/organizations/"+url.PathEscape(org)+"/projects/?per_page=100", nil, &projects); err != nil {
		return err
	}
	form := resolveView{Projects: projects}
	if v.R.Method != http.MethodPost {
		if len(projects) > 0 {
			form.Project = projects[0].Slug
		}
		view.Data = form
		return v.Render("resolve.html", view)
	}
	form.Project = v.Form("project")
	form.Release = strings.TrimSpace(v.Form("release"))
	form.Text = v.Form("stacktrace")
	view.Data = &form
	fail := func(status int, msg string) error {
		view.Error = msg
		return v.RenderStatus(status, "resolve.html", view)
	}
	if !slices.ContainsFunc(projects, func(pr project) bool { return pr.Slug == form.Project }) {
		return fail(http.StatusBadRequest, "Choose a project of the organization.")
	}
	if strings.TrimSpace(form.Text) == "" {
		return fail(http.StatusBadRequest, "Paste a stack trace to resolve.")
	}
	req, err := p.resolveRequest(v, org, form.Project, form.Release, form.Text)
	var pe parseError
	if errors.As(err, &pe) {
		return fail(http.StatusBadRequest, pe.Error())
	}
	if err != nil {
		return formError(err, fail)
	}
	var ans resolveAnswer
	if _, err := v.Call("POST", "/api/0/projects/"+url.PathEscape(org)+"/"+url.PathEscape(form.Project)+"/"+req.route, req.body, &ans); err != nil {
		return formError(err, fail)
	}
	form.Result = req.result(&ans)
	return v.Render("resolve.html", view)
}

// formError shows an API's answer of 4xx on the form, but for those
// every page answers alike (sign-in, not found, not allowed).
func formError(err error, fail func(int, string) error) error {
	var ae *APIError
	if errors.As(err, &ae) && ae.Status < 500 && ae.Status != http.StatusUnauthorized &&
		ae.Status != http.StatusNotFound && ae.Status != http.StatusForbidden {
		return fail(ae.Status, ae.Detail)
	}
	return err
}

// resolveRequest is a request to a resolution route, and what the page
// needs to show its answer.
type resolveRequest struct {
	kind   string
	route  string // symbolicate-js/, symbolicate-jvm/ or symbolicate/
	body   any
	source string
	notes  []string
	// callerFirst says whether the request's frames are outermost first,
	// and so the answer's.
	callerFirst bool
	sent        []sentTrace
	// messages are what the runtime printed of each trace's error.
	messages []string
}

// sentTrace is a stack trace as sent, to show each answered frame
// beside its input frame (by original_index).
type sentTrace struct {
	Exception *exceptionJSON `json:"exception,omitempty"`
	Frames    []sentFrame    `json:"frames"`
}

// sentFrame is a frame of a request, of any route.
type sentFrame struct {
	Function        *string         `json:"function,omitempty"`
	AbsPath         *string         `json:"abs_path,omitempty"`
	Module          *string         `json:"module,omitempty"`
	Filename        *string         `json:"filename,omitempty"`
	Lineno          *int64          `json:"lineno,omitempty"`
	Colno           *int64          `json:"colno,omitempty"`
	InstructionAddr json.RawMessage `json:"instruction_addr,omitempty"`
}

// exceptionJSON is a Java exception as symbolicate-jvm/ takes and
// answers it.
type exceptionJSON struct {
	Type   *string `json:"type"`
	Module *string `json:"module"`
}

// routes are the resolution routes by kind.
var routes = map[string]string{kindJS: "symbolicate-js/", kindJVM: "symbolicate-jvm/", kindNative: "symbolicate/"}

// resolveRequest makes the request of a pasted text: its JSON when it is
// JSON, else the frames of a text trace.
func (p *Pages) resolveRequest(v *Visit, org, proj, release, text string) (*resolveRequest, error) {
	if trimmed := strings.TrimSpace(text); strings.HasPrefix(trimmed, "{") {
		return jsonRequest([]byte(trimmed), release)
	}
	kind, traces, err := parseStackTrace(text)
	if err != nil {
		return nil, err
	}
	// Node and Java print a stack trace innermost first; the resolution
	// routes take frames outermost first (caller_first, their default:
	// docs/resolution.md), so each trace is sent reversed.
	req := &resolveRequest{kind: kind, route: routes[kind], callerFirst: true,
		source: "a plain-text trace, innermost frame first as the runtime prints it"}
	for _, t := range traces {
		st := sentTrace{}
		for _, f := range slices.Backward(t.Frames) {
			st.Frames = append(st.Frames, f.sent(kind))
		}
		if t.Exception != "" {
			st.Exception = splitException(t.Exception)
		}
		req.sent = append(req.sent, st)
		req.messages = append(req.messages, t.Message)
	}
	switch kind {
	case kindJS:
		body := map[string]any{"stacktraces": req.sent}
		if release != "" {
			body["release"] = release
		}
		req.body = body
	case kindJVM:
		modules, notes, err := proguardModules(v, org, proj, release)
		if err != nil {
			return nil, err
		}
		req.notes = notes
		req.body = map[string]any{"stacktraces": req.sent, "modules": modules}
	}
	return req, nil
}

// sent is the request's frame of a text frame.
func (f textFrame) sent(kind string) sentFrame {
	var s sentFrame
	str := func(x string) *string {
		if x == "" {
			return nil
		}
		return &x
	}
	num := func(n int64) *int64 {
		if n == 0 {
			return nil
		}
		return &n
	}
	s.Function, s.Lineno = str(f.Function), num(f.Line)
	if kind == kindJVM {
		s.Module, s.Filename = str(f.Module), str(f.Filename)
	} else {
		s.AbsPath, s.Colno = str(f.AbsPath), num(f.Col)
	}
	return s
}

// splitException is the class a.b.C as symbolicate-jvm/ takes it: type
// C, module a.b.
func splitException(name string) *exceptionJSON {
	i := strings.LastIndexByte(name, '.')
	typ, module := name[i+1:], name[:max(i, 0)]
	return &exceptionJSON{Type: &typ, Module: &module}
}

// maxMappings is how many of the project's newest ProGuard mappings the
// page looks at for a Java text trace.
const maxMappings = 20

// proguardModules picks the ProGuard mappings a Java text trace is
// remapped with (a text trace names none; symbolicate-jvm/ remaps
// through the mappings of the UUIDs it is sent, docs/resolution.md):
// those of the project's newest mappings that were uploaded for release
// (sentry-cli's proguard-artifact-releases), else the newest one; notes
// say which was used.
func proguardModules(v *Visit, org, proj, release string) ([]map[string]string, []string, error) {
	base := "/api/0/projects/" + url.PathEscape(org) + "/" + url.PathEscape(proj) + "/files/"
	var files []struct {
		UUID string `json:"uuid"`
	}
	if _, err := v.Call("GET", base+"dsyms/?file_formats=proguard&per_page="+strconv.Itoa(maxMappings), nil, &files); err != nil {
		return nil, nil, err
	}
	if len(files) == 0 {
		return []map[string]string{}, []string{"The project has no ProGuard mapping: the frames come back as they were sent."}, nil
	}
	var uuids []string
	if release != "" {
		for _, f := range files {
			var rel struct {
				Releases []string `json:"releases"`
			}
			if _, err := v.Call("GET", base+"proguard-artifact-releases/?proguard_uuid="+queryEscape(f.UUID), nil, &rel); err != nil {
				return nil, nil, err
			}
			if slices.Contains(rel.Releases, release) {
				uuids = append(uuids, f.UUID)
			}
		}
	}
	var note string
	switch {
	case len(uuids) > 0:
		note = "Remapped with the ProGuard mapping of release " + release + ": " + strings.Join(uuids, ", ") + "."
	case release != "":
		uuids = []string{files[0].UUID}
		note = "No ProGuard mapping of the project was uploaded for release " + release +
			": remapped with the newest mapping, " + uuids[0] + "."
	default:
		uuids = []string{files[0].UUID}
		note = "Remapped with the project's newest ProGuard mapping, " + uuids[0] +
			". Type a release to use the mapping uploaded for it."
	}
	modules := make([]map[string]string, len(uuids))
	for i, id := range uuids {
		modules[i] = map[string]string{"type": "proguard", "uuid": id}
	}
	return modules, []string{note}, nil
}

// nativeModuleTypes are the module types of symbolicate/.
var nativeModuleTypes = []string{"elf", "macho", "pe", "pe_dotnet", "wasm", "breakpad"}

// jsonRequest reads a pasted request of a resolution route and tells
// which by its shape: addresses or native modules are symbolicate/;
// ProGuard modules, exceptions, or frames with a module and no column are
// symbolicate-jvm/; URLs, columns or source-map modules are
// symbolicate-js/. A JavaScript request without a release takes the
// form's.
func jsonRequest(text []byte, release string) (*resolveRequest, error) {
	var body map[string]json.RawMessage
	dec := json.NewDecoder(bytes.NewReader(text))
	dec.UseNumber()
	if err := dec.Decode(&body); err != nil {
		return nil, parseError("The stack trace looks like JSON but cannot be read: " + err.Error() + ".")
	}
	var shape struct {
		Stacktraces []sentTrace `json:"stacktraces"`
		Modules     []struct {
			Type string `json:"type"`
		} `json:"modules"`
		Options struct {
			FrameOrder string `json:"frame_order"`
		} `json:"options"`
	}
	if err := json.Unmarshal(text, &shape); err != nil {
		return nil, parseError("The JSON is not a request of a resolution route: " + err.Error() + ".")
	}
	kind := ""
	for _, m := range shape.Modules {
		switch {
		case slices.Contains(nativeModuleTypes, m.Type):
			kind = kindNative
		case m.Type == "proguard" && kind == "":
			kind = kindJVM
		case m.Type == "sourcemap" && kind == "":
			kind = kindJS
		}
	}
	if kind == "" && body["exceptions"] != nil {
		kind = kindJVM
	}
	for _, st := range shape.Stacktraces {
		for _, f := range st.Frames {
			switch {
			case kind != "":
			case len(f.InstructionAddr) > 0:
				kind = kindNative
			case f.AbsPath != nil || f.Colno != nil:
				kind = kindJS
			case f.Module != nil:
				kind = kindJVM
			}
		}
	}
	if kind == "" {
		return nil, parseError("The JSON is not a request of a resolution route: it has no stack frames " +
			"with an abs_path (JavaScript), a module (Java) or an instruction_addr (native).")
	}
	if _, ok := body["release"]; kind == kindJS && !ok && release != "" {
		body["release"], _ = json.Marshal(release)
	}
	callerFirst := shape.Options.FrameOrder == "caller_first" ||
		shape.Options.FrameOrder == "" && kind != kindNative // each route's default
	return &resolveRequest{kind: kind, route: routes[kind], body: body, callerFirst: callerFirst,
		sent: shape.Stacktraces, source: "the JSON of a request"}, nil
}

// resolveAnswer is the answer of any of the three routes.
type resolveAnswer struct {
	Stacktraces []struct {
		Exception *exceptionJSON  `json:"exception"`
		Frames    []answeredFrame `json:"frames"`
	} `json:"stacktraces"`
	Errors []struct {
		AbsPath string `json:"abs_path"`
		UUID    string `json:"uuid"`
		Type    string `json:"type"`
	} `json:"errors"`
	Modules []struct {
		Type        string  `json:"type"`
		CodeFile    *string `json:"code_file"`
		DebugID     *string `json:"debug_id"`
		DebugStatus string  `json:"debug_status"`
		DebugReason string  `json:"debug_reason"`
	} `json:"modules"`
}

// answeredFrame is a frame of any route's answer.
type answeredFrame struct {
	Status            string   `json:"status"`
	Function          *string  `json:"function"`
	Module            *string  `json:"module"`
	Filename          *string  `json:"filename"`
	AbsPath           *string  `json:"abs_path"`
	Package           *string  `json:"package"`
	InstructionAddr   string   `json:"instruction_addr"`
	Lineno            *int64   `json:"lineno"`
	Colno             *int64   `json:"colno"`
	PreContext        []string `json:"pre_context"`
	ContextLine       *string  `json:"context_line"`
	PostContext       []string `json:"post_context"`
	OriginalIndex     int      `json:"original_index"`
	InApp             *bool    `json:"in_app"`
	FramesOmitted     int      `json:"frames_omitted"`
	MethodSynthesized bool     `json:"method_synthesized"`
	Data              struct {
		Symbolicated bool `json:"symbolicated"`
	} `json:"data"`
}

var kindNames = map[string]string{kindJS: "JavaScript", kindJVM: "Java", kindNative: "Native"}

// result is the page's view of ans, the answer of r: every stack trace
// innermost frame first, as runtimes print them.
func (r *resolveRequest) result(ans *resolveAnswer) *resolveResult {
	res := &resolveResult{Kind: kindNames[r.kind], Route: r.route, Source: r.source, Notes: r.notes}
	jsErrors := map[string]string{}
	for _, e := range ans.Errors {
		switch {
		case e.UUID != "":
			res.Errors = append(res.Errors, "ProGuard mapping "+e.UUID+": "+e.Type)
		default:
			if _, seen := jsErrors[e.AbsPath]; !seen {
				res.Errors = append(res.Errors, e.AbsPath+": "+e.Type)
			}
			jsErrors[e.AbsPath] = e.Type
		}
	}
	for _, m := range ans.Modules {
		res.Modules = append(res.Modules, moduleView{File: deref(m.CodeFile), DebugID: deref(m.DebugID),
			Status: m.DebugStatus, Reason: m.DebugReason})
	}
	for i, st := range ans.Stacktraces {
		tv := traceView{Title: "Stack trace " + strconv.Itoa(i+1)}
		if i < len(r.messages) {
			tv.Message = r.messages[i]
		}
		var sent sentTrace
		if i < len(r.sent) {
			sent = r.sent[i]
		}
		if st.Exception != nil {
			tv.Exception = javaClass(st.Exception)
			if sent.Exception != nil && javaClass(sent.Exception) != tv.Exception {
				tv.Obfuscated = javaClass(sent.Exception)
			}
		}
		for _, f := range st.Frames {
			var in *sentFrame
			if f.OriginalIndex >= 0 && f.OriginalIndex < len(sent.Frames) {
				in = &sent.Frames[f.OriginalIndex]
			}
			tv.Frames = append(tv.Frames, frame(r.kind, f, in, jsErrors))
		}
		if r.callerFirst {
			slices.Reverse(tv.Frames)
		}
		res.Traces = append(res.Traces, tv)
	}
	return res
}

// frame is the view of an answered frame f, sent as in (nil when
// unknown).
func frame(kind string, f answeredFrame, in *sentFrame, jsErrors map[string]string) frameView {
	fv := frameView{Function: deref(f.Function)}
	file := deref(f.Filename)
	if file == "" {
		file = deref(f.AbsPath)
	} else if a := deref(f.AbsPath); a != "" && a != file {
		fv.AbsPath = a
	}
	fv.Where = location(file, f.Lineno, f.Colno)
	switch kind {
	case kindJS:
		switch {
		case f.Data.Symbolicated:
			fv.Status, fv.Resolved = "resolved", true
		case jsErrors[deref(f.AbsPath)] != "":
			fv.Status = jsErrors[deref(f.AbsPath)]
		default:
			fv.Status = "not resolved"
		}
		if in != nil {
			fv.SentAs, fv.Sent = "Minified", strings.TrimSpace(deref(in.Function)+" at "+location(deref(in.AbsPath), in.Lineno, in.Colno))
		}
	case kindJVM:
		if m := deref(f.Module); m != "" {
			fv.Function = m + "." + fv.Function
		}
		fv.Status = "not remapped"
		if in != nil {
			fv.SentAs, fv.Sent = "Obfuscated", deref(in.Module)+"."+deref(in.Function)+" at "+location(deref(in.Filename), in.Lineno, nil)
			// The API answers a frame its mapping does not know as it
			// came: any change is the mapping's.
			if fv.Sent != fv.Function+" at "+fv.Where {
				fv.Status, fv.Resolved = "remapped", true
			}
		}
		if f.MethodSynthesized {
			fv.Notes = append(fv.Notes, "a method the compiler synthesized")
		}
	case kindNative:
		fv.Status, fv.Resolved = f.Status, f.Status == "symbolicated"
		fv.SentAs, fv.Sent = "Address", strings.TrimSpace(f.InstructionAddr+" "+deref(f.Package))
	}
	if f.FramesOmitted > 0 {
		fv.Notes = append(fv.Notes, strconv.Itoa(f.FramesOmitted)+" more inlined frames left out")
	}
	if f.InApp != nil {
		fv.InApp = map[bool]string{true: "in app", false: "not in app"}[*f.InApp]
	}
	if f.ContextLine != nil && f.Lineno != nil {
		n := *f.Lineno - int64(len(f.PreContext))
		for _, l := range f.PreContext {
			fv.Context = append(fv.Context, contextLine{Number: n, Text: l})
			n++
		}
		fv.Context = append(fv.Context, contextLine{Number: n, Text: *f.ContextLine, Current: true})
		for _, l := range f.PostContext {
			n++
			fv.Context = append(fv.Context, contextLine{Number: n, Text: l})
		}
	}
	return fv
}

// location is "file:line:col", with what is known of it.
func location(file string, line, col *int64) string {
	if line != nil {
		file += ":" + strconv.FormatInt(*line, 10)
		if col != nil {
			file += ":" + strconv.FormatInt(*col, 10)
		}
	}
	return file
}

// javaClass is module.type of an exception.
func javaClass(e *exceptionJSON) string {
	if m := deref(e.Module); m != "" {
		return m + "." + deref(e.Type)
	}
	return deref(e.Type)
}

// deref is *s, "" for nil.
func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
