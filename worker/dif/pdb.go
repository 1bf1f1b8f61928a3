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

// maxPDBDirectory bounds the stream directory of a PDB that is read.
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
	readBlocks := func(blocks []uint32, n int64) ([]byte, error) {
		out := make([]byte, 0, n)
		for _, b := range blocks {
			if int64(len(out)) >= n {
				break
			}
			if int64(b) >= numBlocks {
				return nil, errors.New("dif: PDB block out of bounds")
			}
			buf := make([]byte, min(blockSize, n-int64(len(out))))
			if _, err := r.ReadAt(buf, int64(b)*blockSize); err != nil {
				return nil, fmt.Errorf("dif: reading PDB: %w", err)
			}
			out = append(out, buf...)
		}
		if int64(len(out)) < n {
			return nil, errors.New("dif: PDB stream shorter than its size")
		}
		return out, nil
	}
	blocksOf := func(n int64) int64 { return (n + blockSize - 1) / blockSize }
	// The block map lists the blocks of the directory.
	mapBytes, err := readBlocks([]uint32{uint32(blockMap)}, min(blockSize, 4*blocksOf(dirBytes)))
	if err != nil || int64(len(mapBytes)) < 4*blocksOf(dirBytes) {
		return Object{}, errors.New("dif: PDB directory too large")
	}
	dirBlocks := make([]uint32, blocksOf(dirBytes))
	for i := range dirBlocks {
		dirBlocks[i] = le.Uint32(mapBytes[4*i:])
	}
	dir, err := readBlocks(dirBlocks, dirBytes)
	if err != nil {
		return Object{}, err
	}
	numStreams := int64(le.Uint32(dir))
	if numStreams < 4 || 4+4*numStreams > dirBytes {
		return Object{}, errors.New("dif: PDB has too few streams")
	}
	sizeOf := func(i int) int64 {
		if s := le.Uint32(dir[4+4*i:]); s != 0xffffffff {
			return int64(s)
		}
		return 0
	}
	// stream reads the first n bytes of stream i.
	stream := func(i int, n int64) ([]byte, error) {
		pos := 4 + 4*numStreams
		for j := range i {
			pos += 4 * blocksOf(sizeOf(j))
		}
		count := blocksOf(sizeOf(i))
		if sizeOf(i) < n || pos+4*count > dirBytes {
			return nil, fmt.Errorf("dif: PDB stream %d is too short", i)
		}
		blocks := make([]uint32, count)
		for k := range blocks {
			blocks[k] = le.Uint32(dir[pos+4*int64(k):])
		}
		return readBlocks(blocks, n)
	}
	info, err := stream(1, 28)
	if err != nil {
		return Object{}, err
	}
	age := le.Uint32(info[8:])
	o := Object{Kind: "pdb", Type: "dbg", Arch: "unknown"}
	if dbi, err := stream(3, 64); err == nil && int32(le.Uint32(dbi)) == -1 {
		age = le.Uint32(dbi[8:])
		o.Arch = peArch(le.Uint16(dbi[62:]))
	}
	o.DebugID = guidLE(info[12:28])
	if age != 0 {
		o.DebugID += "-" + strconv.FormatUint(uint64(age), 16)
	}
	return o, nil
}
