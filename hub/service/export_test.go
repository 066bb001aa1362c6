package service

import "time"

// SetKeeperInterval makes the hub of c check its stream every d instead of
// every relay.DefaultKeeperInterval: a test that waits for the keeper to
// notice a change takes a fraction of the default's 2 s each time.
func SetKeeperInterval(c *Config, d time.Duration) { c.keeperInterval = d }
