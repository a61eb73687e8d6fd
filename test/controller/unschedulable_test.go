//go:build controller

package controller

import (
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tailorhq/tailor/api/v1alpha1"
	policyctrl "github.com/tailorhq/tailor/internal/controller/policy"
	"github.com/tailorhq/tailor/internal/controller/policy/act"
	"github.com/tailorhq/tailor/test/builder"
)

// deployment creates Deployment name whose pods (app=name) land only on
// nodes labelled pool=<the test's namespace>, with one container app at
// 500m/256Mi (limits 1/512Mi), and a targetRef policy of it.
func (e *env) deployment(name string, mutate func(*v1alpha1.TailorPolicySpec)) {
	e.t.Helper()
	selector, template := e.poolTemplate(name)
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: e.ns, Name: name},
		Spec:       appsv1.DeploymentSpec{Selector: selector, Template: template},
	}
	if err := apiClient.Create(e.ctx, d); err != nil {
		e.t.Fatalf("create deployment: %v", err)
	}
	e.policy(name, func(s *v1alpha1.TailorPolicySpec) {
		s.Selector = nil
		s.TargetRef = &v1alpha1.TargetRef{APIVersion: "apps/v1", Kind: "Deployment", Name: name}
		if mutate != nil {
			mutate(s)
		}
	})
}

// poolTemplate is the selector and pod template of a workload name whose
// pods (app=name) land only on nodes labelled pool=<the test's namespace>,
// with one container app at 500m/256Mi (limits 1/512Mi).
func (e *env) poolTemplate(name string) (*metav1.LabelSelector, corev1.PodTemplateSpec) {
	labels := map[string]string{"app": name}
	return &metav1.LabelSelector{MatchLabels: labels}, corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: labels},
		Spec: corev1.PodSpec{
			NodeSelector: map[string]string{"pool": e.ns},
			Containers:   []corev1.Container{*builder.Container("app").Requests("500m", "256Mi").Limits("1", "512Mi").Obj()},
		},
	}
}

// unschedulablePod creates a pod of rs (labelled app=app) that the
// scheduler found no room for ago, at cpu, as tailor's admission sized it
// (marked v1alpha1.AdmittedAnnotation).
func (e *env) unschedulablePod(rs *appsv1.ReplicaSet, app, name, cpu string, ago time.Duration) {
	e.t.Helper()
	e.pendingPod(rs, app, name, cpu, ago, true)
}

// pendingPod is unschedulablePod, marked as tailor-sized or not.
func (e *env) pendingPod(rs *appsv1.ReplicaSet, app, name, cpu string, ago time.Duration, admitted bool) {
	e.t.Helper()
	p := builder.Pod(name).Namespace(e.ns).Label("app", app).Owner("ReplicaSet", rs.Name, string(rs.UID)).
		Container(builder.Container("app").Requests(cpu, "256Mi").Limits(cpu, "512Mi")).Obj()
	if admitted {
		metav1.SetMetaDataAnnotation(&p.ObjectMeta, v1alpha1.AdmittedAnnotation, app+": app cpu "+cpu)
	}
	if err := e.writer.Create(e.ctx, p); err != nil {
		e.t.Fatalf("create pod %s: %v", name, err)
	}
	p.Status = corev1.PodStatus{Phase: corev1.PodPending, Conditions: []corev1.PodCondition{{
		Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable,
		Message: "0/1 nodes are available: 1 Insufficient cpu.", LastTransitionTime: metav1.NewTime(e.clock.Now().Add(-ago)),
	}}}
	if err := apiClient.Status().Update(e.ctx, p); err != nil {
		e.t.Fatalf("set status of pod %s: %v", name, err)
	}
}

// A startup boost (or a recommendation) larger than any node the workload
// may land on is cut to the largest at admission: no new pod is created that
// no node could hold (issue #23, finding 2).
func TestAdmissionEntryFitsTheLargestNode(t *testing.T) {
	e := newEnv(t, controllerOptions{})
	e.addNodeFrom(builder.Node("pool-"+e.ns).Allocatable("4", "8Gi").Ready(corev1.ConditionTrue).Label("pool", e.ns))
	factor := int32(1000)
	e.deployment("web", func(s *v1alpha1.TailorPolicySpec) {
		s.StartupBoost = &v1alpha1.StartupBoost{FactorPercent: &factor}
	})
	e.sync("web")
	adm := e.getPolicy("web").Status.Admission
	if adm == nil || len(adm.Containers) != 1 {
		t.Fatalf("status.admission = %+v, want one container", adm)
	}
	// 10 x 500m is 5 cores; the only node the pods may land on has 4.
	if got := adm.Containers[0].Requests.Cpu(); got.String() != "4" {
		t.Errorf("new pods' cpu request %s, want 4 (the largest node's allocatable); summary %q", got, adm.Summary)
	}
}

// A pod tailor sized above its template that no node has room for is
// replaced once new pods are created at a size that may fit: the entry is
// planned against the nodes' free room, and the pod is deleted for its
// controller to create anew, with an event (issue #23, finding 2). A pod at
// its template's size is left alone: it would be stuck without tailor.
func TestUnschedulablePodTailorSizedIsReplaced(t *testing.T) {
	e := newEnv(t, controllerOptions{})
	e.addNodeFrom(builder.Node("pool-"+e.ns).Allocatable("4", "8Gi").Ready(corev1.ConditionTrue).Label("pool", e.ns))
	e.deployment("web", nil)
	rs := e.replicaSetOf("web")
	e.unschedulablePod(rs, "web", "web-big", "3", time.Minute)
	e.unschedulablePod(rs, "web", "web-plain", "500m", time.Minute)
	// As large, but made so by its own template (an older ReplicaSet's,
	// mid-rollout), not by tailor: not tailor's to replace.
	e.pendingPod(rs, "web", "web-old", "3", time.Minute, false)
	// Another workload's pod, with the same labels: not this policy's.
	e.unschedulablePod(e.ownedDeployment("canary", map[string]string{"app": "web", "track": "canary"}), "web", "canary-big", "3", time.Minute)

	e.sync("web")
	if got := e.getPolicy("web"); condition(got, v1alpha1.ConditionResizesBlocked).Reason != act.EventUnschedulable {
		t.Errorf("ResizesBlocked %+v, want reason %s", condition(got, v1alpha1.ConditionResizesBlocked), act.EventUnschedulable)
	}
	// The replacement waits for the entry to settle in the admission
	// policy's informer: not deleted on the sync that finds it due.
	if err := apiClient.Get(e.ctx, client.ObjectKey{Namespace: e.ns, Name: "web-big"}, &corev1.Pod{}); err != nil {
		t.Fatalf("web-big deleted before the entry settled: %v", err)
	}
	e.clock.Step(2 * policyctrl.AdmissionSettle)
	e.reconcile("web")
	err := apiClient.Get(e.ctx, client.ObjectKey{Namespace: e.ns, Name: "web-big"}, &corev1.Pod{})
	if !apierrors.IsNotFound(err) {
		t.Errorf("web-big, sized above its template and unschedulable, was not replaced: %v; events:%s", err, e.events)
	}
	if n := e.events.count("web-big", act.EventUnschedulable); n != 1 {
		t.Errorf("%d %s events on web-big, want 1:%s", n, act.EventUnschedulable, e.events)
	}
	if err := apiClient.Get(e.ctx, client.ObjectKey{Namespace: e.ns, Name: "web-plain"}, &corev1.Pod{}); err != nil {
		t.Errorf("web-plain, at its template's size, was deleted: %v", err)
	}
	if err := apiClient.Get(e.ctx, client.ObjectKey{Namespace: e.ns, Name: "web-old"}, &corev1.Pod{}); err != nil {
		t.Errorf("web-old, which tailor did not size, was deleted: %v", err)
	}
	if err := apiClient.Get(e.ctx, client.ObjectKey{Namespace: e.ns, Name: "canary-big"}, &corev1.Pod{}); err != nil {
		t.Errorf("canary-big, another Deployment's pod, was deleted by web's policy: %v", err)
	}
}

// A DaemonSet's new pod returns to the node it replaces one on: its
// admission entry must fit that node's free room beside everything but
// its own pod, not merely the largest node (issue #23, finding 2).
func TestDaemonSetEntryFitsItsNodesFreeRoom(t *testing.T) {
	e := newEnv(t, controllerOptions{})
	node := e.addNodeFrom(builder.Node("pool-"+e.ns).Allocatable("4", "8Gi").Ready(corev1.ConditionTrue).Label("pool", e.ns))
	selector, template := e.poolTemplate("agent")
	ds := &appsv1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: e.ns, Name: "agent"},
		Spec:       appsv1.DaemonSetSpec{Selector: selector, Template: template},
	}
	if err := apiClient.Create(e.ctx, ds); err != nil {
		t.Fatalf("create daemonset: %v", err)
	}
	// Its pod on the node, and another workload's that takes 2500m of the
	// node's 4: the replacement has 1500m, its own pod's share included.
	e.pod("agent", builder.Pod("agent-0").Node(node).Owner("DaemonSet", ds.Name, string(ds.UID)).
		Container(builder.Container("app").Requests("500m", "256Mi").Limits("1", "512Mi")))
	e.pod("other", builder.Pod("other-0").Node(node).Container(builder.Container("app").Requests("2500m", "1Gi").Limits("2500m", "1Gi")))
	factor := int32(1000)
	e.policy("agent", func(s *v1alpha1.TailorPolicySpec) {
		s.Selector = nil
		s.TargetRef = &v1alpha1.TargetRef{APIVersion: "apps/v1", Kind: "DaemonSet", Name: "agent"}
		s.StartupBoost = &v1alpha1.StartupBoost{FactorPercent: &factor}
	})
	e.sync("agent")
	adm := e.getPolicy("agent").Status.Admission
	if adm == nil || len(adm.Containers) != 1 {
		t.Fatalf("status.admission = %+v, want one container", adm)
	}
	// 10 x 500m is 5 cores; the largest node has 4, this one 1500m free.
	if got := adm.Containers[0].Requests.Cpu(); got.Cmp(resource.MustParse("1500m")) > 0 {
		t.Errorf("new pods' cpu request %s, want at most 1500m (the free room of the node the DaemonSet's pod returns to); summary %q", got, adm.Summary)
	}
}
