package handlers

import (
	"encoding/base64"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"errata/store"
)

// Page sizes of paginated lists.
const (
	defaultLimit = 50
	maxLimit     = 100
)

// readPage reads the limit and cursor query parameters of a list.
func readPage(r *http.Request) (store.Page, error) {
	q := r.URL.Query()
	page := store.Page{Limit: defaultLimit}
	for _, name := range []string{"limit", "per_page"} {
		s := q.Get(name)
		if s == "" {
			continue
		}
		n, err := strconv.Atoi(s)
		if err != nil {
			return page, invalid(typeError, "Input should be a valid integer", "query", name)
		}
		page.Limit = min(max(n, 1), maxLimit)
		break
	}
	if c := q.Get("cursor"); c != "" {
		key, before, ok := decodeCursor(c)
		if !ok {
			return page, invalid(valueErr, "Invalid cursor", "query", "cursor")
		}
		if before {
			page.Before = &key
		} else {
			page.After = &key
		}
	}
	return page, nil
}

// A cursor is opaque to clients: base64url of "v1:<direction>:<created
// unix micros>:<id>", where direction n asks for the rows after the key
// and p for the rows before it.
func encodeCursor(k store.Key, before bool) string {
	dir := "n"
	if before {
		dir = "p"
	}
	s := fmt.Sprintf("v1:%s:%d:%d", dir, k.Created.UnixMicro(), k.ID)
	return base64.RawURLEncoding.EncodeToString([]byte(s))
}

func decodeCursor(c string) (k store.Key, before bool, ok bool) {
	if len(c) > 128 {
		return k, false, false
	}
	raw, err := base64.RawURLEncoding.DecodeString(c)
	if err != nil {
		return k, false, false
	}
	parts := strings.Split(string(raw), ":")
	if len(parts) != 4 || parts[0] != "v1" || (parts[1] != "n" && parts[1] != "p") {
		return k, false, false
	}
	micros, err1 := strconv.ParseInt(parts[2], 10, 64)
	id, err2 := strconv.ParseInt(parts[3], 10, 64)
	// No row was created outside years 1 to 9999, and times far beyond
	// them overflow on their way to PostgreSQL.
	created := time.UnixMicro(micros)
	if y := created.UTC().Year(); err1 != nil || err2 != nil || id < 0 || y < 1 || y > 9999 {
		return k, false, false
	}
	return store.Key{Created: created, ID: id}, parts[1] == "p", true
}

// setPageHeaders writes Sentry's Link header, X-Hits and X-Max-Hits for a
// page described by info.
func setPageHeaders(w http.ResponseWriter, r *http.Request, publicURL string, info store.PageInfo) {
	prev, next := "", ""
	if info.HasPrev {
		prev = encodeCursor(info.First, true)
	}
	if info.HasNext {
		next = encodeCursor(info.Last, false)
	}
	link := func(rel, cursor string, results bool) string {
		return fmt.Sprintf(`<%s>; rel="%s"; results="%t"; cursor="%s"`,
			pageURL(r, publicURL, cursor), rel, results, cursor)
	}
	h := w.Header()
	h.Set("Link", link("previous", prev, info.HasPrev)+", "+link("next", next, info.HasNext))
	h.Set("X-Hits", strconv.Itoa(info.Hits))
	h.Set("X-Max-Hits", strconv.Itoa(store.MaxHits))
}

// pageURL is the request's URL with its cursor replaced.
func pageURL(r *http.Request, publicURL, cursor string) string {
	q := r.URL.Query()
	q.Del("cursor")
	if cursor != "" {
		q.Set("cursor", cursor)
	}
	u := url.URL{Path: r.URL.Path, RawQuery: q.Encode()}
	return publicBase(r, publicURL) + u.String()
}
