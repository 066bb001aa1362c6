package destination

import (
	"context"
	"errors"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/hookhub/hookhub/internal/backoff"
)

// Service runs a set of destinations in one process and applies a new
// set on Reload: destinations added start, removed ones stop, changed
// ones (Destination.Fingerprint) restart; the others run on untouched.
// A set that does not load keeps the running one.
type Service struct {
	o    Options
	load func() ([]Destination, error)

	reloads  *prometheus.CounterVec
	ready    *prometheus.GaugeVec
	applying sync.Mutex // one apply at a time
	mu       sync.Mutex // guards running, broken and runCtx
	runCtx   context.Context
	running  map[string]*running
	broken   map[string]error // destinations of the set New refused
	wg       sync.WaitGroup
}

// running is one destination's runner and the means to stop it.
type running struct {
	r      *Runner
	fp     string
	cancel context.CancelFunc
	done   chan struct{}

	mu     sync.Mutex
	failed error // the last error Run returned, until it runs again
}

// MetricReloads counts destinations file loads by result (ok, error).
const MetricReloads = "hookhub_destinations_reloads_total"

// NewService returns a service running the destinations load returns.
func NewService(o Options, load func() ([]Destination, error)) *Service {
	reg := o.Registerer
	if reg == nil {
		reg = prometheus.NewRegistry()
	}
	reloads := prometheus.NewCounterVec(prometheus.CounterOpts{Name: MetricReloads,
		Help: "Loads of the destinations file by result: ok (applied) or error (refused; the running set stays)."}, []string{"result"})
	if err := reg.Register(reloads); err != nil {
		if are, ok := errors.AsType[prometheus.AlreadyRegisteredError](err); ok {
			reloads = are.ExistingCollector.(*prometheus.CounterVec)
		}
	}
	return &Service{o: o, load: load, reloads: reloads, ready: newReadyGauge(reg), running: map[string]*running{}, broken: map[string]error{}}
}

// Run loads the destinations and runs them until ctx is cancelled,
// reloading each time reload receives. A first load that fails is
// returned: the process should not start on a broken file. Run returns
// once every destination stopped.
func (s *Service) Run(ctx context.Context, reload <-chan struct{}) error {
	set, err := s.load()
	if err != nil {
		s.reloads.WithLabelValues("error").Inc()
		return err
	}
	s.reloads.WithLabelValues("ok").Inc()
	s.mu.Lock()
	s.runCtx = ctx
	s.mu.Unlock()
	s.apply(ctx, set)
	tick := time.NewTicker(BacklogPollInterval)
	defer tick.Stop()
	for {
		select {
		case <-tick.C:
			s.Readiness() // keeps hookhub_destination_ready current
		case <-ctx.Done():
			s.wg.Wait()
			return nil
		case <-reload:
			if err := s.Reload(); err != nil {
				s.o.Logger.Error("destinations file refused; the running destinations stay as they are", "error", err)
			}
		}
	}
}

// Reload loads the destinations again and applies them, or returns why
// it could not (the running set stays). The destinations it starts run
// until Run's context ends; Reload before Run, or after it returned, is
// an error.
func (s *Service) Reload() error {
	s.mu.Lock()
	ctx := s.runCtx
	s.mu.Unlock()
	if ctx == nil || ctx.Err() != nil {
		return errors.New("destinations: Reload needs a running Service")
	}
	set, err := s.load()
	if err != nil {
		s.reloads.WithLabelValues("error").Inc()
		return err
	}
	s.reloads.WithLabelValues("ok").Inc()
	s.apply(ctx, set)
	s.o.Logger.Info("destinations file reloaded", "destinations", len(set))
	return nil
}

// apply stops what set no longer has (or has changed) and starts what is
// new; stops finish (in-flight deliveries settle) before the new runners
// start, so one destination never runs twice in this process.
func (s *Service) apply(ctx context.Context, set []Destination) {
	s.applying.Lock()
	defer s.applying.Unlock()
	s.mu.Lock()
	want := make(map[string]Destination, len(set))
	for _, d := range set {
		want[d.Name] = d
	}
	var stopping []*running
	for name, run := range s.running {
		if d, ok := want[name]; !ok || d.Fingerprint() != run.fp {
			run.cancel()
			stopping = append(stopping, run)
			delete(s.running, name)
			if !ok {
				s.o.Metrics.Forget(name)
				s.ready.DeleteLabelValues(name)
				s.o.Logger.Info("destination removed", "destination", name)
			}
		}
	}
	s.mu.Unlock()
	for _, run := range stopping {
		<-run.done
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for name := range s.broken {
		if _, ok := want[name]; !ok {
			s.ready.DeleteLabelValues(name)
		}
	}
	clear(s.broken)
	for _, d := range set {
		if _, ok := s.running[d.Name]; ok {
			continue
		}
		r, err := New(d, s.o)
		if err != nil {
			s.broken[d.Name] = err
			s.o.Logger.Error("destination not started", "destination", d.Name, "error", err)
			continue
		}
		rctx, cancel := context.WithCancel(ctx)
		run := &running{r: r, fp: d.Fingerprint(), cancel: cancel, done: make(chan struct{})}
		s.running[d.Name] = run
		s.wg.Go(func() {
			defer close(run.done)
			s.keepRunning(rctx, run)
		})
		s.o.Logger.Info("destination started", "destination", d.Name, "subjects", d.Subjects, "ordered", d.Ordered, "concurrency", d.Concurrency)
	}
}

// keepRunning runs a destination until ctx is cancelled, starting it
// again (with a backoff) when it stops on an error: a consumer JetStream
// refuses, Postgres gone at start. Healthy reports the error meanwhile.
func (s *Service) keepRunning(ctx context.Context, run *running) {
	delays := backoff.New(time.Second, time.Minute)
	for {
		run.mu.Lock()
		r := run.r
		run.mu.Unlock()
		err := r.Run(ctx)
		if ctx.Err() != nil {
			return
		}
		if err == nil {
			err = errors.New("stopped")
		}
		run.mu.Lock()
		run.failed = err
		run.mu.Unlock()
		delay := delays.Next()
		s.o.Logger.Error("destination stopped; starting it again", "destination", r.Name(), "error", err, "retry_in", delay)
		if backoff.Sleep(ctx, delay) != nil {
			return
		}
		next, nerr := New(r.Destination(), s.o)
		if nerr != nil {
			s.o.Logger.Error("destination not restarted", "destination", r.Name(), "error", nerr)
			continue
		}
		r = next
		run.mu.Lock()
		run.r, run.failed = r, nil
		run.mu.Unlock()
	}
}

// Names lists the running destinations, sorted.
func (s *Service) Names() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Sorted(maps.Keys(s.running))
}
