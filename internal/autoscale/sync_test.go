package autoscale_test

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/tailorhq/tailor/api/v1alpha1"
	"github.com/tailorhq/tailor/internal/autoscale"
	"github.com/tailorhq/tailor/internal/autoscale/fleet"
	"github.com/tailorhq/tailor/internal/autoscale/newpods"
	"github.com/tailorhq/tailor/internal/nsrules"
	"github.com/tailorhq/tailor/internal/podchange"
	"github.com/tailorhq/tailor/internal/resize"
	"github.com/tailorhq/tailor/test/builder"
)

// TestDecideSyncStuck: an unschedulable pod tailor sized is replaced once
// it has been due for Settle, never in mode Off or when new pods are not
// sized at admission; the next sync's timers come with the decision.
func TestDecideSyncStuck(t *testing.T) {
	now := time.Unix(10_000, 0)
	const settle = time.Second
	stuck := builder.Pod("a").UID("a").Container(builder.Container("app").Requests("3", "256Mi")).Obj()
	metav1.SetMetaDataAnnotation(&stuck.ObjectMeta, v1alpha1.AdmittedAnnotation, "web: app cpu 500m->3")
	stuck.Status.Phase = corev1.PodPending
	stuck.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse,
		Reason: corev1.PodReasonUnschedulable, LastTransitionTime: metav1.NewTime(now.Add(-time.Minute))}}
	tmpl := &corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{*builder.Container("app").Requests("500m", "256Mi").Obj()}}}
	target := &v1alpha1.TargetRef{APIVersion: "apps/v1", Kind: "Deployment", Name: "web"}
	type step struct {
		Pod string
		Due bool
	}
	off, noCreate := v1alpha1.UpdateModeOff, false
	cases := map[string]struct {
		mode      *v1alpha1.UpdateMode
		applyOff  bool
		seen      map[types.UID]time.Time
		wantSteps []step
		wantSeen  map[types.UID]time.Time
		wantRetry time.Duration
	}{
		"first seen due: waits Settle": {
			wantSteps: []step{{"a", false}}, wantSeen: map[types.UID]time.Time{"a": now}, wantRetry: settle,
		},
		"due for Settle: replaced": {
			seen:      map[types.UID]time.Time{"a": now.Add(-settle)},
			wantSteps: []step{{"a", true}}, wantSeen: map[types.UID]time.Time{"a": now.Add(-settle)},
		},
		"mode Off: nothing judged, timers unchanged": {mode: &off},
		"new pods not sized at admission: nothing judged, timers unchanged": {
			applyOff: true, seen: map[types.UID]time.Time{"a": now},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			spec := &v1alpha1.TailorPolicySpec{TargetRef: target}
			if tc.mode != nil || tc.applyOff {
				spec.UpdatePolicy = &v1alpha1.UpdatePolicy{}
				if tc.mode != nil {
					spec.UpdatePolicy.UpdateMode = *tc.mode
				}
				if tc.applyOff {
					spec.UpdatePolicy.ApplyOnCreate = &noCreate
				}
			}
			d, err := decide(autoscale.SyncInput{
				PolicyInput: fleet.PolicyInput{Spec: spec, Now: now},
				Unbound:     []*corev1.Pod{stuck}, Template: tmpl, StuckSeen: tc.seen, Settle: settle,
			})
			if err != nil {
				t.Fatal(err)
			}
			var steps []step
			for _, s := range d.Stuck {
				steps = append(steps, step{s.Pod.Name, s.Due})
			}
			if diff := cmp.Diff(tc.wantSteps, steps); diff != "" {
				t.Errorf("stuck (-want,+got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantSeen, d.StuckSeen); diff != "" {
				t.Errorf("stuck seen (-want,+got):\n%s", diff)
			}
			if d.StuckRetry != tc.wantRetry {
				t.Errorf("retry %s, want %s", d.StuckRetry, tc.wantRetry)
			}
		})
	}
}

// TestDecideSyncSettledPods: a pod with nothing short of its node's room
// settles (and its pending recreation entry comes down unless it waits out
// minResizeInterval); in mode Off nothing settles, as nothing is acted on.
func TestDecideSyncSettledPods(t *testing.T) {
	now := time.Unix(10_000, 0)
	p := builder.Pod("a").UID("a").Node("n").Container(builder.Container("app").Requests("100m", "128Mi")).Running().Obj()
	off := v1alpha1.UpdateModeOff
	cases := map[string]struct {
		mode *v1alpha1.UpdateMode
		want []string
	}{
		"in place": {want: []string{"a"}},
		"mode Off": {mode: &off},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			spec := &v1alpha1.TailorPolicySpec{}
			if tc.mode != nil {
				spec.UpdatePolicy = &v1alpha1.UpdatePolicy{UpdateMode: *tc.mode}
			}
			d, err := decide(autoscale.SyncInput{PolicyInput: fleet.PolicyInput{
				Spec: spec, Now: now, Pods: []fleet.PodInput{{Pod: p}},
			}})
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, s := range d.Settled {
				got = append(got, s.Pod.Name)
				if !s.DropEntry {
					t.Errorf("pod %s: entry kept, want dropped", s.Pod.Name)
				}
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("settled (-want,+got):\n%s", diff)
			}
			if len(d.Sends) != 0 || len(d.Recreate) != 0 {
				t.Errorf("sends %v, recreate %v: want none without targets", d.Sends, d.Recreate)
			}
		})
	}
}

// TestDecideSyncRefusesWhatDecidePolicyRefuses.
func TestDecideSyncRefusesWhatDecidePolicyRefuses(t *testing.T) {
	if _, err := decide(autoscale.SyncInput{}); err == nil {
		t.Error("no spec: decided, want an error")
	}
}

// TestDecideSyncStuckJudgesTheTemplateAsAdmitted: a pod waiting at the size
// its template gets from the namespace's LimitRanges was not sized by
// tailor, and a replacement would be created as large: it is not replaced.
// Judged against the template before the LimitRanger's defaults, it looked
// sized above it, and was deleted every UnschedulableAfter for a
// replacement of the same size (found by the fuzz of DecideSync).
func TestDecideSyncStuckJudgesTheTemplateAsAdmitted(t *testing.T) {
	now := time.Unix(10_000, 0)
	lr := corev1.LimitRange{ObjectMeta: metav1.ObjectMeta{Name: "defaults"}, Spec: corev1.LimitRangeSpec{Limits: []corev1.LimitRangeItem{{
		Type: corev1.LimitTypeContainer, DefaultRequest: builder.List("", "512Mi"), Default: builder.List("", "1Gi")}}}}
	rules := &nsrules.Rules{LimitRanges: []corev1.LimitRange{lr}}
	tmpl := &corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{*builder.Container("app").Requests("500m", "").Obj()}}}
	stuck := builder.Pod("a").UID("a").Owner("ReplicaSet", "web-1", "rs-1").Container(builder.Container("app").Requests("500m", "512Mi").Limits("", "1Gi")).Obj()
	metav1.SetMetaDataAnnotation(&stuck.ObjectMeta, v1alpha1.AdmittedAnnotation, "web: sized")
	stuck.Status.Phase = corev1.PodPending
	stuck.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse,
		Reason: corev1.PodReasonUnschedulable, LastTransitionTime: metav1.NewTime(now.Add(-time.Minute))}}
	sized := stuck.DeepCopy()
	sized.Spec.Containers[0].Resources.Requests[corev1.ResourceCPU] = resource.MustParse("2")
	target := &v1alpha1.TargetRef{APIVersion: "apps/v1", Kind: "Deployment", Name: "web"}
	for name, tc := range map[string]struct {
		pod  *corev1.Pod
		want []string
	}{
		"at its template's size with the LimitRange's defaults: not tailor's": {pod: stuck},
		"above it: replaced": {pod: sized, want: []string{"a"}},
	} {
		t.Run(name, func(t *testing.T) {
			d, err := decide(autoscale.SyncInput{
				PolicyInput: fleet.PolicyInput{Spec: &v1alpha1.TailorPolicySpec{TargetRef: target}, Now: now, Rules: rules},
				Unbound:     []*corev1.Pod{tc.pod}, Template: tmpl, Settle: time.Second,
				StuckSeen: map[types.UID]time.Time{"a": now.Add(-time.Minute)},
			})
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, s := range d.Stuck {
				if s.Due {
					got = append(got, s.Pod.Name)
				}
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("replaced (-want,+got):\n%s", diff)
			}
		})
	}
}

// TestDecideSyncPlansNewPodsAfterItsResizes: the admission entry is planned
// within what the quotas leave once this sync's resizes are charged, as the
// apiserver charges them before any new pod is created. Planned against the
// quotas as they were read, a raise sent in place and the entry shared the
// same room, and the rollout's new pods were refused until the next sync
// (found by the fuzz of DecideSync).
func TestDecideSyncPlansNewPodsAfterItsResizes(t *testing.T) {
	now := time.Unix(10_000, 0)
	q := corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Name: "cpu"}, Status: corev1.ResourceQuotaStatus{
		Hard: corev1.ResourceList{corev1.ResourceRequestsCPU: resource.MustParse("4")},
		Used: corev1.ResourceList{corev1.ResourceRequestsCPU: resource.MustParse("3")}}}
	rules := &nsrules.Rules{Quotas: []corev1.ResourceQuota{q}}
	pod := builder.Pod("a").UID("a").Node("n").Owner("ReplicaSet", "web-1", "rs-1").Container(builder.Container("app").Requests("500m", "128Mi")).Running().Obj()
	tmpl := &corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{*builder.Container("app").Requests("500m", "128Mi").Obj()}}}
	spec := &v1alpha1.TailorPolicySpec{TargetRef: &v1alpha1.TargetRef{APIVersion: "apps/v1", Kind: "Deployment", Name: "web"}}
	one := resource.MustParse("1")
	d, err := decide(autoscale.SyncInput{
		PolicyInput: fleet.PolicyInput{Spec: spec, Now: now, Rules: rules, Server: resize.Version{Major: 1, Minor: 37},
			Pods:  []fleet.PodInput{{Pod: pod, Targets: map[string]podchange.Target{"app": {CPU: &one}}}},
			Nodes: map[string]*resize.NodeState{"n": {Allocatable: builder.List("8", "8Gi"), Pods: []*corev1.Pod{pod}}}},
		Template: tmpl,
		NewPods: newpods.EntryInput{Spec: spec, Generation: 1, Template: tmpl, Rules: rules, Replicas: 1, Server: resize.Version{Major: 1, Minor: 37}, Now: now,
			Recommendation: &v1alpha1.Recommendation{ContainerRecommendations: []v1alpha1.RecommendedContainerResources{{ContainerName: "app", Target: corev1.ResourceList{corev1.ResourceCPU: one}}}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Sends) != 1 {
		t.Fatalf("%d resizes sent, want the raise to 1 cpu", len(d.Sends))
	}
	if a := d.Admission; a == nil || len(a.Containers) != 0 {
		t.Errorf("admission %+v: want no raise for new pods, the raise in place took the quota's last 500m", a)
	}
}

// decide is DecideSync's decision, for the tests of a sync that is not
// about recreation: when it asks for every node, its recreations are
// decided with none to hold a replacement.
func decide(in autoscale.SyncInput) (autoscale.SyncDecision, error) {
	d, wanted, err := autoscale.DecideSync(in)
	if err == nil && wanted != nil {
		d, err = wanted.Decide(nil)
	}
	if err != nil {
		return autoscale.SyncDecision{}, err
	}
	return *d, nil
}
