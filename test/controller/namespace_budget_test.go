//go:build controller

package controller

import (
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tailorhq/tailor/api/v1alpha1"
	"github.com/tailorhq/tailor/internal/shard"
)

// cachedClient is a client that reads through a manager's cache, set up as
// internal/manager does, with no controller of its own: a test calls
// Reconcile itself, and sees what the cache's lag behind the apiserver
// does. stop stops the manager, as a restart does.
func cachedClient(t *testing.T) (c client.Client, stop func()) {
	t.Helper()
	mgr := newTestManager(t, shard.Shard{})
	ctx, stop := startTestManager(t, mgr)
	if !mgr.GetCache().WaitForCacheSync(ctx) {
		t.Fatal("the manager's cache did not sync")
	}
	return mgr.GetClient(), stop
}

// syncAtOnce is one sync period in which the policies named are synced at
// the same time, as the manager's workers (ConcurrentSyncs) do, through the
// same controller; then the kubelet answers.
func (e *env) syncAtOnce(names ...string) {
	e.t.Helper()
	e.clock.Step(syncPeriod)
	errs := make([]error, len(names))
	var wg sync.WaitGroup
	for i, n := range names {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = e.tryReconcile(n)
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			e.t.Fatalf("reconcile %s at +%s: %v", names[i], e.elapsed(), err)
		}
	}
	e.kubelet.Sync(e.t, e.ns)
}

// Issue #25 §3: two policies of one namespace, web (namespace budget 2
// pods an hour) and api (3), each with three idle pods, synced at the same
// time through one controller reading a manager's cache, which shows a
// checkpoint only some time after it is written. In any hour at most
// three of the six pods are lowered (web lowers only while fewer than two
// are, api while fewer than three), across a manager restart half an hour
// in, which starts with an empty cache and ledger and counts what the
// checkpoints keep; the policy held says NamespaceBudgetSpent, naming how
// many were lowered and by which policies. After the hour the others
// follow.
func TestNamespaceBudgetSharedByPolicies(t *testing.T) {
	c, stop := cachedClient(t)
	e := newEnv(t, controllerOptions{Client: c})
	idleApp(e, "web", 3, v1alpha1.ScaleDownRules{Budget: &v1alpha1.LoweringBudget{NamespacePods: ptrTo(intstr.FromInt32(2))}})
	idleApp(e, "api", 3, v1alpha1.ScaleDownRules{Budget: &v1alpha1.LoweringBudget{NamespacePods: ptrTo(intstr.FromInt32(3))}})
	names := []string{"web-0", "web-1", "web-2", "api-0", "api-1", "api-2"}
	lowered := func() []string {
		var out []string
		for i, cpu := range e.cpuOf(names...) {
			if cpu != "500m" {
				out = append(out, names[i])
			}
		}
		return out
	}
	var first time.Duration
	for range 30 {
		e.syncAtOnce("web", "api")
		if len(lowered()) > 0 {
			first = e.elapsed()
			break
		}
	}
	if first == 0 {
		t.Fatalf("nothing lowered after 30 syncs: %v%s", e.cpuOf(names...), e.events)
	}
	// Whichever went first, three pods are lowered: web's two and then
	// one of api's, or api's three and none of web's (a sync later, if
	// one policy's stabilization ended a sync after the other's).
	e.syncAtOnce("web", "api")
	if got := lowered(); len(got) != 3 {
		t.Fatalf("%v lowered, want three: the namespace's budgets are 2 and 3", got)
	}
	holds := func(until time.Duration) {
		t.Helper()
		for e.elapsed()-first < until {
			e.syncAtOnce("web", "api")
			if got := lowered(); len(got) != 3 {
				t.Fatalf("%s after the first lowerings: %v lowered, want the same three until the hour has passed", e.elapsed()-first, got)
			}
		}
	}
	holds(10 * time.Minute)
	// Web has no room, three of the namespace's pods lowered, of which
	// api lowered one or all: it holds one pod or all three.
	cw := condition(e.getPolicy("web"), v1alpha1.ConditionLoweringsHeld)
	if cw == nil || cw.Status != metav1.ConditionTrue || cw.Reason != v1alpha1.LoweringsReasonNamespaceBudgetSpent ||
		!strings.Contains(cw.Message, "3 of the namespace's pods lowered within the last hour") || !strings.Contains(cw.Message, "of 2 allowed; the next frees at") {
		t.Errorf("web's LoweringsHeld %+v, want True NamespaceBudgetSpent: 3 of the namespace's pods lowered, of 2 allowed", cw)
	} else if !strings.Contains(cw.Message, "api (") {
		t.Errorf("web's LoweringsHeld %q, want it to name policy api, which lowered some of the three", cw.Message)
	}
	if got := metricValue(t, "tailor_lowerings_held", map[string]string{"namespace": e.ns, "policy": "web", "reason": "NamespaceBudgetSpent"}); got < 1 {
		t.Errorf("tailor_lowerings_held{policy=web,reason=NamespaceBudgetSpent} %v, want web's pods held", got)
	}
	// Each policy's checkpoint keeps what it lowered: together, the three.
	var cps v1alpha1.TailorCheckpointList
	if err := apiClient.List(e.ctx, &cps, client.InNamespace(e.ns)); err != nil {
		t.Fatal(err)
	}
	kept := 0
	for _, cp := range cps.Items {
		kept += len(cp.Spec.Lowered)
	}
	if kept != 3 {
		t.Errorf("the checkpoints keep %d lowered pods, want 3", kept)
	}

	holds(30 * time.Minute)
	// The manager restarts: a new cache, a new controller, no ledger.
	stop()
	c, _ = cachedClient(t)
	e.opts.Client = c
	e.restart()
	holds(time.Hour - syncPeriod)
	e.syncAtOnce("web", "api")
	e.syncAtOnce("web", "api")
	if got := lowered(); len(got) <= 3 {
		t.Errorf("%s after the first lowerings: %v lowered, want more than the first three once the hour has passed", e.elapsed()-first, got)
	}
}

// Issue #25 §3: a policy without a budget (api) is never held by its
// namespace's, but what it lowers counts there: its checkpoint keeps it,
// and web, whose namespace budget is 30% of the namespace's six running
// pods (1.8, rounded up to 2), holds its pods while api's three lowerings
// are within the hour, across a manager restart.
func TestNamespaceBudgetCountsAnUnbudgetedPolicy(t *testing.T) {
	c, stop := cachedClient(t)
	e := newEnv(t, controllerOptions{Client: c})
	idleApp(e, "api", 3, v1alpha1.ScaleDownRules{})
	idleApp(e, "web", 3, v1alpha1.ScaleDownRules{Budget: &v1alpha1.LoweringBudget{NamespacePods: ptrTo(intstr.FromString("30%"))}})
	api, web := []string{"api-0", "api-1", "api-2"}, []string{"web-0", "web-1", "web-2"}
	for range 30 {
		// api first, so its lowerings are counted before web decides.
		e.sync("api")
		e.reconcile("web")
		if e.cpuOf(api...)[0] != "500m" {
			break
		}
	}
	if got := e.cpuOf(api...); got[0] == "500m" || got[1] == "500m" || got[2] == "500m" {
		t.Fatalf("api's pods at %v, want all three lowered: no budget holds api%s", got, e.events)
	}
	var cp v1alpha1.TailorCheckpoint
	if err := apiClient.Get(e.ctx, client.ObjectKey{Namespace: e.ns, Name: "api"}, &cp); err != nil || len(cp.Spec.Lowered) != 3 {
		t.Fatalf("api's checkpoint lowered %+v (%v), want its 3 pods: web's namespace budget counts them", cp.Spec.Lowered, err)
	}
	check := func(when string) {
		t.Helper()
		if got := e.cpuOf(web...); got[0] != "500m" || got[1] != "500m" || got[2] != "500m" {
			t.Fatalf("%s: web's pods at %v, want 500m: api's three lowerings spend web's namespace budget of 2", when, got)
		}
		c := condition(e.getPolicy("web"), v1alpha1.ConditionLoweringsHeld)
		if c == nil || c.Reason != v1alpha1.LoweringsReasonNamespaceBudgetSpent ||
			!strings.Contains(c.Message, "3 of the namespace's pods lowered within the last hour (by policy api (3)), of 2 allowed (30% of 6 running pod(s))") {
			t.Errorf("%s: web's LoweringsHeld %+v, want NamespaceBudgetSpent naming api's three of web's two", when, c)
		}
		if c := condition(e.getPolicy("api"), v1alpha1.ConditionLoweringsHeld); c != nil {
			t.Errorf("%s: api has LoweringsHeld %+v, want none: it has no windows or budget", when, c)
		}
	}
	for range 6 {
		e.sync("web")
	}
	check("a minute on")
	stop()
	c, _ = cachedClient(t)
	e.opts.Client = c
	e.restart()
	e.syncs("web", 3)
	check("after a restart")
}
