//go:build e2e

package e2e

import (
	"context"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/tailorhq/tailor/internal/cli/exit"
	"github.com/tailorhq/tailor/internal/featuregate"
	"github.com/tailorhq/tailor/internal/preemption"
	"github.com/tailorhq/tailor/test/cluster"
)

// Kubernetes 1.37's scheduler preemption for a deferred resize, on the real
// scheduler and kubelet with the gate on (hack/e2e.sh starts the cluster
// with it): a high-priority pod's raise on a node a default-priority pod
// fills. tailor resize names the filler as the scheduler's victim, does not
// send the resize without --allow-preemption, and with it the scheduler
// evicts the filler and the kubelet applies the raise in place: the victim
// tailor predicted is the one the scheduler chose.
func TestCLIPredictsPreemptionForADeferredResize(t *testing.T) {
	cluster.Quiet(t)
	ctx := context.Background()
	requirePreemptionGate(t)
	ns := newNamespace(t)
	pc := highPriorityClass(t, ns, "tailor e2e: a service whose raise may preempt batch pods")
	web := loadgenPod(ns, "web", app().Requests("100m", "32Mi").Limits("1", "64Mi"))
	web.Spec.PriorityClassName = pc.Name
	web = createRunningPod(t, web)
	filler := fillCPU(t, ns, 200)

	r, code, _ := tailor(t, "resize", "web", "-n", ns, "--requests", "cpu=500m", "--dry-run=client")
	p := r.Preemption
	if code != exit.OK || r.Predicted != "Deferred" || p == nil || p.Gate != "on" || p.Reason != string(preemption.Preempts) ||
		len(p.Victims) != 1 || p.Victims[0].Name != filler.Name {
		t.Fatalf("prediction: exit %d, %s, preemption %+v; want Deferred, the gate on, and the filler %s the one victim", code, r.Predicted, p, filler.Name)
	}

	// Not sent without --allow-preemption.
	_, code, _ = tailor(t, "resize", "web", "-n", ns, "--requests", "cpu=500m")
	if code != exit.Refused {
		t.Errorf("without --allow-preemption: exit %d, want %d (not sent)", code, exit.Refused)
	}
	fresh, err := clientset.CoreV1().Pods(ns).Get(ctx, web.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if fresh.Generation != web.Generation {
		t.Fatalf("a resize not sent changed the pod: generation %d -> %d", web.Generation, fresh.Generation)
	}

	// Sent: the scheduler makes the room the prediction said, and the
	// kubelet applies the raise.
	r, code, _ = tailor(t, "resize", "web", "-n", ns, "--requests", "cpu=500m", "--allow-preemption", "--timeout", "90s")
	wantDone(t, "raise 100m -> 500m, the filler preempted", r, code)
	err = wait.PollUntilContextTimeout(ctx, time.Second, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		f, err := clientset.CoreV1().Pods(ns).Get(ctx, filler.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		return err == nil && f.DeletionTimestamp != nil, err
	})
	if err != nil {
		t.Errorf("the raise was applied, but the filler the scheduler was to preempt is still there: %v\n%s", err, explainNodeRoom())
	}
}

// requirePreemptionGate fails the test on a cluster without Kubernetes
// 1.37's scheduler preemption for resizes.
func requirePreemptionGate(t *testing.T) {
	t.Helper()
	if g := featuregate.Read(context.Background(), clientset.Discovery().RESTClient(), preemption.Gate); !g.Known || !g.Enabled {
		t.Fatalf("the cluster runs without feature gate %s (%s): hack/e2e.sh starts it with the gate; a cluster of your own needs FEATURE_GATES=%s=true hack/cluster.sh up",
			preemption.Gate, g.Why, preemption.Gate)
	}
}
