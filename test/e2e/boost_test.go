//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/wait"
	podutil "k8s.io/kubectl/pkg/util/podutils"

	"github.com/tailorhq/tailor/api/v1alpha1"
	"github.com/tailorhq/tailor/internal/actuator"
	"github.com/tailorhq/tailor/test/builder"
	"github.com/tailorhq/tailor/test/cluster"
)

// slowStarter is the load generator burning 3s of CPU time (on two
// threads) before its readiness probe passes: 15s at its 200m limit.
func slowStarter() *builder.ContainerWrapper {
	return app().Args("--listen=:8080", "--start-work=3s").Requests("100m", "64Mi").Limits("200m", "128Mi")
}

func readinessProbe(spec *corev1.PodSpec) {
	spec.Containers[0].ReadinessProbe = &corev1.Probe{
		ProbeHandler:  corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/healthz", Port: intstr.FromInt32(8080)}},
		PeriodSeconds: 1,
	}
}

// startOne scales the Deployment from 0 to 1 and returns its pod once
// Ready, with the time from the scale-up to Ready as the test saw it.
func startOne(t *testing.T, ns, name string) (*corev1.Pod, time.Duration) {
	t.Helper()
	ctx := context.Background()
	start := time.Now()
	if _, err := clientset.AppsV1().Deployments(ns).Patch(ctx, name, types.MergePatchType, []byte(`{"spec":{"replicas":1}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	var pod *corev1.Pod
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		list, err := clientset.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=" + name})
		if err != nil || len(list.Items) != 1 {
			return false, err
		}
		pod = &list.Items[0]
		return podutil.IsPodReady(pod), nil
	})
	if err != nil {
		t.Fatalf("%s: no Ready pod: %v", name, err)
	}
	return pod, time.Since(start)
}

// A slow starter (3s of CPU time before it is Ready, at a 200m limit) is
// started under a policy with a 4x startup boost for 10s after Ready: it is
// admitted at 400m/800m and its container runs at that size until Ready,
// and the boost is taken back in place no sooner than 10s after Ready (by
// the kubelet's and the apiserver's clocks, not the test's), with no
// restart, the cgroup's CPU quota back at the unboosted limit. How much
// sooner the boost makes a pod Ready than its template's size would is
// make bench-e2e's figure (startupBoost), measured over several trials; it
// is no gate on a shared 2-core node.
func TestStartupBoost(t *testing.T) {
	cluster.Quiet(t)
	ns := newNamespace(t)
	c := startManager(t, ns)
	installAdmission(t)
	ctx := context.Background()

	run := func(name string, boost *v1alpha1.StartupBoost) (*corev1.Pod, time.Duration, func(string) *corev1.Pod) {
		deployment(t, ns, name, 0, slowStarter(), readinessProbe)
		applyPolicy(t, c, ns, name, func(s *v1alpha1.TailorPolicySpec) {
			s.Selector = nil
			s.TargetRef = &v1alpha1.TargetRef{APIVersion: "apps/v1", Kind: "Deployment", Name: name}
			s.ResourcePolicy = &v1alpha1.ResourcePolicy{ContainerPolicies: []v1alpha1.ContainerPolicy{{
				ContainerName: "*", ControlledResources: []corev1.ResourceName{corev1.ResourceCPU},
			}}}
			s.StartupBoost = boost
			s.UpdatePolicy = &v1alpha1.UpdatePolicy{UpdateMode: v1alpha1.UpdateModeInPlace}
		})
		waitPolicy(t, c, ns, name, time.Minute, "the policy read, and any boost in status.admission", func(p *v1alpha1.TailorPolicy) bool {
			return p.Status.ObservedGeneration > 0 && (boost == nil || (p.Status.Admission != nil && p.Status.Admission.Boost != ""))
		})
		admitted := watchAdmitted(t, ns, name)
		pod, d := startOne(t, ns, name)
		return pod, d, admitted
	}

	boosted, fast, admitted := run("boosted", &v1alpha1.StartupBoost{FactorPercent: ptr(int32(400)), Duration: &metav1.Duration{Duration: 10 * time.Second}})
	t.Logf("time to Ready with a 4x startup boost: %s", fast.Round(100*time.Millisecond))

	created := admitted(boosted.Name)
	res := created.Spec.Containers[0].Resources
	if res.Requests.Cpu().String() != "400m" || res.Limits.Cpu().String() != "800m" {
		t.Errorf("boosted pod created with cpu %s/%s; want 400m/800m (the template's 100m/200m, 4x)", res.Requests.Cpu(), res.Limits.Cpu())
	}
	if got := created.Annotations[v1alpha1.BoostAnnotation]; got != "app=400m" {
		t.Errorf("boosted pod annotation %s=%q; want app=400m", v1alpha1.BoostAnnotation, got)
	}
	// The container started, and was first seen Ready, at the boosted
	// size the kubelet reports it runs at.
	if st := containerStatus(boosted, "app"); st == nil || st.Resources == nil ||
		st.Resources.Requests.Cpu().String() != "400m" || st.Resources.Limits.Cpu().String() != "800m" {
		t.Errorf("boosted pod Ready while running at %s, want cpu 400m/800m", mustJSON(st))
	}

	// Taken back in place once Ready for 10s.
	readySince := time.Now()
	after := waitPod(t, boosted, 90*time.Second, "the boost taken back", func(p *corev1.Pod) bool {
		return p.Spec.Containers[0].Resources.Requests.Cpu().MilliValue() < 400 && resizeSettled(p)
	})
	// Both times are whole seconds: the boost lent for 10s is taken back
	// at least 9 of them after the Ready condition's transition.
	if ready, back := readyTransition(after), resizedAt(after); ready.IsZero() || back.IsZero() || back.Sub(ready) < 9*time.Second {
		t.Errorf("boost taken back at %s, Ready since %s: the policy lends it for 10s after Ready", back.Format(time.TimeOnly), ready.Format(time.TimeOnly))
	}
	req, lim := after.Spec.Containers[0].Resources.Requests.Cpu(), after.Spec.Containers[0].Resources.Limits.Cpu()
	t.Logf("boost taken back %s after the pod was seen Ready: cpu %s/%s", time.Since(readySince).Round(time.Second), req, lim)
	if lim.MilliValue() != 2*req.MilliValue() {
		t.Errorf("cpu %s/%s after the boost: the template's 1:2 ratio is lost", req, lim)
	}
	if after.Status.ContainerStatuses[0].RestartCount != 0 {
		t.Errorf("container restarted %d times", after.Status.ContainerStatuses[0].RestartCount)
	}
	waitCgroupFollowsSpec(t, after, "app", "cpu", "cpu.cfs_quota_us", cfsQuota)
	// What it burnt while boosted was not learnt: no raise follows once
	// the kubelet's figures covering the boost have come and gone (its
	// cAdvisor figures span up to 20s): 15 syncs, 2s apart, see them go.
	holdsFor(t, ns, "boosted", 15, func(p *corev1.Pod) error {
		if cpu := p.Spec.Containers[0].Resources.Requests.Cpu(); cpu.MilliValue() >= 400 {
			return fmt.Errorf("cpu raised again to %s after the boost: the CPU burnt while starting was learnt", cpu)
		}
		return nil
	}, after)
	p := &v1alpha1.TailorPolicy{}
	if err := c.Get(ctx, types.NamespacedName{Namespace: ns, Name: "boosted"}, p); err != nil {
		t.Fatal(err)
	}
	if ready := apimeta.FindStatusCondition(p.Status.Conditions, v1alpha1.ConditionReady); ready == nil || strings.Contains(ready.Message, "not boosted") {
		t.Errorf("Ready condition %s", mustJSON(ready))
	}
}

// resizeSettled: the kubelet has applied the pod's spec (no resize
// pending or in progress).
func resizeSettled(p *corev1.Pod) bool {
	if p.Status.ObservedGeneration < p.Generation {
		return false
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodResizePending || c.Type == corev1.PodResizeInProgress {
			return false
		}
	}
	return true
}

// readyTransition is when p's Ready condition last changed, by the
// kubelet's clock; zero when it has none.
func readyTransition(p *corev1.Pod) time.Time {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.LastTransitionTime.Time
		}
	}
	return time.Time{}
}

// resizedAt is when tailor last resized p, by the apiserver's clock (its
// managed fields of the resize subresource); zero when it never did.
func resizedAt(p *corev1.Pod) time.Time {
	for _, mf := range p.ManagedFields {
		if mf.Manager == actuator.FieldManager && mf.Subresource == "resize" && mf.Time != nil {
			return mf.Time.Time
		}
	}
	return time.Time{}
}
