package mail

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"mime/multipart"
	"mime/quotedprintable"
	"net"
	"net/mail"
	"net/smtp"
	"net/textproto"
	"net/url"
	"strings"
	"time"

	"errata/store"
	"errata/worker"
)

// Sender writes one message to its recipient.
type Sender interface {
	Send(ctx context.Context, m store.Mail) error
}

// NewSender returns the SMTP sender of emailURL, or the log sender when
// emailURL is empty. from is the sender's address.
func NewSender(emailURL, from string, log *slog.Logger) (Sender, error) {
	if _, err := mail.ParseAddress(from); err != nil {
		return nil, fmt.Errorf("DEFAULT_FROM_EMAIL %q: %w", from, err)
	}
	if emailURL == "" {
		return &LogSender{Log: log, From: from}, nil
	}
	u, err := url.Parse(emailURL)
	if err != nil || (u.Scheme != "smtp" && u.Scheme != "smtps") || u.Hostname() == "" {
		return nil, errors.New("EMAIL_URL: want smtp://[user:pass@]host[:port] or smtps://...")
	}
	s := &SMTPSender{Host: u.Hostname(), Port: u.Port(), ImplicitTLS: u.Scheme == "smtps", From: from}
	if s.Port == "" {
		s.Port = "25"
		if s.ImplicitTLS {
			s.Port = "465"
		}
	}
	if u.User != nil {
		s.Username = u.User.Username()
		s.Password, _ = u.User.Password()
	}
	switch v := u.Query().Get("starttls"); v {
	case "", "opportunistic":
	case "required":
		s.RequireTLS = true
	default:
		return nil, fmt.Errorf("EMAIL_URL: starttls=%q is not required or opportunistic", v)
	}
	return s, nil
}

// LogSender stands in for SMTP when EMAIL_URL is not set. It logs that a
// message was not sent, with its recipient and subject but never its text,
// which carries a confirmation key. When Console is set (errata dev), the
// whole text goes there, beside the demo token, so that a developer can
// follow the link.
type LogSender struct {
	Log     *slog.Logger
	From    string
	Console io.Writer
}

// Send logs m, and writes its text to the console when there is one.
func (s *LogSender) Send(ctx context.Context, m store.Mail) error {
	s.Log.InfoContext(ctx, "mail not sent: EMAIL_URL is not set",
		"outbox_id", m.ID, "from", s.From, "to", m.To, "subject", m.Subject)
	if s.Console != nil {
		_, err := fmt.Fprintf(s.Console, "\n--- mail to %s: %s\n%s\n---\n", m.To, m.Subject, m.Text)
		return err
	}
	return nil
}

// SMTPSender sends messages through an SMTP server: STARTTLS when the server
// offers it (or TLS from the start with ImplicitTLS), and authentication
// with PLAIN when a username is given (net/smtp refuses PLAIN without TLS,
// except to localhost).
type SMTPSender struct {
	Host, Port         string
	Username, Password string
	ImplicitTLS        bool // smtps://: TLS from the first byte
	RequireTLS         bool // ?starttls=required: no STARTTLS, no message
	From               string
	Timeout            time.Duration // per message; 0 means 30s
}

// Send delivers m, giving up when ctx ends or the timeout passes.
func (s *SMTPSender) Send(ctx context.Context, m store.Mail) error {
	timeout := s.Timeout
	if timeout <= 0 {
		timeout = 30 * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	msg, err := Compose(s.From, m, time.Now())
	if err != nil {
		return worker.Permanent(err)
	}
	addr := net.JoinHostPort(s.Host, s.Port)
	var conn net.Conn
	if s.ImplicitTLS {
		d := tls.Dialer{Config: &tls.Config{ServerName: s.Host}}
		conn, err = d.DialContext(ctx, "tcp", addr)
	} else {
		var d net.Dialer
		conn, err = d.DialContext(ctx, "tcp", addr)
	}
	if err != nil {
		return fmt.Errorf("smtp: connect: %w", err)
	}
	defer conn.Close()
	deadline, _ := ctx.Deadline()
	conn.SetDeadline(deadline)
	stop := context.AfterFunc(ctx, func() { conn.SetDeadline(time.Now()) })
	defer stop()

	c, err := smtp.NewClient(conn, s.Host)
	if err != nil {
		return fmt.Errorf("smtp: greeting: %w", err)
	}
	defer c.Close()
	if err := c.Hello("localhost"); err != nil {
		return fmt.Errorf("smtp: hello: %w", err)
	}
	if ok, _ := c.Extension("STARTTLS"); ok && !s.ImplicitTLS {
		if err := c.StartTLS(&tls.Config{ServerName: s.Host}); err != nil {
			return fmt.Errorf("smtp: starttls: %w", err)
		}
	} else if !s.ImplicitTLS && s.RequireTLS {
		// The message carries a confirmation key: never in cleartext when
		// EMAIL_URL says ?starttls=required.
		return fmt.Errorf("smtp: %s offers no STARTTLS and EMAIL_URL requires it", s.Host)
	}
	if s.Username != "" {
		if err := c.Auth(smtp.PlainAuth("", s.Username, s.Password, s.Host)); err != nil {
			return fmt.Errorf("smtp: auth: %w", err)
		}
	}
	from, _ := mail.ParseAddress(s.From)
	if err := c.Mail(from.Address); err != nil {
		return fmt.Errorf("smtp: mail from: %w", err)
	}
	if err := c.Rcpt(m.To); err != nil {
		var te *textproto.Error
		if errors.As(err, &te) && te.Code >= 500 {
			return worker.Permanent(fmt.Errorf("smtp: recipient refused: %w", err))
		}
		return fmt.Errorf("smtp: rcpt to: %w", err)
	}
	w, err := c.Data()
	if err != nil {
		return fmt.Errorf("smtp: data: %w", err)
	}
	if _, err := w.Write(msg); err != nil {
		return fmt.Errorf("smtp: write: %w", err)
	}
	if err := w.Close(); err != nil {
		return fmt.Errorf("smtp: end of data: %w", err)
	}
	// The server accepted the message; a failing QUIT does not undo that.
	c.Quit() //nolint:errcheck
	return nil
}

// Compose writes m as a MIME message with a plain-text and an HTML
// alternative. Its Message-ID is derived from the outbox id, so a receiver
// can recognise a duplicate.
func Compose(from string, m store.Mail, date time.Time) ([]byte, error) {
	if strings.ContainsAny(m.To, "\r\n") || strings.ContainsAny(from, "\r\n") {
		return nil, errors.New("mail: header value with a line break")
	}
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	for _, part := range []struct{ typ, content string }{
		{"text/plain; charset=utf-8", m.Text},
		{"text/html; charset=utf-8", m.HTML},
	} {
		pw, err := mw.CreatePart(textproto.MIMEHeader{
			"Content-Type":              {part.typ},
			"Content-Transfer-Encoding": {"quoted-printable"},
		})
		if err != nil {
			return nil, err
		}
		qp := quotedprintable.NewWriter(pw)
		if _, err := io.WriteString(qp, part.content); err != nil {
			return nil, err
		}
		if err := qp.Close(); err != nil {
			return nil, err
		}
	}
	if err := mw.Close(); err != nil {
		return nil, err
	}
	domain := "errata.localhost"
	if a, err := mail.ParseAddress(from); err == nil {
		if _, d, ok := strings.Cut(a.Address, "@"); ok {
			domain = d
		}
	}
	var msg bytes.Buffer
	fmt.Fprintf(&msg, "From: %s\r\n", from)
	fmt.Fprintf(&msg, "To: %s\r\n", m.To)
	fmt.Fprintf(&msg, "Subject: %s\r\n", mime.QEncoding.Encode("utf-8", m.Subject))
	fmt.Fprintf(&msg, "Date: %s\r\n", date.Format(time.RFC1123Z))
	fmt.Fprintf(&msg, "Message-ID: <errata-outbox-%d@%s>\r\n", m.ID, domain)
	fmt.Fprintf(&msg, "MIME-Version: 1.0\r\n")
	fmt.Fprintf(&msg, "Content-Type: multipart/alternative; boundary=%q\r\n\r\n", mw.Boundary())
	msg.Write(body.Bytes())
	return msg.Bytes(), nil
}

// Deliver returns the job function of store.MailJobKind: it sends the
// outbox message the job names with sender, unless it was sent already.
func Deliver(st *store.Store, sender Sender) worker.Func {
	return func(ctx context.Context, payload json.RawMessage) error {
		var job store.MailJob
		if err := json.Unmarshal(payload, &job); err != nil {
			return worker.Permanent(fmt.Errorf("mail job payload: %w", err))
		}
		err := st.DeliverMail(ctx, job.OutboxID, sender.Send)
		if errors.Is(err, store.ErrNotFound) {
			return nil // its user was deleted, and the message with them
		}
		return err
	}
}
