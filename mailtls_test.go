package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"errata/store"
	"errata/worker/mail"
)

// TestStartTLSRequired: with EMAIL_URL's ?starttls=required, a message is
// not sent to a server that offers no STARTTLS (aiosmtpd without TLS); by
// default it is.
func TestStartTLSRequired(t *testing.T) {
	t.Parallel()
	python := os.Getenv("SMTP_PYTHON")
	if python == "" {
		t.Fatal("SMTP_PYTHON is not set: run the tests with ./dev.sh test, which installs aiosmtpd")
	}
	addr := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	srv := startSMTP(t, python, addr, filepath.Join(t.TempDir(), "maildir"))
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	msg := store.Mail{To: "ann@example.com", Subject: "Confirm", Text: "key", HTML: "<p>key</p>"}

	strict, err := mail.NewSender("smtp://"+addr+"?starttls=required", "errata@example.com", log)
	if err != nil {
		t.Fatal(err)
	}
	if err := strict.Send(context.Background(), msg); err == nil || !strings.Contains(err.Error(), "STARTTLS") {
		t.Errorf("send with starttls=required to a server without it: %v, want an error naming STARTTLS", err)
	}
	if n := len(srv.messages(t)); n != 0 {
		t.Errorf("%d messages arrived in cleartext", n)
	}
	if _, err := mail.NewSender("smtp://"+addr+"?starttls=maybe", "errata@example.com", log); err == nil {
		t.Error("starttls=maybe was accepted")
	}

	plain, err := mail.NewSender("smtp://"+addr, "errata@example.com", log)
	if err != nil {
		t.Fatal(err)
	}
	if err := plain.Send(context.Background(), msg); err != nil {
		t.Fatalf("send by default: %v", err)
	}
	if n := len(srv.messages(t)); n != 1 {
		t.Errorf("%d messages arrived by default, want 1", n)
	}
}
