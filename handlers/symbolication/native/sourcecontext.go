package native

import (
	"context"
	"errors"
	"path"
	"slices"

	"errata/handlers/symbolication"
	"errata/store"
	"errata/worker/dif"
)

// maxSourceContext bounds the bytes of sources one request reads from
// source bundles for context.
const maxSourceContext = 32 << 20

// applySourceContext fills the source context of the symbolicated frames
// whose module has a source bundle holding their file, and returns the
// bundles it read.
func (e *Engine) applySourceContext(ctx context.Context, sts []StacktraceOut) ([]int64, error) {
	paths := map[*module][]string{}
	for _, s := range sts {
		for _, f := range s.Frames {
			if f.mod == nil || f.mod.bundle == nil || f.AbsPath == "" || f.Lineno < 1 {
				continue
			}
			// sentry-cli names the file by its clean path (no "./").
			for _, p := range []string{f.AbsPath, path.Clean(f.AbsPath)} {
				if !slices.Contains(paths[f.mod], p) {
					paths[f.mod] = append(paths[f.mod], p)
				}
			}
		}
	}
	budget := int64(maxSourceContext)
	var used []int64
	sources := map[*module]map[string]sourceText{}
	for m, ps := range paths {
		fr, err := e.Store.OpenFile(ctx, m.bundle.OrgID, m.bundle.FileID)
		if err != nil {
			return nil, err
		}
		files, err := dif.SourceBundleFiles(fr, fr.Size(), ps, budget)
		if err != nil {
			if ctx.Err() != nil || errors.Is(err, store.ErrUnavailable) {
				return nil, err
			}
			continue // a damaged bundle gives no context
		}
		used = append(used, m.bundle.ID)
		texts := map[string]sourceText{}
		for p, b := range files {
			budget -= int64(len(b))
			texts[p] = newSourceText(string(b))
		}
		sources[m] = texts
	}
	for _, s := range sts {
		for i := range s.Frames {
			f := &s.Frames[i]
			text, ok := sources[f.mod][f.AbsPath]
			if !ok {
				text = sources[f.mod][path.Clean(f.AbsPath)]
			}
			if f.mod == nil || f.Lineno < 1 {
				continue
			}
			if pre, line, post := text.context(f.Lineno-1, max(f.Colno-1, 0)); line != nil {
				f.PreContext, f.ContextLine, f.PostContext = pre, line, post
			}
		}
	}
	return used, nil
}

// sourceText is a source bundle's file with where each of its lines
// starts, so that the context of each frame is read from its own lines.
type sourceText struct {
	text   string
	starts []int
}

func newSourceText(text string) sourceText {
	starts := []int{0}
	for i := 0; i < len(text); i++ {
		if text[i] == '\n' {
			starts = append(starts, i+1)
		}
	}
	return sourceText{text: text, starts: starts}
}

// context is symbolication.Context of line (0-based) of the file, read
// from the first line it shows.
func (s sourceText) context(line, column int) (pre []string, ctx *string, post []string) {
	first := max(line-symbolication.ContextLines, 0)
	if first >= len(s.starts) {
		return nil, nil, nil
	}
	return symbolication.Context(s.text[s.starts[first]:], line-first, column, symbolication.StartsEmptyLine)
}
