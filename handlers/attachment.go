package handlers

import (
	"io"
	"mime"
	"net/http"
	"strconv"
)

// attachmentStart answers 200 with the headers of a download of size
// bytes saved as filename, and returns where its bytes go.
type attachmentStart func(size int64, filename string) io.Writer

// streamAttachment streams a download that write makes: write finds the
// file, calls start with its size and name, then writes its bytes. Until
// start, a failure is an ordinary answer (404, 503); once the first byte
// is out, it can only cut the response short.
func streamAttachment(w http.ResponseWriter, r *http.Request, d Deps, write func(start attachmentStart) error) error {
	started := false
	err := write(func(size int64, filename string) io.Writer {
		started = true
		h := w.Header()
		h.Set("Content-Type", "application/octet-stream")
		h.Set("Content-Length", strconv.FormatInt(size, 10))
		h.Set("Content-Disposition", mime.FormatMediaType("attachment", map[string]string{"filename": filename}))
		w.WriteHeader(http.StatusOK)
		return w
	})
	if err != nil && started {
		d.Log.WarnContext(r.Context(), "download cut short", "err", err)
		panic(http.ErrAbortHandler)
	}
	return err
}
