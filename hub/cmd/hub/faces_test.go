package main

import (
	"flag"
	"io"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hookhub/hookhub/hub/ops/opstest"
)

// The command line decodes its flags as the admin API and the console
// decode their input: the same fields, named with dashes, through hub/ops.
// A bad value is refused before connecting (exit 2, naming the flag); a
// good one gets as far as the database (here: none, exit 1).
func TestCLIDecodesAsEveryFace(t *testing.T) {
	t.Setenv("HUB_DATABASE_URL", "postgres://hub@127.0.0.1:1/none?connect_timeout=2")
	t.Setenv("HUB_NATS_URL", "nats://127.0.0.1:1")
	commands := map[string][]string{"events": {"events", "list"}, "replay": {"replay"}, "republish": {"republish"},
		"purge": {"purge"}, "audit": {"audit", "list"}}
	for i, c := range opstest.Cases {
		t.Run(strconv.Itoa(i)+"_"+c.Kind, func(t *testing.T) {
			args := append([]string{}, commands[c.Kind]...)
			if c.Kind == "bulk" {
				args = []string{"bulk", c.Values.Get("action")}
			}
			fs := flag.NewFlagSet(c.Kind, flag.ContinueOnError)
			fs.SetOutput(io.Discard)
			var where whereFlag
			fs.Var(&where, "where", "")
			var flags []string
			for name, vals := range c.Values {
				dashed := strings.ReplaceAll(name, "_", "-")
				switch {
				case name == "action" && c.Kind == "bulk":
					continue
				case name == "dry_run" && c.Kind == "purge":
					if vals[0] == "false" {
						args = append(args, "--yes")
					}
				default:
					for _, v := range vals {
						args = append(args, "--"+dashed+"="+v)
					}
				}
				if name == "action" && c.Kind == "bulk" {
					continue
				}
				if name != "where" {
					fs.String(dashed, "", "")
				}
				for _, v := range vals {
					flags = append(flags, "--"+dashed+"="+v)
				}
			}
			code, _, stderr := runCmd(t, args...)
			if c.Err != "" {
				require.Equal(t, 2, code, stderr)
				field, rest, _ := strings.Cut(c.Err, ":")
				require.Contains(t, stderr, strings.TrimPrefix(flagName(field), "-"), "the flag is named")
				if !strings.Contains(stderr, "invalid value") { // a typed flag (--limit, --rate) refuses first
					require.Contains(t, stderr, rest)
				}
				return
			}
			require.Equal(t, 1, code, "decoded, then no database: %s", stderr)
			require.Contains(t, stderr, "database")

			// The flags' names and values are the neutral form's.
			require.NoError(t, fs.Parse(flags))
			now := time.Now()
			v := flagValues(fs)
			if c.Kind == "bulk" {
				v.Set("action", c.Values.Get("action")) // the command's action
			}
			got, err := opstest.Decode(c.Kind, v, now)
			require.NoError(t, err)
			want, _ := opstest.Decode(c.Kind, c.Values, now)
			require.Equal(t, want, got)
		})
	}
}
