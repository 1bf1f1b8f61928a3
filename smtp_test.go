package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"mime/quotedprintable"
	"net"
	"net/http"
	"net/mail"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

// emails returns "<email> verified=<bool> primary=<bool>" lines of ann's
// addresses as the API lists them.
func (s *errataServer) emails(t *testing.T) []string {
	t.Helper()
	var as []struct {
		Email                 string
		IsVerified, IsPrimary bool
	}
	if status := s.getJSON(t, "/api/0/users/me/emails/", &as); status != http.StatusOK {
		t.Fatalf("list emails: %d", status)
	}
	var out []string
	for _, a := range as {
		out = append(out, fmt.Sprintf("%s verified=%t primary=%t", a.Email, a.IsVerified, a.IsPrimary))
	}
	return out
}

// smtpServer is aiosmtpd saving every message it accepts to a Maildir.
type smtpServer struct {
	python, addr, maildir string
	cmd                   *exec.Cmd
}

// startSMTP starts Debian's aiosmtpd on addr with its Mailbox handler.
func startSMTP(t *testing.T, python, addr, maildir string) *smtpServer {
	t.Helper()
	s := &smtpServer{python: python, addr: addr, maildir: maildir}
	s.start(t)
	t.Cleanup(func() { s.stop(t) })
	return s
}

func (s *smtpServer) start(t *testing.T) {
	t.Helper()
	s.cmd = exec.Command(s.python, "-m", "aiosmtpd", "-n", "-l", s.addr, "-c", "aiosmtpd.handlers.Mailbox", s.maildir)
	s.cmd.Stdout, s.cmd.Stderr = os.Stderr, os.Stderr
	if err := s.cmd.Start(); err != nil {
		t.Fatalf("start aiosmtpd: %v", err)
	}
	waitFor(t, 10*time.Second, "aiosmtpd to listen", func() bool {
		c, err := net.Dial("tcp", s.addr)
		if err != nil {
			return false
		}
		c.Close()
		return true
	})
}

func (s *smtpServer) stop(t *testing.T) {
	t.Helper()
	if s.cmd == nil {
		return
	}
	s.cmd.Process.Kill()
	s.cmd.Wait()
	s.cmd = nil
}

// receivedMail is a message aiosmtpd saved.
type receivedMail struct {
	to, messageID, text, html string
}

// messages reads every message of the Maildir.
func (s *smtpServer) messages(t *testing.T) []receivedMail {
	t.Helper()
	var out []receivedMail
	for _, sub := range []string{"new", "cur"} {
		files, _ := filepath.Glob(filepath.Join(s.maildir, sub, "*"))
		for _, f := range files {
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, parseMail(t, b))
		}
	}
	return out
}

// parseMail reads a multipart/alternative message into its parts.
func parseMail(t *testing.T, raw []byte) receivedMail {
	t.Helper()
	m, err := mail.ReadMessage(bytes.NewReader(raw))
	if err != nil {
		t.Fatalf("parse message: %v\n%s", err, raw)
	}
	rm := receivedMail{to: m.Header.Get("To"), messageID: m.Header.Get("Message-Id")}
	mt, params, err := mime.ParseMediaType(m.Header.Get("Content-Type"))
	if err != nil || mt != "multipart/alternative" {
		t.Fatalf("Content-Type %q, want multipart/alternative", m.Header.Get("Content-Type"))
	}
	mr := multipart.NewReader(m.Body, params["boundary"])
	for {
		p, err := mr.NextPart()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		var body io.Reader = p
		if p.Header.Get("Content-Transfer-Encoding") == "quoted-printable" {
			body = quotedprintable.NewReader(p)
		}
		b, err := io.ReadAll(body)
		if err != nil {
			t.Fatal(err)
		}
		switch ct, _, _ := mime.ParseMediaType(p.Header.Get("Content-Type")); ct {
		case "text/plain":
			rm.text = string(b)
		case "text/html":
			rm.html = string(b)
		}
	}
	return rm
}

var e2eLinkPattern = regexp.MustCompile(`http://127\.0\.0\.1:\d+/profile/confirm-email/([A-Za-z0-9_.-]+)/`)

// TestSMTPDelivery runs errata against a real SMTP server: adding an address
// delivers one message whose link verifies it; while the SMTP server is down
// the next message waits in the outbox and is delivered once it is back;
// nothing is sent twice.
func TestSMTPDelivery(t *testing.T) {
	python := os.Getenv("SMTP_PYTHON")
	if python == "" {
		t.Fatal("SMTP_PYTHON is not set: run the tests with ./dev.sh test, which installs python3-aiosmtpd")
	}
	smtpAddr := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	smtp := startSMTP(t, python, smtpAddr, filepath.Join(t.TempDir(), "maildir"))
	srv := startErrata(t, map[string]string{
		"EMAIL_URL":          "smtp://" + smtpAddr,
		"DEFAULT_FROM_EMAIL": "errata@example.com",
	})
	srv.token = srv.user(t, "ann@example.com", "org:read")

	var link, key string
	t.Run("adding an address delivers one message with both parts and the link", func(t *testing.T) {
		start := time.Now()
		status, body := srv.api(t, "POST", "/api/0/users/me/emails/", map[string]any{"email": "work@example.com"})
		if status != 201 {
			t.Fatalf("POST emails: %d %s", status, body)
		}
		if d := time.Since(start); d > 2*time.Second {
			t.Errorf("the request took %s", d)
		}
		waitFor(t, 15*time.Second, "the message", func() bool { return len(smtp.messages(t)) >= 1 })
		ms := smtp.messages(t)
		if len(ms) != 1 || ms[0].to != "work@example.com" {
			t.Fatalf("messages = %+v, want one to work@example.com", ms)
		}
		text := e2eLinkPattern.FindStringSubmatch(ms[0].text)
		html := e2eLinkPattern.FindStringSubmatch(ms[0].html)
		if text == nil || html == nil || text[0] != html[0] {
			t.Fatalf("text and HTML parts lack the same link:\n%s\n%s", ms[0].text, ms[0].html)
		}
		link, key = text[0], text[1]
	})
	if link == "" {
		t.FailNow()
	}
	t.Run("following the link verifies the address", func(t *testing.T) {
		res, err := http.Get(link)
		if err != nil {
			t.Fatal(err)
		}
		page, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode != 200 || !strings.Contains(string(page), `<button type="submit"`) {
			t.Fatalf("confirmation page: %d\n%s", res.StatusCode, page)
		}
		res, page = postPage(t, link, url.Values{"key": {key}})
		if res.StatusCode != 200 {
			t.Fatalf("posting the form: %d\n%s", res.StatusCode, page)
		}
		want := "work@example.com verified=true primary=false"
		if got := srv.emails(t); !slices.Contains(got, want) {
			t.Errorf("emails = %q, want %q among them", got, want)
		}
	})
	t.Run("with the SMTP server down the message waits and is delivered once it is back", func(t *testing.T) {
		smtp.stop(t)
		start := time.Now()
		status, body := srv.api(t, "POST", "/api/0/users/me/emails/", map[string]any{"email": "later@example.com"})
		if status != 201 {
			t.Fatalf("POST emails: %d %s", status, body)
		}
		if d := time.Since(start); d > 2*time.Second {
			t.Errorf("the request took %s with the SMTP server down", d)
		}
		waitFor(t, 15*time.Second, "a failed delivery attempt", func() bool {
			var attempts int
			var lastErr *string
			srv.db(t).QueryRow(context.Background(), `SELECT attempts, last_error FROM jobs WHERE kind = 'mail' ORDER BY id DESC LIMIT 1`).Scan(&attempts, &lastErr)
			return attempts >= 1 && lastErr != nil
		})
		var sent *time.Time
		if err := srv.db(t).QueryRow(context.Background(), `SELECT date_sent FROM mail_outbox WHERE to_address = 'later@example.com'`).Scan(&sent); err != nil || sent != nil {
			t.Fatalf("outbox date_sent = %v, %v; want waiting", sent, err)
		}
		smtp.start(t)
		waitFor(t, 60*time.Second, "the delayed message", func() bool { return len(smtp.messages(t)) >= 2 })
	})
	t.Run("nothing is sent twice", func(t *testing.T) {
		// Give a duplicate the time to show: the worker polls every second.
		time.Sleep(3 * time.Second)
		ms := smtp.messages(t)
		var got []string
		ids := map[string]bool{}
		for _, m := range ms {
			got = append(got, m.to)
			if ids[m.messageID] {
				t.Errorf("Message-ID %s delivered twice", m.messageID)
			}
			ids[m.messageID] = true
		}
		if len(got) != 2 || !slices.Contains(got, "work@example.com") || !slices.Contains(got, "later@example.com") {
			t.Errorf("delivered to %q, want work@ and later@ once each", got)
		}
		var unsent, unfinished int
		srv.db(t).QueryRow(context.Background(), `SELECT count(*) FROM mail_outbox WHERE date_sent IS NULL`).Scan(&unsent)
		srv.db(t).QueryRow(context.Background(), `SELECT count(*) FROM jobs WHERE state <> 'done'`).Scan(&unfinished)
		if unsent != 0 || unfinished != 0 {
			t.Errorf("%d unsent messages, %d unfinished jobs", unsent, unfinished)
		}
	})
	t.Run("the log never shows a key", func(t *testing.T) {
		if strings.Contains(srv.logs.String(), key) {
			t.Error("the server log contains a confirmation key")
		}
	})
}
