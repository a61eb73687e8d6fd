//go:build controller

package controller

import (
	"context"
	"sync"
	"testing"
	"time"

	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	crconfig "sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/tailorhq/tailor/internal/actuator"
	policyctrl "github.com/tailorhq/tailor/internal/controller/policy"
	"github.com/tailorhq/tailor/internal/controller/policy/gather"
	"github.com/tailorhq/tailor/internal/manager"
	"github.com/tailorhq/tailor/internal/metrics"
	"github.com/tailorhq/tailor/internal/metrics/prometheus"
	"github.com/tailorhq/tailor/internal/observation"
	"github.com/tailorhq/tailor/internal/recommend"
	"github.com/tailorhq/tailor/internal/shard"
)

// controllerOptions are what a test may change about the controller.
type controllerOptions struct {
	// Recommender replaces recommend.DefaultConfig() when set.
	Recommender *recommend.Config
	// Client replaces the direct apiserver client (the manager scenario
	// passes its cached one).
	Client client.Client
	// SyncPeriod replaces syncPeriod when set.
	SyncPeriod time.Duration
	// Resizer replaces the client resizes are sent through (a test
	// injects apiserver errors with it).
	Resizer client.WithWatch
	// Observer is told each sync's figures and resizes (the dashboard's
	// history).
	Observer observation.Observer
	// Shard is the slice of namespaces the controller syncs (and, under a
	// manager, caches whole); the zero value is all.
	Shard shard.Shard
	// Prometheus is the address the canaries' query guardrails ask, as
	// --prometheus-url gives it; "" is a manager without one.
	Prometheus string
	// AllowPreemption is --allow-resize-preemption.
	AllowPreemption bool
	// PreemptionUnavailable is what the manager found of the scheduler's
	// preemption for resizes (manager.PreemptionUnavailable).
	PreemptionUnavailable string
}

// deps are what outlives one controller: the clock, the metrics source and
// the events sink.
type deps struct {
	clock  clock.PassiveClock
	source metrics.Source
	events events.EventRecorder
}

// newController builds the policy reconciler as internal/manager wires it,
// against the envtest apiserver. It is the one place that knows how: when
// the controller's construction changes, only this function does.
func newController(t testing.TB, d deps, opts controllerOptions) *policyctrl.Reconciler {
	t.Helper()
	rec := recommend.DefaultConfig()
	if opts.Recommender != nil {
		rec = *opts.Recommender
	}
	if err := rec.Validate(); err != nil {
		t.Fatalf("recommender configuration: %v", err)
	}
	c := opts.Client
	if c == nil {
		c = apiClient
	}
	period := syncPeriod
	if opts.SyncPeriod > 0 {
		period = opts.SyncPeriod
	}
	resizer := apiClient
	if opts.Resizer != nil {
		resizer = opts.Resizer
	}
	var guardrails gather.GuardrailQuerier
	if opts.Prometheus != "" {
		pc, err := prometheus.NewClient(opts.Prometheus, nil, manager.SourceTimeout)
		if err != nil {
			t.Fatalf("prometheus client: %v", err)
		}
		guardrails = prometheus.NewGuardrails(pc)
	}
	return &policyctrl.Reconciler{
		Guardrails:            guardrails,
		Client:                c,
		Clock:                 d.clock,
		Events:                d.events,
		Source:                d.source,
		Actuator:              &actuator.Actuator{Client: resizer, Server: server},
		SyncPeriod:            period,
		Recommender:           rec,
		Observer:              opts.Observer,
		Shard:                 opts.Shard,
		AllowPreemption:       opts.AllowPreemption,
		PreemptionUnavailable: opts.PreemptionUnavailable,
		// The apiserver serves VerticalPodAutoscalers (main_test.go
		// installs their CRD); under a manager, SetupWithManager finds them.
		VerticalPodAutoscalers: c,
	}
}

var _ reconcile.Reconciler = (*policyctrl.Reconciler)(nil)

// newManagedController runs a controller from newController under a
// controller-runtime manager watching the apiserver through its cache, set
// up as internal/manager does (its cache transform, the pods-by-node index,
// the controller's own watches), and stops it when the test ends.
func newManagedController(t *testing.T, d deps, opts controllerOptions) *policyctrl.Reconciler {
	t.Helper()
	mgr := newTestManager(t, opts.Shard)
	opts.Client = mgr.GetClient()
	r := newController(t, d, opts)
	// Found as the manager does: through its RESTMapper, read from its cache.
	r.VerticalPodAutoscalers = nil
	if err := r.SetupWithManager(mgr); err != nil {
		t.Fatalf("setting up the controller: %v", err)
	}
	startTestManager(t, mgr)
	return r
}

// newTestManager is a controller-runtime manager of the shard sh set up
// as internal/manager does (its cache transform, the pods-by-node index),
// serving nothing.
func newTestManager(t *testing.T, sh shard.Shard) ctrl.Manager {
	t.Helper()
	mgr, err := ctrl.NewManager(restConfig, ctrl.Options{
		Scheme:                 scheme,
		Cache:                  manager.CacheOptions(sh),
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		Controller:             crconfig.Controller{SkipNameValidation: ptr.To(true)},
	})
	if err != nil {
		t.Fatalf("creating manager: %v", err)
	}
	if err := manager.IndexPods(mgr); err != nil {
		t.Fatal(err)
	}
	return mgr
}

// startTestManager starts mgr; stop stops it (once), as the end of the
// test does.
func startTestManager(t *testing.T, mgr ctrl.Manager) (ctx context.Context, stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("manager: %v", err)
			}
		})
	}
	t.Cleanup(stop)
	return ctx, stop
}
