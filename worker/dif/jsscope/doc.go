// Package jsscope reads the function scopes of a minified JavaScript file
// and the names a debugger would give them, so that a frame whose caller
// does not name it is named after the function around its position
// (docs/resolution.md). It follows the rules of Sentry's js-source-scopes
// (what symbolic's sourcemapcache uses): `function foo` is foo, `foo =
// function`, `const foo = () =>` and `var foo = class` take the name they
// are assigned to (`obj.foo = function` is obj.foo), class methods are
// Cls.method (`get Cls.x`, `Cls.#p`), a class is `new Cls` (its
// constructor and fields run in it), object literal members are obj.m or
// `<object>.m`; a function passed to a call takes the name of what the
// call is assigned to, and a function inside another function's body
// starts afresh. Each identifier of a name is then looked up in the source
// map, and replaced by the original name the map gives at it (Index.NameAt),
// as symbolic's NameResolver does.
//
// It imports nothing of errata: Build takes the bytes of the file, NameAt
// a Mapper over its map, and both return plain values.
//
// It is a scanner, not a parser: it tokenizes (strings, template literals
// with their ${} expressions, regular expressions told from division by
// the token before them, comments) and follows brackets, which is enough
// to find where each function starts and ends and what it is assigned to.
// Any bytes are accepted: what it cannot follow (an unbalanced bracket,
// invalid text) leaves a name wrong or missing, never an error.
//
// Budget, whatever the file says: it scans at most MaxBytes bytes, follows
// brackets at most MaxDepth deep, keeps at most MaxScopes scopes, MaxParts
// parts of names and MaxTextBytes bytes of their text (each name at most
// MaxNameParts parts and MaxNameBytes bytes, else the scope is kept
// without a name). At any of these limits the scan stops there: the index
// answers the positions before that point (its scopes still open end
// there) and no name after it, so it is partial, never an error. Its work
// is linear in the bytes scanned, plus for each scope a walk over the
// brackets around it that add to its name, until the name is complete or
// longer than MaxNameParts. The index holds about 48 bytes a scope and
// 20 a part of a name beside their text (Size, held to the heap by a
// test), at most about 21 MB; the scan holds beside it the input, its
// scopes and parts as found (about twice the index's) and MaxDepth
// brackets.
package jsscope
