package worker

import (
	"archive/zip"
	"compress/flate"
	"crypto/sha1"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"hash"
	"hash/crc32"
	"io"
)

// memberStream indexes the members of a bundle as its bytes stream by, in
// one pass: it is an io.Writer given the whole bundle in order, while the
// bundle's checksum is computed beside it. It walks the zip's local
// headers one after the other, checks each against the central directory
// (read before, from the end of the bundle), and hashes each member's
// content, inflated when it is deflated: size, SHA-1 and CRC-32. The
// content of manifest.json is kept, up to maxManifestSize.
type memberStream struct {
	zipStart int64                // where the zip starts in the bundle
	byName   map[string]*zip.File // the central directory
	budget   *readBudget

	pos   int64  // bundle bytes seen
	state int    // what the next bytes are
	buf   []byte // the local header being read
	need  int64  // bytes still to come of the current state
	name  string // the member being read
	cur   *memberSink

	// hasDescriptor says a data descriptor follows the current member;
	// descriptorLen is its length without its optional signature, and
	// afterSig says its first 4 bytes were read.
	hasDescriptor bool
	descriptorLen int64
	afterSig      bool

	seen     map[string]streamedMember
	manifest []byte
	tooLarge bool // manifest.json is over maxManifestSize
}

// States of a memberStream.
const (
	streamPrefix     = iota // the bytes before the zip (a SYSB header)
	streamHeader            // a local header's 30 fixed bytes
	streamNames             // its name and extra field
	streamData              // a member's stored data
	streamDescriptor        // a data descriptor after it
	streamDone              // the central directory and what follows
)

// localHeaderLen is the fixed part of a zip local file header.
const localHeaderLen = 30

// streamedMember is what the stream learned of one member.
type streamedMember struct {
	start int64 // where its stored data starts in the bundle
	csize int64
	size  int64
	sha1  string
}

func newMemberStream(zr *zip.Reader, zipStart int64, budget *readBudget) *memberStream {
	ms := &memberStream{
		zipStart: zipStart, byName: make(map[string]*zip.File, len(zr.File)), budget: budget,
		seen: make(map[string]streamedMember, len(zr.File)),
	}
	for _, zf := range zr.File {
		ms.byName[zf.Name] = zf
	}
	if zipStart == 0 {
		ms.state = streamHeader
		ms.need = localHeaderLen
	} else {
		ms.need = zipStart
	}
	return ms
}

// Write takes the next bytes of the bundle.
func (ms *memberStream) Write(p []byte) (int, error) {
	n := len(p)
	for len(p) > 0 && ms.state != streamDone {
		take := min(int64(len(p)), ms.need)
		chunk := p[:take]
		p = p[take:]
		ms.pos += take
		ms.need -= take
		switch ms.state {
		case streamData:
			if _, err := ms.cur.Write(chunk); err != nil {
				return 0, err
			}
		case streamHeader, streamNames, streamDescriptor:
			ms.buf = append(ms.buf, chunk...)
		}
		if ms.need == 0 {
			if err := ms.next(); err != nil {
				return 0, err
			}
		}
	}
	return n, nil
}

// next moves to the state after the one whose bytes just all came.
func (ms *memberStream) next() error {
	switch ms.state {
	case streamPrefix:
		ms.state, ms.need, ms.buf = streamHeader, localHeaderLen, ms.buf[:0]
	case streamHeader:
		switch binary.LittleEndian.Uint32(ms.buf) {
		case 0x04034b50: // a local file header
		case 0x02014b50, 0x06054b50, 0x06064b50: // the central directory: all members came
			ms.state = streamDone
			return nil
		default:
			return badBundle("The bundle's zip has data between its members at offset %d", ms.pos-localHeaderLen-ms.zipStart)
		}
		nameLen := int64(binary.LittleEndian.Uint16(ms.buf[26:]))
		extraLen := int64(binary.LittleEndian.Uint16(ms.buf[28:]))
		ms.state, ms.need = streamNames, nameLen+extraLen
		if ms.need == 0 {
			return badBundle("The bundle has a member without a name")
		}
	case streamNames:
		return ms.startMember()
	case streamData:
		if err := ms.endMember(); err != nil {
			return err
		}
	case streamDescriptor:
		if !ms.afterSig {
			ms.afterSig = true
			if binary.LittleEndian.Uint32(ms.buf) == 0x08074b50 {
				ms.need = ms.descriptorLen // the signature, then the rest
			} else {
				ms.need = ms.descriptorLen - 4 // no signature
			}
			if ms.need > 0 {
				return nil
			}
		}
		ms.state, ms.need, ms.buf = streamHeader, localHeaderLen, ms.buf[:0]
	}
	return nil
}

// abort ends a member being inflated, when the stream is given up.
func (ms *memberStream) abort() {
	if ms.cur != nil && ms.cur.pipe != nil {
		ms.cur.pipe.CloseWithError(errors.New("assembly given up"))
	}
}

// startMember begins the member whose local header is in buf.
func (ms *memberStream) startMember() error {
	flags := binary.LittleEndian.Uint16(ms.buf[6:])
	method := binary.LittleEndian.Uint16(ms.buf[8:])
	nameLen := int(binary.LittleEndian.Uint16(ms.buf[26:]))
	ms.name = string(ms.buf[localHeaderLen : localHeaderLen+nameLen])
	zf := ms.byName[ms.name]
	if zf == nil {
		return badBundle("The bundle's zip has a member %q that its directory lacks", clip(ms.name))
	}
	if _, dup := ms.seen[ms.name]; dup {
		return badBundle("The bundle's zip has two members named %q", clip(ms.name))
	}
	if method != zf.Method {
		return badBundle("The member %q has two compression methods", clip(ms.name))
	}
	if zf.Method != zip.Store && zf.Method != zip.Deflate {
		return badBundle("The member %q is compressed with method %d; only stored and deflated members are read", clip(ms.name), zf.Method)
	}
	ms.seen[ms.name] = streamedMember{start: ms.pos, csize: int64(zf.CompressedSize64)}
	ms.cur = newMemberSink(zf, ms.budget, ms.name == "manifest.json")
	ms.state, ms.need = streamData, int64(zf.CompressedSize64)
	ms.buf = ms.buf[:0]
	ms.hasDescriptor = flags&0x8 != 0
	if ms.need == 0 {
		return ms.endMember()
	}
	return nil
}

// endMember checks the member just read against the directory.
func (ms *memberStream) endMember() error {
	zf := ms.byName[ms.name]
	size, sum, crc, err := ms.cur.finish()
	if err != nil {
		return err
	}
	if uint64(size) != zf.UncompressedSize64 || crc != zf.CRC32 {
		return badBundle("The member %q is corrupt: its content does not match the zip's directory", clip(ms.name))
	}
	m := ms.seen[ms.name]
	m.size, m.sha1 = size, sum
	ms.seen[ms.name] = m
	if ms.name == "manifest.json" {
		ms.manifest, ms.tooLarge = ms.cur.kept, ms.cur.keptTooLarge
	}
	ms.buf = ms.buf[:0]
	if ms.hasDescriptor {
		// 12 bytes (crc, sizes) or 20 with 64-bit sizes, after an
		// optional 4-byte signature.
		n := int64(12)
		if zf.CompressedSize64 >= 0xffffffff || zf.UncompressedSize64 >= 0xffffffff {
			n = 20
		}
		ms.state, ms.need = streamDescriptor, 4
		ms.descriptorLen, ms.afterSig = n, false
		return nil
	}
	ms.state, ms.need = streamHeader, localHeaderLen
	return nil
}

// finish checks, once the whole bundle came, that every member of the
// directory was found in it, and returns what was learned of each.
func (ms *memberStream) finish() (map[string]streamedMember, error) {
	if ms.state == streamData || ms.state == streamNames || ms.state == streamDescriptor {
		return nil, badBundle("The bundle ends inside a member")
	}
	for name := range ms.byName {
		m, ok := ms.seen[name]
		if !ok || m.sha1 == "" {
			return nil, badBundle("The member %q is not where the zip's directory says", clip(name))
		}
	}
	return ms.seen, nil
}

// memberSink takes a member's stored data and learns its content's size,
// SHA-1 and CRC-32, inflating it on a goroutine of its own when it is
// deflated.
type memberSink struct {
	w            io.Writer // where stored data goes
	sha          hash.Hash
	crc          hash.Hash32
	size         int64
	pipe         *io.PipeWriter
	done         chan error
	keep         bool // keep the content, up to maxManifestSize
	kept         []byte
	keptTooLarge bool
	budget       *readBudget
}

func newMemberSink(zf *zip.File, budget *readBudget, keep bool) *memberSink {
	s := &memberSink{sha: sha1.New(), crc: crc32.NewIEEE(), keep: keep, budget: budget}
	content := &contentWriter{s}
	if zf.Method == zip.Store {
		s.w = content
		return s
	}
	pr, pw := io.Pipe()
	s.pipe, s.w, s.done = pw, pw, make(chan error, 1)
	go func() {
		fr := flate.NewReader(pr)
		_, err := io.Copy(content, fr)
		if err == nil {
			// The stored data must end where the deflate stream does.
			var one [1]byte
			if n, _ := fr.Read(one[:]); n > 0 {
				err = errors.New("data after the end of the deflate stream")
			}
		}
		fr.Close()
		pr.CloseWithError(err)
		s.done <- err
	}()
	return s
}

// contentWriter takes a member's content, inflated.
type contentWriter struct{ s *memberSink }

func (c *contentWriter) Write(p []byte) (int, error) {
	s := c.s
	if err := s.budget.take(len(p)); err != nil {
		return 0, err
	}
	s.size += int64(len(p))
	s.sha.Write(p)
	s.crc.Write(p)
	if s.keep && !s.keptTooLarge {
		if len(s.kept)+len(p) > maxManifestSize {
			s.keptTooLarge, s.kept = true, nil
		} else {
			s.kept = append(s.kept, p...)
		}
	}
	return len(p), nil
}

func (s *memberSink) Write(p []byte) (int, error) {
	n, err := s.w.Write(p)
	if err != nil {
		if _, ok := errors.AsType[bundleError](err); !ok {
			err = badBundle("A member is corrupt: %v", err)
		}
	}
	return n, err
}

// finish ends the member's data and returns what was learned.
func (s *memberSink) finish() (int64, string, uint32, error) {
	if s.pipe != nil {
		s.pipe.Close()
		if err := <-s.done; err != nil {
			if _, ok := errors.AsType[bundleError](err); !ok {
				err = badBundle("A member is corrupt: %v", err)
			}
			return 0, "", 0, err
		}
	}
	return s.size, hex.EncodeToString(s.sha.Sum(nil)), s.crc.Sum32(), nil
}

// manifestOf decodes the manifest.json that ms kept.
func manifestOf(ms *memberStream) (manifest, error) {
	var m manifest
	switch {
	case ms.byName["manifest.json"] == nil:
		return m, badBundle("The bundle has no manifest.json")
	case ms.tooLarge:
		return m, badBundle("The manifest is larger than %d bytes", maxManifestSize)
	}
	if err := json.Unmarshal(ms.manifest, &m); err != nil {
		return m, badBundle("The manifest is malformed: %v", err)
	}
	return m, nil
}
