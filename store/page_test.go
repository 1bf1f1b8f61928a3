package store_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"errata/store"
	"errata/store/storetest"
)

// TestListVisitsEveryRowOnceNewestFirst pages through a list whose rows
// share creation times, forwards and then backwards, and checks that each
// row comes exactly once in the contract's order.
func TestListVisitsEveryRowOnceNewestFirst(t *testing.T) {
	ctx := context.Background()
	st := storetest.New(t)
	if _, err := st.CreateUser(ctx, "owner@example.com", "Owner"); err != nil {
		t.Fatal(err)
	}
	if _, err := st.CreateOrganization(ctx, "acme", "Acme", "owner@example.com"); err != nil {
		t.Fatal(err)
	}
	// 23 environments over 5 distinct creation times: ties everywhere.
	var want []string
	for i := range 23 {
		name := fmt.Sprintf("env-%02d", i)
		if _, err := st.CreateEnvironment(ctx, "acme", name, "", false); err != nil {
			t.Fatal(err)
		}
		want = append(want, name)
	}
	base := time.Date(2026, 1, 2, 3, 4, 5, 123456000, time.UTC)
	if err := st.SetEnvironmentCreatedForTest(ctx, base); err != nil {
		t.Fatal(err)
	}
	// Newest first: created desc (i%5 larger is newer), then id desc.
	want = want[:0]
	for tick := 4; tick >= 0; tick-- {
		for i := 22; i >= 0; i-- {
			if i%5 == tick {
				want = append(want, fmt.Sprintf("env-%02d", i))
			}
		}
	}

	for _, limit := range []int{1, 4, 5, 23, 100} {
		t.Run(fmt.Sprintf("limit %d", limit), func(t *testing.T) {
			var got []string
			var pages []store.PageInfo
			page := store.Page{Limit: limit}
			for range 50 {
				names, info, err := st.EnvironmentNamesForTest(ctx, "acme", page)
				if err != nil {
					t.Fatal(err)
				}
				if info.Hits != 23 {
					t.Fatalf("hits = %d, want 23", info.Hits)
				}
				got = append(got, names...)
				pages = append(pages, info)
				if !info.HasNext {
					break
				}
				page = store.Page{Limit: limit, After: &info.Last}
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Fatalf("forward order (-want +got):\n%s", diff)
			}
			if pages[0].HasPrev {
				t.Error("first page says it has a previous page")
			}
			// Walk back from the last page with the previous cursors.
			var back []string
			last := pages[len(pages)-1]
			page = store.Page{Limit: limit, Before: &last.First}
			for last.HasPrev {
				names, info, err := st.EnvironmentNamesForTest(ctx, "acme", page)
				if err != nil {
					t.Fatal(err)
				}
				back = append(names, back...)
				last = info
				page = store.Page{Limit: limit, Before: &info.First}
			}
			lastPageLen := len(want) - (len(pages)-1)*limit
			if diff := cmp.Diff(want[:len(want)-lastPageLen], back, cmpopts.EquateEmpty()); diff != "" {
				t.Fatalf("backward order (-want +got):\n%s", diff)
			}
		})
	}
}
