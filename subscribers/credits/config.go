package credits

import (
	"context"
	"fmt"

	"github.com/hookhub/hookhub/subscribers/service"
)

// Config is the credits service's configuration, read from CREDITS_*
// variables.
type Config struct {
	service.Common
	HTTPAddr     string `split_words:"true" default:":9101" desc:"Listen address of /metrics, /healthz and /balances/{customer_id}"`
	DefaultGrant int64  `split_words:"true" default:"100" desc:"Credits granted when a subscription's custom_data has no credits"`
}

// Program is the credits service as a process (./subscribers/credits/cmd/credits).
func Program(cfg *Config) service.Program {
	p := service.New(Name, cfg, &cfg.Common, &cfg.HTTPAddr, Migrations)
	p.Validate = func() error {
		if cfg.DefaultGrant < 0 {
			return fmt.Errorf("CREDITS_DEFAULT_GRANT must not be negative, got %d", cfg.DefaultGrant)
		}
		return nil
	}
	p.Setup = func(_ context.Context, d service.Deps) error {
		Routes(d.Mux, d.Pool)
		return Register(d.Subscriber, Options{DefaultGrant: cfg.DefaultGrant})
	}
	return p
}
