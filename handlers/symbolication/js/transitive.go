package js

import (
	"errors"

	"errata/handlers/symbolication"
	"errata/store"
	"errata/worker/dif/sourcemap"
)

// maxChainSteps is how many maps past a frame's own a position is followed
// through: a minified bundle of JavaScript that TypeScript compiled, and
// one step more.
const maxChainSteps = 3

// chainKey names a stored file that a source may be: the artifact bundle
// it is looked for in ("" for a release's files) and its URL.
type chainKey struct{ bundle, url string }

// follow returns the original position of p, found in file's map, through
// the maps of the stored files its source is (TypeScript compiled to
// JavaScript, then minified: the minified file's map points into the
// JavaScript, whose own map points into the TypeScript), with the file of
// the last map it was found in. A source the map carries the text of is
// an original, as is one that is not a stored file with a map, or whose
// map has no mapping at that position; at most maxChainSteps maps are
// followed, never one twice.
func (rs *resolver) follow(file *jsFile, p sourcemap.Position) (*jsFile, sourcemap.Position, error) {
	var seen [maxChainSteps + 1]*sourcemap.Map
	seen[0] = file.m
	for step := 1; step <= maxChainSteps && !p.HasContent && p.Source != ""; step++ {
		next, err := rs.chained(file, p)
		if err != nil {
			return nil, p, err
		}
		if next == nil {
			break
		}
		for _, m := range seen[:step] {
			if m == next.m {
				return file, p, nil
			}
		}
		q, ok := next.m.Lookup(p.Line, p.Column)
		if !ok {
			break
		}
		file, p = next, q
		seen[step] = next.m
	}
	return file, p, nil
}

// chained returns the stored file that p's source is, with its map, found
// as file was: in the same artifact bundle by URL, or among the request's
// release files; nil when there is none or it has no map errata reads.
// Each is looked up once a request, and at most symbolication.MaxFiles of
// them (beyond, a source is an original); their maps are read and held
// within the request's budget, as a frame's are.
func (rs *resolver) chained(file *jsFile, p sourcemap.Position) (*jsFile, error) {
	if file.own == nil {
		file.own = map[int]*frameSource{}
	}
	key := chainKey{bundle: file.bundle, url: file.sources.find(p.SourceID, p.Source, file.own).url}
	if f, ok := rs.chains[key]; ok {
		return f, nil
	}
	if len(rs.chains) >= symbolication.MaxFiles {
		return nil, nil
	}
	var f *jsFile
	var err error
	switch {
	case key.bundle != "":
		var src store.SourceFile
		src, err = rs.e.Store.ArtifactFileByURL(rs.ctx, rs.sc, key.bundle, candidateURLs(key.url))
		if err == nil {
			f, err = rs.bundledMap(src, key.url)
		} else if errors.Is(err, store.ErrNotFound) {
			err = nil
		}
	case rs.req.Release != nil && *rs.req.Release != "":
		f, err = rs.findFile(key.url)
	}
	if err != nil {
		return nil, err
	}
	if f != nil && f.errType != "" {
		f = nil
	}
	if rs.chains == nil {
		rs.chains = map[chainKey]*jsFile{}
	}
	rs.chains[key] = f
	return f, nil
}
