package main

import (
	"archive/zip"
	"bytes"
	"compress/flate"
	"encoding/binary"
	"encoding/json"
	"io"
	"mime/multipart"
	"net/http"
	"testing"
	"time"

	"errata/worker/dif/diftest"
)

// maxReaderGrowth is how much the server's peak memory may grow while it
// reads all the files of TestObjectReadersMemoryBudget. The test measures
// the server binary as shipped (spawnShipped), whose peak grew by 61 to
// 71 MB in three runs: the bound leaves a margin of more than 3.5 times
// that, and a reader that trusted the files' counts would cross it by far.
const maxReaderGrowth = 256 << 20

// peakRSS returns the peak resident set of process pid (VmHWM), in bytes.
func peakRSS(t *testing.T, pid int) int64 {
	t.Helper()
	return usageOf(t, pid).hwm
}

// zipOf returns a zip of one deflated member, name, holding data.
func zipOf(t *testing.T, name string, data []byte) []byte {
	t.Helper()
	return zipAt(t, 5, name, data) // archive/zip's own level
}

// zipAt returns a zip of one member, name, holding data deflated at level
// (compress/flate's).
func zipAt(t *testing.T, level int, name string, data []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	zw.RegisterCompressor(zip.Deflate, func(w io.Writer) (io.WriteCloser, error) { return flate.NewWriter(w, level) })
	w, err := zw.Create(name)
	if err != nil {
		t.Fatal(err)
	}
	w.Write(data)
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// postDsyms posts body as the file of a files/dsyms/ upload to acme/web and
// returns the answer.
func postDsyms(t *testing.T, s *errataServer, body []byte) result {
	t.Helper()
	var form bytes.Buffer
	mw := multipart.NewWriter(&form)
	w, err := mw.CreateFormFile("file", "debug-files.zip")
	if err != nil {
		t.Fatal(err)
	}
	w.Write(body)
	mw.Close()
	return send(http.DefaultClient, s, "POST", "/api/0/projects/acme/web/files/dsyms/", mw.FormDataContentType(), &form)
}

// assembleDif uploads data in chunks and asks difs/assemble for it under
// name until its state is final, and returns that state and its detail.
func assembleDif(t *testing.T, s *errataServer, name string, data []byte) (state, detail string) {
	t.Helper()
	sum := sha1Hex(data)
	req := map[string]any{sum: map[string]any{"name": name, "chunks": uploadChunks(t, s, data, 8<<20)}}
	for deadline := time.Now().Add(30 * time.Second); ; {
		status, body := s.api(t, "POST", "/api/0/projects/acme/web/files/difs/assemble/", req)
		var out map[string]struct {
			State  string  `json:"state"`
			Detail *string `json:"detail"`
		}
		if status != http.StatusOK || json.Unmarshal(body, &out) != nil {
			t.Fatalf("difs/assemble of %s: %d %s", name, status, body)
		}
		st := out[sum]
		if st.State != "created" && st.State != "assembling" {
			if st.Detail != nil {
				detail = *st.Detail
			}
			return st.State, detail
		}
		if time.Now().After(deadline) {
			t.Fatalf("difs/assemble of %s still %s after 30 s", name, st.State)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestObjectReadersMemoryBudget sends a server files whose counts and
// lengths make a reader that trusts them allocate hundreds of megabytes
// (every section or symbol named by one 1 MiB name, a source bundle of
// 65,000 members of 2 KiB names), each a zip of 0.2 to 250 KB, through
// files/dsyms/ and then through chunk upload and difs/assemble: no answer
// is a 5xx, each file whose identity is readable is stored, each whose
// headers are beyond the readers' budget ends in state error with a
// detail, and the peak memory of the server as shipped grows by less than
// 256 MB.
func TestObjectReadersMemoryBudget(t *testing.T) {
	t.Parallel()
	s := newErrata(t, map[string]string{"LOG_LEVEL": "warn"})
	s.spawnShipped(t)
	setupAcme(t, s)
	pid := s.proc.Process.Pid
	start := peakRSS(t, pid)

	// Beyond the budget: a Mach-O of 2^32-1 load commands in 4 GiB, an
	// ELF whose extended section count is 2^40.
	hugeCmds := diftest.MachO(1, 0, 0)
	binary.LittleEndian.PutUint32(hugeCmds[16:], 1<<32-1)
	binary.LittleEndian.PutUint32(hugeCmds[20:], 1<<32-8)
	extended := diftest.ELF(3, 8)
	binary.LittleEndian.PutUint16(extended[60:], 0)
	shoff := binary.LittleEndian.Uint64(extended[40:])
	binary.LittleEndian.PutUint64(extended[shoff+32:], 1<<40)

	bombs := []struct {
		name     string
		file     []byte
		readable bool // its identity is read, and it is stored
	}{
		{"bomb.elf", diftest.ELF(400, 1<<20), true},
		{"bomb.dylib", diftest.MachO(1, 400, 1<<20), true},
		{"bomb-fat", diftest.FatMachO(8, diftest.MachO(1, 50, 1<<20)), true},
		{"bomb.exe", diftest.PE(200, 200, 1<<20, 1<<32-1), true},
		{"bomb.src.zip", diftest.SourceBundle(65_000, 2<<10), true},
		{"small-bomb.src.zip", diftest.SourceBundle(10_000, 2<<10), true}, // for difs/assemble
		{"huge-commands.dylib", hugeCmds, false},
		{"extended.elf", extended, false},
	}
	t.Run("files/dsyms/", func(t *testing.T) {
		for _, b := range bombs {
			upload := zipOf(t, b.name, b.file)
			r := postDsyms(t, s, upload)
			if r.err != nil || r.status >= 500 {
				t.Fatalf("%s (a zip of %d bytes): %s, want no 5xx", b.name, len(upload), r)
			}
			var stored []json.RawMessage
			json.Unmarshal(r.body, &stored)
			if r.status != http.StatusCreated || (len(stored) > 0) != b.readable {
				t.Errorf("%s: %s, want 201 with the file stored: %v", b.name, r, b.readable)
			}
			t.Logf("%s: a zip of %d bytes, peak RSS %d MB", b.name, len(upload), peakRSS(t, pid)>>20)
		}
	})
	t.Run("difs/assemble", func(t *testing.T) {
		for _, b := range bombs {
			if len(b.file) > 32<<20 {
				continue // more than one chunk-upload request holds
			}
			state, detail := assembleDif(t, s, b.name, b.file)
			switch {
			case b.readable && state != "ok":
				t.Errorf("%s: state %s (%s), want ok", b.name, state, detail)
			case !b.readable && (state != "error" || detail == ""):
				t.Errorf("%s: state %s (%q), want error with a detail", b.name, state, detail)
			}
			t.Logf("%s: %s %q, peak RSS %d MB", b.name, state, detail, peakRSS(t, pid)>>20)
		}
	})
	grown := peakRSS(t, pid) - start
	t.Logf("the server's peak RSS grew by %d MB from %d MB", grown>>20, start>>20)
	if grown >= maxReaderGrowth {
		t.Errorf("the server's peak RSS grew by %d MB, want less than %d", grown>>20, maxReaderGrowth>>20)
	}
}
