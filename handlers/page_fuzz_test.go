package handlers

import (
	"math"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"errata/store"
)

// FuzzReadPage reads arbitrary query strings as a list does: readPage
// either yields a page of 1 to 100 rows with at most one boundary, the
// cursor's, or a 422 at the parameter at fault. A cursor that decodes
// encodes back to one that decodes to the same boundary.
func FuzzReadPage(f *testing.F) {
	f.Add("limit=10")
	f.Fuzz(func(t *testing.T, rawQuery string) {
		r := httptest.NewRequest("GET", "/", nil)
		r.URL.RawQuery = rawQuery
		q := r.URL.Query()
		page, err := readPage(r)
		if err != nil {
			status, body := errorResponse(err)
			ve, _ := body.(map[string]any)["detail"].(validationError)
			if status != http.StatusUnprocessableEntity || len(ve) != 1 || len(ve[0].Loc) != 2 || ve[0].Loc[0] != "query" {
				t.Fatalf("readPage(%q): status %d, %+v", rawQuery, status, body)
			}
			switch name := ve[0].Loc[1]; name {
			case "cursor":
				if _, _, ok := decodeCursor(q.Get("cursor")); ok {
					t.Errorf("readPage(%q): 422 at a cursor that decodes", rawQuery)
				}
			case "limit", "per_page":
			default:
				t.Errorf("readPage(%q): 422 at %v", rawQuery, ve[0].Loc)
			}
			return
		}
		if page.Limit < 1 || page.Limit > maxLimit {
			t.Errorf("readPage(%q): limit %d", rawQuery, page.Limit)
		}
		if page.After != nil && page.Before != nil {
			t.Errorf("readPage(%q): both boundaries", rawQuery)
		}
		c := q.Get("cursor")
		key, before, ok := decodeCursor(c)
		switch {
		case c == "":
			if page.After != nil || page.Before != nil {
				t.Errorf("readPage(%q): a boundary without a cursor", rawQuery)
			}
			return
		case !ok:
			t.Fatalf("readPage(%q) accepted a cursor that does not decode", rawQuery)
		case before && (page.Before == nil || *page.Before != key), !before && (page.After == nil || *page.After != key):
			t.Errorf("readPage(%q) = %+v, the cursor says %+v before=%v", rawQuery, page, key, before)
		}
		if y := key.Created.UTC().Year(); y < 1 || y > 9999 || key.ID < 0 {
			t.Errorf("cursor %q decodes to %v, %d", c, key.Created, key.ID)
		}
		again, againBefore, ok := decodeCursor(encodeCursor(key, before))
		if !ok || !again.Created.Equal(key.Created) || again.ID != key.ID || againBefore != before {
			t.Errorf("cursor %q: %+v re-encodes to %+v (ok %v)", c, key, again, ok)
		}
	})
}

// FuzzCursorRoundTrip checks that every boundary a list can return (a row
// created in years 1 to 9999 with a non-negative id) encodes to a cursor
// that decodes to it exactly, at microsecond precision, in both directions.
func FuzzCursorRoundTrip(f *testing.F) {
	f.Add(time.Date(2026, 11, 21, 21, 10, 14, 724123000, time.UTC).UnixMicro(), int64(42), false)
	f.Fuzz(func(t *testing.T, micros, id int64, before bool) {
		id &= math.MaxInt64
		k := store.Key{Created: time.UnixMicro(micros), ID: id}
		c := encodeCursor(k, before)
		got, gotBefore, ok := decodeCursor(c)
		inRange := k.Created.UTC().Year() >= 1 && k.Created.UTC().Year() <= 9999
		if ok != inRange {
			t.Fatalf("decodeCursor(encodeCursor(%v, %d)) ok = %v", k.Created, id, ok)
		}
		if !ok {
			return
		}
		if !got.Created.Equal(k.Created) || got.ID != k.ID || gotBefore != before {
			t.Errorf("cursor %q of %+v before=%v decodes to %+v before=%v", c, k, before, got, gotBefore)
		}
		if diff := cmp.Diff(encodeCursor(got, gotBefore), c); diff != "" {
			t.Errorf("cursor re-encodes differently (-want +got):\n%s", diff)
		}
	})
}
