// Command credits is the credits subscriber: it appends a ledger row per
// Paddle subscription.created event and serves balances. It takes no
// arguments; `credits --help` lists its CREDITS_* variables.
package main

import (
	"os"

	"github.com/hookhub/hookhub/subscribers/credits"
	"github.com/hookhub/hookhub/subscribers/service"
)

func main() {
	var cfg credits.Config
	os.Exit(service.Main(credits.Program(&cfg), os.Args[1:], os.Stdout, os.Stderr))
}
