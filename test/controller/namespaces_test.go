//go:build controller

package controller

import (
	"context"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tailorhq/tailor/api/v1alpha1"
	"github.com/tailorhq/tailor/internal/manager"
	"github.com/tailorhq/tailor/internal/shard"
	"github.com/tailorhq/tailor/test/builder"
)

// A manager scoped to namespace A, under a real manager and cache, syncs
// A's policy and leaves B's alone: no status written, no resize, no usage
// read. Its cache holds no policy of B, yet it holds B's pods (cut down to
// their requests), and counts them in the room on the node they share: A's
// pod beside B's big one is raised only as far as the room B's leaves.
func TestScopedManagerSyncsOnlyItsNamespaces(t *testing.T) {
	a, b := newEnv(t, controllerOptions{}), newEnv(t, controllerOptions{})
	tight := a.addNode("tight-"+rand.String(5), "2", "8Gi")
	// B's pod, under no policy: 1500m of the tight node's 2 cores.
	b.pod("big", builder.Pod("big-0").Node(tight).Container(builder.Container("app").Requests("1500m", "1Gi").Limits("1500m", "1Gi")))
	// A's pod beside B's, 100m of room left; B's twin, which a manager of
	// B would raise, on a roomy node.
	a.throttledWeb("web", "web-0", tight)
	b.throttledWeb("other", "other-0", "")

	// The manager reads usage from A's source, which notes every
	// namespace it is asked about: a sync of B's policy would show there.
	r := newManagedController(t, a.controllerDeps(), controllerOptions{SyncPeriod: time.Minute, Shard: shard.Shard{Namespaces: []string{a.ns}}})

	var web *corev1.Pod
	err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, 2*time.Minute, true, func(context.Context) (bool, error) {
		web = a.getPod("web-0")
		pol := a.getPolicy("web")
		return web.Generation > 1 && pol.Generation > 0 && pol.Status.ObservedGeneration == pol.Generation, nil
	})
	if err != nil {
		t.Fatalf("A's policy not synced: web-0 generation %d, policy status %+v", web.Generation, a.getPolicy("web").Status)
	}
	cpu := web.Spec.Containers[0].Resources.Requests[corev1.ResourceCPU]
	t.Logf("A's CPU request 400m -> %s beside B's 1500m pod", cpu.String())
	if cpu.Cmp(resource.MustParse("400m")) <= 0 || cpu.Cmp(resource.MustParse("500m")) > 0 {
		t.Errorf("web-0's CPU request %s: want a raise within the 100m B's pod leaves (400m-500m)", cpu.String())
	}

	// B's policy would have been synced alongside A's had the manager
	// seen it; a few more seconds for a late sync to show.
	time.Sleep(2 * time.Second)
	if pol := b.getPolicy("other"); pol.Status.ObservedGeneration != 0 || len(pol.Status.Conditions) > 0 || pol.Status.Recommendation != nil {
		t.Errorf("B's policy has a status written by A's manager: %+v", pol.Status)
	}
	if other := b.getPod("other-0"); other.Generation != 1 {
		t.Errorf("B's pod other-0 was resized (generation %d): %s", other.Generation, requestOf(other, "app", corev1.ResourceCPU))
	}
	if asked := a.source.Asked(); !slices.Equal(asked, []string{a.ns}) {
		t.Errorf("usage read for namespaces %q, want only %s", asked, a.ns)
	}

	// What the cache holds: A's policies only, but every pod on the node.
	ctx := context.Background()
	var policies v1alpha1.TailorPolicyList
	if err := r.Client.List(ctx, &policies); err != nil {
		t.Fatalf("listing the cached policies: %v", err)
	}
	for _, p := range policies.Items {
		if p.Namespace != a.ns {
			t.Errorf("the cache holds policy %s/%s, outside the manager's namespace %s", p.Namespace, p.Name, a.ns)
		}
	}
	if err := r.Client.Get(ctx, client.ObjectKey{Namespace: b.ns, Name: "other"}, &v1alpha1.TailorPolicy{}); err == nil {
		t.Errorf("the cache read B's policy")
	}
	var pods corev1.PodList
	if err := r.Client.List(ctx, &pods, client.MatchingFields{"spec.nodeName": tight}); err != nil {
		t.Fatalf("listing the cached pods of %s: %v", tight, err)
	}
	var names []string
	for _, p := range pods.Items {
		names = append(names, p.Namespace+"/"+p.Name)
	}
	slices.Sort(names)
	want := []string{a.ns + "/web-0", b.ns + "/big-0"}
	slices.Sort(want)
	if !slices.Equal(names, want) {
		t.Errorf("the cache holds pods %q on %s, want %q", names, tight, want)
	}
}

// Managers scoped to different tenants each lead under a lease of their
// own, while two replicas of one tenant's manager, their namespaces listed
// in another order, share one and only one leads. These are the managers
// internal/manager builds from Options.Namespaces (the cache scoped to
// them, leader election, the controller), on the real apiserver.
func TestScopedManagersTakeTheirOwnLeases(t *testing.T) {
	suffix := rand.String(5)
	n1, n2, n3 := "lease-a-"+suffix, "lease-b-"+suffix, "lease-c-"+suffix
	for _, ns := range []string{n1, n2, n3} {
		if err := apiClient.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
			t.Fatalf("create namespace: %v", err)
		}
	}
	type running struct {
		mgr interface{ Elected() <-chan struct{} }
	}
	start := func(namespaces ...string) *running {
		t.Helper()
		m, err := manager.New(restConfig, manager.Options{
			MetricsSource: "kubelet", SyncPeriod: time.Minute, Namespaces: namespaces,
			LeaderElect: true, LeaderElectionNamespace: "default",
			MetricsAddr: "0", ProbeAddr: "0", SkipNameValidation: true,
		})
		if err != nil {
			t.Fatalf("manager of %q: %v", namespaces, err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() {
			defer close(done)
			if err := m.Start(ctx); err != nil {
				t.Errorf("manager of %q: %v", namespaces, err)
			}
		}()
		t.Cleanup(func() {
			cancel()
			<-done
		})
		return &running{mgr: m}
	}
	tenant := shard.Shard{Namespaces: []string{n1, n2}}.LeaseName("tailor-manager")
	other := shard.Shard{Namespaces: []string{n3}}.LeaseName("tailor-manager")
	if tenant == other {
		t.Fatalf("two tenants, one lease name %s", tenant)
	}
	a, b, c := start(n1, n2), start(n2, n1), start(n3)
	err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, 2*time.Minute, true, func(context.Context) (bool, error) {
		return (elected(a.mgr) || elected(b.mgr)) && elected(c.mgr), nil
	})
	if err != nil {
		t.Fatalf("not every tenant has a leader: a %v, b %v, c %v; leases %s %q, %s %q", elected(a.mgr), elected(b.mgr), elected(c.mgr), tenant, leaseHolder(tenant), other, leaseHolder(other))
	}
	time.Sleep(2 * time.Second) // a second election would show by now
	if elected(a.mgr) && elected(b.mgr) {
		t.Errorf("both replicas of one tenant's manager lead: their namespaces' order split the lease")
	}
	if leaseHolder(tenant) == "" || leaseHolder(other) == "" {
		t.Errorf("the tenants' leases are not held: %s %q, %s %q", tenant, leaseHolder(tenant), other, leaseHolder(other))
	}
	if leaseHolder("tailor-manager") != "" {
		t.Errorf("a scoped manager holds the cluster-wide lease tailor-manager")
	}
}
