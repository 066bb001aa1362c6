package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
)

// Every command declares, parses and explains its flags the same way:
//
//	fs := newFlags("purge", `Usage: hub purge ...`, stdout) // or newEnvFlags
//	olderThan := fs.String("older-than", "", "...")
//	asJSON := fs.Bool("json", false, "print the result as JSON")
//	if err := parseFlags(fs, args); err != nil { // pos, err := parseInterleaved(fs, args)
//		return err // --help: usage on stdout, exit 0; a bad flag: exit 2
//	}
//
// (parseNoArgs when it takes no arguments), then refuses bad input with
// usageErr, naming the flag (exit 2), connects and calls its operation
// with opsCall (streamCall on the stream), prints --json with printJSON
// or printJSONLines (a list: printRows), and returns any other error
// (exit 1). A command made of actions (hub events list, hub dlq redrive)
// reads its action with runAction or parseAction first. run maps the
// errors to exit codes, in one place.

// errUsage marks an error whose message already explains the usage; the
// exit code is 2.
var errUsage = errors.New("usage")

// usageErr is a usage error (exit 2) saying msg.
func usageErr(msg string) error { return fmt.Errorf("%w: %s", errUsage, msg) }

// newFlags returns a command's flag set: --help prints usage, then
// "Flags:" and each flag with its default.
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

// newEnvFlags returns the flag set of a command that runs the hub (serve,
// dev): --help prints usage, then the HUB_* variables with their defaults
// instead of the flags.
func newEnvFlags(name, usage string, stdout io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stdout)
	fs.Usage = func() {
		io.WriteString(stdout, usage)
		printEnv(stdout)
	}
	return fs
}

// parseNoArgs is parseFlags for a command that takes no arguments: one
// is the usage mistake msg.
func parseNoArgs(fs *flag.FlagSet, args []string, msg string) error {
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usageErr(msg)
	}
	return nil
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

// parseAction reads the action of a command made of actions (hub events
// list, hub dlq redrive) and returns it with the arguments after it.
// Without one, usage goes to stderr with the message missing (exit 2);
// -h or --help prints usage on stdout (exit 0).
func parseAction(args []string, usage, missing string, stdout, stderr io.Writer) (string, []string, error) {
	switch {
	case len(args) == 0:
		io.WriteString(stderr, usage) // a mistake's usage goes with the message
		return "", nil, usageErr(missing)
	case args[0] == "-h" || args[0] == "--help":
		io.WriteString(stdout, usage)
		return "", nil, flag.ErrHelp
	}
	return args[0], args[1:], nil
}

// runAction runs the action of a command of actions (events list, events
// show): the one args[0] names, or a usage error naming them all.
func runAction(ctx context.Context, args []string, name, usage string, actions []command, stdout, stderr io.Writer) error {
	names := make([]string, len(actions))
	for i, a := range actions {
		names[i] = a.name
	}
	want := names[0]
	if n := len(names); n > 1 {
		want = strings.Join(names[:n-1], ", ") + " or " + names[n-1]
	}
	action, args, err := parseAction(args, usage, name+" needs "+want, stdout, stderr)
	if err != nil {
		return err
	}
	for _, a := range actions {
		if a.name == action {
			return a.run(ctx, args, stdout, stderr)
		}
	}
	return usageErr(fmt.Sprintf("unknown %s action %q: want %s", name, action, want))
}
