// Command downgrade is the downgrade subscriber: it keeps each Paddle
// subscription's plan and downgrades it to free on cancellation. It takes
// no arguments; `downgrade --help` lists its DOWNGRADE_* variables.
package main

import (
	"os"

	"github.com/hookhub/hookhub/subscribers/downgrade"
	"github.com/hookhub/hookhub/subscribers/service"
)

func main() {
	var cfg downgrade.Config
	os.Exit(service.Main(downgrade.Program(&cfg), os.Args[1:], os.Stdout, os.Stderr))
}
