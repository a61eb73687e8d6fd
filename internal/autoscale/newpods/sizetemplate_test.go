package newpods_test

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	"github.com/tailorhq/tailor/api/v1alpha1"
	"github.com/tailorhq/tailor/internal/autoscale/newpods"
	"github.com/tailorhq/tailor/internal/nsrules"
	"github.com/tailorhq/tailor/internal/podchange"
	"github.com/tailorhq/tailor/internal/resize"
)

// SizeTemplate is Admit for a change taken through the manifest: the same
// shaping, whatever the policy's updateMode and applyOnCreate, no boost.
func TestSizeTemplate(t *testing.T) {
	no := false
	requestsOnly := v1alpha1.ControlledValuesRequestsOnly
	burstable := templateOf(ctr("app", rl("cpu", "100m", "memory", "64Mi"), rl("cpu", "200m", "memory", "128Mi")))
	cases := map[string]struct {
		template *corev1.PodTemplateSpec
		spec     v1alpha1.TailorPolicySpec
		rules    *nsrules.Rules
		targets  map[string]podchange.Target
		want     []string
		wantHeld string
	}{
		"a policy in mode Off is still a recommendation to take": {
			template: burstable,
			spec:     v1alpha1.TailorPolicySpec{UpdatePolicy: &v1alpha1.UpdatePolicy{UpdateMode: v1alpha1.UpdateModeOff}},
			targets:  map[string]podchange.Target{"app": target("250m", "96Mi")},
			want:     []string{"app 250m/96Mi 500m/192Mi"},
		},
		"applyOnCreate false": {
			template: burstable,
			spec:     v1alpha1.TailorPolicySpec{UpdatePolicy: &v1alpha1.UpdatePolicy{ApplyOnCreate: &no}},
			targets:  map[string]podchange.Target{"app": target("250m", "96Mi")},
			want:     []string{"app 250m/96Mi 500m/192Mi"},
		},
		"no startup boost in a template": {
			template: burstable,
			spec:     v1alpha1.TailorPolicySpec{StartupBoost: &v1alpha1.StartupBoost{FactorPercent: ptr(int32(300))}},
			targets:  map[string]podchange.Target{"app": target("150m", "")},
			want:     []string{"app 150m/64Mi 300m/128Mi"},
		},
		"RequestsOnly keeps the limits": {
			template: burstable,
			spec: v1alpha1.TailorPolicySpec{ResourcePolicy: &v1alpha1.ResourcePolicy{ContainerPolicies: []v1alpha1.ContainerPolicy{
				{ContainerName: "*", ControlledValues: &requestsOnly},
			}}},
			targets: map[string]podchange.Target{"app": target("150m", "32Mi")},
			want:    []string{"app 150m/32Mi 200m/128Mi"},
		},
		"only limits: requests default to them, the pod is Guaranteed and both move": {
			template: templateOf(ctr("app", nil, rl("cpu", "500m", "memory", "256Mi"))),
			targets:  map[string]podchange.Target{"app": target("200m", "128Mi")},
			want:     []string{"app 200m/128Mi 200m/128Mi"},
		},
		"a LimitRange's max caps the limit the raise would scale": {
			template: burstable,
			rules: &nsrules.Rules{LimitRanges: []corev1.LimitRange{{Spec: corev1.LimitRangeSpec{Limits: []corev1.LimitRangeItem{
				{Type: corev1.LimitTypeContainer, Max: rl("cpu", "400m")}}}}}},
			targets: map[string]podchange.Target{"app": target("300m", "")},
			want:    []string{"app 300m/64Mi 400m/128Mi"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := newpods.SizeTemplate(newpods.AdmitInput{Template: tc.template, Spec: &tc.spec, Targets: tc.targets, Rules: tc.rules,
				Boost: tc.spec.StartupBoost, Server: resize.Version{Major: 1, Minor: 37}, Now: time.Unix(0, 0)})
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, admittedText(got.Containers)); diff != "" {
				t.Errorf("containers (-want,+got):\n%s", diff)
			}
			if got.Held != tc.wantHeld || got.Boost != "" {
				t.Errorf("held %q boost %q, want held %q and no boost", got.Held, got.Boost, tc.wantHeld)
			}
			if tc.spec.UpdatePolicy != nil && tc.spec.UpdatePolicy.UpdateMode == v1alpha1.UpdateModeOff && tc.spec.UpdatePolicy.ApplyOnCreate != nil {
				t.Errorf("SizeTemplate changed the caller's spec")
			}
		})
	}
	if _, err := newpods.SizeTemplate(newpods.AdmitInput{Template: burstable}); err == nil {
		t.Error("no spec: want an error")
	}
}
