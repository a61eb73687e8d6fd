package podchange_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tailorhq/tailor/api/v1alpha1"
	"github.com/tailorhq/tailor/internal/nsrules"
	"github.com/tailorhq/tailor/internal/podchange"
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
	largest := podchange.LargestAllocatable([]*corev1.Node{
		builder.Node("small").Allocatable("4", "16Gi").Obj(),
		builder.Node("big").Allocatable("32", "8Gi").Obj(),
		builder.Node("fat").Allocatable("2", "128Gi").Obj(),
	})
	summary := func(m map[corev1.ResourceName]podchange.DefaultBound) map[corev1.ResourceName]string {
		out := map[corev1.ResourceName]string{}
		for r, b := range m {
			out[r] = b.Quantity.String() + " from " + b.From
		}
		return out
	}
	cases := map[string]struct {
		rules *nsrules.Rules
		nodes map[corev1.ResourceName]podchange.DefaultBound
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
			if diff := cmp.Diff(tc.want, summary(podchange.DefaultMaxAllowed(tc.rules, tc.nodes))); diff != "" {
				t.Errorf("(-want,+got):\n%s", diff)
			}
		})
	}
}

func TestBoundedSpec(t *testing.T) {
	defaults := map[corev1.ResourceName]podchange.DefaultBound{
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
			got, used := podchange.BoundedSpec(tc.spec, defaults)
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
			if again, more := podchange.BoundedSpec(got, defaults); len(more) != 0 || !cmp.Equal(again, got) {
				t.Errorf("bounding twice changed it again: %v", more)
			}
		})
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
