package dif

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"strconv"
)

// pdbMagic starts every PDB (an MSF 7.00 container).
const pdbMagic = "Microsoft C/C++ MSF 7.00\r\n\x1aDS\x00\x00\x00"

// maxPDBDirectory bounds the size a PDB's superblock claims for its stream
// directory. The directory is never read whole: ReadPDB reads a few words
// of it, so that what it takes does not depend on that size.
const maxPDBDirectory = 16 << 20

// ReadPDB reads the identity of a PDB: the GUID of its information stream
// (stream 1) and the age of its DBI stream (stream 3), which is the age the
// image's CodeView record names, as Sentry reads it; its architecture is
// the DBI stream's machine.
func ReadPDB(r io.ReaderAt, size int64) (Object, error) {
	var sb [56]byte
	if _, err := r.ReadAt(sb[:], 0); err != nil || string(sb[:32]) != pdbMagic {
		return Object{}, errors.New("dif: not a PDB")
	}
	le := binary.LittleEndian
	blockSize := int64(le.Uint32(sb[32:]))
	numBlocks := int64(le.Uint32(sb[40:]))
	dirBytes := int64(le.Uint32(sb[44:]))
	blockMap := int64(le.Uint32(sb[52:]))
	switch blockSize {
	case 512, 1024, 2048, 4096:
	default:
		return Object{}, fmt.Errorf("dif: PDB block size %d", blockSize)
	}
	if numBlocks*blockSize > size || dirBytes < 4 || dirBytes > maxPDBDirectory || blockMap >= numBlocks {
		return Object{}, errors.New("dif: PDB superblock out of bounds")
	}
	// The directory is read where it is needed, 4 bytes at a time: the
	// stream count, the sizes of streams 0 to 3 and the first block of
	// streams 1 and 3, whose first bytes (at most one block) are read.
	blocksOf := func(n int64) int64 { return (n + blockSize - 1) / blockSize }
	if 4*blocksOf(dirBytes) > blockSize {
		return Object{}, errors.New("dif: PDB directory too large")
	}
	var word [4]byte
	readWord := func(off int64) (int64, error) {
		if _, err := r.ReadAt(word[:], off); err != nil {
			return 0, fmt.Errorf("dif: reading PDB: %w", err)
		}
		return int64(le.Uint32(word[:])), nil
	}
	// dirWord reads the 4 bytes at offset pos of the directory, which is
	// the blocks the block map lists.
	dirWord := func(pos int64) (int64, error) {
		if pos < 0 || pos+4 > dirBytes {
			return 0, errors.New("dif: PDB directory too short")
		}
		block, err := readWord(blockMap*blockSize + 4*(pos/blockSize))
		if err != nil {
			return 0, err
		}
		if block >= numBlocks {
			return 0, errors.New("dif: PDB block out of bounds")
		}
		return readWord(block*blockSize + pos%blockSize)
	}
	numStreams, err := dirWord(0)
	if err != nil {
		return Object{}, err
	}
	if numStreams < 4 || 4+4*numStreams > dirBytes {
		return Object{}, errors.New("dif: PDB has too few streams")
	}
	sizeOf := func(i int64) (int64, error) {
		s, err := dirWord(4 + 4*i)
		if s == 0xffffffff {
			s = 0
		}
		return s, err
	}
	// stream reads the first n bytes (at most a block) of stream i.
	stream := func(i, n int64) ([]byte, error) {
		pos := 4 + 4*numStreams
		for j := range i {
			s, err := sizeOf(j)
			if err != nil {
				return nil, err
			}
			pos += 4 * blocksOf(s)
		}
		s, err := sizeOf(i)
		if err != nil {
			return nil, err
		}
		if s < n || pos+4*blocksOf(s) > dirBytes {
			return nil, fmt.Errorf("dif: PDB stream %d is too short", i)
		}
		block, err := dirWord(pos)
		if err != nil {
			return nil, err
		}
		if block >= numBlocks {
			return nil, errors.New("dif: PDB block out of bounds")
		}
		buf := make([]byte, n)
		if _, err := r.ReadAt(buf, block*blockSize); err != nil {
			return nil, fmt.Errorf("dif: reading PDB: %w", err)
		}
		return buf, nil
	}
	info, err := stream(1, 28)
	if err != nil {
		return Object{}, err
	}
	age := le.Uint32(info[8:])
	o := Object{Kind: "pdb", Type: "dbg", Arch: "unknown"}
	if dbi, err := stream(3, 64); err == nil && int32(le.Uint32(dbi)) == -1 {
		age = le.Uint32(dbi[8:])
		o.Arch = peArch(le.Uint16(dbi[58:]))
	}
	// The features sentry-cli's debug-files check reports, as Sentry's
	// symbolic reads them without opening the module streams: a PDB
	// has symbols and debug information, and the frame data of a
	// 32-bit x86 build is its unwind information.
	o.Features = []string{"debug", "symtab"}
	if o.Arch == "x86" {
		o.Features = append(o.Features, "unwind")
	}
	o.DebugID = guidLE(info[12:28])
	if age != 0 {
		o.DebugID += "-" + strconv.FormatUint(uint64(age), 16)
	}
	return o, nil
}
