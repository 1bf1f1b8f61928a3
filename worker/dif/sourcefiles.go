package dif

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
)

// maxSourceFile bounds one source file read from a source bundle for
// source context: a larger one is left out.
const maxSourceFile = 8 << 20

// SourceBundleFiles reads from the source bundle r (of the given size) the
// files whose manifest path is one of paths: at most maxSourceFile bytes
// each (a larger one is left out), at most budget bytes together (the
// rest are left out), the manifest at most maxBundleManifest bytes,
// decoded one entry at a time (manifestFiles): it keeps the entries of
// paths, not every file the manifest lists. Each call walks the directory
// and decodes the manifest: a caller asks once for all the paths it wants
// of a bundle.
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
	want := map[string]bool{}
	for _, p := range paths {
		want[p] = true
	}
	member, err := manifestFiles(body, func(name, path string) bool { return want[path] && len(name) <= 0xffff })
	if err != nil {
		return nil, fmt.Errorf("dif: source bundle manifest: %w", err)
	}
	body = nil
	names := map[string]bool{}
	longest := 0
	for name := range member {
		names[name] = true
		longest = max(longest, len(name))
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

// manifestFiles decodes the files of a source bundle's manifest (its
// "files" object: member name to an entry naming its path) and returns
// those that keep takes, by member name. It decodes one entry at a time:
// what it holds is what keep takes, not every entry of the manifest. It
// reads the manifest as json.Unmarshal would into a struct of a files map
// (keys matched without regard to case, the last of repeated ones kept,
// null as no files), and refuses what that refuses.
func manifestFiles(body []byte, keep func(name, path string) bool) (map[string]string, error) {
	dec := json.NewDecoder(bytes.NewReader(body))
	delim := func(want json.Delim) error {
		t, err := dec.Token()
		if err == nil && t != want {
			err = fmt.Errorf("%v where %v was expected", t, want)
		}
		return err
	}
	out := map[string]string{}
	if ok, err := openObject(dec); err != nil || !ok { // a manifest of null names no files
		if err == nil {
			err = end(dec)
		}
		return out, err
	}
	for dec.More() {
		key, err := dec.Token()
		if err != nil {
			return nil, err
		}
		if k, _ := key.(string); !strings.EqualFold(k, "files") {
			var skip json.RawMessage
			if err := dec.Decode(&skip); err != nil {
				return nil, err
			}
			continue
		}
		if ok, err := openObject(dec); err != nil {
			return nil, err
		} else if !ok { // "files": null empties the map, as json.Unmarshal does
			clear(out)
			continue
		}
		for dec.More() {
			t, err := dec.Token()
			if err != nil {
				return nil, err
			}
			name, _ := t.(string)
			var f struct {
				Path string `json:"path"`
			}
			if err := dec.Decode(&f); err != nil {
				return nil, err
			}
			if keep(name, f.Path) {
				out[name] = f.Path
			} else {
				delete(out, name)
			}
		}
		if err := delim('}'); err != nil {
			return nil, err
		}
	}
	if err := delim('}'); err != nil {
		return nil, err
	}
	return out, end(dec)
}

// openObject reads the start of an object: true, or false for null.
func openObject(dec *json.Decoder) (bool, error) {
	switch t, err := dec.Token(); {
	case err != nil:
		return false, err
	case t == nil:
		return false, nil
	case t != json.Delim('{'):
		return false, fmt.Errorf("%v where an object was expected", t)
	}
	return true, nil
}

// end checks that dec has nothing more to read.
func end(dec *json.Decoder) error {
	if _, err := dec.Token(); err != io.EOF {
		return errors.New("data after the manifest")
	}
	return nil
}
