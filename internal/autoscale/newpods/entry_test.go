package newpods

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/tailorhq/tailor/api/v1alpha1"
	"github.com/tailorhq/tailor/test/builder"
)

func TestPlanEntry(t *testing.T) {
	ref := &v1alpha1.TargetRef{APIVersion: "apps/v1", Kind: "Deployment", Name: "web"}
	tmpl := &corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{*builder.Container("app").Requests("100m", "64Mi").Limits("200m", "128Mi").Obj()}}}
	rec := &v1alpha1.Recommendation{ContainerRecommendations: []v1alpha1.RecommendedContainerResources{
		{ContainerName: "app", Target: builder.List("300m", "64Mi")}}}
	off := v1alpha1.UpdateModeOff
	cases := map[string]struct {
		spec          v1alpha1.TailorPolicySpec
		template      *corev1.PodTemplateSpec
		rec           *v1alpha1.Recommendation
		vpa           string
		conflict      string
		wantNil       bool
		wantTarget    bool
		wantContainer string
		wantMessage   string
	}{
		"mode Off: no entry at all": {spec: v1alpha1.TailorPolicySpec{TargetRef: ref, UpdatePolicy: &v1alpha1.UpdatePolicy{UpdateMode: off}}, wantNil: true},
		"a VPA sizes the workload: no target the admission policy could match": {
			spec: v1alpha1.TailorPolicySpec{TargetRef: ref}, template: tmpl, rec: rec, vpa: "VerticalPodAutoscaler web (Auto)", wantMessage: "VerticalPodAutoscaler web",
		},
		"another policy sizes the workload: no target, so two entries never apply to one pod": {
			spec: v1alpha1.TailorPolicySpec{TargetRef: ref}, template: tmpl, rec: rec, conflict: "TailorPolicy old names the same workload", wantMessage: "TailorPolicy old",
		},
		"a selector policy names no workload": {spec: v1alpha1.TailorPolicySpec{}, wantMessage: "selector policy"},
		"no template":                         {spec: v1alpha1.TailorPolicySpec{TargetRef: ref}, rec: rec, wantTarget: true, wantMessage: "no pod template"},
		"no recommendation and no boost":      {spec: v1alpha1.TailorPolicySpec{TargetRef: ref}, template: tmpl, wantTarget: true, wantMessage: "no recommendation yet"},
		"the recommendation, planned from the template": {
			spec: v1alpha1.TailorPolicySpec{TargetRef: ref}, template: tmpl, rec: rec, wantTarget: true, wantContainer: "app 300m/600m",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := PlanEntry(EntryInput{Spec: &tc.spec, Generation: 7, Template: tc.template, Recommendation: tc.rec, HeldByVPA: tc.vpa, Conflict: tc.conflict, Server: v137, Now: now})
			if tc.wantNil {
				if got != nil {
					t.Fatalf("entry %+v, want none", got)
				}
				return
			}
			if got == nil {
				t.Fatal("no entry")
			}
			if hasTarget := got.TargetName != ""; hasTarget != tc.wantTarget {
				t.Errorf("target %q, want one: %v", got.TargetName, tc.wantTarget)
			}
			if tc.wantTarget && got.ObservedGeneration != 7 {
				t.Errorf("planned for generation %d, want 7", got.ObservedGeneration)
			}
			if !strings.Contains(got.Message, tc.wantMessage) {
				t.Errorf("message %q, want it to say %q", got.Message, tc.wantMessage)
			}
			var c string
			if len(got.Containers) == 1 {
				a := got.Containers[0]
				c = a.Name + " " + a.Requests.Cpu().String() + "/" + a.Limits.Cpu().String()
			}
			if c != tc.wantContainer {
				t.Errorf("containers %q, want %q", c, tc.wantContainer)
			}
		})
	}
}
