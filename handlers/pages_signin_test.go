package handlers

import (
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"errata/authn"
)

// TestConfirmPageKeys holds the confirmation page (a page of pageRoutes,
// handlers/pages) to what the isolation matrix held it to when it was a
// route of routes.go: showing it changes nothing whatever the key, a
// tampered key gets exactly the page of a key errata never wrote, and its
// form confirms only the address its key names: a key for another
// user's address, or tampered to name it, is answered as a key of no
// address and changes nothing.
func TestConfirmPageKeys(t *testing.T) {
	f := newMatrixFixture(t)
	csrf := authn.NewCSRFToken()
	// send asks the page of key with the CSRF cookie (so that no new one
	// makes two answers differ), posting its form when post.
	send := func(key string, post bool) response {
		t.Helper()
		method, body := "GET", ""
		if post {
			method = "POST"
			body = url.Values{"key": {key}, authn.CSRFFormField: {csrf}}.Encode()
		}
		req, err := http.NewRequest(method, f.srv.URL+"/profile/confirm-email/"+url.PathEscape(key)+"/", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		if post {
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		}
		req.AddCookie(&http.Cookie{Name: authn.CSRFCookieName, Value: csrf})
		res, err := f.srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, err := io.ReadAll(res.Body)
		if err != nil {
			t.Fatal(err)
		}
		res.Header.Del("Date")
		res.Header.Del("X-Request-Id")
		return response{status: res.StatusCode, header: res.Header, body: b}
	}

	t.Run("showing the page changes nothing; a tampered key gets the page of a forged key", func(t *testing.T) {
		k := f.newEmailKeys(t)
		before := f.snapshot(t)
		forged := send("Zm9yZ2Vk.Zm9yZ2Vk", false)
		if forged.status != http.StatusBadRequest {
			t.Errorf("a forged key: status %d, want 400", forged.status)
		}
		sameAnswer(t, "a key tampered to name the victim", forged, send(k.tampered, false))
		for _, key := range []string{k.foreign, k.genuine} {
			if res := send(key, false); res.status != http.StatusOK {
				t.Errorf("a key errata wrote: status %d: %s", res.status, res.body)
			}
		}
		unchanged(t, "showing the page", before, f.snapshot(t))
	})

	t.Run("a key for another user's address, or tampered to name it, is answered as a key of no address", func(t *testing.T) {
		k := f.newEmailKeys(t)
		before := f.snapshot(t)
		missing := send(k.nothing, true)
		if missing.status != http.StatusBadRequest {
			t.Errorf("a key of no address: status %d, want 400", missing.status)
		}
		sameAnswer(t, "a key errata signed for the intruder and the victim's address", missing, send(k.foreign, true))
		sameAnswer(t, "a key tampered to name the victim", missing, send(k.tampered, true))
		unchanged(t, "keys that are not the victim's", before, f.snapshot(t))
		if res := send(k.genuine, true); res.status != http.StatusOK || !strings.Contains(string(res.body), k.address+" is confirmed") {
			t.Errorf("the victim's own key: status %d: %s", res.status, res.body)
		}
	})
}
