package podchange

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/tailorhq/tailor/api/v1alpha1"
	"github.com/tailorhq/tailor/test/builder"
)

// TestDecideSplitMemoryLimit: a memory limit the recommender advises apart
// from the request (Target.MemoryLimit) is the higher of the advice and the
// request at the template's ratio under RequestsAndLimits; a Guaranteed
// pod's one value is sized as a limit; no limit is added, none the policy
// does not control is moved, and none is lowered below the working set.
func TestDecideSplitMemoryLimit(t *testing.T) {
	// Burstable by its cpu, with memory request = limit (ratio 1).
	oneX := func() *corev1.Pod {
		return builder.Pod("p").Container(builder.Container("app").Requests("250m", "512Mi").Limits("500m", "512Mi")).Obj()
	}
	ws := map[string]resource.Quantity{"app": resource.MustParse("200Mi")}
	cases := map[string]struct {
		pod        *corev1.Pod
		spec       *v1alpha1.TailorPolicySpec
		target     Target
		ratio      map[string]float64
		workingSet map[string]resource.Quantity
		creating   bool
		want       map[string]string
		wantSkips  []SkipReason
	}{
		"the request lowered to the typical peak, the limit from the tail": {
			pod: oneX(), spec: spec(), workingSet: ws,
			target: Target{Memory: q("256Mi"), MemoryLimit: q("700Mi")},
			want:   map[string]string{"app": "req.memory=256Mi,lim.memory=700Mi"},
		},
		"the template's ratio holds the limit up where it is higher": {
			pod: oneX(), spec: spec(), workingSet: ws, ratio: map[string]float64{"app": 3},
			target: Target{Memory: q("256Mi"), MemoryLimit: q("700Mi")},
			want:   map[string]string{"app": "req.memory=256Mi,lim.memory=768Mi"},
		},
		"the pod's own ratio is not the template's: a limit tailor set is not scaled again": {
			pod:  builder.Pod("p").Container(builder.Container("app").Requests("250m", "256Mi").Limits("500m", "700Mi")).Obj(),
			spec: spec(), workingSet: ws, ratio: map[string]float64{"app": 1},
			target: Target{Memory: q("320Mi"), MemoryLimit: q("720Mi")},
			want:   map[string]string{"app": "req.memory=320Mi,lim.memory=720Mi"},
		},
		"the limit raised alone when the tail outgrows it": {
			pod: oneX(), spec: spec(), workingSet: ws,
			target: Target{MemoryLimit: q("900Mi")},
			want:   map[string]string{"app": "req.memory=512Mi,lim.memory=900Mi"},
		},
		"a lower limit advised alone waits for the request's next change": {
			pod: oneX(), spec: spec(), workingSet: ws,
			target:    Target{MemoryLimit: q("300Mi")},
			want:      map[string]string{},
			wantSkips: []SkipReason{SkipWithinTolerance},
		},
		"the limit is not lowered below the working set plus headroom": {
			// The request is held at maxAllowed below the working set (the
			// most the policy allows); the limit must not follow it there.
			pod:        builder.Pod("p").Container(builder.Container("app").Requests("250m", "16Mi").Limits("500m", "512Mi")).Obj(),
			spec:       spec(containerPolicy(v1alpha1.ContainerPolicy{ContainerName: "*", MaxAllowed: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("64Mi")}})),
			workingSet: map[string]resource.Quantity{"app": resource.MustParse("400Mi")},
			target:     Target{Memory: q("64Mi"), MemoryLimit: q("64Mi")},
			want:       map[string]string{"app": "req.memory=64Mi,lim.memory=440Mi"},
		},
		"nor lowered at all without a working set": {
			pod:    builder.Pod("p").Container(builder.Container("app").Requests("250m", "256Mi").Limits("500m", "1Gi")).Obj(),
			spec:   spec(),
			target: Target{Memory: q("300Mi"), MemoryLimit: q("400Mi")},
			want:   map[string]string{"app": "req.memory=300Mi,lim.memory=1Gi"},
		},
		"a Guaranteed pod's one value is sized as its limit": {
			pod:  builder.Pod("p").Container(builder.Container("app").Requests("500m", "512Mi").Limits("500m", "512Mi")).Obj(),
			spec: spec(), workingSet: ws,
			target: Target{Memory: q("256Mi"), MemoryLimit: q("700Mi")},
			want:   map[string]string{"app": "req.memory=700Mi,lim.memory=700Mi"},
		},
		"RequestsOnly moves the request alone": {
			pod: oneX(), workingSet: ws,
			spec: spec(containerPolicy(v1alpha1.ContainerPolicy{ContainerName: "*",
				ControlledValues: ptr(v1alpha1.ControlledValuesRequestsOnly)})),
			target: Target{Memory: q("256Mi"), MemoryLimit: q("700Mi")},
			want:   map[string]string{"app": "req.memory=256Mi,lim.memory=512Mi"},
		},
		"RequestsOnly gets no limit raised alone": {
			pod: oneX(), workingSet: ws,
			spec: spec(containerPolicy(v1alpha1.ContainerPolicy{ContainerName: "*",
				ControlledValues: ptr(v1alpha1.ControlledValuesRequestsOnly)})),
			target:    Target{MemoryLimit: q("900Mi")},
			want:      map[string]string{},
			wantSkips: []SkipReason{SkipWithinTolerance},
		},
		"no limit is added to a container without one": {
			pod:  builder.Pod("p").Container(builder.Container("app").Requests("250m", "512Mi")).Obj(),
			spec: spec(), workingSet: ws,
			target: Target{Memory: q("256Mi"), MemoryLimit: q("700Mi")},
			want:   map[string]string{"app": "req.memory=256Mi"},
		},
		"maxAllowed bounds the advised limit at the template's ratio": {
			pod: oneX(), workingSet: ws, ratio: map[string]float64{"app": 1},
			spec:   spec(containerPolicy(v1alpha1.ContainerPolicy{ContainerName: "*", MaxAllowed: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("600Mi")}})),
			target: Target{Memory: q("256Mi"), MemoryLimit: q("2Gi")},
			want:   map[string]string{"app": "req.memory=256Mi,lim.memory=600Mi"},
		},
		"a new pod keeps its own ratio, its template's": {
			pod:  builder.Pod("p").Container(builder.Container("app").Requests("250m", "512Mi").Limits("500m", "1Gi")).Obj(),
			spec: spec(), creating: true,
			target: Target{Memory: q("256Mi"), MemoryLimit: q("400Mi")},
			want:   map[string]string{"app": "req.memory=256Mi,lim.memory=512Mi"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			d, err := Decide(Input{Pod: tc.pod, Spec: tc.spec, Targets: map[string]Target{"app": tc.target}, WorkingSet: tc.workingSet,
				MemoryFloorHeadroom: 0.1, Now: now, LimitRatio: tc.ratio, Creating: tc.creating})
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, rr(d)); diff != "" {
				t.Errorf("desired (-want,+got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantSkips, reasons(d)); diff != "" {
				t.Errorf("skips (-want,+got):\n%s", diff)
			}
		})
	}
}

// TestMemoryLimitRatios: each container's memory limit over its request in
// a template; containers without both are left out.
func TestMemoryLimitRatios(t *testing.T) {
	tpl := &corev1.PodTemplateSpec{Spec: builder.Pod("p").
		Container(builder.Container("app").Requests("250m", "512Mi").Limits("500m", "1Gi")).
		Container(builder.Container("norequest").Limit(corev1.ResourceMemory, "1Gi")).
		Container(builder.Container("nolimit").Requests("250m", "512Mi")).Obj().Spec}
	got := MemoryLimitRatios(tpl)
	if diff := cmp.Diff(map[string]float64{"app": 2}, got); diff != "" {
		t.Errorf("ratios (-want,+got):\n%s", diff)
	}
	if MemoryLimitRatios(nil) != nil {
		t.Error("no template: want no ratios")
	}
}
