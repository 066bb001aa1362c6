// Command credits is the credits subscriber: it appends a ledger row per
// Paddle subscription.created event and serves balances. It takes no
// arguments; `credits --help` lists its CREDITS_* variables.
package main

import (
	"github.com/hookhub/hookhub/subscribers/credits"
	"github.com/hookhub/hookhub/subscribers/service"
)

func main() { service.Exit(credits.Program(new(credits.Config))) }
