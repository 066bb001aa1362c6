package chaos

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/hookhub/hookhub/internal/backoff"
)

// FaultNames are the faults a local topology injects, in the order of
// a run of all of them.
var FaultNames = []string{"kill-hub", "pg-failover", "nats-kill", "partition-pg", "partition-nats"}

// Faults returns the named faults of the topology (FaultNames; "all" is
// every one).
func (l *Local) Faults(names []string) ([]Fault, error) {
	if len(names) == 1 && names[0] == "all" {
		names = FaultNames
	}
	var out []Fault
	for _, n := range names {
		var f func(context.Context) error
		switch n {
		case "kill-hub":
			f = l.killHubFault
		case "pg-failover":
			f = l.pgFailover
		case "nats-kill":
			f = l.natsKill
		case "partition-pg":
			f = func(ctx context.Context) error {
				return l.partition(ctx, func(h *hubProc) []*Proxy { return h.pgProxy })
			}
		case "partition-nats":
			f = func(ctx context.Context) error {
				return l.partition(ctx, func(h *hubProc) []*Proxy { return h.natProxy })
			}
		default:
			return nil, fmt.Errorf("chaos: unknown fault %q (known: %s, all)", n, strings.Join(FaultNames, ", "))
		}
		out = append(out, Fault{Name: n, Inject: f})
	}
	return out, nil
}

// nextHub is the hub the next hub fault hits: each in turn.
func (l *Local) nextHub() *hubProc {
	l.mu.Lock()
	defer l.mu.Unlock()
	h := l.hubs[l.next%len(l.hubs)]
	l.next++
	return h
}

// killHubFault SIGKILLs a hub mid-load, and starts it again a second
// later, as its supervisor would.
func (l *Local) killHubFault(ctx context.Context) error {
	h := l.nextHub()
	killHub(h)
	l.log.Info("hub killed", "hub", h.i)
	if err := backoff.Sleep(ctx, time.Second); err != nil {
		return err
	}
	return l.startHub(ctx, h)
}

// pgFailover kills the Postgres primary, promotes the standby and
// rebuilds the old primary as the new standby.
func (l *Local) pgFailover(ctx context.Context) error {
	t, err := l.PG.Failover(ctx)
	l.log.Info("postgres failed over", "primary", l.PG.Primary(), "promoted_after", t.Promoted, "rebuilt_after", t.Rebuilt, "err", err)
	return err
}

// natsKill SIGKILLs the stream's leader (node 0 when none leads), and
// starts it again two seconds later.
func (l *Local) natsKill(ctx context.Context) error {
	i, err := l.NATS.StreamLeader(ctx, l.o.Stream)
	if err != nil || i < 0 {
		i = 0
	}
	if err := l.NATS.Kill(i); err != nil {
		return err
	}
	l.log.Info("nats node killed", "node", i)
	if err := backoff.Sleep(ctx, 2*time.Second); err != nil {
		return err
	}
	return l.NATS.Start(ctx, i)
}

// partition cuts a hub off the proxies of (Postgres or NATS) for
// PartitionFor, then heals them.
func (l *Local) partition(ctx context.Context, of func(*hubProc) []*Proxy) error {
	h := l.nextHub()
	for _, p := range of(h) {
		p.Partition()
	}
	l.log.Info("hub partitioned", "hub", h.i)
	err := backoff.Sleep(ctx, l.o.PartitionFor)
	for _, p := range of(h) {
		p.Heal()
	}
	return err
}

// Repair heals every proxy and starts every hub that is not running, so
// that the check waits for a whole system. A hub that exited by itself
// is an error: hubs do not die from faults around them.
func (l *Local) Repair(ctx context.Context) error {
	var errs []error
	for _, h := range l.hubs {
		for _, p := range append(h.pgProxy, h.natProxy...) {
			p.Heal()
		}
		select {
		case <-h.done:
			errs = append(errs, fmt.Errorf("hub %d exited by itself; log %s:\n%s", h.i, h.logPath, fileTail(h.logPath, 20)))
			if err := l.startHub(ctx, h); err != nil {
				errs = append(errs, err)
			}
		default:
		}
	}
	return errors.Join(errs...)
}
