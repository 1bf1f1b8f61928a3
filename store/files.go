package store

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"sort"

	"github.com/jackc/pgx/v5"
)

// File is a stored file: the ordered list of its blobs.
type File struct {
	ID   int64
	Size int64
	SHA1 string
}

// fileBlob is one blob of a file: where it starts in the file and its size.
type fileBlob struct {
	sha1  string
	start int64
	size  int64
}

// CreateFileFromChunks stores for organization orgID the file made of
// chunks (SHA-1 hex of blobs the organization owns, in order), after
// checking that together they hash to checksum. It reads each blob once and
// writes only the file's index, never the bytes. A chunk the organization
// does not own is ErrMissingChunks; chunks that do not hash to checksum are
// ErrChecksumMismatch. When the organization already has this file (same
// checksum, same blobs) it is returned as it is, without reading a byte.
func (s *Store) CreateFileFromChunks(ctx context.Context, orgID int64, checksum string, chunks []string) (File, error) {
	pf, err := s.CheckFile(ctx, orgID, checksum, chunks, FileOptions{})
	if err != nil {
		return File{}, err
	}
	var f File
	err = s.inTx(ctx, func(tx pgx.Tx) error {
		f, err = storeFile(ctx, tx, pf)
		return err
	})
	return f, err
}

// FileOptions tune CheckFile.
type FileOptions struct {
	// MaxSize, when positive, is the largest file: a larger one is
	// ErrFileTooLarge, before any byte is read.
	MaxSize int64
}

// ChecksumError is the error of chunks that do not hash to the checksum
// they were sent with; it is ErrChecksumMismatch.
type ChecksumError struct{ Got, Want string }

func (e *ChecksumError) Error() string {
	return fmt.Sprintf("checksum mismatch: the chunks hash to %s, not %s", e.Got, e.Want)
}

// Is makes a ChecksumError ErrChecksumMismatch.
func (e *ChecksumError) Is(target error) bool { return target == ErrChecksumMismatch }

// ErrFileTooLarge is the error of a file larger than FileOptions.MaxSize.
var ErrFileTooLarge = errors.New("store: file too large")

// verifyPiece is the most VerifyFile fetches in one query.
const verifyPiece = 8 << 20

// PendingFile is a file whose chunks were checked, not stored yet: it is
// stored with what refers to it, in one transaction (see SaveBundle), so
// that a file is never left without a use. Its ID is set when the
// organization already has the file.
type PendingFile struct {
	File
	OrganizationID int64
	blobs          []fileBlob
}

// CheckFile checks the file that chunks make for organization orgID: the
// organization owns every chunk, and together they hash to checksum. It
// reads each blob once, or none when the organization already has the
// file. The errors are those of CreateFileFromChunks, and ErrFileTooLarge.
func (s *Store) CheckFile(ctx context.Context, orgID int64, checksum string, chunks []string, opt FileOptions) (PendingFile, error) {
	pf, err := s.PrepareFile(ctx, orgID, checksum, chunks, opt)
	if err != nil {
		return pf, err
	}
	if f, err := s.existingFile(ctx, orgID, checksum, chunks); err == nil {
		pf.ID = f.ID
		return pf, nil
	} else if !errors.Is(err, ErrNotFound) {
		return pf, err
	}
	return s.VerifyFile(ctx, pf, nil)
}

// PrepareFile is the first half of CheckFile: it checks that organization
// orgID owns every chunk and the size, and reads nothing. Read the file
// with ReadPendingFile, check it with VerifyFile.
func (s *Store) PrepareFile(ctx context.Context, orgID int64, checksum string, chunks []string, opt FileOptions) (PendingFile, error) {
	pf := PendingFile{File: File{SHA1: checksum}, OrganizationID: orgID}
	var err error
	pf.blobs, err = s.fileBlobs(ctx, orgID, chunks)
	if err != nil {
		return pf, err
	}
	for _, b := range pf.blobs {
		pf.Size += b.size
	}
	if opt.MaxSize > 0 && pf.Size > opt.MaxSize {
		return pf, fmt.Errorf("%w: %d bytes, more than %d", ErrFileTooLarge, pf.Size, opt.MaxSize)
	}
	return pf, nil
}

// VerifyFile reads the blobs of pf once, in order, checks that they hash
// to its checksum and, when tee is not nil, writes every byte to tee as it
// goes; an error from tee is returned as it is. Fetching the next blob,
// hashing and tee run at once, each on its own goroutine, so that the
// slowest of them sets the pace. When the organization already has the
// file, pf comes back with its ID.
func (s *Store) VerifyFile(ctx context.Context, pf PendingFile, tee io.Writer) (PendingFile, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	// The file is fetched in pieces of at most verifyPiece bytes, one
	// ahead of the hashing, each into a buffer of its own, and handed on in
	// order: hashed by one goroutine, then given to tee. Three buffers are
	// in flight at most, which bounds the memory an assembly takes.
	type fetch struct {
		done chan struct{}
		buf  []byte
		err  error
	}
	free := make(chan []byte, 3)
	for range 3 {
		free <- nil
	}
	order := make(chan *fetch, 1)
	slots := make(chan struct{}, 1)
	go func() {
		defer close(order)
		for _, b := range pf.blobs {
			for off := int64(0); off < b.size || (off == 0 && b.size == 0); off += verifyPiece {
				n := min(verifyPiece, b.size-off)
				f := &fetch{done: make(chan struct{})}
				select {
				case f.buf = <-free:
				case <-ctx.Done():
					return
				}
				slots <- struct{}{}
				order <- f
				go func() {
					defer func() { <-slots; close(f.done) }()
					length := n
					if off == 0 && n == b.size {
						length = -1 // the whole blob
					}
					f.err = s.readBlob(ctx, b.sha1, off, length, func(data []byte) error {
						if int64(len(data)) != n {
							return fmt.Errorf("blob %s has %d bytes at %d, not %d", b.sha1, len(data), off, n)
						}
						f.buf = append(f.buf[:0], data...)
						return nil
					})
					if errors.Is(f.err, ErrNotFound) {
						f.err = fmt.Errorf("blob %s: %w", b.sha1, ErrMissingChunks)
					}
				}()
				if b.size == 0 {
					break
				}
			}
		}
	}()
	fetched, hashed := make(chan []byte, 1), make(chan []byte, 1)
	fetchErr, hashErr := make(chan error, 1), make(chan error, 1)
	go func() {
		defer close(fetched)
		for f := range order {
			<-f.done
			if f.err != nil {
				fetchErr <- f.err
				cancel()
				for f := range order { // let the other fetch end
					<-f.done
				}
				return
			}
			fetched <- f.buf
		}
		fetchErr <- ctx.Err()
	}()
	h := sha1.New()
	go func() {
		defer close(hashed)
		for buf := range fetched {
			h.Write(buf)
			hashed <- buf
		}
		hashErr <- nil
	}()
	var teeErr error
	for buf := range hashed {
		if tee != nil && teeErr == nil {
			if _, teeErr = tee.Write(buf); teeErr != nil {
				cancel()
			}
		}
		free <- buf
	}
	<-hashErr
	if err := <-fetchErr; err != nil && teeErr == nil {
		return pf, err
	}
	if teeErr != nil {
		return pf, teeErr
	}
	if got := hex.EncodeToString(h.Sum(nil)); got != pf.SHA1 {
		return pf, &ChecksumError{Got: got, Want: pf.SHA1}
	}
	chunks := make([]string, len(pf.blobs))
	for i, b := range pf.blobs {
		chunks[i] = b.sha1
	}
	if f, err := s.existingFile(ctx, pf.OrganizationID, pf.SHA1, chunks); err == nil {
		pf.ID = f.ID
	} else if !errors.Is(err, ErrNotFound) {
		return pf, err
	}
	return pf, nil
}

// ReadPendingFile returns a reader of pf, which need not be stored yet.
func (s *Store) ReadPendingFile(ctx context.Context, pf PendingFile) *FileReader {
	return &FileReader{s: s, ctx: ctx, file: pf.File, blobs: pf.blobs}
}

// storeFile stores pf in tx, or returns the file it already is.
func storeFile(ctx context.Context, tx pgx.Tx, pf PendingFile) (File, error) {
	if pf.ID != 0 {
		// The file existed when it was checked; lock it against the
		// collector, or store it anew when it was collected since.
		err := tx.QueryRow(ctx, `SELECT id FROM files WHERE id = $1 FOR KEY SHARE`, pf.ID).Scan(&pf.ID)
		if err == nil {
			return pf.File, nil
		}
		if !errors.Is(err, pgx.ErrNoRows) {
			return pf.File, err
		}
	}
	return insertFileIndex(ctx, tx, pf.OrganizationID, pf.SHA1, pf.blobs)
}

// existingFile finds a file of organization orgID with checksum made of
// exactly chunks.
func (s *Store) existingFile(ctx context.Context, orgID int64, checksum string, chunks []string) (File, error) {
	f := File{SHA1: checksum}
	err := s.pool.QueryRow(ctx, `
		SELECT f.id, f.size FROM files f
		WHERE f.organization_id = $1 AND f.sha1 = $2
		  AND (SELECT array_agg(fb.sha1 ORDER BY fb.position) FROM file_blobs fb WHERE fb.file_id = f.id) = $3::text[]
		ORDER BY f.id LIMIT 1`, orgID, checksum, chunks).Scan(&f.ID, &f.Size)
	if err != nil {
		return f, wrap(err)
	}
	_, err = s.pool.Exec(ctx, `
		UPDATE files SET date_used = now() WHERE id = $1 AND date_used < now() - interval '1 second'`, f.ID)
	return f, wrap(err)
}

// fileBlobs returns the blobs of chunks, in order, with their place in the
// file they make. A chunk organization orgID does not own is
// ErrMissingChunks.
func (s *Store) fileBlobs(ctx context.Context, orgID int64, chunks []string) ([]fileBlob, error) {
	if len(chunks) == 0 {
		return nil, fmt.Errorf("no chunks: %w", ErrMissingChunks)
	}
	missing, err := missingChunks(ctx, s.pool, orgID, chunks)
	if err != nil {
		return nil, wrap(err)
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("chunk %s: %w", missing[0], ErrMissingChunks)
	}
	blobs := make([]fileBlob, 0, len(chunks))
	var start int64
	rows, err := s.pool.Query(ctx, `
		SELECT c.sha1, b.size FROM unnest($1::text[]) WITH ORDINALITY AS c (sha1, n)
		JOIN blobs b ON b.sha1 = c.sha1
		ORDER BY c.n`, chunks)
	if err != nil {
		return nil, wrap(err)
	}
	defer rows.Close()
	for rows.Next() {
		var b fileBlob
		if err := rows.Scan(&b.sha1, &b.size); err != nil {
			return nil, wrap(err)
		}
		b.start = start
		start += b.size
		blobs = append(blobs, b)
	}
	if err := rows.Err(); err != nil {
		return nil, wrap(err)
	}
	if len(blobs) != len(chunks) {
		return nil, fmt.Errorf("chunks removed while reading: %w", ErrMissingChunks)
	}
	return blobs, nil
}

// insertFileIndex writes the file of organization orgID made of blobs.
// The foreign key of file_blobs to blob_owners fails, and so the file is
// not written, when a blob was collected meanwhile.
func insertFileIndex(ctx context.Context, q querier, orgID int64, checksum string, blobs []fileBlob) (File, error) {
	f := File{SHA1: checksum}
	sha1s := make([]string, len(blobs))
	starts := make([]int64, len(blobs))
	for i, b := range blobs {
		sha1s[i], starts[i] = b.sha1, b.start
		f.Size += b.size
	}
	err := q.QueryRow(ctx, `
		INSERT INTO files (organization_id, size, sha1) VALUES ($1, $2, $3) RETURNING id`,
		orgID, f.Size, checksum).Scan(&f.ID)
	if err != nil {
		return f, err
	}
	_, err = q.Exec(ctx, `
		INSERT INTO file_blobs (file_id, position, organization_id, sha1, start)
		SELECT $1, b.n - 1, $2, b.sha1, b.start
		FROM unnest($3::text[], $4::bigint[]) WITH ORDINALITY AS b (sha1, start, n)`,
		f.ID, orgID, sha1s, starts)
	if isForeignKeyViolation(err) {
		return f, fmt.Errorf("a chunk was collected meanwhile: %w", ErrMissingChunks)
	}
	return f, err
}

// CreateFileFromReader stores content as a file of organization orgID, cut
// into blobs of at most blobSize bytes; a blob already stored is not written
// again. Under a storage quota, content is read twice: first to learn its
// blobs, so that a file the quota has no room for stores nothing.
func (s *Store) CreateFileFromReader(ctx context.Context, orgID int64, content io.ReadSeeker) (File, error) {
	if err := s.CheckQuota(ctx, orgID, content); err != nil {
		return File{}, err
	}
	return s.createFile(ctx, orgID, content)
}

// CheckQuota fails with ErrQuotaExceeded when storing contents as files
// of organization orgID would take it over its storage quota (nothing
// without one). Each content is read from its start and left there.
func (s *Store) CheckQuota(ctx context.Context, orgID int64, contents ...io.ReadSeeker) error {
	if s.orgQuota <= 0 {
		return nil
	}
	var list []spooledChunk
	buf := make([]byte, blobSize)
	for _, content := range contents {
		if _, err := content.Seek(0, io.SeekStart); err != nil {
			return err
		}
		for {
			n, err := io.ReadFull(content, buf)
			if n > 0 {
				sum := sha1.Sum(buf[:n])
				list = append(list, spooledChunk{hex.EncodeToString(sum[:]), n})
			}
			if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
				break
			}
			if err != nil {
				return err
			}
		}
		if _, err := content.Seek(0, io.SeekStart); err != nil {
			return err
		}
	}
	return s.checkQuota(ctx, s.pool, orgID, list)
}

// createFile stores content as CreateFileFromReader does, without the
// first reading.
func (s *Store) createFile(ctx context.Context, orgID int64, content io.Reader) (File, error) {
	whole := sha1.New()
	buf := make([]byte, blobSize)
	var blobs []fileBlob
	var start int64
	for {
		n, err := io.ReadFull(content, buf)
		if n > 0 || (start == 0 && len(blobs) == 0) {
			data := buf[:n]
			whole.Write(data)
			sum := sha1.Sum(data)
			c := Chunk{SHA1: hex.EncodeToString(sum[:]), Data: data}
			if err := s.saveBlob(ctx, orgID, c); err != nil {
				return File{}, err
			}
			blobs = append(blobs, fileBlob{sha1: c.SHA1, start: start, size: int64(n)})
			start += int64(n)
		}
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			break
		}
		if err != nil {
			return File{}, err
		}
	}
	var f File
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		var err error
		f, err = insertFileIndex(ctx, tx, orgID, hex.EncodeToString(whole.Sum(nil)), blobs)
		return err
	})
	return f, err
}

// blobSize is the size of the blobs that CreateFileFromReader cuts a file
// into: the chunk size of chunk upload.
const blobSize = 8 << 20

// FileReader reads a stored file blob by blob, in bounded short queries:
// no connection is held between two reads. It is an io.ReaderAt and an
// io.ReadSeeker. It keeps the last window it read, so that small reads (a
// zip directory) cost one query a window.
type FileReader struct {
	s     *Store
	ctx   context.Context
	file  File
	blobs []fileBlob
	off   int64 // for Read and Seek

	win      []byte
	winStart int64
}

// readWindow is the most a FileReader fetches in one query.
const readWindow = 1 << 20

// OpenFile returns a reader of file fileID of organization orgID; a file of
// another organization is ErrNotFound.
func (s *Store) OpenFile(ctx context.Context, orgID, fileID int64) (*FileReader, error) {
	fr := &FileReader{s: s, ctx: ctx}
	err := s.read(ctx, func(q querier) error {
		err := q.QueryRow(ctx, `
			SELECT id, size, sha1 FROM files WHERE id = $1 AND organization_id = $2`,
			fileID, orgID).Scan(&fr.file.ID, &fr.file.Size, &fr.file.SHA1)
		if err != nil {
			return err
		}
		rows, err := q.Query(ctx, `
			SELECT fb.sha1, fb.start, b.size FROM file_blobs fb JOIN blobs b ON b.sha1 = fb.sha1
			WHERE fb.file_id = $1 ORDER BY fb.position`, fileID)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var b fileBlob
			if err := rows.Scan(&b.sha1, &b.start, &b.size); err != nil {
				return err
			}
			fr.blobs = append(fr.blobs, b)
		}
		return rows.Err()
	})
	if err != nil {
		return nil, err
	}
	return fr, nil
}

// File returns the record of the file being read.
func (fr *FileReader) File() File { return fr.file }

// Size returns the size of the file.
func (fr *FileReader) Size() int64 { return fr.file.Size }

// Close does nothing: a FileReader holds no connection between reads.
func (fr *FileReader) Close() error { return nil }

// ReadAt reads len(p) bytes from off, as io.ReaderAt says.
func (fr *FileReader) ReadAt(p []byte, off int64) (int, error) {
	if off < 0 {
		return 0, errors.New("store: negative offset")
	}
	n := 0
	for n < len(p) {
		pos := off + int64(n)
		if pos >= fr.file.Size {
			return n, io.EOF
		}
		if fr.win == nil || pos < fr.winStart || pos >= fr.winStart+int64(len(fr.win)) {
			if err := fr.fetch(pos, int64(len(p)-n)); err != nil {
				return n, err
			}
		}
		n += copy(p[n:], fr.win[pos-fr.winStart:])
	}
	return n, nil
}

// fetch reads the window of the file that holds pos: up to readWindow
// bytes (at least want, within one blob) from pos.
func (fr *FileReader) fetch(pos, want int64) error {
	i := sort.Search(len(fr.blobs), func(i int) bool { return fr.blobs[i].start+fr.blobs[i].size > pos })
	if i == len(fr.blobs) {
		return fmt.Errorf("file %d: offset %d past its blobs: %w", fr.file.ID, pos, io.ErrUnexpectedEOF)
	}
	b := fr.blobs[i]
	n := min(max(want, readWindow), b.start+b.size-pos)
	return fr.s.readBlob(fr.ctx, b.sha1, pos-b.start, n, func(data []byte) error {
		if int64(len(data)) != n {
			return fmt.Errorf("blob %s: %d bytes at %d, want %d: %w", b.sha1, len(data), pos-b.start, n, io.ErrUnexpectedEOF)
		}
		fr.win = append(fr.win[:0], data...)
		fr.winStart = pos
		return nil
	})
}

// Read reads from the current offset.
func (fr *FileReader) Read(p []byte) (int, error) {
	if fr.off >= fr.file.Size {
		return 0, io.EOF
	}
	p = p[:min(int64(len(p)), fr.file.Size-fr.off)]
	n, err := fr.ReadAt(p, fr.off)
	fr.off += int64(n)
	if err == io.EOF && n > 0 {
		err = nil
	}
	return n, err
}

// Seek sets the offset of the next Read.
func (fr *FileReader) Seek(offset int64, whence int) (int64, error) {
	switch whence {
	case io.SeekStart:
	case io.SeekCurrent:
		offset += fr.off
	case io.SeekEnd:
		offset += fr.file.Size
	default:
		return 0, errors.New("store: bad whence")
	}
	if offset < 0 {
		return 0, errors.New("store: negative offset")
	}
	fr.off = offset
	return offset, nil
}
