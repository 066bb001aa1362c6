package email

import (
	"context"
	"fmt"
	"net"
	"net/mail"
	"time"

	"github.com/hookhub/hookhub/subscribers/service"
)

// Config is the email service's configuration, read from EMAIL_*
// variables.
type Config struct {
	service.Common
	HTTPAddr     string        `split_words:"true" default:":9102" desc:"Listen address of /metrics and /healthz"`
	SMTPAddr     string        `split_words:"true" default:"127.0.0.1:1025" desc:"SMTP server host:port (e.g. Mailpit); \"log\" logs emails instead of sending them"`
	From         string        `default:"hookhub <noreply@hookhub.localhost>" desc:"From address of the emails"`
	SendInterval time.Duration `split_words:"true" default:"1s" desc:"How often the sender looks for unsent emails"`
	MaxAttempts  int           `split_words:"true" default:"20" desc:"Failed sends after which an email is given up (5xx replies give up at once)"`
}

// Program is the email service as a process (./subscribers/email/cmd/email).
func Program(cfg *Config) service.Program {
	p := service.New(Name, cfg, &cfg.Common, &cfg.HTTPAddr, Migrations)
	p.Validate = func() error {
		if cfg.SMTPAddr != LogAddr {
			if _, _, err := net.SplitHostPort(cfg.SMTPAddr); err != nil {
				return fmt.Errorf("EMAIL_SMTP_ADDR must be host:port or %q, got %q", LogAddr, cfg.SMTPAddr)
			}
		}
		if _, err := mail.ParseAddress(cfg.From); err != nil {
			return fmt.Errorf("EMAIL_FROM %q: %v", cfg.From, err)
		}
		if cfg.SendInterval <= 0 {
			return fmt.Errorf("EMAIL_SEND_INTERVAL must be positive, got %s", cfg.SendInterval)
		}
		if cfg.MaxAttempts < 1 {
			return fmt.Errorf("EMAIL_MAX_ATTEMPTS must be at least 1, got %d", cfg.MaxAttempts)
		}
		return nil
	}
	p.Setup = func(_ context.Context, d service.Deps) error {
		d.Logger.Info("email delivery", "smtp_addr", cfg.SMTPAddr, "from", cfg.From)
		return Register(d.Subscriber, Options{
			Sender:       NewSender(cfg.SMTPAddr, d.Logger),
			From:         cfg.From,
			SendInterval: cfg.SendInterval,
			MaxAttempts:  cfg.MaxAttempts,
			Pool:         d.Pool,
			Logger:       d.Logger,
			Registerer:   d.Registry,
		})
	}
	return p
}
