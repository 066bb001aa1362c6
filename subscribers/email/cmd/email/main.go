// Command email is the email subscriber: welcome emails for new Clerk
// users and cancellation emails for canceled Paddle subscriptions, sent
// over SMTP through an outbox. It takes no arguments; `email --help` lists
// its EMAIL_* variables.
package main

import (
	"os"

	"github.com/hookhub/hookhub/subscribers/email"
	"github.com/hookhub/hookhub/subscribers/service"
)

func main() {
	var cfg email.Config
	os.Exit(service.Main(email.Program(&cfg), os.Args[1:], os.Stdout, os.Stderr))
}
