package main

import (
	"context"
	"fmt"
	"io"

	"github.com/hookhub/hookhub/internal/buildinfo"
)

// runVersion prints the version set at build time (internal/buildinfo).
func runVersion(_ context.Context, _ []string, stdout, _ io.Writer) error {
	_, err := fmt.Fprintln(stdout, "hub", buildinfo.Version)
	return err
}
