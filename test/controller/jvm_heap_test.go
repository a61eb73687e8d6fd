//go:build controller

package controller

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/tailorhq/tailor/api/v1alpha1"
	"github.com/tailorhq/tailor/internal/controller/policy/act"
	"github.com/tailorhq/tailor/test/builder"
)

// javaPod is pod name of app (java -Xmx256m; 1Gi/2Gi memory, far above
// the 384Mi its heap may reach), idle at 150Mi.
func (e *env) javaPod(app, name string) {
	e.t.Helper()
	e.pod(app, builder.Pod(name).Container(builder.Container("app").Command("java", "-Xmx256m", "-jar", "/app.jar").
		Requests("500m", "1Gi").Limits("1", "2Gi")))
	e.source.Set(e.ns, name, "app", 0.2, 150*mi)
}

// A JVM's memory above its heap's reach is said where tailor leaves it:
// in status in every mode (Off included, which sends no events), with an
// event on the pod where tailor sizes it; where tailor lowers the limit to
// the reach itself, nothing is advised.
func TestJVMMemoryWastedIsSaid(t *testing.T) {
	e := newEnv(t, controllerOptions{})
	e.javaPod("off", "off-0")
	e.policy("off", func(s *v1alpha1.TailorPolicySpec) {
		s.UpdatePolicy = &v1alpha1.UpdatePolicy{UpdateMode: v1alpha1.UpdateModeOff}
	})
	e.javaPod("reqonly", "reqonly-0")
	e.policy("reqonly", func(s *v1alpha1.TailorPolicySpec) {
		s.ResourcePolicy = &v1alpha1.ResourcePolicy{ContainerPolicies: []v1alpha1.ContainerPolicy{{
			ContainerName: "*", ControlledValues: ptr.To(v1alpha1.ControlledValuesRequestsOnly)}}}
	})
	e.javaPod("sized", "sized-0")
	e.policy("sized", nil)
	e.pod("plain", builder.Pod("plain-0").Container(builder.Container("app").Command("/server").Requests("500m", "1Gi").Limits("1", "2Gi")))
	e.source.Set(e.ns, "plain-0", "app", 0.2, 150*mi)
	e.policy("plain", nil)
	// Until sized-0's limit has come down, and a sync more; at most an
	// hour.
	lowered := 0
	for i := 0; i < 360 && lowered < 2; i++ {
		for _, p := range []string{"off", "reqonly", "sized", "plain"} {
			e.clock.Step(syncPeriod / 4)
			e.reconcile(p)
			e.kubelet.Sync(e.t, e.ns)
		}
		if limitOf(e.getPod("sized-0"), "app", corev1.ResourceMemory) != "2Gi" {
			lowered++
		}
	}
	t.Logf("sized-0's limit came down at +%s", e.elapsed())

	advised := func(policy string) *metav1.Condition {
		return condition(e.getPolicy(policy), v1alpha1.ConditionJVMHeapRestartAdvised)
	}
	for _, p := range []string{"off", "reqonly"} {
		c := advised(p)
		if c == nil || c.Status != metav1.ConditionTrue || c.Reason != "LimitAboveHeapReach" ||
			!strings.Contains(c.Message, "container app (pod "+p+"-0, 1 of 1 pods): memory limit 2Gi is 1664Mi above the JVM's heap's reach 384Mi") ||
			!strings.Contains(c.Message, "a restart with -Xmx1587m would") {
			t.Errorf("policy %s: %s condition %+v", p, v1alpha1.ConditionJVMHeapRestartAdvised, c)
		}
	}
	if got := limitOf(e.getPod("reqonly-0"), "app", corev1.ResourceMemory); got != "2Gi" {
		t.Errorf("RequestsOnly moved the limit to %s", got)
	}
	if n := e.events.count("reqonly-0", act.EventJVMMemoryWasted); n != 1 {
		t.Errorf("%d %s events on reqonly-0, want 1 (once while it stands):%s", n, act.EventJVMMemoryWasted, e.events)
	}
	if n := e.events.count("off-0", act.EventJVMMemoryWasted); n != 0 {
		t.Errorf("%d %s events on off-0 in mode Off", n, act.EventJVMMemoryWasted)
	}
	// Sized in place, the limit comes down, not below the heap's reach,
	// and what is left above it is not worth a restart.
	lim := e.getPod("sized-0").Spec.Containers[0].Resources.Limits[corev1.ResourceMemory]
	if lim.Cmp(resource.MustParse("384Mi")) < 0 || lim.Cmp(resource.MustParse("2Gi")) >= 0 {
		t.Errorf("sized-0's limit %s: want it lowered, not under the 384Mi reach", lim.String())
	}
	if c := advised("sized"); c == nil || c.Status != metav1.ConditionFalse || c.Reason != "HeapFitsLimit" {
		t.Errorf("policy sized: %+v; want False, HeapFitsLimit", c)
	}
	if n := e.events.count("sized-0", act.EventJVMMemoryWasted); n != 0 {
		t.Errorf("%d %s events on sized-0, whose limit tailor lowers itself:%s", n, act.EventJVMMemoryWasted, e.events)
	}
	// No JVM, no condition.
	if c := advised("plain"); c != nil {
		t.Errorf("policy plain, with no JVM: %+v", c)
	}
}
