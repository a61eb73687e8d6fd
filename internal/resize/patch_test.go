package resize

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/util/strategicpatch"

	"github.com/tailorhq/tailor/test/builder"
)

// TestPatchProducesAfterPod applies each plan's patch to the input pod the way
// the apiserver does (strategic merge) and checks the result equals AfterPod:
// the patch must say exactly what the planner validated.
func TestPatchProducesAfterPod(t *testing.T) {
	podLevel := builder.Pod("p").ResourceVersion("7").PodRequests("1", "512Mi").PodLimits("2", "1Gi").
		Sidecar(builder.Container("proxy").Requests("100m", "64Mi")).
		InitContainer(builder.Container("setup").Requests("100m", "")).
		Container(builder.Container("a").Requests("200m", "128Mi").Limits("", "256Mi")).
		Container(builder.Container("b").Requests("300m", "")).Obj()
	cases := map[string]struct {
		pod     *corev1.Pod
		desired Desired
	}{
		"one regular container of several": {
			pod:     podLevel,
			desired: Desired{Containers: map[string]corev1.ResourceRequirements{"b": builder.Requirements(builder.List("400m", ""), nil)}},
		},
		"sidecar, init and pod level together": {
			pod: podLevel,
			desired: Desired{
				Containers: map[string]corev1.ResourceRequirements{
					"proxy": builder.Requirements(builder.List("150m", "96Mi"), nil),
					"setup": builder.Requirements(nil, builder.List("500m", "")),
				},
				Pod: &corev1.ResourceRequirements{Limits: builder.List("3", "")},
			},
		},
		"removals become nulls": {
			pod: podLevel,
			desired: Desired{
				Remove:        map[string]Removal{"a": {Limits: []corev1.ResourceName{corev1.ResourceMemory}}},
				RemoveFromPod: &Removal{Requests: []corev1.ResourceName{corev1.ResourceCPU}},
			},
		},
		"pod-level resources added to a pod without them": {
			pod:     builder.Pod("p").Container(builder.Container("a").Requests("200m", "128Mi")).Obj(),
			desired: Desired{Pod: &corev1.ResourceRequirements{Requests: builder.List("1", "")}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			res, err := Plan(Input{Pod: tc.pod, Desired: tc.desired, Server: v137})
			if err != nil {
				t.Fatalf("Plan(): %v", err)
			}
			if res.Patch == nil {
				t.Fatalf("Plan() made no patch for a change")
			}
			original, err := json.Marshal(tc.pod)
			if err != nil {
				t.Fatal(err)
			}
			patched, err := strategicpatch.StrategicMergePatch(original, res.Patch, corev1.Pod{})
			if err != nil {
				t.Fatalf("apply patch %s: %v", res.Patch, err)
			}
			var got corev1.Pod
			if err := json.Unmarshal(patched, &got); err != nil {
				t.Fatal(err)
			}
			want := res.AfterPod()
			if !equality.Semantic.DeepEqual(want.Spec, got.Spec) {
				t.Errorf("patched spec differs from AfterPod (-want,+got):\n%s\npatch: %s", cmp.Diff(want.Spec, got.Spec), res.Patch)
			}
		})
	}
}

func TestParseVersion(t *testing.T) {
	cases := map[string]struct {
		in      string
		want    Version
		wantErr bool
	}{
		"git version":         {in: "v1.37.1", want: Version{1, 37}},
		"major.minor":         {in: "1.33", want: Version{1, 33}},
		"distribution suffix": {in: "v1.36.2+k3s1", want: Version{1, 36}},
		"plus minor":          {in: "1.35+", want: Version{1, 35}},
		"garbage":             {in: "latest", wantErr: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := ParseVersion(tc.in)
			if (err != nil) != tc.wantErr {
				t.Fatalf("ParseVersion(%q) error = %v, wantErr %v", tc.in, err, tc.wantErr)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("ParseVersion(%q) (-want,+got):\n%s", tc.in, diff)
			}
		})
	}
}
