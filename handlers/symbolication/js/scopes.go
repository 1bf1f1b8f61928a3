package js

import (
	"errata/handlers/symbolication"
	"errata/worker/dif/jsscope"
	"errata/worker/dif/sourcemap"
)

// Scope names (docs/resolution.md): a resolved frame whose caller does
// not name it takes the name of the function around its position in the
// minified file, read by jsscope from the stored minified file and mapped
// through the frame's map. The index of a file is made once, for the
// first frame of a request that needs it, and kept in the MapCache under
// the file's SHA-1, charged at its size (jsscope.Index.Size) to the cache
// and the request; a file larger than jsscope.MaxBytes, or one whose read,
// bytes (held while they are scanned) or index the request has no budget
// left for, has no index and its frames keep the name they came with.

// scopeName returns the name of the function around resolved frame f in
// its minified file; nil when there is none.
func (rs *resolver) scopeName(f FrameIn) (*string, error) {
	file, err := rs.file(*f.AbsPath)
	if err != nil || file.m == nil {
		return nil, err
	}
	x, err := rs.scopeIndex(file)
	if err != nil || x == nil {
		return nil, err
	}
	line, col := int(*f.Lineno-1), int(*f.Colno-1)
	// symbolic names the scope where the frame's segment starts.
	if _, start, ok := file.m.LookupSegment(line, col); ok {
		col = start
	}
	name := x.NameAt(line, col, scopeMapper{file.m})
	if name == "" {
		return nil, nil
	}
	return ptr(symbolication.CutName(name)), nil
}

// scopeIndex returns the index of the scopes of the minified file whose
// map is file's: nil when it has none.
func (rs *resolver) scopeIndex(file *jsFile) (*jsscope.Index, error) {
	if !file.scopesRead {
		x, err := rs.buildScopeIndex(file)
		if err != nil {
			return nil, err
		}
		file.scopes, file.scopesRead = x, true
	}
	return file.scopes, nil
}

func (rs *resolver) buildScopeIndex(file *jsFile) (*jsscope.Index, error) {
	if file.minified == nil {
		return nil, nil
	}
	src := *file.minified
	key := "scopes:" + src.SHA1
	if v, ok := rs.e.Cache.Get(key); ok {
		rs.e.Cache.Touch(rs.ctx, rs.e.Store, src)
		return v.(*jsscope.Index), nil
	}
	// The file is held while it is scanned: it must fit in what the
	// request may still hold, as its index then must.
	if src.Size > jsscope.MaxBytes || rs.read+src.Size > symbolication.MaxReadBytes || src.Size > rs.budget.Left() {
		return nil, nil
	}
	data, err := rs.readFile(src, jsscope.MaxBytes)
	if err != nil {
		return nil, err
	}
	x := jsscope.Build(data)
	size := x.Size() + int64(len(key))
	if rs.budget.Charge(size) != nil {
		return nil, nil // no room left for it: the frames keep their names
	}
	rs.e.Cache.Put(key, x, size)
	return x, nil
}

// scopeMapper is a map as jsscope reads it.
type scopeMapper struct{ m *sourcemap.Map }

func (s scopeMapper) Mapping(line, col int) (jsscope.Mapping, bool) {
	p, start, ok := s.m.LookupSegment(line, col)
	if !ok {
		return jsscope.Mapping{}, false
	}
	return jsscope.Mapping{Column: start, Source: p.SourceID, Line: p.Line, OrigColumn: p.Column,
		Name: p.Name, HasName: p.HasName}, true
}
