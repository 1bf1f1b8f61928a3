// Package mail delivers the messages of errata's outbox: a Sender writes
// one message by SMTP (EMAIL_URL) or to the log, and Deliver is the job
// function that the worker runs for each queued message.
//
// Guarantees: a message is queued in the transaction of the data that asked
// for it, so it is never lost; it is retried with the worker's backoff while
// the SMTP server is down; its outbox row is locked while it is being sent
// and marked sent in the same transaction, so two deliveries never overlap
// and a sent message is not sent again. The only window for a duplicate is a
// failure after the SMTP server accepted the message and before that
// transaction commits: delivery is at least once.
//
// The package must not compose messages (the handlers do) nor touch other
// tables than the outbox (through the store).
package mail
