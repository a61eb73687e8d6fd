package autoscale_test

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tailorhq/tailor/api/v1alpha1"
	"github.com/tailorhq/tailor/internal/autoscale"
	"github.com/tailorhq/tailor/internal/autoscale/fleet"
	"github.com/tailorhq/tailor/internal/autoscale/newpods"
	"github.com/tailorhq/tailor/internal/nsrules"
	"github.com/tailorhq/tailor/internal/podchange"
	"github.com/tailorhq/tailor/internal/resize"
	"github.com/tailorhq/tailor/test/builder"
)

func limitRange(name string, max corev1.ResourceList) corev1.LimitRange {
	return corev1.LimitRange{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.LimitRangeSpec{Limits: []corev1.LimitRangeItem{{
		Type: corev1.LimitTypeContainer, Max: max,
	}}}}
}

// The sync's in-place raises and its admission entry stay within the
// default bound, and status can say so.
func TestDecideSyncAppliesTheDefaultBound(t *testing.T) {
	now := time.Unix(10_000, 0)
	pod := builder.Pod("a").UID("a").Node("n").Owner("ReplicaSet", "web-1", "rs-1").
		Container(builder.Container("app").Requests("500m", "1Gi")).Running().Obj()
	tmpl := &corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{*builder.Container("app").Requests("500m", "1Gi").Obj()}}}
	spec := &v1alpha1.TailorPolicySpec{TargetRef: &v1alpha1.TargetRef{APIVersion: "apps/v1", Kind: "Deployment", Name: "web"}}
	huge := resource.MustParse("1Ti")
	rules := &nsrules.Rules{LimitRanges: []corev1.LimitRange{limitRange("team", builder.List("", "4Gi"))}}
	recs := []v1alpha1.RecommendedContainerResources{{ContainerName: "app",
		Target: corev1.ResourceList{corev1.ResourceMemory: huge}, UncappedTarget: corev1.ResourceList{corev1.ResourceMemory: huge}}}
	d, err := decide(autoscale.SyncInput{
		PolicyInput: fleet.PolicyInput{Spec: spec, Now: now, Rules: rules, Server: resize.Version{Major: 1, Minor: 37},
			Pods:  []fleet.PodInput{{Pod: pod, Targets: map[string]podchange.Target{"app": {Memory: &huge}}}},
			Nodes: map[string]*resize.NodeState{"n": {Allocatable: builder.List("8", "64Gi"), Pods: []*corev1.Pod{pod}}}},
		Template: tmpl,
		Largest:  podchange.LargestAllocatable([]*corev1.Node{builder.Node("n").Allocatable("8", "64Gi").Obj()}),
		NewPods: newpods.EntryInput{Spec: spec, Generation: 1, Template: tmpl, Rules: rules, Replicas: 1, Server: resize.Version{Major: 1, Minor: 37}, Now: now,
			Recommendation: &v1alpha1.Recommendation{ContainerRecommendations: recs}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Sends) != 1 {
		t.Fatalf("%d resizes sent, want the raise (to the bound)", len(d.Sends))
	}
	four := resource.MustParse("4Gi")
	for _, ch := range d.Sends[0].Decision.Changes {
		if ch.Resource == corev1.ResourceMemory && ch.RequestNow.Cmp(four) > 0 {
			t.Errorf("in place: memory raised to %s, above the LimitRange's 4Gi", ch.RequestNow.String())
		}
	}
	if d.Admission == nil || len(d.Admission.Containers) != 1 {
		t.Fatalf("admission %+v: want the app container sized", d.Admission)
	}
	if got := d.Admission.Containers[0].Requests[corev1.ResourceMemory]; got.Cmp(four) > 0 {
		t.Errorf("new pods: memory %s, above the LimitRange's 4Gi", got.String())
	}
	if got := d.DefaultMaxAllowed[corev1.ResourceMemory].From; got != "LimitRange/team max" {
		t.Errorf("default memory bound from %q", got)
	}
	msg := podchange.DefaultCapped(spec, d.DefaultMaxAllowed, recs)
	if !strings.Contains(msg, "memory of app capped at the default maxAllowed 4Gi (LimitRange/team max; the policy sets none)") {
		t.Errorf("status says %q", msg)
	}
	if own := podchange.DefaultCapped(&v1alpha1.TailorPolicySpec{ResourcePolicy: &v1alpha1.ResourcePolicy{ContainerPolicies: []v1alpha1.ContainerPolicy{
		{ContainerName: "*", MaxAllowed: builder.List("", "2Ti")}}}}, d.DefaultMaxAllowed, recs); own != "" {
		t.Errorf("a policy with its own maxAllowed: status says %q", own)
	}
}
