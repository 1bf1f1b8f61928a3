package handlers

import (
	"compress/flate"
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"errata/handlers/symbolication"
	"errata/handlers/symbolkey"
	"errata/store"
)

// The symbol routes (docs/symbol-server.md): debuginfod and a symbol
// server, for debuggers. routes.go lists them among the direct routes,
// served before the mux; package symbolkey reads their paths, and this
// file serves the files they name.

// handleDebuginfod serves GET /debuginfod/{path...}: the debug file, the
// executable, a source or a section of a build id. It names the request
// by the route its path parses as (debuginfodRoutes).
func handleDebuginfod(d Deps) apiFunc {
	inflating := symbolication.NewSlots[string](inflateSlotsPerOrg, inflateSlots)
	return func(w http.ResponseWriter, r *http.Request) error {
		q, err := symbolkey.ParseDebuginfod(r.URL.Path)
		if err != nil {
			return err
		}
		r.Pattern = debuginfodRoutes[q.Kind]
		org := symbolOrg{userID: caller(r).UserID, slug: q.Org}
		switch q.Kind {
		case symbolkey.Debuginfo:
			f, err := d.Store.FindSymbolFile(r.Context(), org.userID, org.slug, debuginfoQuery(q.BuildID))
			if err != nil {
				return err
			}
			return serveSymbolFile(w, r, d.Store, f, f.ObjectName, 0, f.Size, "")
		case symbolkey.Executable:
			f, err := d.Store.FindSymbolFile(r.Context(), org.userID, org.slug, executableQuery(q.BuildID))
			if err != nil {
				return err
			}
			return serveSymbolFile(w, r, d.Store, f, f.ObjectName, 0, f.Size, "")
		case symbolkey.Section:
			return serveSection(w, r, d.Store, org, q)
		}
		return serveSource(w, r, d.Store, inflating, org, q)
	}
}

// handleSymbolServer serves GET
// /symbols/{organization_slug}/{file}/{key}/{file2}: the file of a
// symbol-server key.
func handleSymbolServer(d Deps) apiFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		k, err := symbolkey.ParseKey(r.URL.Path)
		if err != nil {
			return err
		}
		q := store.SymbolQuery{Formats: k.Query.Formats, DebugID: k.Query.DebugID, CodeID: k.Query.CodeID,
			CodeIDs: k.Query.CodeIDs, Types: k.Query.Types, Feature: k.Query.Feature, ObjectName: k.Query.ObjectName}
		f, err := d.Store.FindSymbolFile(r.Context(), caller(r).UserID, k.Org, q)
		if err != nil {
			return err
		}
		return serveSymbolFile(w, r, d.Store, f, k.Name, 0, f.Size, "")
	}
}

// errTooLargeForClient is the answer for a file larger than the client's
// X-DEBUGINFOD-MAXSIZE.
var errTooLargeForClient = &apiError{status: http.StatusNotAcceptable, detail: "The file is larger than X-DEBUGINFOD-MAXSIZE"}

// symbolOrg is the organization a symbol request names, and its caller.
type symbolOrg struct {
	userID int64
	slug   string
}

func debuginfoQuery(id string) store.SymbolQuery {
	return store.SymbolQuery{Formats: []string{"elf"}, CodeID: id, Feature: "debug"}
}

func executableQuery(id string) store.SymbolQuery {
	return store.SymbolQuery{Formats: []string{"elf"}, CodeID: id, Types: []string{"exe", "lib"}}
}

// serveSection serves section q.Arg of the debuginfo file of q's build
// id, else of its executable when the section is missing there or has no
// bytes (SHT_NOBITS). A file whose section table was beyond the budget is
// 503, so that the client fetches the whole file; a damaged section 404.
func serveSection(w http.ResponseWriter, r *http.Request, st *store.Store, org symbolOrg, q symbolkey.Debuginfod) error {
	found := false
	for _, sq := range []store.SymbolQuery{debuginfoQuery(q.BuildID), executableQuery(q.BuildID)} {
		sq.Sections = true
		f, err := st.FindSymbolFile(r.Context(), org.userID, org.slug, sq)
		if errors.Is(err, store.ErrNotFound) {
			continue
		}
		if err != nil {
			return err
		}
		found = true
		if f.Sections == nil || f.Sections.Beyond {
			return &apiError{status: http.StatusServiceUnavailable, detail: "The section table of this file is beyond what errata reads: fetch the whole file"}
		}
		for _, s := range f.Sections.Sections {
			if s.Name != q.Arg {
				continue
			}
			if s.Damaged {
				return &apiError{status: http.StatusNotFound, detail: "The section's header points outside the file"}
			}
			if s.Type == 8 /* SHT_NOBITS */ || s.Size == 0 {
				break // look in the executable
			}
			return serveSymbolFile(w, r, st, f, q.Arg, int64(s.Offset), int64(s.Size), fmt.Sprintf(".%d.%d", s.Offset, s.Size))
		}
	}
	if !found {
		return errNotFound
	}
	return &apiError{status: http.StatusNotFound, detail: "No such section"}
}

// maxSourceFile bounds a deflated source, which is inflated in memory to
// serve ranges of it.
const maxSourceFile = 64 << 20

// The sources checked at once (inflated whole to check their size, CRC-32
// and SHA-1): one per organization, two in all, so that the CPU they take
// is bounded whatever the number of requests. A request over the bound
// waits for a slot, holding nothing, as long as workSlotWait, then is
// answered 503 with Retry-After.
const (
	inflateSlotsPerOrg = 1
	inflateSlots       = 2
)

// serveSource serves the source q.Arg from the source bundle of q's build
// id (by code id, else by the debug id derived from it) that holds it,
// where the index read at assembly says it lies: a stored member is
// served as a part of the bundle, a deflated one inflated as it is sent
// (inflatedSource), once checked against its size and CRC-32 in one of the
// inflating slots: what it holds is flate's window, never the source.
func serveSource(w http.ResponseWriter, r *http.Request, st *store.Store, inflating *symbolication.Slots[string], org symbolOrg, q symbolkey.Debuginfod) error {
	f, err := st.FindSymbolFile(r.Context(), org.userID, org.slug,
		store.SymbolQuery{Formats: []string{"sourcebundle"}, CodeID: q.BuildID, SourcePath: q.Arg})
	if errors.Is(err, store.ErrNotFound) {
		f, err = st.FindSymbolFile(r.Context(), org.userID, org.slug,
			store.SymbolQuery{Formats: []string{"sourcebundle"}, DebugID: symbolkey.DebugIDOfBuildID(q.BuildID), SourcePath: q.Arg})
	}
	if errors.Is(err, store.ErrNotFound) {
		return &apiError{status: http.StatusNotFound, detail: "No such source"}
	}
	if err != nil {
		return err
	}
	m := f.Source
	if m == nil || m.Size <= 0 {
		return errNotFound
	}
	if m.Method == 0 && m.CSize == m.Size {
		return serveSymbolFile(w, r, st, f, q.Arg, m.Offset, m.Size, fmt.Sprintf(":%d", m.Offset))
	}
	if m.Method != 8 || m.Size > maxSourceFile {
		return &apiError{status: http.StatusNotFound, detail: "The source cannot be served from its bundle"}
	}
	if maxSizeExceeded(r, m.Size) {
		return errTooLargeForClient
	}
	fr, err := st.OpenSymbolFile(r.Context(), f)
	if err != nil {
		return err
	}
	defer fr.Close()
	if m.Offset < 0 || m.CSize < 0 || m.Offset > fr.Size() || m.CSize > fr.Size()-m.Offset {
		return &apiError{status: http.StatusNotFound, detail: "The source is not where its bundle says"}
	}
	release, err := acquireWork(r, inflating, org.slug, "sources inflated")
	if err != nil {
		return err
	}
	src := &inflatedSource{deflated: io.NewSectionReader(fr, m.Offset, m.CSize), size: m.Size}
	defer src.close()
	sum, crc, n, err := src.check()
	release()
	var corrupt flate.CorruptInputError
	switch {
	case err != nil && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.As(err, &corrupt):
		return fmt.Errorf("reading file %d: %w: %w", f.FileID, store.ErrUnavailable, err)
	case err != nil || n != m.Size || crc != m.CRC:
		return &apiError{status: http.StatusNotFound, detail: "The source in the bundle is damaged"}
	}
	// Served as serveSymbolFile serves a file; its ETag is the source's
	// SHA-1.
	setSymbolHeaders(w, q.Arg, hex.EncodeToString(sum), m.Size)
	serveInflated(w, r, f.DateCreated, src)
	return nil
}

// serveInflated serves src as http.ServeContent does, with one range at
// most: src inflates its source from the start again for every range that
// goes backwards, outside the inflation slots, so that a request of many
// ranges (a header holds thousands) would inflate the source once per
// range. A request of several ranges is answered the whole source, as
// HTTP lets a server that ignores Range do.
func serveInflated(w http.ResponseWriter, r *http.Request, modtime time.Time, src *inflatedSource) {
	if strings.Contains(r.Header.Get("Range"), ",") {
		r.Header.Del("Range")
	}
	http.ServeContent(w, r, "", modtime, src)
}

// inflatedSource is a deflated source of a bundle read as it is inflated,
// from its start again after a seek backwards, so that what ServeContent
// reads of it (the whole, or a range) holds flate's window, never the
// source.
type inflatedSource struct {
	deflated *io.SectionReader
	size     int64
	pos      int64 // the offset Read reads next
	at       int64 // the offset zr has reached
	zr       io.ReadCloser
	restarts int // inflations begun from the start, the check's included
}

// check inflates the whole source and returns its SHA-1, CRC-32 and size
// (reading at most one byte past the size it was given).
func (s *inflatedSource) check() (sum []byte, crc uint32, n int64, err error) {
	h, c := sha1.New(), crc32.NewIEEE()
	s.restart()
	n, err = io.Copy(io.MultiWriter(h, c), io.LimitReader(s.zr, s.size+1))
	s.at = n
	return h.Sum(nil), c.Sum32(), n, err
}

// restart begins inflating from the source's start.
func (s *inflatedSource) restart() {
	s.restarts++
	s.deflated.Seek(0, io.SeekStart) //nolint:errcheck // a SectionReader's seek to 0 never fails
	if s.zr == nil {
		s.zr = flate.NewReader(s.deflated)
	} else {
		s.zr.(flate.Resetter).Reset(s.deflated, nil) //nolint:errcheck // flate's Reset never fails
	}
	s.at = 0
}

func (s *inflatedSource) Read(p []byte) (int, error) {
	if s.pos >= s.size {
		return 0, io.EOF
	}
	if s.zr == nil || s.at > s.pos {
		s.restart()
	}
	if s.at < s.pos {
		n, err := io.CopyN(io.Discard, s.zr, s.pos-s.at)
		s.at += n
		if err != nil {
			return 0, err
		}
	}
	n, err := s.zr.Read(p[:min(int64(len(p)), s.size-s.pos)])
	s.at += int64(n)
	s.pos += int64(n)
	if err == io.EOF && s.pos < s.size {
		err = io.ErrUnexpectedEOF
	}
	return n, err
}

func (s *inflatedSource) Seek(offset int64, whence int) (int64, error) {
	switch whence {
	case io.SeekCurrent:
		offset += s.pos
	case io.SeekEnd:
		offset += s.size
	}
	if offset < 0 {
		return 0, errors.New("inflatedSource: a seek before the start")
	}
	s.pos = offset
	return offset, nil
}

// close lets the inflating go.
func (s *inflatedSource) close() {
	if s.zr != nil {
		s.zr.Close()
	}
}

// maxSizeExceeded reports whether r's X-DEBUGINFOD-MAXSIZE is less than
// size.
func maxSizeExceeded(r *http.Request, size int64) bool {
	v := r.Header.Get("X-Debuginfod-Maxsize")
	if v == "" {
		return false
	}
	n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
	return err == nil && n >= 0 && size > n
}

// setSymbolHeaders sets the headers of a served file
// (docs/symbol-server.md).
func setSymbolHeaders(w http.ResponseWriter, name, etag string, size int64) {
	hd := w.Header()
	hd.Set("Content-Type", "application/octet-stream")
	hd.Set("X-Debuginfod-Size", strconv.FormatInt(size, 10))
	hd.Set("X-Debuginfod-File", headerText(name))
	hd.Set("Etag", `"`+etag+`"`)
	hd.Set("Cache-Control", "private")
}

// headerText is s with what a header value cannot hold escaped.
func headerText(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < 0x20 || c == 0x7f || c >= 0x80 || c == '%' {
			fmt.Fprintf(&b, "%%%02X", c)
			continue
		}
		b.WriteByte(c)
	}
	return b.String()
}

// serveSymbolFile serves size bytes at off of f's file (the whole file, or a
// section of it), with HEAD and Range. An empty answer is a 404, and one
// larger than the client's X-DEBUGINFOD-MAXSIZE a 406. The first byte is
// read before anything is written, so that a blob store that cannot be
// reached is a 503, not an answer cut short. etagSuffix tells a part of
// the file from the whole.
func serveSymbolFile(w http.ResponseWriter, r *http.Request, st *store.Store, f store.SymbolFile, name string, off, size int64, etagSuffix string) error {
	if size <= 0 {
		return errNotFound
	}
	if maxSizeExceeded(r, size) {
		return errTooLargeForClient
	}
	fr, err := st.OpenSymbolFile(r.Context(), f)
	if err != nil {
		return err
	}
	defer fr.Close()
	if off < 0 || off > fr.Size() || size > fr.Size()-off {
		return &apiError{status: http.StatusNotFound, detail: "The section's header points outside the file"}
	}
	part := io.NewSectionReader(fr, off, size)
	if _, err := part.ReadAt(make([]byte, 1), 0); err != nil {
		return fmt.Errorf("reading file %d: %w", f.FileID, store.ErrUnavailable)
	}
	var content io.ReadSeeker = part
	whole, isWhole := fr.(io.ReadSeeker)
	if isWhole = isWhole && off == 0 && size == fr.Size(); isWhole {
		// The reader itself: a file of the cache's directory goes to
		// the connection with sendfile(2), from the page cache.
		content = whole
	}
	setSymbolHeaders(w, name, f.SHA1+etagSuffix, size)
	if mem, ok := fr.(interface{ Bytes() []byte }); ok && plainGet(r) {
		// From memory, the whole answer in one write: what
		// ServeContent would send, without its copy loop.
		hd := w.Header()
		hd.Set("Content-Length", strconv.FormatInt(size, 10))
		hd.Set("Last-Modified", f.DateCreated.UTC().Format(http.TimeFormat))
		hd.Set("Accept-Ranges", "bytes")
		w.WriteHeader(http.StatusOK)
		w.Write(mem.Bytes()[off : off+size]) //nolint:errcheck // the client went away
		return nil
	}
	if isWhole {
		corked(r.Context(), func() { http.ServeContent(w, r, "", f.DateCreated, content) })
		return nil
	}
	http.ServeContent(w, r, "", f.DateCreated, content)
	return nil
}

// plainGet reports whether r is a GET that ServeContent would answer
// with the whole content: no range, no condition.
func plainGet(r *http.Request) bool {
	if r.Method != http.MethodGet {
		return false
	}
	for _, k := range []string{"Range", "If-Match", "If-None-Match", "If-Modified-Since", "If-Unmodified-Since", "If-Range"} {
		if r.Header.Get(k) != "" {
			return false
		}
	}
	return true
}
