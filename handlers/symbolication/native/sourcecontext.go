package native

import (
	"context"
	"errors"
	"path"

	"errata/handlers/symbolication"
	"errata/store"
	"errata/worker/dif"
)

// maxSourceContext bounds the bytes of sources one request reads from
// source bundles for context, with the index of their lines.
const maxSourceContext = 32 << 20

// applySourceContext fills the source context of the symbolicated frames
// whose module has a source bundle holding their file, and returns the
// bundles it read.
func (e *Engine) applySourceContext(ctx context.Context, sts []StacktraceOut) ([]int64, error) {
	return sourceContext(ctx, sts, func(b *store.ResolutionFile, paths []string, budget int64) (map[string][]byte, error) {
		fr, err := e.Store.OpenFile(ctx, b.OrgID, b.FileID)
		if err != nil {
			return nil, err
		}
		return dif.SourceBundleFiles(fr, fr.Size(), paths, budget)
	})
}

// readBundle reads from the source bundle b the files of paths, at most
// budget bytes of them.
type readBundle func(b *store.ResolutionFile, paths []string, budget int64) (map[string][]byte, error)

// bundleKey names a stored source bundle: the modules of one debug id
// share it.
type bundleKey struct{ org, file int64 }

// contextBundle is a source bundle as one request reads it: once, for the
// paths of the frames of every module it serves, its files indexed once.
type contextBundle struct {
	file    *store.ResolutionFile
	ids     []int64 // its debug files' ids, for retention
	paths   []string
	wanted  map[string]bool
	sources map[string]*symbolication.Source
}

// sourceContext is applySourceContext reading bundles through read: each
// bundle once, its manifest decoded once, whatever the number of modules
// or frames that name it; each source's lines indexed once
// (symbolication.Source), each frame's context read from its own lines.
func sourceContext(ctx context.Context, sts []StacktraceOut, read readBundle) ([]int64, error) {
	bundles := map[bundleKey]*contextBundle{}
	var order []*contextBundle // as the frames name them
	for _, s := range sts {
		for _, f := range s.Frames {
			if f.mod == nil || f.mod.bundle == nil || f.AbsPath == "" || f.Lineno < 1 {
				continue
			}
			k := bundleKey{f.mod.bundle.OrgID, f.mod.bundle.FileID}
			b := bundles[k]
			if b == nil {
				b = &contextBundle{file: f.mod.bundle, wanted: map[string]bool{}}
				bundles[k] = b
				order = append(order, b)
			}
			if id := f.mod.bundle.ID; len(b.ids) == 0 || b.ids[len(b.ids)-1] != id {
				b.ids = append(b.ids, id)
			}
			// sentry-cli names the file by its clean path (no "./").
			for _, p := range sourcePaths(&f) {
				if !b.wanted[p] {
					b.wanted[p] = true
					b.paths = append(b.paths, p)
				}
			}
		}
	}
	budget := int64(maxSourceContext)
	var used []int64
	for _, b := range order {
		files, err := read(b.file, b.paths, budget)
		if err != nil {
			if ctx.Err() != nil || errors.Is(err, store.ErrUnavailable) {
				return nil, err
			}
			continue // a damaged bundle gives no context
		}
		used = append(used, b.ids...)
		b.sources = make(map[string]*symbolication.Source, len(files))
		for p, data := range files {
			src := symbolication.NewSource(string(data))
			budget -= src.Size()
			b.sources[p] = src
		}
	}
	for _, s := range sts {
		for i := range s.Frames {
			f := &s.Frames[i]
			if f.mod == nil || f.mod.bundle == nil || f.Lineno < 1 {
				continue
			}
			b := bundles[bundleKey{f.mod.bundle.OrgID, f.mod.bundle.FileID}]
			if b == nil {
				continue
			}
			var src *symbolication.Source
			for _, p := range sourcePaths(f) {
				if src = b.sources[p]; src != nil {
					break
				}
			}
			if src == nil {
				continue
			}
			if pre, line, post := src.Context(f.Lineno-1, max(f.Colno-1, 0)); line != nil {
				f.PreContext, f.ContextLine, f.PostContext = pre, line, post
			}
		}
	}
	return used, nil
}

// sourcePaths are the names a source bundle may give the file of f: its
// path as the debug information joins it, cleaned as sentry-cli names it,
// and the frame's abs_path.
func sourcePaths(f *FrameOut) []string {
	raw := f.path
	if raw == "" {
		raw = f.AbsPath
	}
	return []string{raw, path.Clean(raw), f.AbsPath}
}
