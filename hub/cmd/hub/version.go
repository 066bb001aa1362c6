package main

import (
	"context"
	"fmt"
	"io"

	"github.com/hookhub/hookhub/internal/buildinfo"
)

// runVersion prints the build's version (internal/buildinfo): the release
// tag, the commit and the Go toolchain, "hub v0.1.0 (commit abc1234,
// go1.26.8)", or with --json one object.
func runVersion(_ context.Context, args []string, stdout, _ io.Writer) error {
	fs := newFlags("version", "Usage: hub version [--json]\n\nPrint the release, the git commit and the Go version the binary was built with.\n", stdout)
	asJSON := fs.Bool("json", false, "print the build information as one JSON object")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usageErr(fmt.Sprintf("version takes no arguments (%q)", fs.Arg(0)))
	}
	info := buildinfo.Read()
	if *asJSON {
		return printJSON(stdout, info)
	}
	_, err := fmt.Fprintln(stdout, "hub", info)
	return err
}
