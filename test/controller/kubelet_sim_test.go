//go:build controller

package controller

import (
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tailorhq/tailor/internal/actuator"
	"github.com/tailorhq/tailor/test/builder"
)

// The simulated kubelet's answers read, through actuator.Observe (what the
// controller reads them with), as the real kubelet's do; and the envtest
// apiserver takes resizes of a pod bound to a node.
func TestSimulatedKubeletAnswers(t *testing.T) {
	e := newEnv(t, controllerOptions{})
	small := e.addNode(e.node+"-small", "2", "4Gi")
	resize := func(name, cpu string) {
		t.Helper()
		patch := fmt.Sprintf(`{"spec":{"containers":[{"name":"app","resources":{"requests":{"cpu":%q},"limits":{"cpu":%q}}}]}}`, cpu, cpu)
		p := e.getPod(name)
		if err := apiClient.SubResource("resize").Patch(e.ctx, p, client.RawPatch("application/strategic-merge-patch+json", []byte(patch))); err != nil {
			t.Fatalf("resize %s to %s cpu: %v", name, cpu, err)
		}
	}
	observe := func(name string, want actuator.State) {
		t.Helper()
		e.kubelet.Sync(t, e.ns)
		p := e.getPod(name)
		obs := actuator.Observe(p)
		if obs.State != want || obs.Generation != p.Generation {
			t.Errorf("pod %s: observed %s (generation %d, %s), want %s at generation %d; conditions %s",
				name, obs.State, obs.Generation, obs.Message, want, p.Generation, conditionsText(p))
		}
	}
	e.pod("sim", builder.Pod("a").Node(small).Container(builder.Container("app").Requests("500m", "256Mi").Limits("500m", "256Mi")))
	e.pod("sim", builder.Pod("b").Node(small).Container(builder.Container("app").Requests("1", "256Mi").Limits("1", "256Mi")))

	resize("a", "800m")
	observe("a", actuator.StateDone)
	if st := containerStatus(e.getPod("a"), "app"); st.Resources.Limits.Cpu().String() != "800m" || st.AllocatedResources.Cpu().String() != "800m" {
		t.Errorf("after a Done resize: status resources %v, allocated %v; want 800m", st.Resources, st.AllocatedResources)
	}

	// Fits the 2-core node, not beside b's 1 core.
	resize("a", "1500m")
	observe("a", actuator.StateDeferred)
	if st := containerStatus(e.getPod("a"), "app"); st.AllocatedResources.Cpu().String() != "800m" {
		t.Errorf("a deferred resize changed the allocation to %s", st.AllocatedResources.Cpu().String())
	}
	// The kubelet retries a deferred resize once room appears.
	e.deletePod("b")
	observe("a", actuator.StateDone)

	// The apiserver (1.36+) refuses a resize beyond the node's allocatable
	// itself, so the kubelet finds one Infeasible only when the node shrank
	// after the apiserver admitted it.
	resize("a", "1800m")
	n := &corev1.Node{}
	if err := apiClient.Get(e.ctx, client.ObjectKey{Name: small}, n); err != nil {
		t.Fatalf("get node: %v", err)
	}
	n.Status.Allocatable[corev1.ResourceCPU] = resource.MustParse("1600m")
	if err := apiClient.Status().Update(e.ctx, n); err != nil {
		t.Fatalf("shrink node: %v", err)
	}
	observe("a", actuator.StateInfeasible)

	e.kubelet.Actuate = false
	resize("a", "1")
	observe("a", actuator.StateInProgress)
	e.kubelet.Actuate = true
	observe("a", actuator.StateDone)
}
