//go:build controller

package controller

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/tailorhq/tailor/api/v1alpha1"
	"github.com/tailorhq/tailor/test/builder"
)

// idleReplicas makes n idle pods of one workload (200m/512Mi requested,
// 400m/1Gi limits, using 10m and 30Mi) on a node big enough for them, and a
// policy that resizes one pod at a time with a scale-down stabilization
// window of window.
func idleReplicas(t *testing.T, n int, window time.Duration) *env {
	e := newEnv(t, controllerOptions{})
	big := e.addNode(e.node+"-big", "64", "128Gi")
	for i := range n {
		name := fmt.Sprintf("idle-%03d", i)
		e.pod("idle", builder.Pod(name).Node(big).Container(builder.Container("app").Requests("200m", "512Mi").Limits("400m", "1Gi")))
		e.source.Set(e.ns, name, "app", 0.01, 30*mi)
	}
	e.policy("idle", func(s *v1alpha1.TailorPolicySpec) {
		s.Behavior = &v1alpha1.Behavior{
			MaxConcurrentResizes: ptr.To[int32](1),
			ScaleDown:            &v1alpha1.ScaleDownRules{StabilizationWindow: &metav1.Duration{Duration: window}},
		}
	})
	return e
}

// syncsToLowerAll runs syncs until every pod of the policy has been resized
// once (with idle usage, only lowering is possible), or limit syncs; it
// returns the syncs run and how many pods were lowered.
func syncsToLowerAll(e *env, n, limit int) (int, int) {
	e.t.Helper()
	lowered := 0
	for s := 1; s <= limit; s++ {
		e.sync("idle")
		var pods corev1.PodList
		if err := apiClient.List(e.ctx, &pods, client.InNamespace(e.ns)); err != nil {
			e.t.Fatalf("list pods: %v", err)
		}
		lowered = 0
		for _, p := range pods.Items {
			if p.Generation > 1 {
				lowered++
			}
		}
		if lowered == n {
			return s, lowered
		}
	}
	return limit, lowered
}

// n idle replicas with maxConcurrentResizes 1 are lowered one per sync once
// their stabilization window has passed: a pod held for its turn keeps its
// place. The first controller restarted a held pod's window and took 413
// syncs for these 30 pods; the least possible is one window plus one sync
// per pod (36), and the check allows 10% over it.
// TestHundredIdleReplicasLoweredWithinOneWindow holds the same at 100 pods.
func TestManyIdleReplicasOneAtATime(t *testing.T) {
	const n = 30
	window := time.Minute
	windowSyncs := int(window / syncPeriod)
	e := idleReplicas(t, n, window)
	limit := (windowSyncs + n) * 11 / 10
	syncs, lowered := syncsToLowerAll(e, n, limit)
	t.Logf("%d idle replicas, maxConcurrentResizes 1, stabilization %s (%d syncs of %s): all lowered after %d syncs (%s); the least possible is about %d",
		n, window, windowSyncs, syncPeriod, syncs, time.Duration(syncs)*syncPeriod, windowSyncs+n)
	if lowered < n {
		t.Errorf("only %d of %d replicas lowered after %d syncs", lowered, n, syncs)
	}
}

// Finding 4: n idle replicas with maxConcurrentResizes 1 must all be
// lowered within about one stabilization window plus n resize round trips
// (here one sync each: the simulated kubelet answers within the sync).
func TestHundredIdleReplicasLoweredWithinOneWindow(t *testing.T) {
	const n = 100
	window := 2 * time.Minute
	windowSyncs := int(window / syncPeriod)
	e := idleReplicas(t, n, window)
	want := windowSyncs + 2 + n
	limit := want + want/10
	syncs, lowered := syncsToLowerAll(e, n, limit)
	t.Logf("%d idle replicas: %d lowered after %d syncs (want all within %d)", n, lowered, syncs, limit)
	if lowered < n {
		t.Errorf("only %d of %d replicas lowered after %d syncs (one %s window + %d round trips + 10%%)", lowered, n, syncs, window, n)
	}
}

// A targetRef policy reads its target's selector from the apiserver once a
// minute, not at every sync (one GET per policy per sync at 1,000
// policies), and still notices the target deleted.
func TestTargetReadOncePerMinute(t *testing.T) {
	var reads atomic.Int32
	c := interceptor.NewClient(apiClient, interceptor.Funcs{
		Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			if u, ok := obj.(*unstructured.Unstructured); ok && u.GetKind() == "Deployment" {
				reads.Add(1)
			}
			return c.Get(ctx, key, obj, opts...)
		},
	})
	e := newEnv(t, controllerOptions{Client: c})
	labels := map[string]string{"app": "web"}
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: e.ns, Name: "web"},
		Spec: appsv1.DeploymentSpec{
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: builder.DefaultImage}}},
			},
		},
	}
	if err := apiClient.Create(e.ctx, d); err != nil {
		t.Fatalf("create deployment: %v", err)
	}
	// The Deployment's pod: owned through a ReplicaSet of it.
	rs := &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: e.ns, Name: "web-5d9c",
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(d, appsv1.SchemeGroupVersion.WithKind("Deployment"))}},
		Spec: appsv1.ReplicaSetSpec{Selector: d.Spec.Selector, Template: d.Spec.Template},
	}
	if err := apiClient.Create(e.ctx, rs); err != nil {
		t.Fatalf("create replicaset: %v", err)
	}
	e.pod("web", webPod("web-0").Owner("ReplicaSet", rs.Name, string(rs.UID)))
	e.policy("web", targetRef("web"))
	e.source.SetThrottled(e.ns, "web-0", "app", 1.0, 200*mi, 0.5)
	e.syncs("web", 12)
	// 12 syncs over 120s: the first read and one per minute after it.
	if n := reads.Load(); n < 2 || n > 3 {
		t.Errorf("target read %d times in 12 syncs over 2 minutes, want 2 or 3", n)
	}
	if p := e.getPod("web-0"); p.Generation < 2 {
		t.Errorf("pod not resized through its target's selector (generation %d)", p.Generation)
	}

	if err := apiClient.Delete(e.ctx, d); err != nil {
		t.Fatalf("delete deployment: %v", err)
	}
	e.syncs("web", 6)
	r := condition(e.getPolicy("web"), v1alpha1.ConditionReady)
	if r == nil || r.Reason != v1alpha1.ReasonTargetNotFound {
		t.Errorf("a minute after its target was deleted, Ready = %+v, want reason %s", r, v1alpha1.ReasonTargetNotFound)
	}
}
