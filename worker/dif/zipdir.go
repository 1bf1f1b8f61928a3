package dif

import (
	"bufio"
	"compress/flate"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
)

// ZipError is what is wrong with a zip's directory, in words for the
// client that uploaded it (as "The bundle ...").
type ZipError struct{ Msg string }

func (e *ZipError) Error() string { return e.Msg }

func badZip(format string, args ...any) error {
	return &ZipError{fmt.Sprintf(format, args...)}
}

// Bounds of a zip's central directory that CheckZipDirectory enforces
// before archive/zip reads it.
const (
	// dirRecordLen is the fixed part of a central directory record.
	dirRecordLen = 46
	// maxDirRecordLen is the most a record may take with its name, extra
	// field and comment: bundles name their members with short paths, and
	// a directory of maxMembers such records bounds what reading it costs.
	maxDirRecordLen = dirRecordLen + 4096
	// eocdLen is the fixed part of the end of central directory record; a
	// comment of up to 65535 bytes may follow it.
	eocdLen = 22
	// zip64LocatorLen and zip64EOCDLen are the zip64 end records' sizes.
	zip64LocatorLen = 20
	zip64EOCDLen    = 56
)

// CheckZipDirectory checks the central directory of the zip of size bytes
// in r before archive/zip builds an entry of it, which it does for every
// record it finds, whatever the end record says: the end record (zip64 or
// not) must count at most maxMembers records, in a directory of at most
// maxMembers*maxDirRecordLen bytes that ends where the end records begin,
// and the directory must hold exactly that many well-formed records. So a
// small upload cannot describe a directory of millions of entries.
func CheckZipDirectory(r io.ReaderAt, size, maxMembers int64) error {
	d, err := readZipDirectory(r, size, maxMembers)
	if err != nil {
		return err
	}
	return d.walk(nil)
}

// zipDirectory is a zip's central directory, as its end records place it.
type zipDirectory struct {
	r       io.ReaderAt
	start   int64 // where it begins in r
	size    int64
	records int64
	// base is what to add to an offset the directory names to find it
	// in r: the archive's writer may have counted bytes before the zip.
	base int64
}

// readZipDirectory reads the end records of the zip of size bytes in r and
// checks the directory they describe against maxMembers, as
// CheckZipDirectory says, without reading the directory.
func readZipDirectory(r io.ReaderAt, size, maxMembers int64) (zipDirectory, error) {
	tail := min(size, eocdLen+65535)
	buf := make([]byte, tail)
	if _, err := r.ReadAt(buf, size-tail); err != nil && !errors.Is(err, io.EOF) {
		return zipDirectory{}, err
	}
	// The end record is the last signature whose comment ends the file.
	eocd := -1
	for i := len(buf) - eocdLen; i >= 0; i-- {
		if binary.LittleEndian.Uint32(buf[i:]) == 0x06054b50 &&
			i+eocdLen+int(binary.LittleEndian.Uint16(buf[i+20:])) == len(buf) {
			eocd = i
			break
		}
	}
	if eocd < 0 {
		return zipDirectory{}, badZip("The bundle is not a zip archive")
	}
	e := buf[eocd:]
	records := int64(binary.LittleEndian.Uint16(e[10:]))
	dirSize := int64(binary.LittleEndian.Uint32(e[12:]))
	dirOffset := int64(binary.LittleEndian.Uint32(e[16:]))
	end := size - tail + int64(eocd) // where the end records begin
	// A zip64 locator right before the end record points to the zip64 end
	// record, which holds the real values when the end record's are
	// saturated; writers may add both even when they are not.
	saturated := records == 0xffff || dirSize == 0xffffffff || dirOffset == 0xffffffff
	loc := make([]byte, zip64LocatorLen)
	if end >= zip64LocatorLen {
		if _, err := r.ReadAt(loc, end-zip64LocatorLen); err != nil {
			loc = nil
		}
	}
	switch {
	case loc != nil && end >= zip64LocatorLen && binary.LittleEndian.Uint32(loc) == 0x07064b50:
		// The locator names the record's offset from the start of the
		// archive as its writer saw it, which may not be ours (a bundle's
		// header before the zip): the record is also found right before
		// the locator.
		if end < zip64LocatorLen+zip64EOCDLen {
			return zipDirectory{}, badZip("The bundle's zip64 end record is out of place")
		}
		recOffset := binary.LittleEndian.Uint64(loc[8:])
		rec := make([]byte, zip64EOCDLen)
		if recOffset > uint64(end-zip64LocatorLen-zip64EOCDLen) || !readSignature(r, rec, int64(recOffset), 0x06064b50) {
			recOffset = uint64(end - zip64LocatorLen - zip64EOCDLen)
			if !readSignature(r, rec, int64(recOffset), 0x06064b50) {
				return zipDirectory{}, badZip("The bundle's zip64 end record is missing")
			}
		}
		n, s := binary.LittleEndian.Uint64(rec[32:]), binary.LittleEndian.Uint64(rec[40:])
		if n > uint64(maxMembers) {
			return zipDirectory{}, badZip("The bundle has more members than the limit of %d", maxMembers)
		}
		if s > uint64(maxMembers*maxDirRecordLen) {
			return zipDirectory{}, badZip("The bundle's zip directory is larger than %d members can take", maxMembers)
		}
		records, dirSize, end = int64(n), int64(s), int64(recOffset)
		dirOffset = int64(binary.LittleEndian.Uint64(rec[48:]) & (1<<62 - 1))
	case saturated:
		return zipDirectory{}, badZip("The bundle's zip64 end record is missing")
	}
	switch {
	case records > maxMembers:
		return zipDirectory{}, badZip("The bundle has %d members, more than the limit of %d", records, maxMembers)
	case dirSize > maxMembers*maxDirRecordLen:
		return zipDirectory{}, badZip("The bundle's zip directory is larger than %d members can take", maxMembers)
	case dirSize > end:
		return zipDirectory{}, badZip("The bundle's zip directory is not where its end record says")
	}
	// The directory ends where the end records begin. Its offset in the
	// end record counts from where the archive's writer began, which may
	// be before the zip (sentry-cli counts the bundle's 8-byte header):
	// archive/zip allows for that, and so does this check.
	return zipDirectory{r: r, start: end - dirSize, size: dirSize, records: records, base: end - dirSize - dirOffset}, nil
}

// walk reads the directory's records in order, checking that there are
// exactly as many as the end record counts and that they fill the
// directory, and calls fn (when not nil) with each record's fixed part
// and its offset in r. It reads through one small buffer.
func (d zipDirectory) walk(fn func(hdr []byte, at int64) error) error {
	br := bufio.NewReaderSize(io.NewSectionReader(d.r, d.start, d.size), 16<<10)
	hdr := make([]byte, dirRecordLen)
	var at, n int64
	for ; at < d.size; n++ {
		if n >= d.records {
			return badZip("The bundle's zip directory has more records than its end record counts")
		}
		if _, err := io.ReadFull(br, hdr); err != nil || binary.LittleEndian.Uint32(hdr) != 0x02014b50 {
			return badZip("The bundle's zip directory is corrupt")
		}
		if fn != nil {
			if err := fn(hdr, d.start+at); err != nil {
				return err
			}
		}
		rest := int64(binary.LittleEndian.Uint16(hdr[28:])) +
			int64(binary.LittleEndian.Uint16(hdr[30:])) + int64(binary.LittleEndian.Uint16(hdr[32:]))
		if at+dirRecordLen+rest > d.size {
			return badZip("The bundle's zip directory is corrupt")
		}
		if _, err := br.Discard(int(rest)); err != nil {
			return badZip("The bundle's zip directory is corrupt")
		}
		at += dirRecordLen + rest
	}
	if at != d.size || n != d.records {
		return badZip("The bundle's zip directory is corrupt")
	}
	return nil
}

// readSignature reads len(buf) bytes at off into buf and reports whether
// they start with the signature sig.
func readSignature(r io.ReaderAt, buf []byte, off int64, sig uint32) bool {
	_, err := r.ReadAt(buf, off)
	return err == nil && binary.LittleEndian.Uint32(buf) == sig
}

// readMember reads the member whose directory record is at offset at in
// d.r: stored or deflated, of at most max bytes, with the size and
// CRC-32 its record names.
func (d zipDirectory) readMember(at int64, max int64) ([]byte, error) {
	m, err := d.member(at)
	if err != nil {
		return nil, err
	}
	method, sum, usize := m.Method, m.CRC, uint64(m.Size)
	if usize > uint64(max) {
		return nil, fmt.Errorf("a member of %d bytes, more than %d", usize, max)
	}
	data := io.NewSectionReader(d.r, m.Offset, m.CSize)
	var body io.Reader
	switch method {
	case 0: // stored
		body = data
	case 8: // deflated
		fr := flate.NewReader(data)
		defer fr.Close()
		body = fr
	default:
		return nil, fmt.Errorf("a member compressed with method %d", method)
	}
	// The size is checked against max above: it is read into one buffer
	// of that size, and one byte more must not be there.
	out := make([]byte, usize)
	if _, err := io.ReadFull(body, out); err != nil {
		return nil, errors.New("a member shorter than its record says")
	}
	var more [1]byte
	switch n, err := body.Read(more[:]); {
	case n > 0:
		return nil, errors.New("a member longer than its record says")
	case err != nil && err != io.EOF:
		return nil, err
	case crc32.ChecksumIEEE(out) != sum:
		return nil, errors.New("a member whose checksum is not what its record says")
	}
	return out, nil
}

// ZipMember is where the data of a zip member lies: CSize bytes at Offset
// (after its local header), compressed with Method (0 stored, 8 deflated),
// Size bytes once inflated, with the CRC-32 its record names.
type ZipMember struct {
	Offset, CSize, Size int64
	Method              uint16
	CRC                 uint32
}

// member reads the directory record at offset at in d.r, and the local
// header it points to, and says where the member's data lies.
func (d zipDirectory) member(at int64) (ZipMember, error) {
	le := binary.LittleEndian
	rec := make([]byte, dirRecordLen)
	if _, err := d.r.ReadAt(rec, at); err != nil {
		return ZipMember{}, badZip("The bundle's zip directory is corrupt")
	}
	method, sum := le.Uint16(rec[10:]), le.Uint32(rec[16:])
	csize, usize, offset := uint64(le.Uint32(rec[20:])), uint64(le.Uint32(rec[24:])), uint64(le.Uint32(rec[42:]))
	if csize == 0xffffffff || usize == 0xffffffff || offset == 0xffffffff {
		// The zip64 extra field holds those that are saturated, in
		// this order.
		extra := make([]byte, le.Uint16(rec[30:]))
		if _, err := d.r.ReadAt(extra, at+dirRecordLen+int64(le.Uint16(rec[28:]))); err != nil {
			return ZipMember{}, badZip("The bundle's zip directory is corrupt")
		}
		for len(extra) >= 4 {
			tag, n := le.Uint16(extra), int(le.Uint16(extra[2:]))
			if n > len(extra)-4 {
				break
			}
			field := extra[4 : 4+n]
			extra = extra[4+n:]
			if tag != 0x0001 {
				continue
			}
			for _, v := range []*uint64{&usize, &csize, &offset} {
				if *v == 0xffffffff && len(field) >= 8 {
					*v, field = le.Uint64(field), field[8:]
				}
			}
		}
	}
	local := make([]byte, 30)
	lh := d.base + int64(offset&(1<<62-1))
	if lh < 0 || !readSignature(d.r, local, lh, 0x04034b50) {
		return ZipMember{}, badZip("The bundle's member is not where its record says")
	}
	return ZipMember{
		Offset: lh + 30 + int64(le.Uint16(local[26:])) + int64(le.Uint16(local[28:])),
		CSize:  int64(csize & (1<<62 - 1)), Size: int64(usize & (1<<62 - 1)), Method: method, CRC: sum,
	}, nil
}
