package handlers

import (
	"bytes"
	"crypto/sha1"
	"encoding/hex"
	"net/http"
	"net/http/httptest"
	"testing"
)

// FuzzReadChunks reads arbitrary multipart bodies as a chunk upload does:
// every chunk it yields has the SHA-1 of its name, at most chunkSize bytes
// (gzipped parts are measured uncompressed) and there are at most
// chunksPerRequest of them; otherwise it yields one error, a 400 or 413 of
// the contract, and stops.
func FuzzReadChunks(f *testing.F) {
	f.Add("multipart/form-data; boundary=b", []byte("--b--\r\n"))
	f.Fuzz(func(t *testing.T, contentType string, body []byte) {
		r := httptest.NewRequest("POST", "/", bytes.NewReader(body))
		r.Header.Set("Content-Type", contentType)
		r.Body = http.MaxBytesReader(httptest.NewRecorder(), r.Body, maxRequestSize)
		mr, err := r.MultipartReader()
		if err != nil {
			return // handleChunkUpload answers 400
		}
		count, failed := 0, false
		for c, err := range readChunks(mr) {
			if failed {
				t.Fatal("readChunks yielded after an error")
			}
			if err != nil {
				failed = true
				status, resp := errorResponse(err)
				if status != http.StatusBadRequest && status != http.StatusRequestEntityTooLarge {
					t.Errorf("error %v answers %d %+v", err, status, resp)
				}
				continue
			}
			if count++; count > chunksPerRequest {
				t.Errorf("chunk %d of one request", count)
			}
			sum := sha1.Sum(c.Data)
			if hex.EncodeToString(sum[:]) != c.SHA1 {
				t.Errorf("chunk %s has the SHA-1 %x", c.SHA1, sum)
			}
			if len(c.Data) > chunkSize {
				t.Errorf("chunk %s has %d bytes", c.SHA1, len(c.Data))
			}
		}
	})
}
