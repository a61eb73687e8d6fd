package newpods

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/tailorhq/tailor/api/v1alpha1"
	"github.com/tailorhq/tailor/internal/podchange"
	"github.com/tailorhq/tailor/test/builder"
)

func TestAdmitBoosts(t *testing.T) {
	boost := &v1alpha1.StartupBoost{FactorPercent: ptr(int32(400))}
	restartOnCPU := builder.Container("app").Requests("100m", "64Mi").Limits("200m", "128Mi").ResizePolicy(corev1.ResourceCPU, corev1.RestartContainer)
	cases := map[string]struct {
		pod         *corev1.Pod
		spec        *v1alpha1.TailorPolicySpec
		targets     map[string]podchange.Target
		want        map[string]string
		wantBoost   string
		wantNotBoot []string
	}{
		"before a recommendation, from the template": {
			pod:       builder.Pod("t").Container(builder.Container("app").Requests("100m", "64Mi").Limits("200m", "128Mi")).Obj(),
			spec:      spec(func(s *v1alpha1.TailorPolicySpec) { s.StartupBoost = boost }),
			want:      map[string]string{"app": "400m/64Mi 800m/128Mi"},
			wantBoost: "app=400m",
		},
		"from the recommendation, within maxAllowed": {
			pod: builder.Pod("t").Container(builder.Container("app").Requests("100m", "64Mi").Limits("200m", "128Mi")).Obj(),
			spec: spec(func(s *v1alpha1.TailorPolicySpec) { s.StartupBoost = boost },
				containerPolicy(v1alpha1.ContainerPolicy{ContainerName: "*", MaxAllowed: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}})),
			targets:   map[string]podchange.Target{"app": {CPU: q("300m"), Memory: q("80Mi")}},
			want:      map[string]string{"app": "1/80Mi 2/160Mi"},
			wantBoost: "app=1",
		},
		"a container whose cpu resize restarts it is not boosted": {
			pod:         builder.Pod("t").Container(restartOnCPU).Obj(),
			spec:        spec(func(s *v1alpha1.TailorPolicySpec) { s.StartupBoost = boost }),
			targets:     map[string]podchange.Target{"app": {CPU: q("150m")}},
			want:        map[string]string{"app": "150m/64Mi 300m/128Mi"},
			wantNotBoot: []string{"container app is not boosted: its cpu resizePolicy is RestartContainer: removing the boost would restart it"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := Admit(AdmitInput{Template: &corev1.PodTemplateSpec{Spec: tc.pod.Spec}, Spec: tc.spec, Targets: tc.targets,
				Server: v137, Now: now, Boost: tc.spec.StartupBoost})
			if err != nil {
				t.Fatal(err)
			}
			text := map[string]string{}
			for _, c := range got.Containers {
				text[c.Name] = c.Requests.Cpu().String() + "/" + c.Requests.Memory().String() + " " + c.Limits.Cpu().String() + "/" + c.Limits.Memory().String()
			}
			if diff := cmp.Diff(tc.want, text); diff != "" {
				t.Errorf("containers (-want,+got):\n%s", diff)
			}
			if got.Boost != tc.wantBoost {
				t.Errorf("boost %q, want %q", got.Boost, tc.wantBoost)
			}
			if diff := cmp.Diff(tc.wantNotBoot, got.NotBoosted); diff != "" {
				t.Errorf("not boosted (-want,+got):\n%s", diff)
			}
		})
	}
}
