package dif

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// maxSourceFile bounds one source file read from a source bundle for
// source context: a larger one is left out.
const maxSourceFile = 8 << 20

// SourceBundleFiles reads from the source bundle r (of the given size) the
// files whose manifest path is one of paths: at most maxSourceFile bytes
// each (a larger one is left out), at most budget bytes together (the
// rest are left out), the manifest at most maxBundleManifest bytes. Each
// call walks the directory and decodes the manifest: a caller asks once
// for all the paths it wants of a bundle.
func SourceBundleFiles(r io.ReaderAt, size int64, paths []string, budget int64) (map[string][]byte, error) {
	var start int64
	head := make([]byte, 8)
	if _, err := r.ReadAt(head, 0); err == nil && string(head[:4]) == "SYSB" {
		start = 8
	}
	if size < start {
		return nil, errors.New("dif: not a source bundle")
	}
	zr := io.NewSectionReader(r, start, size-start)
	d, err := readZipDirectory(zr, size-start, maxBundleMembers)
	if err != nil {
		return nil, fmt.Errorf("dif: not a source bundle: %w", err)
	}
	// Members by name, for the names wanted: the manifest first.
	find := func(names map[string]bool, longest int) (map[string]int64, error) {
		at := map[string]int64{}
		buf := make([]byte, longest)
		err := d.walk(func(hdr []byte, off int64) error {
			n := int(binary.LittleEndian.Uint16(hdr[28:]))
			if n > longest {
				return nil
			}
			if _, err := zr.ReadAt(buf[:n], off+dirRecordLen); err != nil {
				return badZip("The bundle's zip directory is corrupt")
			}
			if names[string(buf[:n])] {
				at[string(buf[:n])] = off
			}
			return nil
		})
		return at, err
	}
	at, err := find(map[string]bool{"manifest.json": true}, len("manifest.json"))
	if err != nil {
		return nil, fmt.Errorf("dif: not a source bundle: %w", err)
	}
	m, ok := at["manifest.json"]
	if !ok {
		return nil, errors.New("dif: the source bundle has no manifest.json")
	}
	body, err := d.readMember(m, maxBundleManifest)
	if err != nil {
		return nil, fmt.Errorf("dif: source bundle manifest: %w", err)
	}
	var manifest struct {
		Files map[string]struct {
			Path string `json:"path"`
		} `json:"files"`
	}
	if err := json.Unmarshal(body, &manifest); err != nil {
		return nil, fmt.Errorf("dif: source bundle manifest: %w", err)
	}
	want := map[string]bool{}
	for _, p := range paths {
		want[p] = true
	}
	member := map[string]string{} // member name -> path
	names := map[string]bool{}
	longest := 0
	for name, f := range manifest.Files {
		if want[f.Path] && len(name) <= 0xffff {
			member[name], names[name] = f.Path, true
			longest = max(longest, len(name))
		}
	}
	out := map[string][]byte{}
	if len(names) == 0 {
		return out, nil
	}
	at, err = find(names, longest)
	if err != nil {
		return nil, fmt.Errorf("dif: not a source bundle: %w", err)
	}
	for name, off := range at {
		if budget <= 0 {
			break
		}
		b, err := d.readMember(off, min(maxSourceFile, budget))
		if err != nil {
			continue // too large, or damaged: no context for it
		}
		budget -= int64(len(b))
		out[member[name]] = b
	}
	return out, nil
}
