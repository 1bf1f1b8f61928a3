package handlers

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"

	"errata/handlers/symbolication/js"
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
		if !utf8.Valid(body) {
			return
		}
		var fast js.Request
		if !decodeJSRequestFast(body, &fast) {
			return
		}
		if n := jsonValues(body); n > maxJSONValues {
			t.Fatalf("the fast path took %q of %d values", body, n)
		}
		var slow js.Request
		if err := decodeResolveJSON(body, &slow); err != nil {
			t.Fatalf("the fast path took %q, encoding/json refused it: %v", body, err)
		}
		if err := json.Unmarshal(slow.Stacktraces, &slow.Traces); err != nil {
			t.Fatalf("the fast path took %q, encoding/json refused its stack traces: %v", body, err)
		}
		type view struct {
			Raw         string
			Stacktraces []js.StacktraceIn
			Modules     []js.Module
			Release     *string
			Dist        *string
			Context     *bool
			Order       *string
		}
		v := func(r js.Request) view {
			return view{string(r.Stacktraces), r.Traces, r.Modules, r.Release, r.Dist, r.Options.ApplySourceContext, r.Options.FrameOrder}
		}
		if diff := cmp.Diff(v(slow), v(fast)); diff != "" {
			t.Fatalf("%q (-encoding/json +fast):\n%s", body, diff)
		}
	})
}

// TestDecodeJSRequestFastCountsValues sends bodies of as many values as
// the limit allows and one more: the fast path takes the first, as
// checkResolveBody does, and leaves the second to its answer.
func TestDecodeJSRequestFastCountsValues(t *testing.T) {
	body := func(values int) []byte {
		// {"stacktraces":[{"frames":[…]}]} counts 6 (jsonValues) and 1
		// more with a frame, each frame {"lineno":1} 2 and each comma
		// between frames 1, "release":null or "dist":null and its comma
		// 2.
		extra := 0
		for (values-6-2*extra)%3 != 0 {
			extra++
		}
		b := []byte(`{"stacktraces":[{"frames":[`)
		for i := range (values - 6 - 2*extra) / 3 {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, `{"lineno":1}`...)
		}
		b = append(b, `]}]`...)
		for i := range extra {
			b = append(b, []string{`,"release":null`, `,"dist":null`}[i]...)
		}
		return append(b, '}')
	}
	for _, n := range []int{maxJSONValues - 1, maxJSONValues, maxJSONValues + 1, maxJSONValues + 2} {
		b := body(n)
		if got := jsonValues(b); got != n {
			t.Fatalf("the body of %d values has %d", n, got)
		}
		var req js.Request
		if took, want := decodeJSRequestFast(b, &req), n <= maxJSONValues; took != want {
			t.Errorf("%d values: the fast path took it: %v, want %v", n, took, want)
		}
	}
}

// TestFastJSONRawStopsAtEachSpecialByte reads strings of up to 20 bytes
// with one byte in each place: a quote ends the string there, a backslash
// or a control character refuses it, any other byte is part of it, in
// the bytes read eight at a time as in those read one by one.
func TestFastJSONRawStopsAtEachSpecialByte(t *testing.T) {
	for n := range 21 {
		for at := range n {
			for _, c := range []byte{'"', '\\', 0, 0x1f, 0x20, 0x21, '!', 0x5b, 0x5d, 0x7f, 0x80, 0xe9, 0xff} {
				s := []byte(strings.Repeat("a", n))
				s[at] = c
				body := append(append([]byte{'"'}, s...), `"x`...)
				p := fastJSON{b: body}
				got, ok := p.raw()
				switch {
				case c == '"':
					if !ok || string(got) != string(s[:at]) {
						t.Errorf("%q: %q %v, want %q", body, got, ok, s[:at])
					}
				case c == '\\' || c < 0x20:
					if ok {
						t.Errorf("%q: %q, want a refusal", body, got)
					}
				default:
					if !ok || string(got) != string(s) || p.i != len(body)-1 {
						t.Errorf("%q: %q %v at %d, want %q", body, got, ok, p.i, s)
					}
				}
			}
		}
	}
}
