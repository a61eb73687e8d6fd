package resize

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tailorhq/tailor/internal/nsrules"
	"github.com/tailorhq/tailor/test/builder"
)

// The namespace Kubernetes' own in-place resize e2e tests resize in
// (test/e2e/node/pod_resize.go): Guaranteed pods of 300m/300Mi, two of
// them under a quota of 800m/800Mi, or one under a LimitRange of
// 50m/50Mi to 500m/500Mi.
func e2ePod() *builder.PodWrapper {
	return builder.Pod("testpod1").ResourceVersion("7").
		Container(builder.Container("c1").Requests("300m", "300Mi").Limits("300m", "300Mi"))
}

func e2eQuota() *nsrules.Rules {
	return &nsrules.Rules{Quotas: []corev1.ResourceQuota{
		builder.Quota("resize-resource-quota", builder.List("800m", "800Mi"), builder.List("600m", "600Mi")),
	}}
}

func e2eLimitRange() *nsrules.Rules {
	return &nsrules.Rules{LimitRanges: []corev1.LimitRange{builder.LimitRange("resize-limit-ranger", corev1.LimitRangeItem{
		Type: corev1.LimitTypeContainer,
		Max:  builder.List("500m", "500Mi"), Min: builder.List("50m", "50Mi"),
		Default: builder.List("100m", "100Mi"), DefaultRequest: builder.List("50m", "50Mi"),
	})}}
}

func c1(cpu, memory string) Desired {
	return Desired{Containers: map[string]corev1.ResourceRequirements{"c1": builder.Requirements(req(cpu, memory), req(cpu, memory))}}
}

// TestPlanUnderNamespaceRules: the verdict counts the namespace's
// LimitRanges and quotas as the apiserver's admission does, in its words.
func TestPlanUnderNamespaceRules(t *testing.T) {
	deleting := e2ePod().Obj()
	deleting.DeletionTimestamp = &metav1.Time{}
	ratio := &nsrules.Rules{LimitRanges: []corev1.LimitRange{builder.LimitRange("ratio", corev1.LimitRangeItem{
		Type: corev1.LimitTypeContainer, MaxLimitRequestRatio: builder.List("2", "")})}}
	podMax := &nsrules.Rules{LimitRanges: []corev1.LimitRange{builder.LimitRange("per-pod", corev1.LimitRangeItem{
		Type: corev1.LimitTypePod, Max: builder.List("1", ""), Min: builder.List("", "256Mi")})}}
	withSidecar := builder.Pod("p").ResourceVersion("7").
		Container(builder.Container("app").Requests("500m", "256Mi").Limits("600m", "512Mi")).
		Sidecar(builder.Container("proxy").Requests("100m", "64Mi").Limits("200m", "64Mi"))
	// A pod created before its namespace's LimitRange: no cpu limit, no memory limit.
	requestsOnly := builder.Pod("p").ResourceVersion("7").Container(builder.Container("app").Requests("500m", "256Mi"))
	defaults := &nsrules.Rules{LimitRanges: []corev1.LimitRange{builder.LimitRange("defaults", corev1.LimitRangeItem{
		Type: corev1.LimitTypeContainer, Default: builder.List("1", "")})}}
	memoryDefault := &nsrules.Rules{LimitRanges: []corev1.LimitRange{builder.LimitRange("memory-default", corev1.LimitRangeItem{
		Type: corev1.LimitTypeContainer, Default: builder.List("", "256Mi")})}}
	limitsMemoryQuota := &nsrules.Rules{Quotas: []corev1.ResourceQuota{
		builder.Quota("mem", corev1.ResourceList{corev1.ResourceLimitsMemory: builder.List("", "8Gi")[corev1.ResourceMemory]}, corev1.ResourceList{corev1.ResourceLimitsMemory: builder.List("", "1Gi")[corev1.ResourceMemory]})}}
	both := &nsrules.Rules{LimitRanges: e2eLimitRange().LimitRanges, Quotas: e2eQuota().Quotas}

	cases := map[string]struct {
		in Input

		wantOutcome    Outcome
		wantRule       Rule
		wantMessage    string // the whole of Result.Message, when set
		wantViolations int    // when set
		wantByRules    bool
		wantDefaulted  string // substring of Result.Defaulted
		wantPatch      string // exact, when set
		wantNoChange   bool
	}{
		// Kubernetes' e2e quota table, then the edges around it.
		"quota e2e: exceed cpu": {
			in:          Input{Pod: e2ePod().Obj(), Server: v137, Rules: e2eQuota(), Desired: c1("600m", "400Mi")},
			wantOutcome: Refused, wantRule: RuleResourceQuota, wantByRules: true,
			wantMessage: "exceeded quota: resize-resource-quota, requested: cpu=300m, used: cpu=600m, limited: cpu=800m",
		},
		"quota e2e: exceed memory": {
			in:          Input{Pod: e2ePod().Obj(), Server: v137, Rules: e2eQuota(), Desired: c1("250m", "750Mi")},
			wantOutcome: Refused, wantRule: RuleResourceQuota, wantByRules: true,
			wantMessage: "exceeded quota: resize-resource-quota, requested: memory=450Mi, used: memory=600Mi, limited: memory=800Mi",
		},
		"quota e2e: exceed cpu and memory, one message": {
			in:          Input{Pod: e2ePod().Obj(), Server: v137, Rules: e2eQuota(), Desired: c1("600m", "750Mi")},
			wantOutcome: Refused, wantRule: RuleResourceQuota, wantByRules: true, wantViolations: 1,
			wantMessage: "exceeded quota: resize-resource-quota, requested: cpu=300m,memory=450Mi, used: cpu=600m,memory=600Mi, limited: cpu=800m,memory=800Mi",
		},
		"quota e2e: valid increase of cpu":        {in: Input{Pod: e2ePod().Obj(), Server: v137, Rules: e2eQuota(), Desired: c1("350m", "300Mi")}, wantOutcome: Accepted},
		"quota e2e: valid increase of memory":     {in: Input{Pod: e2ePod().Obj(), Server: v137, Rules: e2eQuota(), Desired: c1("350m", "350Mi")}, wantOutcome: Accepted},
		"quota e2e: valid increase of both":       {in: Input{Pod: e2ePod().Obj(), Server: v137, Rules: e2eQuota(), Desired: c1("400m", "400Mi")}, wantOutcome: Accepted},
		"quota: an increase to exactly the quota": {in: Input{Pod: e2ePod().Obj(), Server: v137, Rules: e2eQuota(), Desired: c1("500m", "500Mi")}, wantOutcome: Accepted},
		"quota: 1m over the quota": {
			in:          Input{Pod: e2ePod().Obj(), Server: v137, Rules: e2eQuota(), Desired: c1("501m", "500Mi")},
			wantOutcome: Refused, wantRule: RuleResourceQuota, wantByRules: true,
			wantMessage: "exceeded quota: resize-resource-quota, requested: cpu=201m, used: cpu=600m, limited: cpu=800m",
		},
		"quota: a lowering passes a quota already over": {
			in: Input{Pod: e2ePod().Obj(), Server: v137, Desired: c1("200m", "200Mi"), Rules: &nsrules.Rules{Quotas: []corev1.ResourceQuota{
				builder.Quota("over", builder.List("800m", "800Mi"), builder.List("900m", "900Mi"))}}},
			wantOutcome: Accepted,
		},
		"quota: one on limits.memory needs every container to set it": {
			in: Input{Pod: requestsOnly.Obj(), Server: v137, Rules: limitsMemoryQuota,
				Desired: Desired{Containers: set(req("600m", ""), nil)}},
			wantOutcome: Refused, wantRule: RuleResourceQuota, wantByRules: true,
			wantMessage: "failed quota: mem: must specify limits.memory for: app",
		},
		"quota: not counted yet by the quota controller refuses": {
			in: Input{Pod: e2ePod().Obj(), Server: v137, Desired: c1("350m", "300Mi"), Rules: &nsrules.Rules{Quotas: []corev1.ResourceQuota{
				builder.Quota("new", builder.List("800m", ""), nil)}}},
			wantOutcome: Refused, wantRule: RuleResourceQuota, wantByRules: true,
			wantMessage: "status unknown for quota: new, resources: cpu",
		},

		// Kubernetes' e2e LimitRange table, then ratios, Pod items and defaults.
		"LimitRange e2e: exceed max cpu": {
			in:          Input{Pod: e2ePod().Obj(), Server: v137, Rules: e2eLimitRange(), Desired: c1("600m", "250Mi")},
			wantOutcome: Refused, wantRule: RuleLimitRange, wantByRules: true,
			wantMessage: "maximum cpu usage per Container is 500m, but limit is 600m (LimitRange/resize-limit-ranger, container c1)",
		},
		"LimitRange e2e: exceed max memory": {
			in:          Input{Pod: e2ePod().Obj(), Server: v137, Rules: e2eLimitRange(), Desired: c1("250m", "750Mi")},
			wantOutcome: Refused, wantRule: RuleLimitRange, wantByRules: true,
			wantMessage: "maximum memory usage per Container is 500Mi, but limit is 750Mi (LimitRange/resize-limit-ranger, container c1)",
		},
		"LimitRange e2e: exceed max cpu and memory, both reported": {
			in:          Input{Pod: e2ePod().Obj(), Server: v137, Rules: e2eLimitRange(), Desired: c1("600m", "600Mi")},
			wantOutcome: Refused, wantRule: RuleLimitRange, wantByRules: true, wantViolations: 2,
			wantMessage: "maximum cpu usage per Container is 500m, but limit is 600m (LimitRange/resize-limit-ranger, container c1)",
		},
		"LimitRange e2e: request below min cpu": {
			in:          Input{Pod: e2ePod().Obj(), Server: v137, Rules: e2eLimitRange(), Desired: c1("10m", "400Mi")},
			wantOutcome: Refused, wantRule: RuleLimitRange, wantByRules: true,
			wantMessage: "minimum cpu usage per Container is 50m, but request is 10m (LimitRange/resize-limit-ranger, container c1)",
		},
		"LimitRange e2e: request below min memory": {
			in:          Input{Pod: e2ePod().Obj(), Server: v137, Rules: e2eLimitRange(), Desired: c1("250m", "10Mi")},
			wantOutcome: Refused, wantRule: RuleLimitRange, wantByRules: true,
			wantMessage: "minimum memory usage per Container is 50Mi, but request is 10Mi (LimitRange/resize-limit-ranger, container c1)",
		},
		"LimitRange e2e: below min cpu and memory, both reported": {
			in:          Input{Pod: e2ePod().Obj(), Server: v137, Rules: e2eLimitRange(), Desired: c1("10m", "10Mi")},
			wantOutcome: Refused, wantRule: RuleLimitRange, wantByRules: true, wantViolations: 2,
		},
		"LimitRange e2e: valid increase of cpu":    {in: Input{Pod: e2ePod().Obj(), Server: v137, Rules: e2eLimitRange(), Desired: c1("350m", "300Mi")}, wantOutcome: Accepted},
		"LimitRange e2e: valid increase of memory": {in: Input{Pod: e2ePod().Obj(), Server: v137, Rules: e2eLimitRange(), Desired: c1("350m", "350Mi")}, wantOutcome: Accepted},
		"LimitRange: exactly the max":              {in: Input{Pod: e2ePod().Obj(), Server: v137, Rules: e2eLimitRange(), Desired: c1("500m", "500Mi")}, wantOutcome: Accepted},
		"LimitRange: exactly the min":              {in: Input{Pod: e2ePod().Obj(), Server: v137, Rules: e2eLimitRange(), Desired: c1("50m", "50Mi")}, wantOutcome: Accepted},
		"LimitRange: a pod being deleted is let through": {
			in:          Input{Pod: deleting, Server: v137, Rules: e2eLimitRange(), Desired: c1("600m", "600Mi")},
			wantOutcome: Accepted,
		},
		"LimitRange: a limit over maxLimitRequestRatio": {
			in:          Input{Pod: burstablePod().Obj(), Server: v137, Rules: ratio, Desired: Desired{Containers: set(nil, req("1500m", ""))}},
			wantOutcome: Refused, wantRule: RuleLimitRange, wantByRules: true,
			wantMessage: "cpu max limit to request ratio per Container is 2, but provided ratio is 3.000000 (LimitRange/ratio, container app)",
		},
		"LimitRange: a limit at maxLimitRequestRatio": {
			in:          Input{Pod: burstablePod().Obj(), Server: v137, Rules: ratio, Desired: Desired{Containers: set(req("750m", ""), req("1500m", ""))}},
			wantOutcome: Accepted,
		},
		"LimitRange: the pod's sums over a Pod max, sidecar counted": {
			in: Input{Pod: withSidecar.Obj(), Server: v137, Rules: podMax,
				Desired: Desired{Containers: map[string]corev1.ResourceRequirements{"app": builder.Requirements(nil, req("900m", ""))}}},
			wantOutcome: Refused, wantRule: RuleLimitRange, wantByRules: true,
			wantMessage: "maximum cpu usage per Pod is 1, but limit is 1100m (LimitRange/per-pod)",
		},
		"LimitRange: the pod's sums under a Pod min": {
			in: Input{Pod: withSidecar.Obj(), Server: v137, Rules: podMax,
				Desired: Desired{Containers: map[string]corev1.ResourceRequirements{"app": builder.Requirements(req("", "128Mi"), nil)}}},
			wantOutcome: Refused, wantRule: RuleLimitRange, wantByRules: true,
			wantMessage: "minimum memory usage per Pod is 256Mi, but request is 192Mi (LimitRange/per-pod)",
		},
		"LimitRange: the pod's sums at the Pod max": {
			in: Input{Pod: withSidecar.Obj(), Server: v137, Rules: podMax,
				Desired: Desired{Containers: map[string]corev1.ResourceRequirements{"app": builder.Requirements(nil, req("800m", ""))}}},
			wantOutcome: Accepted,
		},
		"defaults: a LimitRange's default limit joins the resize, not the patch": {
			in:          Input{Pod: requestsOnly.Obj(), Server: v137, Rules: defaults, Desired: Desired{Containers: set(req("", "300Mi"), nil)}},
			wantOutcome: Accepted, wantDefaulted: "cpu limit for container app",
			wantPatch: `{"metadata":{"resourceVersion":"7"},"spec":{"containers":[{"name":"app","resources":{"requests":{"cpu":"500m","memory":"300Mi"}}}]}}`,
		},
		"defaults: a default limit below the new request is invalid, and the namespace's doing": {
			in:          Input{Pod: requestsOnly.Obj(), Server: v137, Rules: defaults, Desired: Desired{Containers: set(req("2", ""), nil)}},
			wantOutcome: Refused, wantRule: RuleRequestsExceedLimits, wantByRules: true, wantDefaulted: "cpu limit for container app",
		},
		"defaults: a default that would make the pod Guaranteed changes its QoS class": {
			in: Input{Pod: builder.Pod("p").ResourceVersion("7").Container(builder.Container("app").Requests("500m", "256Mi").Limits("1", "")).Obj(),
				Server: v137, Rules: memoryDefault, Desired: Desired{Containers: set(req("1", ""), nil)}},
			wantOutcome: Refused, wantRule: RuleQoSClassChange, wantByRules: true, wantDefaulted: "memory limit for container app",
		},
		"defaults: a default request the node cannot hold is the namespace's doing": {
			in: Input{Pod: builder.Pod("p").ResourceVersion("7").Node("n").
				Container(builder.Container("app").Requests("500m", "256Mi")).Sidecar(builder.Container("proxy")).Obj(),
				Node: &NodeState{Allocatable: builder.List("1", "4Gi")}, Server: v137,
				Rules: &nsrules.Rules{LimitRanges: []corev1.LimitRange{builder.LimitRange("requests", corev1.LimitRangeItem{
					Type: corev1.LimitTypeContainer, DefaultRequest: builder.List("600m", "")})}},
				Desired: Desired{Containers: set(req("", "300Mi"), nil)}},
			wantOutcome: Refused, wantRule: RuleNodeCapacity, wantByRules: true, wantDefaulted: "cpu request for init container proxy",
		},
		"defaults: a pod-level request the patch carries is judged against the defaulted containers": {
			// The patch says the pod-level cpu request it defaulted from the
			// containers as they were (200m); the LimitRanger then gives c0 a
			// request of 1210m, and the sum is above it.
			in: Input{Pod: builder.Pod("p").ResourceVersion("7").
				Container(builder.Container("app").Requests("200m", "64Mi").Limits("1500m", "")).
				Container(builder.Container("c0").Requests("", "512Mi").Limits("", "512Mi")).Obj(),
				Server: v137, Rules: &nsrules.Rules{LimitRanges: []corev1.LimitRange{builder.LimitRange("requests", corev1.LimitRangeItem{
					Type: corev1.LimitTypeContainer, DefaultRequest: builder.List("1210m", "")})}},
				Desired: Desired{Pod: &corev1.ResourceRequirements{Requests: req("", "1Gi")}}},
			wantOutcome: Refused, wantRule: RulePodLevelRequestsBelowContainers, wantByRules: true, wantDefaulted: "cpu request for container c0",
		},
		"defaults: nothing to send is no change, whatever a LimitRange would add": {
			in:          Input{Pod: requestsOnly.Obj(), Server: v137, Rules: defaults, Desired: Desired{Containers: set(req("500m", ""), nil)}},
			wantOutcome: Accepted, wantNoChange: true,
		},

		// Order and scope.
		"order: the LimitRanger answers before the quota": {
			in:          Input{Pod: e2ePod().Obj(), Server: v137, Rules: both, Desired: c1("600m", "300Mi")},
			wantOutcome: Refused, wantRule: RuleLimitRange, wantByRules: true,
		},
		"order: validation answers before admission, and is not the namespace's": {
			in: Input{Pod: e2ePod().Obj(), Server: v137, Rules: both,
				Desired: Desired{Containers: map[string]corev1.ResourceRequirements{"c1": builder.Requirements(req("600m", ""), nil)}}},
			wantOutcome: Refused, wantRule: RuleRequestsExceedLimits,
		},
		"no rules given: judged without them": {
			in:          Input{Pod: e2ePod().Obj(), Server: v137, Desired: c1("600m", "750Mi")},
			wantOutcome: Accepted,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := Plan(tc.in)
			if err != nil {
				t.Fatal(err)
			}
			if got.Outcome != tc.wantOutcome || got.Rule != tc.wantRule || got.NoChange != tc.wantNoChange {
				t.Fatalf("got %s %q (no change %t): %s; want %s %q (no change %t)", got.Outcome, got.Rule, got.NoChange, got.Message, tc.wantOutcome, tc.wantRule, tc.wantNoChange)
			}
			if tc.wantMessage != "" {
				if diff := cmp.Diff(tc.wantMessage, got.Message); diff != "" {
					t.Errorf("message (-want,+got):\n%s", diff)
				}
			}
			if tc.wantViolations > 0 && len(got.Violations) != tc.wantViolations {
				t.Errorf("%d violations, want %d: %+v", len(got.Violations), tc.wantViolations, got.Violations)
			}
			if got.ByNamespaceRules() != tc.wantByRules {
				t.Errorf("ByNamespaceRules = %t, want %t", got.ByNamespaceRules(), tc.wantByRules)
			}
			if !strings.Contains(got.Defaulted, tc.wantDefaulted) || (tc.wantDefaulted == "") != (got.Defaulted == "") {
				t.Errorf("Defaulted = %q, want it to say %q", got.Defaulted, tc.wantDefaulted)
			}
			if tc.wantPatch != "" {
				if diff := cmp.Diff(tc.wantPatch, string(got.Patch)); diff != "" {
					t.Errorf("patch (-want,+got):\n%s", diff)
				}
			}
		})
	}
}

// TestPlanCountsTheLimitRangersDefaults: what a LimitRange adds to a
// resize is in the pod the apiserver admits and in the kubelet's restarts,
// not in the patch.
func TestPlanCountsTheLimitRangersDefaults(t *testing.T) {
	pod := builder.Pod("p").ResourceVersion("7").
		Container(builder.Container("app").Requests("500m", "256Mi").ResizePolicy(corev1.ResourceCPU, corev1.RestartContainer)).Obj()
	rules := &nsrules.Rules{LimitRanges: []corev1.LimitRange{builder.LimitRange("defaults", corev1.LimitRangeItem{
		Type: corev1.LimitTypeContainer, Default: builder.List("1", "")})}}
	got, err := Plan(Input{Pod: pod, Server: v137, Rules: rules, Desired: Desired{Containers: set(req("", "300Mi"), nil)}})
	if err != nil {
		t.Fatal(err)
	}
	app := got.Containers[0]
	if _, ok := app.After.Limits[corev1.ResourceCPU]; ok {
		t.Errorf("the container's limits after the patch: %v, want no cpu limit: the patch does not carry the default", app.After.Limits)
	}
	if _, ok := got.AfterPod().Spec.Containers[0].Resources.Limits[corev1.ResourceCPU]; ok {
		t.Errorf("AfterPod has a cpu limit: it is the pod the patch makes")
	}
	if lim, ok := got.AdmittedPod().Spec.Containers[0].Resources.Limits[corev1.ResourceCPU]; !ok || lim.String() != "1" {
		t.Errorf("AdmittedPod's cpu limit %v, want the default 1", got.AdmittedPod().Spec.Containers[0].Resources.Limits)
	}
	if !app.Restart || !strings.Contains(app.RestartReason, "cpu limit") {
		t.Errorf("restart %t (%q): adding a cpu limit under RestartContainer restarts the container", app.Restart, app.RestartReason)
	}
	if diff := cmp.Diff([]string{"app"}, got.RestartsForDefaults()); diff != "" {
		t.Errorf("RestartsForDefaults (-want,+got):\n%s", diff)
	}
	if len(got.Warnings) == 0 || !strings.Contains(got.Warnings[len(got.Warnings)-1], "cpu limit for container app") {
		t.Errorf("warnings %q: want the default named", got.Warnings)
	}
}

// TestRequestsForDefaults: a resize the LimitRanges add requests to asks
// the node for more than the patch says; one they add only limits to does
// not.
func TestRequestsForDefaults(t *testing.T) {
	withSidecar := builder.Pod("p").ResourceVersion("7").
		Container(builder.Container("app").Requests("500m", "256Mi")).Sidecar(builder.Container("proxy")).Obj()
	requestsOnly := builder.Pod("p").ResourceVersion("7").Container(builder.Container("app").Requests("500m", "256Mi")).Obj()
	cases := map[string]struct {
		pod   *corev1.Pod
		rules *nsrules.Rules
		want  bool
	}{
		"a default request for the sidecar that has none": {pod: withSidecar, want: true,
			rules: &nsrules.Rules{LimitRanges: []corev1.LimitRange{builder.LimitRange("requests", corev1.LimitRangeItem{
				Type: corev1.LimitTypeContainer, DefaultRequest: builder.List("100m", "")})}}},
		"a default limit only: the container has its request": {pod: requestsOnly,
			rules: &nsrules.Rules{LimitRanges: []corev1.LimitRange{builder.LimitRange("limits", corev1.LimitRangeItem{
				Type: corev1.LimitTypeContainer, Default: builder.List("1", "")})}}},
		"no LimitRange": {pod: withSidecar, rules: &nsrules.Rules{}},
		"no rules":      {pod: withSidecar},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := Plan(Input{Pod: tc.pod, Server: v137, Rules: tc.rules, Desired: Desired{Containers: set(req("", "300Mi"), nil)}})
			if err != nil {
				t.Fatal(err)
			}
			if got.RequestsForDefaults() != tc.want {
				t.Errorf("RequestsForDefaults = %t, want %t (defaulted %q)", got.RequestsForDefaults(), tc.want, got.Defaulted)
			}
		})
	}
}
