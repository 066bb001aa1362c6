package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
)

// errUsage marks an error whose message already explains the usage; the
// exit code is 2.
var errUsage = errors.New("usage")

// usageErr is a usage error (exit 2) saying msg.
func usageErr(msg string) error { return fmt.Errorf("%w: %s", errUsage, msg) }

func newFlags(name, usage string, stdout io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stdout)
	fs.Usage = func() {
		io.WriteString(stdout, usage)
		io.WriteString(stdout, "\nFlags:\n")
		fs.PrintDefaults()
	}
	return fs
}

// parseFlags parses args into fs. --help prints the usage on stdout; a
// bad flag is a usage error (exit 2, its message on stderr), so stdout
// carries nothing but the command's output (JSON lines with --json).
func parseFlags(fs *flag.FlagSet, args []string) error {
	usage, out := fs.Usage, fs.Output()
	fs.Usage = func() {}
	fs.SetOutput(io.Discard)
	err := fs.Parse(args)
	fs.Usage = usage
	fs.SetOutput(out)
	switch {
	case errors.Is(err, flag.ErrHelp):
		fs.Usage()
		return err
	case err != nil:
		return usageErr(err.Error() + " (see --help)")
	}
	return nil
}

// flagName is the command line's name for an operation's input (the admin
// API's field): older_than is --older-than.
func flagName(field string) string {
	if field == "ref" {
		return "the event (archive id or provider:event_id)"
	}
	return "--" + strings.ReplaceAll(field, "_", "-")
}

// parseInterleaved parses flags that may come before or after positional
// arguments and returns the positional ones.
func parseInterleaved(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := parseFlags(fs, args); err != nil {
			return nil, err
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return pos, nil
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
}
