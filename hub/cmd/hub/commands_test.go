package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// Every command follows the one flag idiom (flags.go): --help prints its
// usage on stdout and exits 0; an unknown flag exits 2 with a message
// naming it on stderr and nothing on stdout. Neither needs a database.
func TestCommandsFlagIdiom(t *testing.T) {
	for _, c := range commands() {
		t.Run(c.name, func(t *testing.T) {
			pre := []string{c.name}
			if c.name == "events" || c.name == "dlq" || c.name == "destinations" || c.name == "audit" || c.name == "sessions" {
				pre = append(pre, "list") // the flags are the action's
			}
			if c.name == "chaos" {
				pre = append(pre, "local")
			}
			if c.name == "bulk" {
				pre = append(pre, "replay")
			}
			for _, help := range []string{"--help", "-h"} {
				var stdout, stderr bytes.Buffer
				code := run(context.Background(), append(pre, help), &stdout, &stderr)
				require.Equal(t, 0, code, stderr.String())
				require.True(t, strings.HasPrefix(stdout.String(), "Usage: hub "+c.name), stdout.String())
				require.Empty(t, stderr.String())
			}
			var stdout, stderr bytes.Buffer
			code := run(context.Background(), append(pre, "--no-such-flag"), &stdout, &stderr)
			require.Equal(t, 2, code)
			require.Empty(t, stdout.String())
			require.Equal(t, "hub "+c.name+": usage: flag provided but not defined: -no-such-flag (see --help)\n", stderr.String())
		})
	}
}
