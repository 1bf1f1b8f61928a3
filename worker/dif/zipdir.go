package dif

import (
	"encoding/binary"
	"errors"
	"fmt"
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
	tail := min(size, eocdLen+65535)
	buf := make([]byte, tail)
	if _, err := r.ReadAt(buf, size-tail); err != nil && !errors.Is(err, io.EOF) {
		return err
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
		return badZip("The bundle is not a zip archive")
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
			return badZip("The bundle's zip64 end record is out of place")
		}
		recOffset := binary.LittleEndian.Uint64(loc[8:])
		rec := make([]byte, zip64EOCDLen)
		if recOffset > uint64(end-zip64LocatorLen-zip64EOCDLen) || !readSignature(r, rec, int64(recOffset), 0x06064b50) {
			recOffset = uint64(end - zip64LocatorLen - zip64EOCDLen)
			if !readSignature(r, rec, int64(recOffset), 0x06064b50) {
				return badZip("The bundle's zip64 end record is missing")
			}
		}
		n, s := binary.LittleEndian.Uint64(rec[32:]), binary.LittleEndian.Uint64(rec[40:])
		if n > uint64(maxMembers) {
			return badZip("The bundle has more members than the limit of %d", maxMembers)
		}
		if s > uint64(maxMembers*maxDirRecordLen) {
			return badZip("The bundle's zip directory is larger than %d members can take", maxMembers)
		}
		records, dirSize, end = int64(n), int64(s), int64(recOffset)
	case saturated:
		return badZip("The bundle's zip64 end record is missing")
	}
	switch {
	case records > maxMembers:
		return badZip("The bundle has %d members, more than the limit of %d", records, maxMembers)
	case dirSize > maxMembers*maxDirRecordLen:
		return badZip("The bundle's zip directory is larger than %d members can take", maxMembers)
	case dirSize > end:
		return badZip("The bundle's zip directory is not where its end record says")
	}
	// The directory ends where the end records begin. Its offset in the
	// end record counts from where the archive's writer began, which may
	// be before the zip (sentry-cli counts the bundle's 8-byte header):
	// archive/zip allows for that, and so does this check.
	// Walk the records: exactly records of them, filling the directory.
	dir := io.NewSectionReader(r, end-dirSize, dirSize)
	hdr := make([]byte, dirRecordLen)
	var at, n int64
	for ; at < dirSize; n++ {
		if n >= records {
			return badZip("The bundle's zip directory has more records than its end record counts")
		}
		if _, err := dir.ReadAt(hdr, at); err != nil || binary.LittleEndian.Uint32(hdr) != 0x02014b50 {
			return badZip("The bundle's zip directory is corrupt")
		}
		at += dirRecordLen + int64(binary.LittleEndian.Uint16(hdr[28:])) +
			int64(binary.LittleEndian.Uint16(hdr[30:])) + int64(binary.LittleEndian.Uint16(hdr[32:]))
	}
	if at != dirSize || n != records {
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
