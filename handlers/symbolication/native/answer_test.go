package native

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"errata/handlers/symbolication"
	"errata/worker/dif"
)

// longNamesModule is a module resolved through a Breakpad file whose
// function, inline origin and file names are 60 KiB each (a record holds
// at most 64 KiB), with inlined calls depth deep at 0x1010.
func longNamesModule(t *testing.T, depth int) *module {
	t.Helper()
	long := strings.Repeat("f", 60<<10)
	var sym strings.Builder
	sym.WriteString("MODULE Linux x86_64 B644071B511E55DBAC271EE28D84D9910 crash\n")
	fmt.Fprintf(&sym, "FILE 0 /src/%s.c\nINLINE_ORIGIN 0 %s_inlined\nFUNC 1000 100 0 %s\n1000 100 10 0\n", long, long, long)
	for d := range depth {
		fmt.Fprintf(&sym, "INLINE %d 5 0 0 1000 100\n", d)
	}
	res, err := dif.ReadBreakpadSymbols(strings.NewReader(sym.String()))
	if err != nil {
		t.Fatal(err)
	}
	return &module{res: res, pkg: symbolication.CutName("/usr/bin/" + long), out: &ModuleOut{}}
}

// TestResolveFrameNamesCut: a frame in a function whose names and file
// are 60 KiB answers each of them (function, symbol, abs_path, filename,
// package) cut to symbolication.MaxNameBytes, and is charged what its
// JSON takes: at most frameJSON beside those names.
func TestResolveFrameNamesCut(t *testing.T) {
	mods := []*module{longNamesModule(t, 0)}
	var ans symbolication.Answer
	const frames = 1000
	for i := range frames {
		out, err := resolveFrame(context.Background(), nil, mods, FrameIn{InstructionAddr: json.RawMessage(`"0x1010"`), AddrMode: "rel:0"}, i, false, false, 0, &ans)
		if err != nil {
			t.Fatal(err)
		}
		if len(out) != 1 || out[0].Status != "symbolicated" {
			t.Fatalf("frame %d: %+v, want one frame symbolicated", i, out)
		}
		f := out[0]
		for what, s := range map[string]string{"function": f.Function, "symbol": f.Symbol, "abs_path": f.AbsPath, "filename": f.Filename, "package": f.Package} {
			if len(s) > symbolication.MaxNameBytes || !strings.HasSuffix(s, symbolication.NameCut) {
				t.Fatalf("frame %d: %s of %d bytes, want cut to %d", i, what, len(s), symbolication.MaxNameBytes)
			}
		}
		b, _ := json.Marshal(f)
		if i == 0 && int64(len(b)) > ans.Bytes() {
			t.Fatalf("a frame of %d bytes of JSON charged %d", len(b), ans.Bytes())
		}
	}
	if max := int64(frames * (frameJSON + 5*(symbolication.MaxNameBytes+2) + 40)); ans.Bytes() > max {
		t.Errorf("%d frames charged %d bytes, want at most %d", frames, ans.Bytes(), max)
	}
}

// TestResolveFrameRefusedPastTheCap: frames of 64 inlined calls named by
// 60 KiB names each answer 64 frames of cut names: the request is a
// LimitError of AnswerBytes once they pass symbolication.MaxAnswerBytes,
// within a few hundred input frames of the 5,000 a request may carry.
func TestResolveFrameRefusedPastTheCap(t *testing.T) {
	mods := []*module{longNamesModule(t, 63)}
	var ans symbolication.Answer
	answered := 0
	for i := range maxNativeFrames {
		out, err := resolveFrame(context.Background(), nil, mods, FrameIn{InstructionAddr: json.RawMessage(`"0x1010"`), AddrMode: "rel:0"}, i, false, true, 0, &ans)
		var le *symbolication.LimitError
		if errors.As(err, &le) && le.Limit == symbolication.AnswerBytes {
			if i > 200 {
				t.Errorf("refused at input frame %d, want within 200", i)
			}
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		if len(out) != symbolication.MaxFrameExpansion || out[0].Function != symbolication.CutName(strings.Repeat("f", 60<<10)) {
			t.Fatalf("input frame %d answered %d frames, the outermost %.20q; want %d, caller first", i, len(out), out[0].Function, symbolication.MaxFrameExpansion)
		}
		answered += len(out)
	}
	t.Fatalf("%d frames answered, %d bytes charged, never refused", answered, ans.Bytes())
}

// TestChargeModulesAtLeastTheirJSON: the modules of an answer and their
// candidates are charged at least what their JSON takes, escapes
// included.
func TestChargeModulesAtLeastTheirJSON(t *testing.T) {
	id, code := "e0b56998-b1d1-652b-992f-fb3204bf4b45", "9869b5e0d1b12b65"
	size := uint64(1 << 40)
	m := ModuleOut{Type: "elf", CodeID: &code, DebugID: &id, CodeFile: ptr(`C:\app<&>.exe`), DebugFile: ptr("app.pdb"),
		ImageAddr: "0xffffffffffffffff", ImageSize: &size, DebugStatus: "malformed", DebugReason: "dif: \x01 damaged",
		Features: Features{true, true, true, true}}
	for i := range 1000 {
		m.Candidates = append(m.Candidates, Candidate{ID: fmt.Sprint(1 << 62), ObjectName: strings.Repeat("<", i), DebugID: id,
			CodeID: &code, FileFormat: "breakpad", Features: []string{"symtab", "debug", "unwind", "sources"},
			SHA1: strings.Repeat("f", 40), Status: "no_debug_info", Reason: "the file is larger than the resolver reads"})
	}
	var ans symbolication.Answer
	if err := chargeModules(&ans, []ModuleOut{m}); err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(m)
	if ans.Bytes() < int64(len(b)) {
		t.Errorf("a module of %d bytes of JSON charged %d", len(b), ans.Bytes())
	}
}

func ptr(s string) *string { return &s }
