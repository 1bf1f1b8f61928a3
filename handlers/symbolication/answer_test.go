package symbolication

import (
	"errors"
	"strings"
	"testing"
	"unicode/utf8"
)

// TestCutName keeps names up to MaxNameBytes and cuts longer ones at a
// character boundary, NameCut included, within MaxNameBytes.
func TestCutName(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		cut      bool
	}{
		{"short", "main", false},
		{"at the bound", strings.Repeat("a", MaxNameBytes), false},
		{"one past", strings.Repeat("a", MaxNameBytes+1), true},
		{"256 KiB", strings.Repeat("f", 256<<10), true},
		{"multibyte at the cut", strings.Repeat("é", 256<<10), true},
		{"four-byte runes", strings.Repeat("a", 3) + strings.Repeat("😀", 1<<10), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := CutName(tc.in)
			if !tc.cut {
				if got != tc.in {
					t.Fatalf("CutName changed a name of %d bytes", len(tc.in))
				}
				return
			}
			if len(got) > MaxNameBytes || !strings.HasSuffix(got, NameCut) || !utf8.ValidString(got) {
				t.Fatalf("CutName: %d bytes, valid UTF-8 %v, ends %q", len(got), utf8.ValidString(got), got[max(len(got)-8, 0):])
			}
			if kept := strings.TrimSuffix(got, NameCut); !strings.HasPrefix(tc.in, kept) || len(kept) < MaxNameBytes-len(NameCut)-utf8.UTFMax {
				t.Fatalf("CutName kept %d bytes, not the start of the name", len(kept))
			}
		})
	}
}

// TestExpansion keeps the first MaxFrameExpansion frames of an input frame
// and counts those left out.
func TestExpansion(t *testing.T) {
	for _, tc := range []struct{ n, kept, omitted int }{
		{0, 0, 0}, {1, 1, 0}, {MaxFrameExpansion, MaxFrameExpansion, 0},
		{MaxFrameExpansion + 1, MaxFrameExpansion, 1}, {200_000, MaxFrameExpansion, 200_000 - MaxFrameExpansion},
	} {
		if kept, omitted := Expansion(tc.n); kept != tc.kept || omitted != tc.omitted {
			t.Errorf("Expansion(%d) = %d, %d, want %d, %d", tc.n, kept, omitted, tc.kept, tc.omitted)
		}
	}
}

// TestAnswerRefusedPastTheCap charges the JSON of the strings an answer
// holds, escapes included, and is a LimitError of AnswerBytes once they
// pass MaxAnswerBytes, whatever the request's count of frames.
func TestAnswerRefusedPastTheCap(t *testing.T) {
	var a Answer
	if err := a.Charge(10, "ab", "<"); err != nil || a.Bytes() != 10+4+8 {
		t.Fatalf("Charge: %v, %d bytes, want 22", err, a.Bytes())
	}
	name := CutName(strings.Repeat("x", 256<<10))
	frames := 0
	var err error
	for err == nil {
		err = a.Charge(320, name, name, name, name)
		frames++
	}
	var le *LimitError
	if !errors.As(err, &le) || le.Limit != AnswerBytes || le.Max != MaxAnswerBytes || errors.Is(err, ErrBudget) {
		t.Fatalf("past the cap: %v, want a LimitError of AnswerBytes", err)
	}
	if perFrame := 320 + 4*(len(name)+2); frames != MaxAnswerBytes/perFrame+1 {
		t.Errorf("refused at frame %d, want %d", frames, MaxAnswerBytes/perFrame+1)
	}
}

// FuzzCutName: a cut name is at most MaxNameBytes, starts the name it
// came from, ends with NameCut, and is valid UTF-8 when the name was.
func FuzzCutName(f *testing.F) {
	f.Add("main", 0)
	f.Add("é", MaxNameBytes)
	f.Add("😀", MaxNameBytes)
	f.Fuzz(func(t *testing.T, unit string, repeat int) {
		if unit == "" || repeat < 0 || repeat > 4*MaxNameBytes {
			return
		}
		name := strings.Repeat(unit, repeat)
		got := CutName(name)
		if len(name) <= MaxNameBytes {
			if got != name {
				t.Fatalf("CutName changed a name of %d bytes", len(name))
			}
			return
		}
		kept, ok := strings.CutSuffix(got, NameCut)
		if len(got) > MaxNameBytes || !ok || !strings.HasPrefix(name, kept) || utf8.ValidString(name) && !utf8.ValidString(got) {
			t.Fatalf("CutName of %d bytes: %d bytes %.20q", len(name), len(got), got)
		}
	})
}
