package store

import (
	"encoding/binary"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// binaryArray writes a one-dimensional array of the element type oid in
// PostgreSQL's binary format; a nil element is NULL.
func binaryArray(oid uint32, elems ...[]byte) []byte {
	b := binary.BigEndian.AppendUint32(nil, 1) // dimensions
	b = binary.BigEndian.AppendUint32(b, 0)    // has NULLs (unused)
	b = binary.BigEndian.AppendUint32(b, oid)
	b = binary.BigEndian.AppendUint32(b, uint32(len(elems)))
	b = binary.BigEndian.AppendUint32(b, 1) // lower bound
	for _, e := range elems {
		if e == nil {
			b = binary.BigEndian.AppendUint32(b, 0xFFFFFFFF)
			continue
		}
		b = binary.BigEndian.AppendUint32(b, uint32(len(e)))
		b = append(b, e...)
	}
	return b
}

func TestReadArray(t *testing.T) {
	empty := binary.BigEndian.AppendUint32(make([]byte, 0, 12), 0) // no dimensions
	empty = binary.BigEndian.AppendUint32(empty, 0)
	empty = binary.BigEndian.AppendUint32(empty, 25)
	twoDims := binaryArray(25, []byte("a"))
	binary.BigEndian.PutUint32(twoDims, 2)
	full := binaryArray(25, []byte("web"), nil, []byte(""), []byte("é<>"))
	for _, tc := range []struct {
		name    string
		src     []byte
		want    []textCol
		wantOID uint32
		wantErr bool
	}{
		{name: "NULL is empty", src: nil, want: []textCol{}},
		{name: "no dimensions is empty", src: empty, want: []textCol{}, wantOID: 25},
		{name: "elements, NULL and empty ones too", src: full,
			want: []textCol{textCol("web"), nil, textCol(""), textCol("é<>")}, wantOID: 25},
		{name: "two dimensions fail", src: twoDims, want: []textCol{}, wantOID: 25, wantErr: true},
		{name: "a cut header fails", src: full[:10], want: []textCol{}, wantErr: true},
		{name: "a cut element fails", src: full[:len(full)-1], want: []textCol{textCol("web"), nil, textCol("")}, wantOID: 25, wantErr: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, oid, err := readArray(make([]textCol, 3), tc.src)
			if (err != nil) != tc.wantErr {
				t.Fatalf("error %v, want an error: %v", err, tc.wantErr)
			}
			if oid != tc.wantOID {
				t.Errorf("element type %d, want %d", oid, tc.wantOID)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("elements (-want +got):\n%s", diff)
			}
		})
	}
}

func TestTake(t *testing.T) {
	var slab []int
	a := take(&slab, 2, 3)
	b := take(&slab, 1, 3)
	c := take(&slab, 5, 3) // no room left: a chunk of its own
	a[0], b[0], c[4] = 1, 2, 3
	if len(a) != 2 || cap(a) != 2 || len(b) != 1 || cap(b) != 1 || len(c) != 5 || cap(c) != 5 {
		t.Fatalf("lengths and capacities %d/%d %d/%d %d/%d, want 2/2 1/1 5/5", len(a), cap(a), len(b), cap(b), len(c), cap(c))
	}
	a = append(a, 9) // copies: b is left alone
	if a[2] != 9 || b[0] != 2 {
		t.Errorf("an append to one taken slice changed the next: %d", b[0])
	}
}
