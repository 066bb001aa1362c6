package startstop_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hookhub/hookhub/internal/startstop"
)

// worker is a component built on Base: one goroutine that runs until Stop.
type worker struct {
	startstop.Base
	running atomic.Int32
}

func (w *worker) Start(ctx context.Context) error {
	runCtx, ok := w.StartInit(ctx)
	if !ok {
		return nil
	}
	w.running.Add(1)
	w.Go(func() {
		defer w.running.Add(-1)
		<-runCtx.Done()
	})
	return nil
}

func (w *worker) Stop(context.Context) error {
	w.StopWait()
	return nil
}

func TestBase(t *testing.T) {
	t.Parallel()
	w := &worker{}
	require.NoError(t, w.Stop(t.Context()), "stop before start")
	ctx, cancel := context.WithCancel(t.Context())
	require.NoError(t, w.Start(ctx))
	require.NoError(t, w.Start(ctx), "second start")
	cancel() // the caller's context bounds start-up only
	require.EqualValues(t, 1, w.running.Load())
	require.NoError(t, w.Stop(t.Context()))
	require.EqualValues(t, 0, w.running.Load(), "Stop waits for the goroutine")
	require.NoError(t, w.Stop(t.Context()), "second stop")
}

func TestGroupOrder(t *testing.T) {
	t.Parallel()
	var log []string
	svc := func(name string, startErr error) startstop.Named {
		return startstop.Named{Name: name, Service: startstop.Func(
			func(context.Context) error {
				log = append(log, "start "+name)
				return startErr
			},
			func(context.Context) error { log = append(log, "stop "+name); return nil })}
	}
	g := startstop.NewGroup(svc("a", nil), svc("b", nil), svc("c", nil))
	require.NoError(t, g.Start(t.Context()))
	require.NoError(t, g.Stop(t.Context()))
	require.NoError(t, g.Stop(t.Context()))
	require.Equal(t, []string{"start a", "start b", "start c", "stop c", "stop b", "stop a"}, log)

	log = nil
	boom := errors.New("boom")
	g = startstop.NewGroup(svc("a", nil), svc("b", boom), svc("c", nil))
	err := g.Start(t.Context())
	require.ErrorIs(t, err, boom)
	require.ErrorContains(t, err, "start b")
	require.Equal(t, []string{"start a", "start b", "stop a"}, log, "a failed start stops what started, in reverse")
	require.NoError(t, g.Stop(t.Context()))
	require.Len(t, log, 3)
}

func TestGroupStopErrorsNamed(t *testing.T) {
	t.Parallel()
	boom := errors.New("drain incomplete")
	g := startstop.NewGroup(
		startstop.Named{Name: "relay", Service: startstop.Func(nil, func(context.Context) error { return boom })},
		startstop.Named{Name: "server", Service: startstop.Func(nil, nil)},
	)
	require.NoError(t, g.Start(t.Context()))
	err := g.Stop(t.Context())
	require.ErrorIs(t, err, boom)
	require.ErrorContains(t, err, "stop relay")
}

// Every ticks until stopped, and stop waits for a tick in progress: no
// tick starts or runs after it returns.
func TestEvery(t *testing.T) {
	var ticks, inTick atomic.Int32
	stop := startstop.Every(time.Millisecond, func() {
		inTick.Add(1)
		ticks.Add(1)
		time.Sleep(time.Millisecond)
		inTick.Add(-1)
	})
	require.Eventually(t, func() bool { return ticks.Load() >= 3 }, 5*time.Second, time.Millisecond)
	stop()
	require.Zero(t, inTick.Load(), "stop returned during a tick")
	after := ticks.Load()
	time.Sleep(20 * time.Millisecond)
	require.Equal(t, after, ticks.Load(), "a tick after stop")
}
