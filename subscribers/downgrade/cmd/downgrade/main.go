// Command downgrade is the downgrade subscriber: it keeps each Paddle
// subscription's plan and downgrades it to free on cancellation. It takes
// no arguments; `downgrade --help` lists its DOWNGRADE_* variables.
package main

import (
	"github.com/hookhub/hookhub/subscribers/downgrade"
	"github.com/hookhub/hookhub/subscribers/service"
)

func main() { service.Exit(downgrade.Program(new(downgrade.Config))) }
