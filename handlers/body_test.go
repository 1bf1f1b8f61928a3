package handlers

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestBodyBuffersDropLargeOnes gives back the buffers of a
// small and of a 1 MiB body: the pool keeps the first for the next
// request and never hands out the second.
func TestBodyBuffersDropLargeOnes(t *testing.T) {
	for _, size := range []int{4 << 10, maxBodyBytes + 1} {
		for range 10 {
			b := make([]byte, 0, size)
			putBodyBuffer(&b)
			if got := bodyBuffers.Get().(*[]byte); cap(*got) > maxPooledBody {
				t.Fatalf("a buffer of %d bytes given back: the pool holds %d", size, cap(*got))
			}
		}
	}
}

// TestReadBodyAllocatesAsItArrives reads a body that claims
// 1 MiB and sends 10 bytes: what is allocated before the bytes arrive is
// at most maxBodyPresize, and a body that says its small length is read
// into a buffer of that length.
func TestReadBodyAllocatesAsItArrives(t *testing.T) {
	for _, tc := range []struct {
		name          string
		contentLength int64
		maxCap        int
	}{
		{"a claim of 1 MiB", maxBodyBytes, maxBodyPresize},
		{"a small length", 10, 11},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := httptest.NewRequest(http.MethodPost, "/", strings.NewReader(`{"a":true}`))
			r.ContentLength = tc.contentLength
			body, err := readBody(httptest.NewRecorder(), r, nil)
			if err != nil {
				t.Fatal(err)
			}
			if string(body) != `{"a":true}` || cap(body) > tc.maxCap {
				t.Errorf("read %q into %d bytes, want at most %d", body, cap(body), tc.maxCap)
			}
		})
	}
}
