package email

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/hookhub/hookhub/internal/backoff"
	"github.com/hookhub/hookhub/internal/startstop"
	"github.com/hookhub/hookhub/schema"
	"github.com/hookhub/hookhub/subscribers/subscriber"
)

type metrics struct {
	skipped *prometheus.CounterVec // kind, reason
	sent    *prometheus.CounterVec // kind
	failed  *prometheus.CounterVec // kind, permanent
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		skipped: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "hookhub_email_skipped_total", Help: "Emails not queued: the event had no usable address."}, []string{"kind", "reason"}),
		sent:    prometheus.NewCounterVec(prometheus.CounterOpts{Name: "hookhub_email_sent_total", Help: "Emails sent (accepted by the SMTP server, or logged)."}, []string{"kind"}),
		failed:  prometheus.NewCounterVec(prometheus.CounterOpts{Name: "hookhub_email_send_failures_total", Help: "Failed send attempts; final=true when the email was given up."}, []string{"kind", "final"}),
	}
	for _, c := range []**prometheus.CounterVec{&m.skipped, &m.sent, &m.failed} {
		if err := reg.Register(*c); err != nil {
			var are prometheus.AlreadyRegisteredError
			if !errors.As(err, &are) {
				return nil, fmt.Errorf("email: metrics: %w", err)
			}
			*c = are.ExistingCollector.(*prometheus.CounterVec)
		}
	}
	return m, nil
}

// outbox sends the queued emails.
type outbox struct {
	opts Options
	log  *slog.Logger
	m    *metrics
}

// run sends due emails every SendInterval until ctx is done. A send in
// progress when ctx is cancelled completes (it is bounded by the sender's
// timeout): cutting it short could only widen the duplicate window.
func (o *outbox) run(ctx context.Context) error {
	startstop.Poll(ctx, o.opts.SendInterval, func() (bool, error) { return o.sendOne(context.WithoutCancel(ctx)) },
		func(err error) { o.log.Warn("email outbox", "error", err) }, nil)
	return nil
}

// sendOne claims the oldest due email, sends it and records the result.
// It reports whether there was one.
func (o *outbox) sendOne(ctx context.Context) (bool, error) {
	tx, err := o.opts.Pool.Begin(ctx)
	if err != nil {
		return false, err
	}
	defer func() { _ = tx.Rollback(ctx) }()
	var (
		id                      int64
		msg                     Message
		kind, provider, eventID string
		attempts                int
	)
	now := o.opts.Now().UTC()
	err = tx.QueryRow(ctx, `SELECT id, message_id, kind, provider, event_id, recipient, subject, body, created_at, attempts
		FROM email.outbox
		WHERE sent_at IS NULL AND failed_at IS NULL AND next_attempt_at <= $1
		ORDER BY next_attempt_at, id
		LIMIT 1
		FOR UPDATE SKIP LOCKED`, now).Scan(&id, &msg.MessageID, &kind, &provider, &eventID, &msg.To, &msg.Subject, &msg.Body, &msg.Date, &attempts)
	if errors.Is(err, pgx.ErrNoRows) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("claim email: %w", err)
	}
	msg.From = o.opts.From
	msg.EventRef = schema.MsgID(provider, eventID)
	log := o.log.With("outbox_id", id, "kind", kind, "message_id", msg.MessageID, "event", msg.EventRef)

	sendErr := o.send(ctx, msg, log)
	attempts++
	if sendErr == nil {
		if _, err := tx.Exec(ctx, `UPDATE email.outbox SET sent_at = $2, attempts = $3, last_error = NULL WHERE id = $1`, id, o.opts.Now().UTC(), attempts); err != nil {
			return false, fmt.Errorf("mark email %d sent: %w", id, err)
		}
		if err := tx.Commit(ctx); err != nil {
			return false, fmt.Errorf("mark email %d sent: %w", id, err)
		}
		o.m.sent.WithLabelValues(kind).Inc()
		log.Info("email sent", "to", msg.To, "attempts", attempts)
		return true, nil
	}

	// The SMTP server's reply can hold anything: stored sanitized, so
	// that recording the failure cannot fail and leave the row at the
	// head of the queue. The error is the Sender's: its methods are read
	// through the library's recovered call (a typed nil, or an Error that
	// panics, is a failed send with a fixed text).
	lastError := subscriber.ErrorText(sendErr, maxErrorLen)
	var perm *PermanentError
	final := subscriber.ErrorsAs(sendErr, &perm) || attempts >= o.opts.MaxAttempts
	if final {
		_, err = tx.Exec(ctx, `UPDATE email.outbox SET failed_at = $2, attempts = $3, last_error = $4 WHERE id = $1`, id, now, attempts, lastError)
		log.Error("email given up", "to", msg.To, "attempts", attempts, "error", lastError)
	} else {
		delay := o.retryDelay(attempts)
		_, err = tx.Exec(ctx, `UPDATE email.outbox SET next_attempt_at = $2, attempts = $3, last_error = $4 WHERE id = $1`, id, now.Add(delay), attempts, lastError)
		log.Warn("email send failed; will retry", "to", msg.To, "attempts", attempts, "retry_in", delay, "error", lastError)
	}
	if err != nil {
		return false, fmt.Errorf("record failed send of email %d: %w", id, err)
	}
	if err := tx.Commit(ctx); err != nil {
		return false, fmt.Errorf("record failed send of email %d: %w", id, err)
	}
	o.m.failed.WithLabelValues(kind, fmt.Sprint(final)).Inc()
	return true, nil
}

// send sends msg through the library's recovered call: a panic (or a
// runtime.Goexit) of the Sender is a failed attempt (a panic logged once
// with its stack): one email must not kill the process, nor stop the
// others.
func (o *outbox) send(ctx context.Context, msg Message, log *slog.Logger) error {
	err := subscriber.SafeCall("sender", func() error { return o.opts.Sender.Send(ctx, msg) })
	if p, ok := err.(*subscriber.PanicError); ok {
		log.Error("email sender panicked", "panic", p.Value(), "stack", p.Stack())
		return fmt.Errorf("sender panicked: %s", p.Value())
	}
	return err
}

func (o *outbox) retryDelay(attempts int) time.Duration {
	return backoff.Exp(o.opts.RetryBackoff, 10*time.Minute, attempts-1)
}
