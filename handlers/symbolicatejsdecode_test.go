package handlers

import (
	"encoding/json"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
)

// FuzzDecodeJSRequestFast holds the fast decoding of symbolicate-js bodies
// to encoding/json's: whenever it takes a body, encoding/json takes it too
// and makes the same request of it.
func FuzzDecodeJSRequestFast(f *testing.F) {
	for _, s := range []string{
		`{"stacktraces":[{"frames":[{"abs_path":"https://a/b.js","lineno":1,"colno":2,"function":"f","in_app":true}]}],"release":"1.0","dist":null}`,
		` {"stacktraces" : [ ], "modules":[{"type":"sourcemap","code_file":"x","debug_id":"61e4ea0c-2f2b-4c1e-9d5e-0c6a3f6b8f11"}],"options":{"apply_source_context":false,"frame_order":"callee_first"}} `,
		`{"stacktraces":[{"frames":[{"lineno":-0,"colno":123456789012345678,"LINENO":1,"x":null,"y":"z","w":-5}]},{}]}`,
		`{"stacktraces":[{"frames":[{"lineno":01}]}]}`,
		`{"stacktraces":[{"frames":[{"abs_path":"a\u0000"}]}]}`,
		`{"stacktraces":null}`,
		`{"stacktraces":[{"frames":[{"lineno":1.5}]}]}`,
		`{"stacktraces":[],"stacktraces":[{"frames":[]}]}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		if !utf8.Valid(body) || jsonValues(body) > maxJSONValues {
			return
		}
		var fast jsRequest
		if !decodeJSRequestFast(body, &fast) {
			return
		}
		var slow jsRequest
		if err := decodeResolveJSON(body, &slow); err != nil {
			t.Fatalf("the fast path took %q, encoding/json refused it: %v", body, err)
		}
		if err := json.Unmarshal(slow.Stacktraces, &slow.stacktraces); err != nil {
			t.Fatalf("the fast path took %q, encoding/json refused its stack traces: %v", body, err)
		}
		type view struct {
			Raw         string
			Stacktraces []jsStacktraceIn
			Modules     []jsModule
			Release     *string
			Dist        *string
			Context     *bool
			Order       *string
		}
		v := func(r jsRequest) view {
			return view{string(r.Stacktraces), r.stacktraces, r.Modules, r.Release, r.Dist, r.Options.ApplySourceContext, r.Options.FrameOrder}
		}
		if diff := cmp.Diff(v(slow), v(fast)); diff != "" {
			t.Fatalf("%q (-encoding/json +fast):\n%s", body, diff)
		}
	})
}
