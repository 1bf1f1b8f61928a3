package handlers

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"io"
	"mime/multipart"
	"net/http"
	"slices"
	"strings"
	"testing"

	"errata/store"
)

// filePart is one file of a multipart body.
type filePart struct {
	field, filename string
	data            []byte
}

// multipartBody encodes fields and files as multipart/form-data.
func multipartBody(t *testing.T, fields [][2]string, files []filePart) ([]byte, string) {
	t.Helper()
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	for _, f := range fields {
		mw.WriteField(f[0], f[1])
	}
	for _, f := range files {
		w, err := mw.CreateFormFile(f.field, f.filename)
		if err != nil {
			t.Fatal(err)
		}
		w.Write(f.data)
	}
	mw.Close()
	return buf.Bytes(), mw.FormDataContentType()
}

// doMultipart sends a multipart body.
func (a *testAPI) doMultipart(method, path, token string, body []byte, contentType string) response {
	a.t.Helper()
	req, err := http.NewRequest(method, a.srv.URL+path, bytes.NewReader(body))
	if err != nil {
		a.t.Fatal(err)
	}
	req.Header.Set("Content-Type", contentType)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	res, err := a.srv.Client().Do(req)
	if err != nil {
		a.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return response{status: res.StatusCode, header: res.Header, body: b}
}

func sortedCopy(s []string) []string {
	s = slices.Clone(s)
	slices.Sort(s)
	return s
}

func gzipped(t *testing.T, data []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	zw.Write(data)
	zw.Close()
	return buf.Bytes()
}

func TestChunkUploadOptions(t *testing.T) {
	f := newAssembleFixture(t)
	path := "/api/0/organizations/acme/chunk-upload/"

	t.Run("any token of a member gets the options", func(t *testing.T) {
		res := f.do("GET", path, f.token("owner@example.com", "org:read"), nil)
		res.expect(t, http.StatusOK, nil)
		res.body = bytes.ReplaceAll(res.body, []byte(f.srv.URL), []byte("http://errata.test"))
		res.golden(t, "chunk_options")
	})
	t.Run("an outsider is 404", func(t *testing.T) {
		f.do("GET", path, f.outsider, nil).expect(t, http.StatusNotFound, `{"detail":"Not Found"}`)
	})
	t.Run("no token is 401", func(t *testing.T) {
		f.do("GET", path, "", nil).expect(t, http.StatusUnauthorized, `{"detail":"Unauthorized"}`)
	})
	t.Run("a bad slug is 422", func(t *testing.T) {
		f.do("GET", "/api/0/organizations/a%20b/chunk-upload/", f.owner, nil).golden(t, "chunk_bad_slug")
	})
}

func TestChunkUpload(t *testing.T) {
	f := newAssembleFixture(t)
	path := "/api/0/organizations/acme/chunk-upload/"
	orgID := int64(1) // acme is the first organization of the fixture
	one, two := []byte("first chunk"), []byte("second chunk")
	big := bytes.Repeat([]byte("z"), chunkSize+1)
	tooMany := make([]filePart, chunksPerRequest+1)
	for i := range tooMany {
		data := []byte{byte(i)}
		tooMany[i] = filePart{"file", sha1Hex(data), data}
	}

	tests := []struct {
		name   string
		token  string
		files  []filePart
		status int
		golden string
		stored []string // chunks of acme afterwards, among one and two
	}{
		{"raw and gzipped chunks are stored", f.owner,
			[]filePart{{"file", sha1Hex(one), one}, {"file_gzip", sha1Hex(two), gzipped(t, two)}},
			200, "chunk_upload_ok", []string{sha1Hex(one), sha1Hex(two)}},
		{"the same chunks again are harmless", f.owner,
			[]filePart{{"file", sha1Hex(one), one}},
			200, "", []string{sha1Hex(one), sha1Hex(two)}},
		{"a chunk that does not match its name is 400 and nothing is stored", f.owner,
			[]filePart{{"file", sha1Hex([]byte("three")), []byte("three")}, {"file", sha1Hex(one), []byte("not one")}},
			400, "chunk_mismatch", nil},
		{"a name that is not SHA-1 hex is 400", f.owner,
			[]filePart{{"file", "chunk.bin", one}}, 400, "chunk_bad_name", nil},
		{"a chunk over the chunk size is 400", f.owner,
			[]filePart{{"file", sha1Hex(big), big}}, 400, "chunk_too_large", nil},
		{"more chunks than chunksPerRequest is 400", f.owner, tooMany, 400, "chunk_too_many", nil},
		{"a token without the scopes is 403", f.token("owner@example.com", "org:read"),
			[]filePart{{"file", sha1Hex(one), one}}, 403, "", nil},
		{"an outsider is 404", f.outsider,
			[]filePart{{"file", sha1Hex(one), one}}, 404, "", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			body, ct := multipartBody(t, nil, tt.files)
			res := f.doMultipart("POST", path, tt.token, body, ct)
			res.expect(t, tt.status, nil)
			if tt.golden != "" {
				res.golden(t, tt.golden)
			}
			if tt.status == 400 {
				err := f.st.ReadChunks(context.Background(), orgID, []string{sha1Hex([]byte("three"))}, func([]byte) error { return nil })
				if !errors.Is(err, store.ErrNotFound) {
					t.Errorf("a chunk of a rejected request was stored: %v", err)
				}
			}
			for _, sum := range tt.stored {
				var got []byte
				err := f.st.ReadChunks(context.Background(), orgID, []string{sum}, func(b []byte) error {
					got = append(got, b...)
					return nil
				})
				if err != nil || sha1Hex(got) != sum {
					t.Errorf("chunk %s: %v, content hashes to %s", sum, err, sha1Hex(got))
				}
			}
		})
	}

	t.Run("a body over maxRequestSize is 413", func(t *testing.T) {
		huge := strings.Repeat("x", maxRequestSize+1)
		body, ct := multipartBody(t, nil, []filePart{{"file", sha1Hex([]byte(huge)), []byte(huge)}})
		f.doMultipart("POST", path, f.owner, body, ct).
			expect(t, http.StatusRequestEntityTooLarge, `{"detail":"Request body too large"}`)
	})
	t.Run("a body that is not multipart is 400", func(t *testing.T) {
		f.do("POST", path, f.owner, map[string]any{}).
			expect(t, http.StatusBadRequest, `{"detail":"Cannot parse request body"}`)
	})
	t.Run("chunks of another organization stay there", func(t *testing.T) {
		err := f.st.ReadChunks(context.Background(), 2, []string{sha1Hex(one)}, func([]byte) error { return nil })
		if !errors.Is(err, store.ErrNotFound) {
			t.Errorf("organization other reads acme's chunk: %v", err)
		}
	})
}
