//go:build controller

package controller

import (
	"testing"
	"time"

	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/tailorhq/tailor/internal/actuator"
	policyctrl "github.com/tailorhq/tailor/internal/controller/policy"
	"github.com/tailorhq/tailor/internal/metrics"
	"github.com/tailorhq/tailor/internal/recommend"
)

// controllerOptions are what a test may change about the controller.
type controllerOptions struct {
	// Recommender replaces recommend.DefaultConfig() when set.
	Recommender *recommend.Config
	// Client replaces the direct apiserver client (the manager scenario
	// passes its cached one).
	Client client.Client
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
	return &policyctrl.Reconciler{
		Client:      c,
		Clock:       d.clock,
		Events:      d.events,
		Source:      d.source,
		Actuator:    &actuator.Actuator{Client: apiClient, Server: server},
		SyncPeriod:  syncPeriod,
		Recommender: rec,
	}
}

var _ reconcile.Reconciler = (*policyctrl.Reconciler)(nil)

// minutes is a helper for durations in policies.
func minutes(n int) time.Duration { return time.Duration(n) * time.Minute }
