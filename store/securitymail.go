package store

import (
	"context"
	"html"
	"strings"

	"github.com/jackc/pgx/v5"
)

// queueSecurityMail puts a notice of a change to the security of an
// account (a password changed, a second factor added or removed, recovery
// codes generated or used, an API token created) in the outbox for the
// user's address, in q's transaction: the notice exists exactly when the
// change does. text is plain text; the HTML part is the same text escaped.
func queueSecurityMail(ctx context.Context, q querier, userID int64, subject, text string) error {
	var to string
	if err := q.QueryRow(ctx, `SELECT email FROM users WHERE id = $1`, userID).Scan(&to); err != nil {
		return wrap(err)
	}
	var body strings.Builder
	for _, p := range strings.Split(text, "\n\n") {
		body.WriteString("<p>" + html.EscapeString(p) + "</p>\n")
	}
	return queueMail(ctx, q, userID, Mail{To: to, Subject: subject, Text: text, HTML: body.String()})
}

// QueueSecurityMail queues the notice of queueSecurityMail on its own,
// for a change that its caller made outside a store transaction.
func (s *Store) QueueSecurityMail(ctx context.Context, userID int64, subject, text string) error {
	return s.inTx(ctx, func(tx pgx.Tx) error {
		return queueSecurityMail(ctx, tx, userID, subject, text)
	})
}
