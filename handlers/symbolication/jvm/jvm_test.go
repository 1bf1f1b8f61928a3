package jvm

import (
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"errata/handlers/symbolication"
	"errata/worker/dif/proguard"
)

func parseTestMapping(t *testing.T) *proguard.Mapping {
	t.Helper()
	data, err := os.ReadFile("../../../worker/dif/proguard/testdata/mapping.txt")
	if err != nil {
		t.Fatal(err)
	}
	m, err := proguard.Parse(data)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestRemapFrameInlined gives back the methods inlined at an obfuscated
// line as frames of their own, in the order the request reads frames, and
// a frame no mapping knows as it came.
func TestRemapFrameInlined(t *testing.T) {
	mappings := []*proguard.Mapping{parseTestMapping(t)}
	show := func(frames []FrameOut) []string {
		var out []string
		for _, f := range frames {
			out = append(out, fmt.Sprintf("%d %s.%s(%s:%d)", f.OriginalIndex, *f.Module, *f.Function, *f.Filename, *f.Lineno))
		}
		return out
	}
	line := int64(1014)
	f := FrameIn{Module: ptr("com.shop.a"), Function: ptr("a"), Filename: ptr("SourceFile"), Lineno: &line}
	calleeFirst := []string{
		"0 com.shop.Discounts.lookup(Discounts.java:14)",
		"0 com.shop.Discounts.rateFor(Discounts.java:10)",
		"0 com.shop.Cart.applyDiscount(Cart.java:18)",
	}
	if diff := cmp.Diff(calleeFirst, show(remapFrame(mappings, f, 0, false))); diff != "" {
		t.Errorf("callee first (-want +got):\n%s", diff)
	}
	callerFirst := []string{calleeFirst[2], calleeFirst[1], calleeFirst[0]}
	if diff := cmp.Diff(callerFirst, show(remapFrame(mappings, f, 0, true))); diff != "" {
		t.Errorf("caller first (-want +got):\n%s", diff)
	}
	unknown := FrameIn{Module: ptr("org.other.X"), Function: ptr("y"), Filename: ptr("X.java"), Lineno: &line}
	if diff := cmp.Diff([]string{"3 org.other.X.y(X.java:1014)"}, show(remapFrame(mappings, unknown, 3, false))); diff != "" {
		t.Errorf("unknown class (-want +got):\n%s", diff)
	}
}

// TestRemapException splits the original class of an obfuscated
// exception into its module and type.
func TestRemapException(t *testing.T) {
	mappings := []*proguard.Mapping{parseTestMapping(t)}
	got := remapException(mappings, Exception{Type: ptr("c"), Module: ptr("com.shop")})
	if got.Module == nil || *got.Module != "com.shop" || got.Type == nil || *got.Type != "UnknownDiscountException" {
		t.Errorf("%v %v, want com.shop UnknownDiscountException", got.Module, got.Type)
	}
}

// TestRemapFrameExpansionCapped: an obfuscated line that 200,000 methods
// of a mapping share answers the first symbolication.MaxFrameExpansion
// of them, the last saying how many more there are, their names cut to
// symbolication.MaxNameBytes, in either order.
func TestRemapFrameExpansionCapped(t *testing.T) {
	long := strings.Repeat("m", 60<<10)
	var mapping strings.Builder
	mapping.WriteString("com.shop." + long + " -> a:\n")
	const methods = 200_000
	for i := range methods {
		fmt.Fprintf(&mapping, "    1:1:void m%d():1:1 -> a\n", i)
	}
	m, err := proguard.Parse([]byte(mapping.String()))
	if err != nil {
		t.Fatal(err)
	}
	line := int64(1)
	f := FrameIn{Module: ptr("a"), Function: ptr("a"), Lineno: &line}
	for _, callerFirst := range []bool{false, true} {
		out := remapFrame([]*proguard.Mapping{m}, f, 0, callerFirst)
		if len(out) != symbolication.MaxFrameExpansion {
			t.Fatalf("caller first %v: %d frames, want %d", callerFirst, len(out), symbolication.MaxFrameExpansion)
		}
		last := out[len(out)-1]
		if callerFirst {
			last = out[0]
		}
		if last.FramesOmitted != methods-symbolication.MaxFrameExpansion || *last.Function != fmt.Sprintf("m%d", symbolication.MaxFrameExpansion-1) {
			t.Errorf("caller first %v: the last frame kept is %s with %d omitted, want m%d with %d", callerFirst, *last.Function, last.FramesOmitted,
				symbolication.MaxFrameExpansion-1, methods-symbolication.MaxFrameExpansion)
		}
		for _, o := range out {
			if len(*o.Module) > symbolication.MaxNameBytes || len(*o.Filename) > symbolication.MaxNameBytes || len(*o.AbsPath) > symbolication.MaxNameBytes {
				t.Fatalf("names of %d, %d, %d bytes, want at most %d", len(*o.Module), len(*o.Filename), len(*o.AbsPath), symbolication.MaxNameBytes)
			}
		}
	}
}
