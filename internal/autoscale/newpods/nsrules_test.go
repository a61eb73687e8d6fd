package newpods

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	qosutil "k8s.io/kubectl/pkg/util/qos"

	"github.com/tailorhq/tailor/api/v1alpha1"
	"github.com/tailorhq/tailor/internal/nsrules"
	"github.com/tailorhq/tailor/internal/podchange"
	"github.com/tailorhq/tailor/internal/podcontainers"
	"github.com/tailorhq/tailor/test/builder"
)

func limitRange(name string, item corev1.LimitRangeItem) corev1.LimitRange {
	item.Type = corev1.LimitTypeContainer
	return corev1.LimitRange{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.LimitRangeSpec{Limits: []corev1.LimitRangeItem{item}}}
}

func quota(name string, hard, used corev1.ResourceList) corev1.ResourceQuota {
	return corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.ResourceQuotaSpec{Hard: hard}, Status: corev1.ResourceQuotaStatus{Hard: hard, Used: used}}
}

// Issue #23, findings 1 and 4: what a new pod is created with keeps within
// the namespace's LimitRanges and quotas and keeps the QoS class the pod is
// admitted with, LimitRange defaults applied.
func TestAdmitWithinTheNamespaceRules(t *testing.T) {
	factor := int32(300)
	requestsOnly := v1alpha1.ControlledValuesRequestsOnly
	cases := map[string]struct {
		template *corev1.PodTemplateSpec
		spec     v1alpha1.TailorPolicySpec
		targets  map[string]podchange.Target
		rules    nsrules.Rules
		replicas int
		want     []string
		wantHeld string
	}{
		"a 3x boost of a 1/2 cpu container stays under the LimitRange max of 4": {
			template: &corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{*builder.Container("app").Requests("1", "256Mi").Limits("2", "512Mi").Obj()}}},
			spec:     v1alpha1.TailorPolicySpec{StartupBoost: &v1alpha1.StartupBoost{FactorPercent: &factor}},
			rules:    nsrules.Rules{LimitRanges: []corev1.LimitRange{limitRange("caps", corev1.LimitRangeItem{Max: builder.List("4", "")})}},
			want:     []string{"app 3/256Mi 4/512Mi"},
		},
		"a raise keeps within maxLimitRequestRatio": {
			template: &corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{*builder.Container("app").Requests("500m", "256Mi").Limits("1", "512Mi").Obj()}}},
			spec: v1alpha1.TailorPolicySpec{ResourcePolicy: &v1alpha1.ResourcePolicy{ContainerPolicies: []v1alpha1.ContainerPolicy{
				{ContainerName: "app", ControlledValues: &requestsOnly}}}},
			targets: map[string]podchange.Target{"app": {CPU: q("100m")}},
			rules:   nsrules.Rules{LimitRanges: []corev1.LimitRange{limitRange("ratio", corev1.LimitRangeItem{MaxLimitRequestRatio: builder.List("4", "")})}},
			want:    []string{"app 250m/256Mi 1/512Mi"},
		},
		"a sidecar the LimitRange defaults to requests = limits: app's request stops below its limit, the pod stays Burstable": {
			template: &corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{
				*builder.Container("app").Requests("500m", "256Mi").Limits("1", "256Mi").Obj(), {Name: "log"}}}},
			spec: v1alpha1.TailorPolicySpec{ResourcePolicy: &v1alpha1.ResourcePolicy{ContainerPolicies: []v1alpha1.ContainerPolicy{
				{ContainerName: "app", ControlledValues: &requestsOnly}}}},
			targets: map[string]podchange.Target{"app": {CPU: q("2")}},
			rules: nsrules.Rules{LimitRanges: []corev1.LimitRange{limitRange("defaults", corev1.LimitRangeItem{
				Default: builder.List("100m", "64Mi"), DefaultRequest: builder.List("100m", "64Mi")})}},
			want: []string{"app 999m/256Mi 1/256Mi"},
		},
		"a boost a limits.cpu quota cannot hold for every replica is not written": {
			template: &corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{*builder.Container("app").Requests("1", "256Mi").Limits("2", "512Mi").Obj()}}},
			spec:     v1alpha1.TailorPolicySpec{StartupBoost: &v1alpha1.StartupBoost{FactorPercent: &factor}},
			rules:    nsrules.Rules{Quotas: []corev1.ResourceQuota{quota("team", corev1.ResourceList{"limits.cpu": *q("10")}, corev1.ResourceList{"limits.cpu": *q("4")})}},
			replicas: 2,
			wantHeld: "exceeded quota: team",
		},
		"a raise is cut to what a requests.cpu quota leaves each replica": {
			template: &corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{*builder.Container("app").Requests("500m", "256Mi").Obj()}}},
			targets:  map[string]podchange.Target{"app": {CPU: q("2")}},
			rules:    nsrules.Rules{Quotas: []corev1.ResourceQuota{quota("team", corev1.ResourceList{"requests.cpu": *q("4")}, corev1.ResourceList{"requests.cpu": *q("2500m")})}},
			replicas: 2,
			// 1.5 left; 500m of it the new pod's template; 500m more each.
			want: []string{"app 1/256Mi "},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := Admit(AdmitInput{Template: tc.template, Spec: &tc.spec, Targets: tc.targets, Server: v137, Now: now,
				Boost: tc.spec.StartupBoost, Rules: &tc.rules, Replicas: tc.replicas})
			if err != nil {
				t.Fatal(err)
			}
			var text []string
			for _, c := range got.Containers {
				lim := ""
				if c.Limits != nil {
					lim = c.Limits.Cpu().String() + "/" + c.Limits.Memory().String()
				}
				text = append(text, c.Name+" "+c.Requests.Cpu().String()+"/"+c.Requests.Memory().String()+" "+lim)
			}
			if diff := cmp.Diff(tc.want, text); diff != "" {
				t.Errorf("admitted (-want,+got):\n%s\nsummary %q held %q", diff, got.Summary, got.Held)
			}
			if !strings.Contains(got.Held, tc.wantHeld) {
				t.Errorf("held %q, want it to say %q", got.Held, tc.wantHeld)
			}
			if len(got.Containers) == 0 {
				return
			}
			// The pod as the apiserver creates it: LimitRange defaults, then
			// the entry, must pass every rule and keep its QoS class.
			pod := tc.rules.Admitted(&corev1.Pod{Spec: tc.template.Spec})
			before := qosutil.ComputePodQOS(pod)
			for _, ac := range got.Containers {
				c := podcontainers.Named(pod, ac.Name)
				c.Resources.Requests, c.Resources.Limits = ac.Requests, ac.Limits
			}
			charged := tc.rules.Charged(pod, &corev1.Pod{Spec: tc.template.Spec}, max(tc.replicas, 1)-1)
			if v := charged.Violations(pod, nil); len(v) > 0 {
				t.Errorf("the apiserver would refuse the new pod: %+v", v)
			}
			if after := qosutil.ComputePodQOS(pod); after != before {
				t.Errorf("QoS %s as admitted, %s with the entry", before, after)
			}
		})
	}
}
