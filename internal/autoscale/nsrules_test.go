package autoscale

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	qosutil "k8s.io/kubectl/pkg/util/qos"

	"github.com/tailorhq/tailor/api/v1alpha1"
	"github.com/tailorhq/tailor/internal/nsrules"
	"github.com/tailorhq/tailor/internal/podchange"
	"github.com/tailorhq/tailor/internal/podcontainers"
	"github.com/tailorhq/tailor/internal/resize"
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

// Issue #23, finding 1, in place: raises are clamped into the LimitRanges
// and cut to what the quotas leave (shared between the pods of a sync); a
// resize the apiserver would refuse anyway is held, naming the object.
func TestDecidePolicyWithinTheNamespaceRules(t *testing.T) {
	mk := func(name string) *corev1.Pod {
		return builder.Pod(name).Node("n1").Container(builder.Container("app").Requests("500m", "256Mi").Limits("1", "512Mi")).Obj()
	}
	a, b := mk("a"), mk("b")
	cases := map[string]struct {
		rules    nsrules.Rules
		want     []string
		wantHeld []string
	}{
		"no rules: both raised in full": {
			want: []string{"a app.cpu=2;", "b app.cpu=2;"},
		},
		"a LimitRange max on cpu caps each raise": {
			rules: nsrules.Rules{LimitRanges: []corev1.LimitRange{limitRange("caps", corev1.LimitRangeItem{Max: builder.List("1500m", "")})}},
			want:  []string{"a app.cpu=1500m;", "b app.cpu=1500m;"},
		},
		"a requests.cpu quota's room is shared: the first raise takes what it needs, the second the rest": {
			rules: nsrules.Rules{Quotas: []corev1.ResourceQuota{quota("team", corev1.ResourceList{"requests.cpu": *q("3")}, corev1.ResourceList{"requests.cpu": *q("1")})}},
			want:  []string{"a app.cpu=2;", "b app.cpu=1;"},
		},
		"a pod already outside a LimitRange made after it cannot be resized: held": {
			rules:    nsrules.Rules{LimitRanges: []corev1.LimitRange{limitRange("floor", corev1.LimitRangeItem{Min: builder.List("", "300Mi")})}},
			wantHeld: []string{"a NamespaceRules", "b NamespaceRules"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			in := PolicyInput{
				Spec: spec(func(s *v1alpha1.TailorPolicySpec) {
					s.Behavior = &v1alpha1.Behavior{MaxConcurrentResizes: ptr(int32(2))}
				}),
				Pods: []PodInput{
					{Pod: a, Targets: map[string]podchange.Target{"app": {CPU: q("2")}}, RaiseSince: now.Add(-2 * time.Minute)},
					{Pod: b, Targets: map[string]podchange.Target{"app": {CPU: q("2")}}, RaiseSince: now.Add(-time.Minute)},
				},
				Nodes: map[string]*resize.NodeState{"n1": nodeState("16", "16Gi", a, b)}, Server: v137, Now: now, Rules: &tc.rules,
			}
			d, err := DecidePolicy(in)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, sent(d)); diff != "" {
				t.Errorf("resizes (-want,+got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantHeld, held(d)); diff != "" {
				t.Errorf("held (-want,+got):\n%s", diff)
			}
		})
	}
}
