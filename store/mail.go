package store

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// MailJobKind is the kind of the job that delivers one outbox message.
const MailJobKind = "mail"

// mailMaxAttempts bounds delivery retries; with the worker's doubling
// backoff capped at five minutes this keeps trying for about two hours.
const mailMaxAttempts = 30

// Mail is a message of the outbox.
type Mail struct {
	ID       int64
	To       string
	Subject  string
	Text     string
	HTML     string
	DateSent *time.Time
}

// MailJob is the payload of a mail job.
type MailJob struct {
	OutboxID int64 `json:"outboxId"`
}

// queueMail puts m, a message for the user userID, in the outbox and
// enqueues the job that delivers it, both in q's transaction: the message
// exists exactly when the data that asked for it does, and goes with its
// user (0 for a message of nobody's account yet: an invitation).
func queueMail(ctx context.Context, q querier, userID int64, m Mail) error {
	var id int64
	err := q.QueryRow(ctx, `
		INSERT INTO mail_outbox (to_address, subject, text_body, html_body, user_id)
		VALUES ($1, $2, $3, $4, nullif($5::bigint, 0)) RETURNING id`,
		m.To, m.Subject, m.Text, m.HTML, userID).Scan(&id)
	if err != nil {
		return err
	}
	// Mail is errata's own work, of no organization: it is claimed before
	// any organization's jobs and is not counted in their limits.
	_, _, err = enqueueJob(ctx, q, 0, MailJobKind, fmt.Sprintf("mail:%d", id), MailJob{OutboxID: id}, mailMaxAttempts)
	return err
}

// DeliverMail calls send with the outbox message id unless it was sent
// already, and marks it sent when send succeeds, keeping only its
// recipient and subject. The message's row stays
// locked while send runs, so two deliveries of one message never overlap:
// a second one waits and then finds it sent. A message that no longer
// exists is ErrNotFound.
//
// The one window for a duplicate is a failure between the SMTP server's
// acceptance and the commit that records it (a crash, or the database
// becoming unreachable): the job then runs again and sends again. Mail is
// therefore delivered at least once, and twice only in that window.
func (s *Store) DeliverMail(ctx context.Context, id int64, send func(context.Context, Mail) error) error {
	return s.inTx(ctx, func(tx pgx.Tx) error {
		m := Mail{ID: id}
		err := tx.QueryRow(ctx, `
			SELECT to_address, subject, text_body, html_body, date_sent
			FROM mail_outbox WHERE id = $1 FOR UPDATE`, id).
			Scan(&m.To, &m.Subject, &m.Text, &m.HTML, &m.DateSent)
		if err != nil {
			return fmt.Errorf("outbox message %d: %w", id, wrap(err))
		}
		if m.DateSent != nil {
			return nil
		}
		if err := send(ctx, m); err != nil {
			return err
		}
		// Once sent, the text goes: its link carries a confirmation key,
		// which errata keeps nowhere else.
		_, err = tx.Exec(ctx, `
			UPDATE mail_outbox SET date_sent = now(), text_body = '', html_body = '' WHERE id = $1`, id)
		return err
	})
}

// Outbox returns the messages to address to, oldest first.
func (s *Store) Outbox(ctx context.Context, to string) ([]Mail, error) {
	rows, err := s.pool.Query(ctx, `
		SELECT id, to_address, subject, text_body, html_body, date_sent
		FROM mail_outbox WHERE lower(to_address) = lower($1)
		ORDER BY id`, to)
	if err != nil {
		return nil, wrap(err)
	}
	ms, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (Mail, error) {
		var m Mail
		err := row.Scan(&m.ID, &m.To, &m.Subject, &m.Text, &m.HTML, &m.DateSent)
		return m, err
	})
	return ms, wrap(err)
}
