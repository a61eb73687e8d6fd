//go:build controller

package controller

import (
	"context"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/tailorhq/tailor/internal/manager"
	"github.com/tailorhq/tailor/internal/shard"
)

// Each shard elects its own leader: of two managers of shard 0 one leads,
// the only manager of shard 1 leads too, each under its shard's lease, and
// when shard 0's leader stops the other takes its lease over while shard
// 1's leader is untouched. These are the managers internal/manager builds
// (leader election, the cache, the controller), on the real apiserver.
func TestEachShardElectsItsOwnLeader(t *testing.T) {
	type running struct {
		mgr    interface{ Elected() <-chan struct{} }
		cancel context.CancelFunc
		// done is closed when the manager has stopped.
		done chan struct{}
	}
	start := func(sh shard.Shard) *running {
		t.Helper()
		m, err := manager.New(restConfig, manager.Options{
			MetricsSource: "kubelet", SyncPeriod: time.Minute,
			LeaderElect: true, LeaderElectionNamespace: "default", Shard: sh,
			MetricsAddr: "0", ProbeAddr: "0", SkipNameValidation: true,
		})
		if err != nil {
			t.Fatalf("manager of %s: %v", sh, err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		r := &running{mgr: m, cancel: cancel, done: make(chan struct{})}
		go func() {
			defer close(r.done)
			if err := m.Start(ctx); err != nil {
				t.Errorf("manager of %s: %v", sh, err)
			}
		}()
		t.Cleanup(func() {
			cancel()
			<-r.done
		})
		return r
	}
	zero, one := shard.Shard{Index: 0, Count: 2}, shard.Shard{Index: 1, Count: 2}
	a, b, c := start(zero), start(zero), start(one)

	poll := func(what string, cond func() bool) {
		t.Helper()
		if err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, 2*time.Minute, true, func(context.Context) (bool, error) {
			return cond(), nil
		}); err != nil {
			t.Fatalf("%s: a elected %v, b elected %v, c elected %v; leases: shard 0 %q, shard 1 %q", what,
				elected(a.mgr), elected(b.mgr), elected(c.mgr), leaseHolder(zero.LeaseName("tailor-manager")), leaseHolder(one.LeaseName("tailor-manager")))
		}
	}
	poll("each shard has a leader", func() bool { return (elected(a.mgr) || elected(b.mgr)) && elected(c.mgr) })
	// The standby tries for the lease every RetryPeriod and may take it
	// once it has gone a LeaseDuration unrenewed; so only renewals spanning
	// a whole LeaseDuration since the leader acquired it show the standby
	// kept out, whatever the machine's speed.
	lease := func(name string) (holder string, acquired, renewed time.Time) {
		var l coordinationv1.Lease
		if err := apiClient.Get(context.Background(), types.NamespacedName{Namespace: "default", Name: name}, &l); err != nil ||
			l.Spec.HolderIdentity == nil || l.Spec.AcquireTime == nil || l.Spec.RenewTime == nil {
			return "", time.Time{}, time.Time{}
		}
		return *l.Spec.HolderIdentity, l.Spec.AcquireTime.Time, l.Spec.RenewTime.Time
	}
	firstHolder, _, _ := lease(zero.LeaseName("tailor-manager"))
	poll("shard 0's leader renews its lease for a whole lease duration", func() bool {
		h, acquired, renewed := lease(zero.LeaseName("tailor-manager"))
		if firstHolder == "" {
			firstHolder = h
		}
		if h != "" && h != firstHolder {
			t.Fatalf("shard 0's lease moved from %q to %q while its leader ran", firstHolder, h)
		}
		return renewed.Sub(acquired) > manager.DefaultLeaseDuration
	})
	if elected(a.mgr) && elected(b.mgr) {
		t.Fatal("both managers of shard 0 lead")
	}
	if leaseHolder(zero.LeaseName("tailor-manager")) == "" || leaseHolder(one.LeaseName("tailor-manager")) == "" {
		t.Fatalf("the shards' leases are not held: shard 0 %q, shard 1 %q", leaseHolder(zero.LeaseName("tailor-manager")), leaseHolder(one.LeaseName("tailor-manager")))
	}
	if leaseHolder("tailor-manager") != "" {
		t.Errorf("a shard's manager holds the unsharded lease tailor-manager")
	}
	shard1 := leaseHolder(one.LeaseName("tailor-manager"))

	leader, standby := a, b
	if elected(b.mgr) {
		leader, standby = b, a
	}
	before := leaseHolder(zero.LeaseName("tailor-manager"))
	stopped := time.Now()
	leader.cancel()
	<-leader.done
	poll("shard 0's standby takes over", func() bool { return elected(standby.mgr) })
	t.Logf("shard 0's standby led %s after its leader stopped", time.Since(stopped).Round(100*time.Millisecond))
	if after := leaseHolder(zero.LeaseName("tailor-manager")); after == before || after == "" {
		t.Errorf("shard 0's lease holder %q after the takeover, was %q", after, before)
	}
	if got := leaseHolder(one.LeaseName("tailor-manager")); got != shard1 || !elected(c.mgr) {
		t.Errorf("shard 1's lease moved (%q -> %q) when shard 0's leader stopped", shard1, got)
	}
}

// elected says whether m has won its leader election.
func elected(m interface{ Elected() <-chan struct{} }) bool {
	select {
	case <-m.Elected():
		return true
	default:
		return false
	}
}

// leaseHolder is who holds lease name in the default namespace, "" when
// nobody does (or it does not exist yet).
func leaseHolder(name string) string {
	var l coordinationv1.Lease
	if err := apiClient.Get(context.Background(), types.NamespacedName{Namespace: "default", Name: name}, &l); err != nil || l.Spec.HolderIdentity == nil {
		return ""
	}
	return *l.Spec.HolderIdentity
}
