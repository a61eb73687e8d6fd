//go:build controller

package controller

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tailorhq/tailor/api/v1alpha1"
	policyctrl "github.com/tailorhq/tailor/internal/controller/policy"
	"github.com/tailorhq/tailor/test/builder"
)

// limitRange creates a Container-type LimitRange in the test's namespace.
func (e *env) limitRange(name string, item corev1.LimitRangeItem) {
	e.t.Helper()
	item.Type = corev1.LimitTypeContainer
	lr := &corev1.LimitRange{ObjectMeta: metav1.ObjectMeta{Namespace: e.ns, Name: name}, Spec: corev1.LimitRangeSpec{Limits: []corev1.LimitRangeItem{item}}}
	if err := apiClient.Create(e.ctx, lr); err != nil {
		e.t.Fatalf("create LimitRange %s: %v", name, err)
	}
}

// A boost and a raise never go past the namespace's LimitRange max: new
// pods are planned within it, and an in-place raise is capped at it, the
// status saying which LimitRange caps it (issue #23, finding 1).
func TestLimitRangeMaxCapsBoostAndRaise(t *testing.T) {
	e := newEnv(t, controllerOptions{})
	e.addNodeFrom(builder.Node("pool-"+e.ns).Allocatable("8", "16Gi").Ready(corev1.ConditionTrue).Label("pool", e.ns))
	e.limitRange("caps", corev1.LimitRangeItem{Max: builder.List("1500m", "")})
	factor := int32(300)
	e.deployment("web", func(s *v1alpha1.TailorPolicySpec) {
		s.StartupBoost = &v1alpha1.StartupBoost{FactorPercent: &factor}
	})
	e.sync("web")
	adm := e.getPolicy("web").Status.Admission
	if adm == nil || len(adm.Containers) != 1 {
		t.Fatalf("status.admission = %+v, want one container", adm)
	}
	// 3 x 500m is 1500m with a 3 limit: the limit is capped at the max
	// and the request is kept under it.
	c := adm.Containers[0]
	if lim := c.Limits.Cpu(); lim.String() != "1500m" {
		t.Errorf("new pods' cpu limit %s, want 1500m (LimitRange caps max); entry %+v", lim, c)
	}
	if req := c.Requests.Cpu(); req.Cmp(*c.Limits.Cpu()) > 0 {
		t.Errorf("new pods' cpu request %s above the limit %s", req, c.Limits.Cpu())
	}

	// In place: a throttled pod's raise stops at the max. The pod is the
	// Deployment's, through a ReplicaSet of it.
	e.pod("web", podOf(e.replicaSetOf("web"), "web-0"))
	e.source.SetThrottled(e.ns, "web-0", "app", 1.0, 200*mi, 0.9)
	e.syncs("web", 6)
	p := e.getPod("web-0")
	if got := limitOf(p, "app", corev1.ResourceCPU); got != "1500m" {
		t.Errorf("cpu limit after the raise %s, want 1500m (LimitRange caps max); events:%s", got, e.events)
	}
	resized := false
	for _, ev := range e.events.all() {
		if ev.object == "web-0" && ev.reason == policyctrl.EventResized {
			resized = true
			if !strings.Contains(ev.note, "LimitRange caps") {
				t.Errorf("the resize event does not say which LimitRange capped it: %q", ev.note)
			}
		}
	}
	if !resized {
		t.Errorf("web-0 was not raised at all; events:%s", e.events)
	}
}
