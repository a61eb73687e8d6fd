package autoscale_test

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tailorhq/tailor/api/v1alpha1"
	"github.com/tailorhq/tailor/internal/autoscale"
	"github.com/tailorhq/tailor/internal/nsrules"
	"github.com/tailorhq/tailor/internal/resize"
	"github.com/tailorhq/tailor/test/builder"
)

func limitRange(name string, max corev1.ResourceList) corev1.LimitRange {
	return corev1.LimitRange{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.LimitRangeSpec{Limits: []corev1.LimitRangeItem{{
		Type: corev1.LimitTypeContainer, Max: max,
	}}}}
}

// A container whose policy sets no maxAllowed is bounded by the
// namespace's LimitRange max, else by the largest node's allocatable.
func TestDefaultMaxAllowed(t *testing.T) {
	largest := autoscale.LargestAllocatable([]*corev1.Node{
		builder.Node("small").Allocatable("4", "16Gi").Obj(),
		builder.Node("big").Allocatable("32", "8Gi").Obj(),
		builder.Node("fat").Allocatable("2", "128Gi").Obj(),
	})
	summary := func(m map[corev1.ResourceName]autoscale.DefaultBound) map[corev1.ResourceName]string {
		out := map[corev1.ResourceName]string{}
		for r, b := range m {
			out[r] = b.Quantity.String() + " from " + b.From
		}
		return out
	}
	cases := map[string]struct {
		rules *nsrules.Rules
		nodes map[corev1.ResourceName]autoscale.DefaultBound
		want  map[corev1.ResourceName]string
	}{
		"nodes only": {nodes: largest, want: map[corev1.ResourceName]string{
			corev1.ResourceCPU:    "32 from the largest node's allocatable (big)",
			corev1.ResourceMemory: "128Gi from the largest node's allocatable (fat)",
		}},
		"a LimitRange max comes first, the tightest of them": {
			rules: &nsrules.Rules{LimitRanges: []corev1.LimitRange{
				limitRange("loose", builder.List("", "8Gi")), limitRange("team", builder.List("", "2Gi")),
			}},
			nodes: largest,
			want: map[corev1.ResourceName]string{
				corev1.ResourceCPU:    "32 from the largest node's allocatable (big)",
				corev1.ResourceMemory: "2Gi from LimitRange/team max",
			},
		},
		"nothing known": {want: map[corev1.ResourceName]string{}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, summary(autoscale.DefaultMaxAllowed(tc.rules, tc.nodes))); diff != "" {
				t.Errorf("(-want,+got):\n%s", diff)
			}
		})
	}
}

func TestBoundedSpec(t *testing.T) {
	defaults := map[corev1.ResourceName]autoscale.DefaultBound{
		corev1.ResourceCPU:    {Quantity: resource.MustParse("8"), From: "node"},
		corev1.ResourceMemory: {Quantity: resource.MustParse("16Gi"), From: "node"},
	}
	policies := func(ps ...v1alpha1.ContainerPolicy) *v1alpha1.TailorPolicySpec {
		return &v1alpha1.TailorPolicySpec{ResourcePolicy: &v1alpha1.ResourcePolicy{ContainerPolicies: ps}}
	}
	cases := map[string]struct {
		spec *v1alpha1.TailorPolicySpec
		// wantMax is each container's maxAllowed once bounded.
		wantMax  map[string]corev1.ResourceList
		wantUsed []corev1.ResourceName
	}{
		"no policies: both defaults": {
			spec:     &v1alpha1.TailorPolicySpec{},
			wantMax:  map[string]corev1.ResourceList{"app": builder.List("8", "16Gi"), "proxy": builder.List("8", "16Gi")},
			wantUsed: []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory},
		},
		"the policy's own maxAllowed stands": {
			spec: policies(v1alpha1.ContainerPolicy{ContainerName: "*", MaxAllowed: builder.List("2", "")},
				v1alpha1.ContainerPolicy{ContainerName: "proxy", MaxAllowed: builder.List("", "1Gi")}),
			wantMax:  map[string]corev1.ResourceList{"app": builder.List("2", "16Gi"), "proxy": builder.List("2", "1Gi")},
			wantUsed: []corev1.ResourceName{corev1.ResourceMemory},
		},
		"everything set: unchanged": {
			spec:    policies(v1alpha1.ContainerPolicy{ContainerName: "*", MaxAllowed: builder.List("2", "4Gi")}),
			wantMax: map[string]corev1.ResourceList{"app": builder.List("2", "4Gi"), "proxy": builder.List("2", "4Gi")},
		},
		"a minAllowed above the default bounds its container there": {
			spec:     policies(v1alpha1.ContainerPolicy{ContainerName: "proxy", MinAllowed: builder.List("", "32Gi")}),
			wantMax:  map[string]corev1.ResourceList{"app": builder.List("8", "16Gi"), "proxy": builder.List("8", "32Gi")},
			wantUsed: []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			before := tc.spec.DeepCopy()
			got, used := autoscale.BoundedSpec(tc.spec, defaults)
			if diff := cmp.Diff(before, tc.spec); diff != "" {
				t.Errorf("the policy's spec was changed (-want,+got):\n%s", diff)
			}
			for c, want := range tc.wantMax {
				pol, err := got.PolicyFor(c)
				if err != nil {
					t.Fatalf("%s: %v", c, err)
				}
				if !sameList(want, pol.MaxAllowed) {
					t.Errorf("%s: maxAllowed %v, want %v", c, pol.MaxAllowed, want)
				}
			}
			var usedNames []corev1.ResourceName
			for _, r := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
				if _, ok := used[r]; ok {
					usedNames = append(usedNames, r)
				}
			}
			if diff := cmp.Diff(tc.wantUsed, usedNames); diff != "" {
				t.Errorf("defaults used (-want,+got):\n%s", diff)
			}
			if again, more := autoscale.BoundedSpec(got, defaults); len(more) != 0 || !cmp.Equal(again, got) {
				t.Errorf("bounding twice changed it again: %v", more)
			}
		})
	}
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
	d, err := autoscale.DecideSync(autoscale.SyncInput{
		PolicyInput: autoscale.PolicyInput{Spec: spec, Now: now, Rules: rules, Server: resize.Version{Major: 1, Minor: 37},
			Pods:  []autoscale.PodInput{{Pod: pod, Targets: map[string]autoscale.Target{"app": {Memory: &huge}}}},
			Nodes: map[string]*resize.NodeState{"n": {Allocatable: builder.List("8", "64Gi"), Pods: []*corev1.Pod{pod}}}},
		Template: tmpl,
		Largest:  autoscale.LargestAllocatable([]*corev1.Node{builder.Node("n").Allocatable("8", "64Gi").Obj()}),
		NewPods: autoscale.EntryInput{Spec: spec, Generation: 1, Template: tmpl, Rules: rules, Replicas: 1, Server: resize.Version{Major: 1, Minor: 37}, Now: now,
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
	msg := autoscale.DefaultCapped(spec, d.DefaultMaxAllowed, recs)
	if !strings.Contains(msg, "memory of app capped at the default maxAllowed 4Gi (LimitRange/team max; the policy sets none)") {
		t.Errorf("status says %q", msg)
	}
	if own := autoscale.DefaultCapped(&v1alpha1.TailorPolicySpec{ResourcePolicy: &v1alpha1.ResourcePolicy{ContainerPolicies: []v1alpha1.ContainerPolicy{
		{ContainerName: "*", MaxAllowed: builder.List("", "2Ti")}}}}, d.DefaultMaxAllowed, recs); own != "" {
		t.Errorf("a policy with its own maxAllowed: status says %q", own)
	}
}

func sameList(a, b corev1.ResourceList) bool {
	if len(a) != len(b) {
		return false
	}
	for r, q := range a {
		if o, ok := b[r]; !ok || q.Cmp(o) != 0 {
			return false
		}
	}
	return true
}
