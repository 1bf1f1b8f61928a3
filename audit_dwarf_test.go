package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"errata/worker/dif/diftest"
)

// auditDWARF are the audit's findings in the DWARF reader
// (docs/resolution.md), each with ELF files of units that all point at
// one line program:
//   - three files of 25 KB whose line table names 2,000 files in a
//     directory of 4 KiB (8 MiB of paths), shared by 24 units: a parsed
//     unit was charged 16 bytes a path it held;
//   - a file whose one unit's program is 27.5 million ends of sequence:
//     40 uncounted bytes each;
//   - a file of 100,000 units without ranges of one function each, its
//     units parsed by a first request, then a request of 5,000 frames
//     (the most a request carried): each frame looked in every unit;
//   - a file of 4,000 units without ranges sharing a program of 1 MiB of
//     opcodes that make no row, one frame sent by a client that gives up
//     after 2 s: each unit walked the program again, and went on after
//     the client left (last, since the server as it was goes on past the
//     finding's measure).
//
// Each answers without a 5xx, within the audit's memory and CPU.
func auditDWARF(_ *testing.T, a *auditServer) []auditFinding {
	var rangeless string // the debug id of the file of units without ranges
	return []auditFinding{
		{name: "paths charged 16 bytes", maxCPU: 10 * time.Second, attack: func(t *testing.T) { auditDWARFPaths(t, a) }},
		{name: "ends of sequence", maxCPU: 10 * time.Second, attack: func(t *testing.T) { auditDWARFEndSequences(t, a) }},
		{name: "units without ranges, cached", maxCPU: 5 * time.Second,
			before: func(t *testing.T) {
				rangeless = auditDWARFUpload(t, a, auditBuildID(4), diftest.HostileUnits{Units: auditRangeless, FuncBase: 0x100000,
					Line: diftest.LineSection(nil, []string{"a.c"}, diftest.Sequences(1, 1))})
				// A first request parses the units; the file is cached.
				auditDWARFResolve(t, a, http.DefaultClient, rangeless, []uint64{0x100000 + 8})
			},
			attack: func(t *testing.T) { auditDWARFRangeless(t, a, rangeless) }},
		{name: "shared line program, client gone", maxCPU: 10 * time.Second, attack: func(t *testing.T) { auditDWARFSharedProgram(t, a) }},
	}
}

// auditRangeless is how many units without ranges the file of the
// finding of cached units holds.
const auditRangeless = 100_000

// auditBuildID is the GNU build id of the finding's file i.
func auditBuildID(i byte) []byte {
	return []byte{0xd7, 0xa4, 0xf0, 0x31, 0x10, 0x20, 0x30, 0x40, 0x50, 0x60, 0x70, 0x80, 0x90, 0xa0, 0xb0, i}
}

// auditDWARFUpload uploads the ELF object of h, with the GNU build id id,
// zipped to files/dsyms/ of acme/web, and returns its debug id.
func auditDWARFUpload(t *testing.T, a *auditServer, id []byte, h diftest.HostileUnits) string {
	t.Helper()
	h.BuildID = id
	file := h.ELF()
	upload := zipOf(t, "hostile.debug", file)
	r := postDsyms(t, a.errataServer, upload)
	var difs []e2eDif
	if r.err != nil || r.status != http.StatusCreated || json.Unmarshal(r.body, &difs) != nil || len(difs) != 1 {
		t.Fatalf("upload of an ELF of %d bytes (a zip of %d): %v %d %.300s", len(file), len(upload), r.err, r.status, r.body)
	}
	t.Logf("uploaded an ELF of %d bytes, a zip of %d", len(file), len(upload))
	return difs[0].DebugID
}

// auditDWARFResolve asks client to resolve addrs in the module debugID,
// loaded at 0, and returns the answer (which must not be a 5xx when there
// is one).
func auditDWARFResolve(t *testing.T, a *auditServer, client *http.Client, debugID string, addrs []uint64) result {
	t.Helper()
	frames := make([]map[string]any, len(addrs))
	for i, addr := range addrs {
		frames[i] = map[string]any{"instruction_addr": fmt.Sprintf("0x%x", addr)}
	}
	r := sendJSON(client, a.errataServer, "POST", "/api/0/projects/acme/web/symbolicate/", map[string]any{
		"modules":     []map[string]any{{"type": "elf", "debug_id": debugID, "image_addr": "0x0", "image_size": 0x10000000}},
		"stacktraces": []map[string]any{{"frames": frames}},
	})
	if r.err == nil && r.status >= 500 {
		t.Errorf("the resolution of %d frames: %d %.300s, want no 5xx", len(addrs), r.status, r.body)
	}
	return r
}

// auditDWARFPaths: three files of 24 units without ranges that share a
// line table of 2,000 files in a directory of 4 KiB, and a frame in each.
func auditDWARFPaths(t *testing.T, a *auditServer) {
	dir := "/" + strings.Repeat("d", 4095)
	files := make([]string, 2000)
	for i := range files {
		files[i] = fmt.Sprintf("f%04d.c", i)
	}
	line := diftest.LineSection([]string{dir}, files, diftest.Sequences(1, 4))
	for i := range byte(3) {
		debugID := auditDWARFUpload(t, a, auditBuildID(i), diftest.HostileUnits{Units: 24, FuncBase: 0x1000, Line: line})
		r := auditDWARFResolve(t, a, http.DefaultClient, debugID, []uint64{0x1000 + 8})
		t.Logf("file %d: %v %d %.200s", i, r.err, r.status, r.body)
	}
}

// auditDWARFEndSequences: a file of one unit whose program is 27.5
// million ends of sequence, and a frame.
func auditDWARFEndSequences(t *testing.T, a *auditServer) {
	const ends = 27_500_000
	prog := append(diftest.SetAddress(0x1000), bytes.Repeat(diftest.EndSequence, ends)...)
	debugID := auditDWARFUpload(t, a, auditBuildID(3), diftest.HostileUnits{Units: 1, FuncBase: 0x1000,
		Line: diftest.LineSection(nil, []string{"a.c"}, prog)})
	r := auditDWARFResolve(t, a, http.DefaultClient, debugID, []uint64{0x1000 + 8})
	t.Logf("%v %d %.200s", r.err, r.status, r.body)
}

// auditDWARFSharedProgram: a file of 4,000 units without ranges that share
// a program of 1 MiB of DW_LNS_const_add_pc (no row), and one frame, sent
// by a client that gives up after 2 s: the CPU the server spends after
// counts.
func auditDWARFSharedProgram(t *testing.T, a *auditServer) {
	prog := append(diftest.SetAddress(0x1000), bytes.Repeat([]byte{0x08}, 1<<20)...)
	prog = append(prog, diftest.EndSequence...)
	debugID := auditDWARFUpload(t, a, auditBuildID(5), diftest.HostileUnits{Units: 4000, FuncBase: 0x100000,
		Line: diftest.LineSection(nil, []string{"a.c"}, prog)})
	r := auditDWARFResolve(t, a, &http.Client{Timeout: 2 * time.Second}, debugID, []uint64{0x100000 + 8})
	t.Logf("%v %d %.200s", r.err, r.status, r.body)
}

// auditDWARFRangeless: 5,000 frames over the functions of the units
// without ranges of debugID, whose units are parsed.
func auditDWARFRangeless(t *testing.T, a *auditServer, debugID string) {
	addrs := make([]uint64, 5_000)
	for i := range addrs {
		addrs[i] = 0x100000 + 32*uint64(i*7%auditRangeless) + 8
	}
	r := auditDWARFResolve(t, a, http.DefaultClient, debugID, addrs)
	var out symbolicated
	if r.err != nil || r.status != http.StatusOK || json.Unmarshal(r.body, &out) != nil || len(out.Stacktraces) != 1 || len(out.Stacktraces[0].Frames) != len(addrs) {
		t.Errorf("the resolution of %d frames: %v %d %.300s, want 200 with them", len(addrs), r.err, r.status, r.body)
		return
	}
	for i, f := range out.Stacktraces[0].Frames {
		if want := fmt.Sprintf("f%d", i*7%auditRangeless); f.Function != want {
			t.Errorf("frame %d: %+v, want %s", i, f, want)
			break
		}
	}
}
