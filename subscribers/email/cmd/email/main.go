// Command email is the email subscriber: welcome emails for new Clerk
// users and cancellation emails for canceled Paddle subscriptions, sent
// over SMTP through an outbox. It takes no arguments; `email --help` lists
// its EMAIL_* variables.
package main

import (
	"github.com/hookhub/hookhub/subscribers/email"
	"github.com/hookhub/hookhub/subscribers/service"
)

func main() { service.Exit(email.Program(new(email.Config))) }
