package worker

import (
	"archive/zip"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"testing"
)

// directoryBomb is a zip whose end record describes a directory of n
// records of 46 bytes with no name: what a small upload can claim.
// The fixed sizes of a central directory record and of the end record.
const (
	dirRecordLen = 46
	eocdLen      = 22
)

func directoryBomb(n int) []byte {
	var b bytes.Buffer
	rec := make([]byte, dirRecordLen)
	binary.LittleEndian.PutUint32(rec, 0x02014b50)
	for range n {
		b.Write(rec)
	}
	eocd := make([]byte, eocdLen)
	binary.LittleEndian.PutUint32(eocd, 0x06054b50)
	binary.LittleEndian.PutUint16(eocd[8:], uint16(min(n, 0xffff)))
	binary.LittleEndian.PutUint16(eocd[10:], uint16(min(n, 0xffff)))
	binary.LittleEndian.PutUint32(eocd[12:], uint32(b.Len()))
	b.Write(eocd)
	return b.Bytes()
}

// smallZip is a valid zip of n members.
func smallZip(t testing.TB, n int) []byte {
	var b bytes.Buffer
	zw := zip.NewWriter(&b)
	for i := range n {
		w, err := zw.Create(fmt.Sprintf("files/%d.js", i))
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(w, "x(%d)", i)
	}
	zw.SetComment("a comment")
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func TestCheckZipDirectory(t *testing.T) {
	for _, tt := range []struct {
		name string
		data []byte
		want string // "" accepted; else in the error
	}{
		{"a zip within the limit", smallZip(t, 10), ""},
		{"an empty zip", smallZip(t, 0), ""},
		{"more members than the limit", smallZip(t, 11), "more than the limit of 10"},
		{"a directory bomb", directoryBomb(60_000), "more than the limit of 10"},
		{"a directory bomb that claims zip64 without its records", directoryBomb(100_000), "zip64 end record is missing"},
		{"a directory bomb that undercounts", func() []byte {
			b := directoryBomb(100_000)
			binary.LittleEndian.PutUint16(b[len(b)-eocdLen+10:], 5)
			return b
		}(), "larger than 10 members can take"},
		{"records past the count", func() []byte {
			b := directoryBomb(20)
			binary.LittleEndian.PutUint16(b[len(b)-eocdLen+10:], 5)
			return b
		}(), "more records than its end record counts"},
		{"not a zip", []byte("hello"), "not a zip archive"},
		{"a directory size that splits a record", func() []byte {
			b := smallZip(t, 2)
			off := len(b) - len("a comment") - eocdLen + 12
			binary.LittleEndian.PutUint32(b[off:], binary.LittleEndian.Uint32(b[off:])-1)
			return b
		}(), "corrupt"},
		{"a directory larger than what comes before its end record", func() []byte {
			b := smallZip(t, 2)
			off := len(b) - len("a comment") - eocdLen + 12
			binary.LittleEndian.PutUint32(b[off:], uint32(len(b)))
			return b
		}(), "not where its end record says"},
		{"offsets counted from before the zip, as sentry-cli writes them", func() []byte {
			b := smallZip(t, 2)
			off := len(b) - len("a comment") - eocdLen + 16
			binary.LittleEndian.PutUint32(b[off:], binary.LittleEndian.Uint32(b[off:])+8)
			return b
		}(), ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			err := checkZipDirectory(bytes.NewReader(tt.data), int64(len(tt.data)), 10)
			switch {
			case tt.want == "" && err != nil:
				t.Errorf("refused: %v", err)
			case tt.want != "" && (err == nil || !bytes.Contains([]byte(err.Error()), []byte(tt.want))):
				t.Errorf("err = %v, want one containing %q", err, tt.want)
			}
			if _, ok := errors.AsType[bundleError](err); err != nil && !ok {
				t.Errorf("err = %v is not the bundle's fault", err)
			}
		})
	}
}

// FuzzZipDirectory checks that whatever a bundle's end records say,
// checkZipDirectory never panics, and that archive/zip then finds no more
// members than the limit.
func FuzzZipDirectory(f *testing.F) {
	f.Add(smallZip(f, 3))
	f.Add(smallZip(f, 12))
	f.Add(directoryBomb(50))
	f.Add([]byte("PK\x05\x06" + string(make([]byte, 18))))
	f.Fuzz(func(t *testing.T, data []byte) {
		const limit = 8
		if err := checkZipDirectory(bytes.NewReader(data), int64(len(data)), limit); err != nil {
			if _, ok := errors.AsType[bundleError](err); !ok {
				t.Fatalf("err = %v is not the bundle's fault", err)
			}
			return
		}
		zr, err := zip.NewReader(bytes.NewReader(data), int64(len(data)))
		if err == nil && len(zr.File) > limit {
			t.Fatalf("%d members passed a limit of %d", len(zr.File), limit)
		}
	})
}
