//go:build e2e

package chaos

import (
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/tailorhq/tailor/api/v1alpha1"
	"github.com/tailorhq/tailor/internal/manager"
	"github.com/tailorhq/tailor/test/builder"
	"github.com/tailorhq/tailor/test/cluster"
)

// Two managers with leader election; the leader is SIGKILLed just after it
// has sent the first resizes of a batch (the policy's memory minimum
// raised), twice: the second time the leader killed is the one that took
// over the first time, and its follower a manager started since. The
// other takes over, finishes the batch
// without sending any pod a second or different resize, keeps
// minResizeInterval across the change (by the apiserver's clock), and holds
// the memory peak the dead leader learnt and checkpointed (without it, it
// would lower memory at once: usage dropped long enough ago). How long the
// takeovers took is logged: a figure of the lease's timing, not a gate
// (make bench-e2e times it over trials, after a SIGKILL and a SIGTERM).
func TestLeaderFailover(t *testing.T) {
	cluster.Quiet(t)
	const (
		n        = 6
		interval = 20 * time.Second
		trials   = 2
		// most bounds a takeover only so that a broken election fails
		// the test instead of hanging it: 12.4s by the lease's timing.
		most = 30 * time.Second
	)
	ns := newNamespace(t)
	pods := replicas(t, ns, "web", n, func(c *builder.ContainerWrapper) *builder.ContainerWrapper {
		return c.Args("--listen=:8080", "--memory=200Mi").Requests("100m", "128Mi").Limits("200m", "512Mi")
	})
	rec := record(t, ns)
	leaderArgs := []string{"--leader-elect", "--leader-election-namespace", ns}
	standby := []*managerProcess{startManager(t, "m0", leaderArgs...), startManager(t, "m1", leaderArgs...)}
	// Memory only: the load generator's CPU at start is noise here. A
	// trial raises the memory minimum, so every pod needs one resize.
	minMemory := func(mi int64) func(*v1alpha1.TailorPolicySpec) {
		return func(s *v1alpha1.TailorPolicySpec) {
			s.ResourcePolicy = &v1alpha1.ResourcePolicy{ContainerPolicies: []v1alpha1.ContainerPolicy{{
				ContainerName: "*", ControlledResources: []corev1.ResourceName{corev1.ResourceMemory},
				MinAllowed: corev1.ResourceList{corev1.ResourceMemory: *resource.NewQuantity(mi<<20, resource.BinarySI)},
			}}}
		}
	}
	createPolicy(t, ns, "web", func(s *v1alpha1.TailorPolicySpec) {
		minMemory(64)(s)
		s.Behavior = &v1alpha1.Behavior{
			MinResizeInterval:    &metav1.Duration{Duration: interval},
			MaxConcurrentResizes: ptr.To[int32](2),
			ScaleDown:            &v1alpha1.ScaleDownRules{StabilizationWindow: &metav1.Duration{Duration: 10 * time.Second}},
		}
	})

	// The leader learns the 200Mi peak and raises the memory requests
	// from the template's 128Mi (the 512Mi limit already holds the tail);
	// then usage drops, and the leader checkpoints that it saw the drop.
	// Each pod gets the workload's recommendation, or its own working set
	// plus 10% where that is more: a pod whose first reading the kubelet
	// took while it still filled its 200Mi (a loaded machine) got the
	// workload's 195Mi in a rehearsal, and kept it, the other five 204-225Mi.
	// What the trials below hold is what each pod was raised to.
	peak := map[string]resource.Quantity{}
	for _, p := range pods {
		got := waitPod(t, ns, p.Name, 2*time.Minute, "raised for its 200Mi peak", func(p *corev1.Pod) bool {
			return p.Spec.Containers[0].Resources.Requests.Memory().Cmp(resource.MustParse("128Mi")) > 0
		})
		peak[p.Name] = got.Spec.Containers[0].Resources.Requests.Memory().DeepCopy()
	}
	drive(t, pods, "/memory?size=20Mi")
	time.Sleep(20 * time.Second)

	var takeovers, firstResizes []time.Duration
	for trial := 1; trial <= trials; trial++ {
		leader, follower := leaderOf(t, standby)
		// Let every pod's minResizeInterval pass, so that the edit below
		// calls for a resize of each.
		if rs := rec.since(time.Time{}); len(rs) > 0 {
			time.Sleep(time.Until(rs[len(rs)-1].at.Add(interval + time.Second)))
		}
		want := int64(500 + 50*trial)
		edited := time.Now()
		editPolicy(t, ns, "web", minMemory(want))
		first, ok := rec.waitFirst(edited, 30*time.Second)
		if !ok {
			t.Fatalf("trial %d: no resize within 30s of raising the memory minimum to %dMi; policy status: %s", trial, want, policyText(t, ns, "web"))
		}
		leader.kill(t)
		killed := time.Now()
		t.Logf("trial %d: %s killed %s after its first resize of the batch (%s generation %d)", trial, leader.name, killed.Sub(first.at).Round(time.Millisecond), first.pod, first.generation)

		for !follower.leading() {
			if time.Since(killed) > most {
				t.Fatalf("trial %d: %s not leading %s after the leader died", trial, follower.name, most)
			}
			time.Sleep(50 * time.Millisecond)
		}
		takeovers = append(takeovers, time.Since(killed))
		for _, p := range pods {
			got := waitPod(t, ns, p.Name, time.Minute, fmt.Sprintf("at the %dMi minimum", want), func(p *corev1.Pod) bool {
				return p.Spec.Containers[0].Resources.Requests.Memory().Value() == want<<20
			})
			// The recorder learns of each resize from its watch, which may
			// trail the read that just saw it.
			if !rec.waitGeneration(p.Name, got.Generation, 10*time.Second) {
				t.Errorf("trial %d: the recorder's watch never saw %s at generation %d", trial, p.Name, got.Generation)
			}
		}
		if after := rec.since(killed); len(after) > 0 {
			firstResizes = append(firstResizes, after[0].at.Sub(killed))
		}
		// Every pod resized once in the trial, to the new minimum: a
		// duplicate or a conflicting resize would be a second one.
		perPod := map[string]int{}
		for _, rs := range rec.since(edited) {
			perPod[rs.pod]++
			if q, was := resource.MustParse(rs.mem), peak[rs.pod]; q.Cmp(was) < 0 {
				t.Errorf("trial %d: %s memory lowered to %s (from %s) across the failover: the history was lost", trial, rs.pod, rs.mem, was.String())
			}
		}
		for _, p := range pods {
			if perPod[p.Name] != 1 {
				t.Errorf("trial %d: pod %s resized %d times, want once; resizes:%s", trial, p.Name, perPod[p.Name], rec)
			}
		}
		standby = []*managerProcess{follower, startManager(t, fmt.Sprintf("m%d", trial+1), leaderArgs...)}
	}
	if close := rec.tooClose(interval); len(close) > 0 {
		t.Errorf("resizes closer than minResizeInterval (%s):\n  %s", interval, strings.Join(close, "\n  "))
	}
	if n := restarts(t, ns); n != 0 {
		t.Errorf("%d container restart(s), want none", n)
	}
	var parts []string
	for i := range takeovers {
		part := takeovers[i].Round(100 * time.Millisecond).String()
		if i < len(firstResizes) {
			part += fmt.Sprintf(" (first resize %s)", firstResizes[i].Round(100*time.Millisecond))
		}
		parts = append(parts, part)
	}
	t.Logf("failover takeover after SIGKILL (lease %s, renew %s, retry %s): %s", manager.DefaultLeaseDuration, manager.DefaultRenewDeadline, manager.DefaultRetryPeriod, strings.Join(parts, ", "))
}

// leaderOf waits until exactly one of two managers leads and returns it
// first.
func leaderOf(t *testing.T, two []*managerProcess) (leader, follower *managerProcess) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		a, b := two[0].leading(), two[1].leading()
		switch {
		case a && b:
			t.Fatalf("both %s and %s lead", two[0].name, two[1].name)
		case a:
			return two[0], two[1]
		case b:
			return two[1], two[0]
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("neither %s nor %s leads after 30s", two[0].name, two[1].name)
	return nil, nil
}
