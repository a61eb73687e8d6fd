//go:build controller

package controller

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tailorhq/tailor/api/v1alpha1"
	"github.com/tailorhq/tailor/internal/controller/policy/act"
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
		if ev.object == "web-0" && ev.reason == act.EventResized {
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

// A LimitRange or a quota's limits created, changed or deleted re-plan the
// namespace's policies at once, not at their next sync: an admission entry
// planned under the old rules would have the apiserver refuse the
// rollout's new pods until then. The sync period here is an hour, so only
// the watch can bring the policy back.
func TestNamespaceRulesChangeReplans(t *testing.T) {
	e := newEnv(t, controllerOptions{})
	newManagedController(t, e.controllerDeps(), controllerOptions{SyncPeriod: time.Hour})
	e.addNodeFrom(builder.Node("pool-"+e.ns).Allocatable("8", "16Gi").Ready(corev1.ConditionTrue).Label("pool", e.ns))
	factor := int32(300)
	e.deployment("web", func(s *v1alpha1.TailorPolicySpec) {
		s.StartupBoost = &v1alpha1.StartupBoost{FactorPercent: &factor}
	})
	// The template's 500m/1 boosted 3x; "" when new pods start at their
	// template's size.
	entryLimit := func(step, want string) {
		t.Helper()
		var got string
		err := wait.PollUntilContextTimeout(e.ctx, 50*time.Millisecond, 2*time.Minute, true, func(context.Context) (bool, error) {
			got = ""
			if a := e.getPolicy("web").Status.Admission; a != nil && len(a.Containers) == 1 {
				got = a.Containers[0].Limits.Cpu().String()
			}
			return got == want, nil
		})
		if err != nil {
			t.Fatalf("%s: new pods' cpu limit %q, want %s: %+v", step, got, want, e.getPolicy("web").Status.Admission)
		}
	}
	entryLimit("first sync", "3")

	e.limitRange("caps", corev1.LimitRangeItem{Max: builder.List("1500m", "")})
	entryLimit("LimitRange created", "1500m")
	lr := &corev1.LimitRange{}
	if err := apiClient.Get(e.ctx, client.ObjectKey{Namespace: e.ns, Name: "caps"}, lr); err != nil {
		t.Fatal(err)
	}
	lr.Spec.Limits[0].Max = builder.List("2", "")
	if err := apiClient.Update(e.ctx, lr); err != nil {
		t.Fatal(err)
	}
	entryLimit("LimitRange raised", "2")
	if err := apiClient.Delete(e.ctx, lr); err != nil {
		t.Fatal(err)
	}
	entryLimit("LimitRange deleted", "3")

	quota := &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Namespace: e.ns, Name: "cpu"},
		Spec: corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{corev1.ResourceLimitsCPU: resource.MustParse("2500m")}}}
	// The quota is there, but the apiserver counts nothing against it
	// before its status.hard is computed: neither does tailor.
	if err := apiClient.Create(e.ctx, quota); err != nil {
		t.Fatal(err)
	}
	// What the quota controller (not run here) does next: status.hard from
	// the spec, which the apiserver's quota check reads.
	quota.Status = corev1.ResourceQuotaStatus{Hard: quota.Spec.Hard, Used: corev1.ResourceList{corev1.ResourceLimitsCPU: resource.MustParse("0")}}
	if err := apiClient.Status().Update(e.ctx, quota); err != nil {
		t.Fatal(err)
	}
	// 3 over a quota of 2500m: the boost would have the pod refused, so
	// new pods start as their template says, and the entry says why.
	entryLimit("quota's limits computed", "")
	if a := e.getPolicy("web").Status.Admission; !strings.Contains(a.Message, "ResourceQuota/cpu") {
		t.Errorf("the entry does not name the quota that holds it: %q", a.Message)
	}
}
