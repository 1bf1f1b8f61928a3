package mail

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"mime"
	"mime/multipart"
	"mime/quotedprintable"
	"net/mail"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"errata/store"
)

func TestNewSender(t *testing.T) {
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	tests := []struct {
		name, url string
		want      Sender
	}{
		{"empty URL logs", "", &LogSender{Log: log, From: "errata@example.com"}},
		{"smtp with credentials", "smtp://ann:s%3Acret@mail.example.com:587",
			&SMTPSender{Host: "mail.example.com", Port: "587", Username: "ann", Password: "s:cret", From: "errata@example.com"}},
		{"smtp without port uses 25", "smtp://mail.example.com",
			&SMTPSender{Host: "mail.example.com", Port: "25", From: "errata@example.com"}},
		{"smtps uses implicit TLS on 465", "smtps://mail.example.com",
			&SMTPSender{Host: "mail.example.com", Port: "465", ImplicitTLS: true, From: "errata@example.com"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := NewSender(tt.url, "errata@example.com", log)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got, cmp.Comparer(func(a, b *slog.Logger) bool { return a == b })); diff != "" {
				t.Errorf("sender (-want +got):\n%s", diff)
			}
		})
	}
	for _, bad := range []string{"http://mail.example.com", "smtp://", "::"} {
		t.Run("rejects "+bad, func(t *testing.T) {
			if _, err := NewSender(bad, "errata@example.com", log); err == nil {
				t.Error("no error")
			}
		})
	}
	t.Run("rejects a bad sender address", func(t *testing.T) {
		if _, err := NewSender("", "not an address", log); err == nil {
			t.Error("no error")
		}
	})
}

func TestCompose(t *testing.T) {
	m := store.Mail{ID: 7, To: "ann@example.com", Subject: "Confirm your émail",
		Text: "Open https://x.example/profile/confirm-email/" + string(bytes.Repeat([]byte("k"), 120)) + "/\n",
		HTML: "<p>Hello</p>"}
	raw, err := Compose("errata@example.com", m, time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC))
	if err != nil {
		t.Fatal(err)
	}
	msg, err := mail.ReadMessage(bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	subject, _ := new(mime.WordDecoder).DecodeHeader(msg.Header.Get("Subject"))
	got := map[string]string{
		"To": msg.Header.Get("To"), "Subject": subject, "Message-Id": msg.Header.Get("Message-Id"),
	}
	_, params, _ := mime.ParseMediaType(msg.Header.Get("Content-Type"))
	mr := multipart.NewReader(msg.Body, params["boundary"])
	for {
		p, err := mr.NextPart()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(quotedprintable.NewReader(p))
		got[p.Header.Get("Content-Type")] = string(b)
	}
	want := map[string]string{
		"To": "ann@example.com", "Subject": "Confirm your émail",
		"Message-Id":                "<errata-outbox-7@example.com>",
		"text/plain; charset=utf-8": strings.ReplaceAll(m.Text, "\n", "\r\n"), // MIME text ends lines with CRLF
		"text/html; charset=utf-8":  m.HTML,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("message (-want +got):\n%s", diff)
	}
	t.Run("refuses header injection", func(t *testing.T) {
		if _, err := Compose("errata@example.com", store.Mail{To: "a@b\r\nBcc: c@d"}, time.Now()); err == nil {
			t.Error("no error")
		}
	})
}

func TestLogSenderNeverLogsTheText(t *testing.T) {
	m := store.Mail{ID: 7, To: "ann@example.com", Subject: "Confirm your address",
		Text: "Follow http://errata.test/profile/confirm-email/SECRETKEY/ to confirm."}
	for _, tt := range []struct {
		name        string
		console     bool
		wantConsole bool
	}{
		{"serve logs the recipient only", false, false},
		{"dev also prints the text on the console", true, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var logs, console bytes.Buffer
			s := &LogSender{Log: slog.New(slog.NewJSONHandler(&logs, nil)), From: "errata@example.com"}
			if tt.console {
				s.Console = &console
			}
			if err := s.Send(context.Background(), m); err != nil {
				t.Fatal(err)
			}
			if strings.Contains(logs.String(), "SECRETKEY") {
				t.Errorf("the log has the key: %s", logs.String())
			}
			if !strings.Contains(logs.String(), `"to":"ann@example.com"`) {
				t.Errorf("the log lacks the recipient: %s", logs.String())
			}
			if got := strings.Contains(console.String(), "confirm-email/SECRETKEY/"); got != tt.wantConsole {
				t.Errorf("console has the link: %t, want %t:\n%s", got, tt.wantConsole, console.String())
			}
		})
	}
}
