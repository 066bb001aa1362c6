package downgrade

import (
	"context"

	"github.com/hookhub/hookhub/subscribers/service"
)

// Config is the downgrade service's configuration, read from DOWNGRADE_*
// variables.
type Config struct {
	service.Common
	HTTPAddr string `split_words:"true" default:":9103" desc:"Listen address of /metrics, /healthz and /accounts/{subscription_id}"`
}

// Program is the downgrade service as a process
// (./subscribers/downgrade/cmd/downgrade).
func Program(cfg *Config) service.Program {
	p := service.New(Name, cfg, &cfg.Common, &cfg.HTTPAddr, Migrations)
	p.Setup = func(_ context.Context, d service.Deps) error {
		Routes(d.Mux, d.Pool)
		return Register(d.Subscriber)
	}
	return p
}
