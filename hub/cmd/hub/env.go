package main

import (
	"fmt"
	"io"
	"log/slog"
	"os"

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

// printEnv prints a table of every HUB_* variable with its default, under
// the heading of its group, the columns aligned across the groups.
func printEnv(w io.Writer) {
	vars := service.EnvVars()
	keyW, defW := len("VARIABLE"), len("DEFAULT")
	for _, v := range vars {
		keyW, defW = max(keyW, len(v.Key)), max(defW, len(v.Default))
	}
	fmt.Fprintf(w, "  %-*s  %-*s  %s\n", keyW, "VARIABLE", defW, "DEFAULT", "DESCRIPTION")
	group := ""
	for _, v := range vars {
		if v.Group != group {
			group = v.Group
			fmt.Fprintf(w, "\n  %s:\n", group)
		}
		fmt.Fprintf(w, "  %-*s  %-*s  %s\n", keyW, v.Key, defW, v.Default, v.Desc)
	}
}

func newLogger(cfg service.Config, w io.Writer) *slog.Logger {
	return logging.New(w, cfg.LogLevel, cfg.LogFormat)
}

// envSet reports whether the variable HUB_<name> is set.
func envSet(name string) bool {
	_, ok := os.LookupEnv(service.EnvPrefix + "_" + name)
	return ok
}
