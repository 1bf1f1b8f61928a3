package native

import (
	"path"
	"strings"
)

// cleanPath is a frame's abs_path as Sentry answers it: the path the
// debug information joins (a unit's directory and a file's), without its
// "." and ".." components and repeated separators ("/src/build/../a.c" is
// "/src/a.c"). A path with a backslash is a Windows one: its drive or
// share is kept, "/" and "\" both separate its components, and it is
// joined by "\". A ".." that would climb above a relative path's start is
// kept, above a root dropped.
func cleanPath(p string) string {
	if !strings.Contains(p, `\`) {
		if p == "" {
			return p
		}
		return path.Clean(p)
	}
	root, rest := windowsRoot(p)
	var parts []string
	for c := range strings.FieldsFuncSeq(rest, func(r rune) bool { return r == '/' || r == '\\' }) {
		switch {
		case c == ".":
		case c == ".." && len(parts) > 0 && parts[len(parts)-1] != "..":
			parts = parts[:len(parts)-1]
		case c == ".." && root != "":
		default:
			parts = append(parts, c)
		}
	}
	return root + strings.Join(parts, `\`)
}

// windowsRoot splits p into its root ("C:\", "\\server\share\", "\" or
// "C:") and the rest.
func windowsRoot(p string) (root, rest string) {
	isSep := func(b byte) bool { return b == '\\' || b == '/' }
	switch {
	case len(p) >= 2 && isSep(p[0]) && isSep(p[1]):
		// \\server\share\: the server and share are the root.
		i, seps := 2, 0
		for ; i < len(p) && seps < 2; i++ {
			if isSep(p[i]) {
				seps++
			}
		}
		return p[:i], p[i:]
	case len(p) >= 2 && p[1] == ':':
		if len(p) >= 3 && isSep(p[2]) {
			return p[:3], p[3:]
		}
		return p[:2], p[2:]
	case isSep(p[0]):
		return p[:1], p[1:]
	}
	return "", p
}
