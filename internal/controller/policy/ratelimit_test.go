package policy

import (
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// A policy whose syncs keep failing (an apiserver outage) is retried at
// least once a sync period, however long the failures last; the first
// retries still come quickly.
func TestRetryLimiterStopsAtTheSyncPeriod(t *testing.T) {
	const period = 2 * time.Second
	l := retryLimiter(period)
	req := reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "ns", Name: "web"}}
	var delays []time.Duration
	for range 30 {
		delays = append(delays, l.When(req))
	}
	if delays[0] > 10*time.Millisecond {
		t.Errorf("first retry after %s, want within 10ms", delays[0])
	}
	for i, d := range delays {
		if d > period {
			t.Errorf("retry %d after %s, longer than the %s sync period", i+1, d, period)
		}
	}
	if last := delays[len(delays)-1]; last != period {
		t.Errorf("after 30 failures the retry comes after %s, want the sync period %s", last, period)
	}
	l.Forget(req)
	if d := l.When(req); d > 10*time.Millisecond {
		t.Errorf("after a success the first retry comes after %s, want the backoff reset", d)
	}
}
