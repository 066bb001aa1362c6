// Package email is the email subscriber: a welcome email when a Clerk user
// is created (clerk.user.created, to the user's primary address) and a
// cancellation email when a Paddle subscription is canceled
// (paddle.subscription.canceled, to data.custom_data.email; skipped, with a
// log line and hookhub_email_skipped_total, when absent or invalid).
//
// # Exactly one email per event, and the one window where it is not
//
// The handlers do not send anything. They write the email to email.outbox
// inside the subscriber library's transaction, together with the event's
// processed row, so a redelivered, re-published or replayed event never
// queues a second email. A sender loop (a Background task of the
// subscriber) claims unsent rows one at a time (FOR UPDATE SKIP LOCKED, so
// replicas never send the same row concurrently), sends each over SMTP and
// marks it sent in the same transaction.
//
// The narrow window: if the process dies (or loses Postgres) after the SMTP
// server accepted the message (its reply to the end of DATA) and before the
// row's sent_at commits, the row is still unsent and is sent again on the
// next start: the recipient gets a duplicate. No SMTP client can close
// this window; what it can do is make the duplicate recognisable: each
// message carries a deterministic Message-ID, <provider.event_id.kind@hookhub>,
// and the header X-Hub-Event-Id: <provider>:<event_id>, so a relay or mail
// client that deduplicates on Message-ID drops it.
//
// Failed sends are retried with exponential backoff; a permanent SMTP
// rejection (5xx) or MaxAttempts failures mark the row failed (failed_at,
// last_error). last_error is sanitized (subscriber.SanitizeText: valid
// UTF-8, no NUL, at most 8 KiB) whatever the SMTP server replied, so
// recording a failure cannot fail and a failing row moves back in the
// queue; a Sender that panics, or returns an error whose methods panic
// (read through subscriber.ErrorText), fails that send. Payload text
// put into a body (a first name, a subscription id) is sanitized too. With EMAIL_SMTP_ADDR=log emails are logged, not sent (`hub
// dev`).
package email

import (
	"cmp"
	"context"
	"embed"
	"errors"
	"fmt"
	"log/slog"
	"net/mail"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/hookhub/hookhub/internal/migrate"
	"github.com/hookhub/hookhub/schema"
	"github.com/hookhub/hookhub/subscribers/subscriber"
)

// Name is the subscriber's name: its consumer and its schema.
const Name = "email"

// Subjects the email subscriber consumes.
const (
	SubjectUserCreated          = "clerk." + schema.ClerkUserCreated
	SubjectSubscriptionCanceled = "paddle." + schema.PaddleSubscriptionCanceled
)

// Email kinds, in the outbox and the Message-ID.
const (
	KindWelcome      = "welcome"
	KindCancellation = "cancellation"
)

// Defaults of Options.
const (
	DefaultFrom         = "hookhub <noreply@hookhub.localhost>"
	DefaultSendInterval = time.Second
	DefaultRetryBackoff = 5 * time.Second
	DefaultMaxAttempts  = 20
)

// Bounds on text stored in the outbox.
const (
	maxNameLen  = 256     // a name or id from the payload, in a body
	maxErrorLen = 8 << 10 // last_error
)

//go:embed migrations/*.sql
var migrationsFS embed.FS

// Migrations are the email schema's migrations, for Config.Migrations.
var Migrations = migrate.Dir(migrationsFS, "migrations")

// Options configure the handlers and the sender.
type Options struct {
	// Sender delivers the emails: NewSender(addr, logger). Required.
	Sender Sender
	// From is the From address. Default DefaultFrom.
	From string
	// SendInterval is how often the sender looks for unsent emails.
	SendInterval time.Duration
	// RetryBackoff is the delay after a first failed send; it doubles with
	// each failure, up to 10 minutes.
	RetryBackoff time.Duration
	// MaxAttempts is the number of failed sends after which an email is
	// marked failed.
	MaxAttempts int
	// Pool is the database the sender reads the outbox from: the
	// subscriber's.
	Pool *pgxpool.Pool
	// Logger, Registerer (nil: a private registry) and Now (the clock).
	Logger     *slog.Logger
	Registerer prometheus.Registerer
	Now        func() time.Time
}

// Register registers the email handlers and the outbox sender on sub,
// which must be named Name and have Migrations.
func Register(sub *subscriber.Subscriber, opts Options) error {
	if sub.Name() != Name {
		return fmt.Errorf("email: the subscriber must be named %q (its tables live in that schema), got %q", Name, sub.Name())
	}
	if opts.Sender == nil {
		return errors.New("email: Options.Sender is required (NewSender(addr, logger))")
	}
	if opts.Pool == nil {
		return errors.New("email: Options.Pool is required")
	}
	opts.From = cmp.Or(opts.From, DefaultFrom)
	if _, err := mail.ParseAddress(opts.From); err != nil {
		return fmt.Errorf("email: From %q: %w", opts.From, err)
	}
	if opts.SendInterval <= 0 {
		opts.SendInterval = DefaultSendInterval
	}
	if opts.RetryBackoff <= 0 {
		opts.RetryBackoff = DefaultRetryBackoff
	}
	if opts.MaxAttempts <= 0 {
		opts.MaxAttempts = DefaultMaxAttempts
	}
	opts.Logger = cmp.Or(opts.Logger, slog.Default())
	if opts.Registerer == nil {
		opts.Registerer = prometheus.NewRegistry()
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	m, err := newMetrics(opts.Registerer)
	if err != nil {
		return err
	}
	h := &handlers{opts: opts, log: opts.Logger.With("subscriber", Name), m: m}
	sub.Handle(SubjectUserCreated, h.userCreated)
	sub.Handle(SubjectSubscriptionCanceled, h.subscriptionCanceled)
	o := &outbox{opts: opts, log: h.log, m: m}
	sub.Background("email-outbox-sender", o.run)
	return nil
}

type handlers struct {
	opts Options
	log  *slog.Logger
	m    *metrics
}

func (h *handlers) userCreated(ctx context.Context, tx pgx.Tx, ev subscriber.Event) error {
	u, err := ev.ClerkUser()
	if err != nil {
		return err
	}
	to, ok := h.recipient(ev, KindWelcome, u.PrimaryEmail())
	if !ok {
		return nil
	}
	// Text from the payload is sanitized (a NUL byte would make the
	// outbox insert fail) and bounded.
	name := cmp.Or(subscriber.SanitizeText(strings.TrimSpace(u.FirstName), maxNameLen), "there")
	body := fmt.Sprintf("Hi %s,\n\nWelcome aboard! Your account is ready.\n\nIf you did not sign up, you can ignore this email.\n", name)
	return h.enqueue(ctx, tx, ev, KindWelcome, to, "Welcome!", body)
}

func (h *handlers) subscriptionCanceled(ctx context.Context, tx pgx.Tx, ev subscriber.Event) error {
	_, s, err := ev.PaddleSubscription()
	if err != nil {
		return err
	}
	to, ok := h.recipient(ev, KindCancellation, s.CustomData.Email)
	if !ok {
		return nil
	}
	body := fmt.Sprintf("Hello,\n\nYour subscription %s has been canceled. We are sorry to see you go.\n\nYou can subscribe again at any time.\n", subscriber.SanitizeText(s.ID, maxNameLen))
	return h.enqueue(ctx, tx, ev, KindCancellation, to, "Your subscription has been canceled", body)
}

// recipient validates the address an event gives; when it is absent or
// unusable the email is skipped (logged and counted), which is not a
// failure: the event is processed without an email.
func (h *handlers) recipient(ev subscriber.Event, kind, addr string) (string, bool) {
	if strings.TrimSpace(addr) == "" {
		h.log.Info("email skipped: no address", "kind", kind, "provider", ev.Provider, "event_id", ev.EventID)
		h.m.skipped.WithLabelValues(kind, "no_address").Inc()
		return "", false
	}
	to, err := ParseRecipient(addr)
	if err != nil {
		h.log.Warn("email skipped: invalid address", "kind", kind, "provider", ev.Provider, "event_id", ev.EventID, "error", err)
		h.m.skipped.WithLabelValues(kind, "invalid_address").Inc()
		return "", false
	}
	return to, true
}

func (h *handlers) enqueue(ctx context.Context, tx pgx.Tx, ev subscriber.Event, kind, to, subject, body string) error {
	now := h.opts.Now().UTC()
	_, err := tx.Exec(ctx, `INSERT INTO email.outbox
		(message_id, kind, provider, event_id, recipient, subject, body, created_at, next_attempt_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $8)`,
		MessageID(ev.Provider, ev.EventID, kind), kind, ev.Provider, ev.EventID, to, subject, body, now)
	if err != nil {
		return fmt.Errorf("queue %s email: %w", kind, err)
	}
	return nil
}
