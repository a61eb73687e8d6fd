//go:build e2e

package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/tailorhq/tailor/api/v1alpha1"
	"github.com/tailorhq/tailor/internal/controller/policy/act"
	"github.com/tailorhq/tailor/internal/manager"
	"github.com/tailorhq/tailor/test/cluster"
)

// The manager's side of Kubernetes 1.37's preemption for resizes, on the
// real scheduler and kubelet with the gate on: a high-priority service,
// throttled, on a node a default-priority pod no policy manages fills.
// No room can be made in place; the policy asks for preemption and the
// manager allows it, so the raise is sent beyond the node's free room,
// the kubelet defers it, the scheduler evicts the filler the event names,
// and the kubelet applies the raise in place, with no restart.
func TestAutoscalePreemptsForARaiseNoRoomCanBeMadeFor(t *testing.T) {
	cluster.Quiet(t)
	ctx := context.Background()
	requirePreemptionGate(t)
	ns := newNamespace(t)
	c := startManagerWith(t, manager.Options{Namespaces: []string{ns}, MetricsSource: "kubelet", KubeletThrottling: true, AllowResizePreemption: true})
	pc := highPriorityClass(t, ns, "tailor e2e: a service whose raise may preempt batch pods")
	busy := labelled(ns, "busy", app().Args("--listen=:8080", "--cpu=1500m", "--memory=8Mi").Requests("100m", "32Mi").Limits("200m", "64Mi"))
	busy.Spec.PriorityClassName = pc.Name
	busy = createRunningPod(t, busy)
	filler := fillCPU(t, ns, 0)

	start := time.Now()
	applyPolicy(t, c, ns, "busy", func(s *v1alpha1.TailorPolicySpec) {
		s.ResourcePolicy = &v1alpha1.ResourcePolicy{ContainerPolicies: []v1alpha1.ContainerPolicy{{
			ContainerName: "*", ControlledResources: []corev1.ResourceName{corev1.ResourceCPU},
			MaxAllowed: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("600m")},
		}}}
		s.Behavior = &v1alpha1.Behavior{ScaleUp: &v1alpha1.ScaleUpRules{Preemption: v1alpha1.ResizePreemptionLowerPriority}}
	})
	raised := waitPod(t, busy, 2*time.Minute, "busy raised in place once the scheduler preempted the filler", func(p *corev1.Pod) bool {
		return cpuRequestMillis(p) > 100 && !resizing(p)
	})
	recordConvergence(t, "full node, no room in place -> raise deferred -> filler preempted -> raise applied", time.Since(start))
	if raised.UID != busy.UID || raised.Status.ContainerStatuses[0].RestartCount != 0 {
		t.Errorf("busy replaced or restarted (uid %s, was %s; %d restarts)", raised.UID, busy.UID, raised.Status.ContainerStatuses[0].RestartCount)
	}
	err := wait.PollUntilContextTimeout(ctx, time.Second, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		f, err := clientset.CoreV1().Pods(ns).Get(ctx, filler.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		return err == nil && f.DeletionTimestamp != nil, err
	})
	if err != nil {
		t.Errorf("busy raised to %dm, but the filler the scheduler was to preempt is still there: %v\n%s", cpuRequestMillis(raised), err, explainNodeRoom())
	}
	if !tailorReasons(t, ns, busy.UID)[act.EventPreemptionExpected] {
		t.Errorf("no %s event on busy", act.EventPreemptionExpected)
	}
	evs, err := clientset.EventsV1().Events(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range evs.Items {
		if e.Reason == act.EventPreemptionExpected && !strings.Contains(e.Note, ns+"/"+filler.Name) {
			t.Errorf("PreemptionExpected names others than the filler: %q", e.Note)
		}
	}
}
