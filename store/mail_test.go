package store_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"errata/store"
	"errata/store/storetest"
)

// TestOutboxKeepsNoKey: a sent message keeps its recipient and subject, not
// its text (its link carries a key); an unsent one goes with its user.
func TestOutboxKeepsNoKey(t *testing.T) {
	ctx := context.Background()
	st, db := storetest.NewWithURL(t)
	ann, err := st.CreateUser(ctx, "ann@example.com", "Ann")
	if err != nil {
		t.Fatal(err)
	}
	bob, err := st.CreateUser(ctx, "bob@example.com", "Bob")
	if err != nil {
		t.Fatal(err)
	}
	msg := store.Mail{Subject: "Confirm", Text: "https://errata.example/profile/confirm-email/KEY/", HTML: "<a>KEY</a>"}
	if _, err := st.AddEmailAddress(ctx, ann, "ann@work.example", msg); err != nil {
		t.Fatal(err)
	}
	if _, err := st.AddEmailAddress(ctx, bob, "bob@work.example", msg); err != nil {
		t.Fatal(err)
	}
	sent, err := st.Outbox(ctx, "ann@work.example")
	if err != nil || len(sent) != 1 {
		t.Fatalf("outbox: %v %v", sent, err)
	}
	var got store.Mail
	if err := st.DeliverMail(ctx, sent[0].ID, func(_ context.Context, m store.Mail) error { got = m; return nil }); err != nil {
		t.Fatal(err)
	}
	if got.Text != msg.Text {
		t.Errorf("delivered %q, want the message", got.Text)
	}
	after, _ := st.Outbox(ctx, "ann@work.example")
	if len(after) != 1 || after[0].Text != "" || after[0].HTML != "" || after[0].Subject != "Confirm" || after[0].DateSent == nil {
		t.Errorf("the sent message is kept as %+v, want its subject and no text", after)
	}

	if err := st.DeleteUser(ctx, bob); err != nil {
		t.Fatal(err)
	}
	if n := storetest.Count(t, db, `SELECT count(*) FROM mail_outbox WHERE to_address = 'bob@work.example'`); n != 0 {
		t.Errorf("%d messages of a deleted user left", n)
	}
	if err := st.DeliverMail(ctx, 999999, func(context.Context, store.Mail) error { return nil }); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("delivering a removed message: %v, want ErrNotFound", err)
	}
}

func TestPruneJobs(t *testing.T) {
	ctx := context.Background()
	st, db := storetest.NewWithURL(t)
	storetest.Exec(t, db, `
		INSERT INTO jobs (kind, state, date_updated) VALUES
			('mail', 'done', now() - interval '8 days'), ('mail', 'error', now() - interval '8 days'),
			('mail', 'done', now() - interval '1 day'), ('mail', 'queued', now() - interval '8 days'),
			('mail', 'running', now() - interval '8 days')`)
	n, err := st.PruneJobs(ctx, 7*24*time.Hour)
	if err != nil || n != 2 {
		t.Errorf("pruned %d (%v), want the 2 ended over a week ago", n, err)
	}
	if left := storetest.Count(t, db, `SELECT count(*) FROM jobs`); left != 3 {
		t.Errorf("%d jobs left, want 3", left)
	}
}
