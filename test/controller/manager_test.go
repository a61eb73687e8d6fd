//go:build controller

package controller

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/tailorhq/tailor/api/v1alpha1"
	"github.com/tailorhq/tailor/test/builder"
)

// Under a real manager, a pod event reaches the controller at once: an
// OOM kill written to the pod's status is answered with a memory raise long
// before the next periodic sync. The period is an hour, so that the waits
// below can be generous (a loaded machine under -race) and a raise within
// them still comes only from the pod event.
func TestManagerReactsToAnOOMKillBeforeTheSyncPeriod(t *testing.T) {
	const period = time.Hour
	const deadline = 2 * time.Minute
	e := newEnv(t, controllerOptions{SyncPeriod: period})
	e.pod("mem", builder.Pod("mem-0").Container(builder.Container("app").Requests("500m", "512Mi").Limits("1", "1Gi")))
	// Comfortably inside its resources: nothing to do until the kill.
	e.source.Set(e.ns, "mem-0", "app", 0.3, 200*mi)
	e.policy("mem", nil)
	syncs := newSyncCounter()
	newManagedController(t, e.controllerDeps(), controllerOptions{SyncPeriod: period, Observer: syncs})

	// The first sync has acted once it is counted: it saw the usage and
	// had every chance to resize.
	syncs.waitSyncs(e, "mem", 1, deadline)
	t.Logf("syncs before any pod event: %d", syncs.of(e, "mem"))
	if p := e.getPod("mem-0"); p.Generation != 1 {
		t.Fatalf("resized before the OOM kill (generation %d)", p.Generation)
	}

	// The kubelet reports the kill: exit 137, OOMKilled, restarted.
	e.clock.Step(5 * time.Second)
	e.oomKill("mem-0")
	start := time.Now()
	var raised *corev1.Pod
	err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, deadline, true, func(context.Context) (bool, error) {
		raised = e.getPod("mem-0")
		lim := raised.Spec.Containers[0].Resources.Limits[corev1.ResourceMemory]
		return lim.Cmp(resource.MustParse("1Gi")) > 0, nil
	})
	if err != nil {
		t.Fatalf("no memory raise within %s of the OOM kill (sync period %s); memory limit %s, reads %d",
			deadline, period, limitOf(raised, "app", corev1.ResourceMemory), e.source.Reads())
	}
	t.Logf("memory limit 1Gi -> %s %s after the OOM kill was written (sync period %s)",
		limitOf(raised, "app", corev1.ResourceMemory), time.Since(start).Round(time.Millisecond), period)
}

// A manager that starts after a resize reads when it was made from the
// pod's managedFields, which its cache keeps for tailor's resizes only, and
// honours minResizeInterval across the restart: the pod is not resized
// again at once though its usage calls for more.
func TestRestartedManagerKeepsMinResizeInterval(t *testing.T) {
	e := newEnv(t, controllerOptions{})
	e.pod("web", webPod("web-0"))
	e.policy("web", func(s *v1alpha1.TailorPolicySpec) {
		s.Behavior = &v1alpha1.Behavior{MinResizeInterval: &metav1.Duration{Duration: 10 * time.Minute}}
	})
	e.source.SetThrottled(e.ns, "web-0", "app", 1.0, 200*mi, 0.5)
	e.sync("web")
	if p := e.getPod("web-0"); p.Generation != 2 {
		t.Fatalf("the first manager did not resize (generation %d)", p.Generation)
	}
	// Throttled at the new limit too: a raise is due, but not for 10m.
	e.source.SetThrottled(e.ns, "web-0", "app", 3.0, 200*mi, 0.9)
	e.clock.Step(time.Minute)
	syncs := newSyncCounter()
	newManagedController(t, e.controllerDeps(), controllerOptions{SyncPeriod: time.Minute, Observer: syncs})
	// Held only if a sync of the restarted manager has decided: one that
	// has acted is counted. The wait is only a deadline for the manager to
	// start and sync at all, generous for a loaded machine under -race (a
	// check lane beside the e2e phases once took over 10s).
	syncs.waitSyncs(e, "web", 1, 2*time.Minute)
	if p := e.getPod("web-0"); p.Generation != 2 {
		t.Errorf("the restarted manager resized 1m after the last resize, minResizeInterval 10m (generation %d)", p.Generation)
	}
}
