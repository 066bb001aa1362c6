package main

import (
	"fmt"
	"io"

	"github.com/hookhub/hookhub/hub/bench"
)

// printHubShares prints, after the table of `hub bench`, each hub's share
// of the runs with several hubs (--hubs) and the nats-server process's
// CPU per delivery when it ran apart (--nats-server).
func printHubShares(stdout io.Writer, rep bench.Report) {
	for _, r := range rep.Runs {
		if len(r.Hubs) < 2 && r.NATSCPUus == 0 {
			continue
		}
		fmt.Fprintf(stdout, "%s: %.0f deliveries/s; CPU µs per delivery: hubs %.0f (summed), postgres %.0f (the run database's backends %.0f)",
			r.Name, r.PerSecond, r.HubCPUus, r.PostgresCPUus, r.PostgresDBCPUus)
		if r.NATSCPUus > 0 {
			fmt.Fprintf(stdout, ", nats-server %.0f, load generator %.0f", r.NATSCPUus, r.SelfCPUus)
		} else {
			fmt.Fprintf(stdout, ", load generator + nats %.0f", r.SelfCPUus)
		}
		fmt.Fprintln(stdout)
		if len(r.Hubs) < 2 {
			continue
		}
		for k, h := range r.Hubs {
			fmt.Fprintf(stdout, "  hub %d: %d deliveries, %.0f/s, %.0f µs CPU per delivery, %.1f per commit, peak RSS %.0f MB\n",
				k+1, h.Deliveries, h.PerSecond, h.CPUus, h.MeanCommitBatch, h.PeakRSSMB)
		}
	}
}
