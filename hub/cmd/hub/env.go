package main

import (
	"fmt"
	"io"
	"log/slog"
	"os"
	"text/tabwriter"

	"github.com/hookhub/hookhub/hub/service"
	"github.com/hookhub/hookhub/internal/logging"
)

// loadConfig reads HUB_* variables into the configuration and validates it.
func loadConfig() (service.Config, error) {
	cfg, err := service.LoadConfig()
	if err != nil {
		return cfg, fmt.Errorf("configuration: %w", err)
	}
	return cfg, nil
}

// printEnv prints a table of every HUB_* variable with its default.
func printEnv(w io.Writer) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "  VARIABLE\tDEFAULT\tDESCRIPTION")
	for _, v := range service.EnvVars() {
		fmt.Fprintf(tw, "  %s\t%s\t%s\n", v.Key, v.Default, v.Desc)
	}
	fmt.Fprintln(tw, "  HUB_STANDARD_<NAME>_SECRETS\t\tsecrets of each Standard Webhooks provider named in HUB_STANDARD_PROVIDERS (NAME upper-cased, '-' as '_')")
	_ = tw.Flush()
}

func newLogger(cfg service.Config, w io.Writer) *slog.Logger {
	return logging.New(w, cfg.LogLevel, cfg.LogFormat)
}

// envSet reports whether the variable HUB_<name> is set.
func envSet(name string) bool {
	_, ok := os.LookupEnv(service.EnvPrefix + "_" + name)
	return ok
}
