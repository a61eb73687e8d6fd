package nsrules

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/tailorhq/tailor/test/builder"
)

var equateQuantities = cmp.Comparer(func(a, b resource.Quantity) bool { return a.Cmp(b) == 0 })

// limitRange builds a LimitRange of the given items.
func limitRange(name string, items ...corev1.LimitRangeItem) corev1.LimitRange {
	return corev1.LimitRange{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.LimitRangeSpec{Limits: items}}
}

// rl is a ResourceList from name, quantity pairs.
func rl(kv ...string) corev1.ResourceList {
	out := corev1.ResourceList{}
	for i := 0; i < len(kv); i += 2 {
		out[corev1.ResourceName(kv[i])] = resource.MustParse(kv[i+1])
	}
	return out
}

func quota(name string, hard, used corev1.ResourceList, scopes ...corev1.ResourceQuotaScope) corev1.ResourceQuota {
	return corev1.ResourceQuota{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       corev1.ResourceQuotaSpec{Hard: hard, Scopes: scopes},
		Status:     corev1.ResourceQuotaStatus{Hard: hard, Used: used},
	}
}

func TestAdmitted(t *testing.T) {
	defaults := limitRange("defaults", corev1.LimitRangeItem{
		Type:           corev1.LimitTypeContainer,
		Default:        rl("cpu", "1", "memory", "1Gi"),
		DefaultRequest: rl("cpu", "100m"),
	})
	cases := map[string]struct {
		rules        Rules
		pod          *corev1.Pod
		wantRequests map[string]corev1.ResourceList
		wantLimits   map[string]corev1.ResourceList
		wantNote     string
	}{
		"no LimitRange leaves the pod alone": {
			pod:          builder.Pod("p").Container(builder.Container("app").Requests("200m", "")).Obj(),
			wantRequests: map[string]corev1.ResourceList{"app": rl("cpu", "200m")},
			wantLimits:   map[string]corev1.ResourceList{"app": nil},
		},
		"missing values defaulted, set ones kept": {
			rules:        Rules{LimitRanges: []corev1.LimitRange{defaults}},
			pod:          builder.Pod("p").Container(builder.Container("app").Requests("", "64Mi")).Obj(),
			wantRequests: map[string]corev1.ResourceList{"app": rl("cpu", "100m", "memory", "64Mi")},
			wantLimits:   map[string]corev1.ResourceList{"app": rl("cpu", "1", "memory", "1Gi")},
			wantNote:     "LimitRanger plugin set: cpu request for container app; cpu, memory limit for container app",
		},
		"init containers and sidecars are defaulted like containers": {
			rules: Rules{LimitRanges: []corev1.LimitRange{defaults}},
			pod: builder.Pod("p").Container(builder.Container("app").Requests("1", "1Gi").Limits("1", "1Gi")).
				InitContainer(builder.Container("init")).Sidecar(builder.Container("side")).Obj(),
			wantRequests: map[string]corev1.ResourceList{
				"app": rl("cpu", "1", "memory", "1Gi"), "init": rl("cpu", "100m", "memory", "1Gi"), "side": rl("cpu", "100m", "memory", "1Gi"),
			},
			wantLimits: map[string]corev1.ResourceList{
				"app": rl("cpu", "1", "memory", "1Gi"), "init": rl("cpu", "1", "memory", "1Gi"), "side": rl("cpu", "1", "memory", "1Gi"),
			},
			wantNote: "LimitRanger plugin set: cpu, memory request for init container init; cpu, memory limit for init container init; " +
				"cpu, memory request for init container side; cpu, memory limit for init container side",
		},
		"max is the default limit and min the default request, as the apiserver stores the LimitRange": {
			rules: Rules{LimitRanges: []corev1.LimitRange{limitRange("bounds", corev1.LimitRangeItem{
				Type: corev1.LimitTypeContainer, Max: rl("cpu", "2"), Min: rl("memory", "32Mi"),
			})}},
			pod:          builder.Pod("p").Container(builder.Container("app")).Obj(),
			wantRequests: map[string]corev1.ResourceList{"app": rl("cpu", "2", "memory", "32Mi")},
			wantLimits:   map[string]corev1.ResourceList{"app": rl("cpu", "2")},
			wantNote:     "LimitRanger plugin set: cpu, memory request for container app; cpu limit for container app",
		},
		"a Pod-type item defaults nothing": {
			rules: Rules{LimitRanges: []corev1.LimitRange{limitRange("pod", corev1.LimitRangeItem{
				Type: corev1.LimitTypePod, Max: rl("cpu", "2"),
			})}},
			pod:          builder.Pod("p").Container(builder.Container("app")).Obj(),
			wantRequests: map[string]corev1.ResourceList{"app": nil},
			wantLimits:   map[string]corev1.ResourceList{"app": nil},
		},
		"a limit with no request is the request, before any LimitRange default": {
			rules:        Rules{LimitRanges: []corev1.LimitRange{defaults}},
			pod:          builder.Pod("p").Container(builder.Container("app").Limits("2", "")).Obj(),
			wantRequests: map[string]corev1.ResourceList{"app": rl("cpu", "2", "memory", "1Gi")},
			wantLimits:   map[string]corev1.ResourceList{"app": rl("cpu", "2", "memory", "1Gi")},
			wantNote:     "LimitRanger plugin set: memory request for container app; memory limit for container app",
		},
		"the first LimitRange by name defaults a resource two of them default": {
			rules: Rules{LimitRanges: []corev1.LimitRange{
				limitRange("b", corev1.LimitRangeItem{Type: corev1.LimitTypeContainer, DefaultRequest: rl("cpu", "300m")}),
				limitRange("a", corev1.LimitRangeItem{Type: corev1.LimitTypeContainer, DefaultRequest: rl("cpu", "200m")}),
			}},
			pod:          builder.Pod("p").Container(builder.Container("app")).Obj(),
			wantRequests: map[string]corev1.ResourceList{"app": rl("cpu", "200m")},
			wantLimits:   map[string]corev1.ResourceList{"app": nil},
			wantNote:     "LimitRanger plugin set: cpu request for container app",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			before := tc.pod.DeepCopy()
			got := tc.rules.Admitted(tc.pod)
			gotRequests, gotLimits := map[string]corev1.ResourceList{}, map[string]corev1.ResourceList{}
			for _, c := range append(got.Spec.InitContainers, got.Spec.Containers...) {
				gotRequests[c.Name], gotLimits[c.Name] = c.Resources.Requests, c.Resources.Limits
			}
			if diff := cmp.Diff(tc.wantRequests, gotRequests, equateQuantities); diff != "" {
				t.Errorf("requests (-want,+got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantLimits, gotLimits, equateQuantities); diff != "" {
				t.Errorf("limits (-want,+got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantNote, got.Annotations[LimitRangerAnnotation]); diff != "" {
				t.Errorf("annotation (-want,+got):\n%s", diff)
			}
			if diff := cmp.Diff(before, tc.pod, equateQuantities); diff != "" {
				t.Errorf("Admitted changed its argument (-before,+after):\n%s", diff)
			}
		})
	}
}

func TestViolations(t *testing.T) {
	container := corev1.LimitRangeItem{
		Type: corev1.LimitTypeContainer,
		Min:  rl("cpu", "100m", "memory", "64Mi"), Max: rl("cpu", "2", "memory", "2Gi"),
		MaxLimitRequestRatio: rl("cpu", "4"),
	}
	podMax := corev1.LimitRangeItem{Type: corev1.LimitTypePod, Max: rl("cpu", "3")}
	lrs := []corev1.LimitRange{limitRange("team", container, podMax)}
	app := func(reqCPU, limCPU string) *builder.ContainerWrapper {
		return builder.Container("app").Requests(reqCPU, "128Mi").Limits(limCPU, "1Gi")
	}
	cases := map[string]struct {
		rules Rules
		pod   *corev1.Pod
		old   *corev1.Pod
		want  []Violation
	}{
		"within every bound": {
			rules: Rules{LimitRanges: lrs},
			pod:   builder.Pod("p").Container(app("500m", "1")).Obj(),
		},
		"request under min": {
			rules: Rules{LimitRanges: lrs},
			pod:   builder.Pod("p").Container(app("50m", "100m")).Obj(),
			want: []Violation{{Object: "LimitRange/team", Container: "app", Resource: "cpu",
				Message: "minimum cpu usage per Container is 100m, but request is 50m"}},
		},
		"limit over max, and over the ratio": {
			rules: Rules{LimitRanges: lrs},
			pod:   builder.Pod("p").Container(app("500m", "2500m")).Obj(),
			want: []Violation{
				{Object: "LimitRange/team", Container: "app", Resource: "cpu", Message: "maximum cpu usage per Container is 2, but limit is 2500m"},
				{Object: "LimitRange/team", Container: "app", Resource: "cpu", Message: "cpu max limit to request ratio per Container is 4, but provided ratio is 5.000000"},
			},
		},
		"max with no limit: the init container has none": {
			rules: Rules{LimitRanges: lrs},
			pod: builder.Pod("p").Container(app("500m", "1")).
				InitContainer(builder.Container("init").Requests("100m", "64Mi").Limits("", "64Mi")).Obj(),
			want: []Violation{
				{Object: "LimitRange/team", Container: "init", Resource: "cpu", Message: "maximum cpu usage per Container is 2.  No limit is specified"},
				{Object: "LimitRange/team", Container: "init", Resource: "cpu", Message: "cpu max limit to request ratio per Container is 4, but no limit is specified or limit is 0"},
			},
		},
		"the ratio needs a request above 0": {
			rules: Rules{LimitRanges: []corev1.LimitRange{limitRange("ratio", corev1.LimitRangeItem{Type: corev1.LimitTypeContainer, MaxLimitRequestRatio: rl("memory", "2")})}},
			pod:   builder.Pod("p").Container(builder.Container("app").Requests("", "0").Limits("", "1Gi")).Obj(),
			want: []Violation{{Object: "LimitRange/ratio", Container: "app", Resource: "memory",
				Message: "memory max limit to request ratio per Container is 2, but no request is specified or request is 0"}},
		},
		"the pod's sums over a Pod max: sidecars add up": {
			rules: Rules{LimitRanges: lrs},
			pod: builder.Pod("p").Container(app("1", "2")).
				Sidecar(builder.Container("side").Requests("1", "128Mi").Limits("2", "1Gi")).Obj(),
			want: []Violation{{Object: "LimitRange/team", Resource: "cpu", Message: "maximum cpu usage per Pod is 3, but limit is 4"}},
		},
		"a default limit under the container's own request is invalid, blamed on the LimitRange": {
			rules: Rules{LimitRanges: []corev1.LimitRange{limitRange("defaults", corev1.LimitRangeItem{Type: corev1.LimitTypeContainer, Default: rl("cpu", "1")})}},
			pod:   Rules{LimitRanges: []corev1.LimitRange{limitRange("defaults", corev1.LimitRangeItem{Type: corev1.LimitTypeContainer, Default: rl("cpu", "1")})}}.Admitted(builder.Pod("p").Container(builder.Container("app").Requests("2", "")).Obj()),
			want:  []Violation{{Object: "LimitRange/defaults", Container: "app", Resource: "cpu", Message: "cpu request 2 must be less than or equal to cpu limit of 1"}},
		},
		"other resources are never reported": {
			rules: Rules{LimitRanges: []corev1.LimitRange{limitRange("eph", corev1.LimitRangeItem{Type: corev1.LimitTypeContainer, Max: rl("ephemeral-storage", "1Gi")})}},
			pod:   builder.Pod("p").Container(builder.Container("app")).Obj(),
		},
		"a resize is judged whole by the LimitRanger": {
			rules: Rules{LimitRanges: lrs},
			old:   builder.Pod("p").ResourceVersion("1").Container(app("500m", "1")).Obj(),
			pod:   builder.Pod("p").ResourceVersion("1").Container(app("500m", "3")).Obj(),
			want: []Violation{{Object: "LimitRange/team", Container: "app", Resource: "cpu", Message: "maximum cpu usage per Container is 2, but limit is 3"},
				{Object: "LimitRange/team", Container: "app", Resource: "cpu", Message: "cpu max limit to request ratio per Container is 4, but provided ratio is 6.000000"}},
		},
		"a resize the LimitRanger adds another resource's default to is invalid": {
			rules: Rules{LimitRanges: []corev1.LimitRange{limitRange("eph", corev1.LimitRangeItem{Type: corev1.LimitTypeContainer, Max: rl("ephemeral-storage", "10Gi")})}},
			old:   builder.Pod("p").Container(app("500m", "1")).Obj(),
			pod: Rules{LimitRanges: []corev1.LimitRange{limitRange("eph", corev1.LimitRangeItem{Type: corev1.LimitTypeContainer, Max: rl("ephemeral-storage", "10Gi")})}}.
				Admitted(builder.Pod("p").Container(app("600m", "1")).Obj()),
			want: []Violation{{Object: "LimitRange/eph", Container: "app", Resource: "ephemeral-storage",
				Message: "only cpu and memory resources are mutable: the LimitRanger defaults ephemeral-storage into the resize"}},
		},
		"quota exceeded on create": {
			rules: Rules{Quotas: []corev1.ResourceQuota{quota("q", rl("requests.cpu", "1", "limits.memory", "4Gi"), rl("requests.cpu", "700m", "limits.memory", "1Gi"))}},
			pod:   builder.Pod("p").Container(app("500m", "1")).Obj(),
			want: []Violation{{Object: "ResourceQuota/q", Resource: "requests.cpu",
				Message: "exceeded quota: q, requested: requests.cpu=500m, used: requests.cpu=700m, limited: requests.cpu=1"}},
		},
		"a quota on cpu needs every container to say it": {
			rules: Rules{Quotas: []corev1.ResourceQuota{quota("q", rl("limits.cpu", "10"), rl("limits.cpu", "0"))}},
			pod:   builder.Pod("p").Container(app("500m", "1")).InitContainer(builder.Container("init").Requests("100m", "")).Obj(),
			want:  []Violation{{Object: "ResourceQuota/q", Resource: "limits.cpu", Message: "failed quota: q: must specify limits.cpu for: init"}},
		},
		"a quota with no used for a resource it limits refuses": {
			rules: Rules{Quotas: []corev1.ResourceQuota{quota("q", rl("cpu", "10"), nil)}},
			pod:   builder.Pod("p").Container(app("500m", "1")).Obj(),
			want:  []Violation{{Object: "ResourceQuota/q", Resource: "cpu", Message: "status unknown for quota: q, resources: cpu"}},
		},
		"a quota the controller has not processed (no status.hard) is let through": {
			rules: Rules{Quotas: []corev1.ResourceQuota{{
				ObjectMeta: metav1.ObjectMeta{Name: "new"}, Spec: corev1.ResourceQuotaSpec{Hard: rl("cpu", "0")},
			}}},
			pod: builder.Pod("p").Container(app("500m", "1")).Obj(),
		},
		"a quota of other resources is ignored": {
			rules: Rules{Quotas: []corev1.ResourceQuota{quota("pods", rl("pods", "1"), rl("pods", "1"))}},
			pod:   builder.Pod("p").Container(app("500m", "1")).Obj(),
		},
		"a resize is charged its increase only": {
			rules: Rules{Quotas: []corev1.ResourceQuota{quota("q", rl("requests.cpu", "1"), rl("requests.cpu", "900m"))}},
			old:   builder.Pod("p").ResourceVersion("1").Container(app("500m", "1")).Obj(),
			pod:   builder.Pod("p").ResourceVersion("1").Container(app("700m", "1")).Obj(),
			want: []Violation{{Object: "ResourceQuota/q", Resource: "requests.cpu",
				Message: "exceeded quota: q, requested: requests.cpu=200m, used: requests.cpu=900m, limited: requests.cpu=1"}},
		},
		"a resize over a quota on cpu and memory: one message naming both, as the apiserver's": {
			// Kubernetes' own in-place resize e2e (test/e2e/node/pod_resize.go):
			// two Guaranteed pods of 300m/300Mi under 800m/800Mi, one resized
			// to 600m/750Mi.
			rules: Rules{Quotas: []corev1.ResourceQuota{quota("resize-resource-quota", rl("cpu", "800m", "memory", "800Mi"), rl("cpu", "600m", "memory", "600Mi"))}},
			old:   builder.Pod("p").ResourceVersion("1").Container(builder.Container("c1").Requests("300m", "300Mi").Limits("300m", "300Mi")).Obj(),
			pod:   builder.Pod("p").ResourceVersion("1").Container(builder.Container("c1").Requests("600m", "750Mi").Limits("600m", "750Mi")).Obj(),
			want: []Violation{
				{Object: "ResourceQuota/resize-resource-quota", Resource: "cpu", Message: "exceeded quota: resize-resource-quota, requested: cpu=300m,memory=450Mi, used: cpu=600m,memory=600Mi, limited: cpu=800m,memory=800Mi"},
				{Object: "ResourceQuota/resize-resource-quota", Resource: "memory", Message: "exceeded quota: resize-resource-quota, requested: cpu=300m,memory=450Mi, used: cpu=600m,memory=600Mi, limited: cpu=800m,memory=800Mi"},
			},
		},
		"a resize down passes a quota already over": {
			rules: Rules{Quotas: []corev1.ResourceQuota{quota("q", rl("requests.cpu", "1"), rl("requests.cpu", "2"))}},
			old:   builder.Pod("p").ResourceVersion("1").Container(app("500m", "1")).Obj(),
			pod:   builder.Pod("p").ResourceVersion("1").Container(app("400m", "1")).Obj(),
		},
		"a resize is charged over what the kubelet already allocated, not over the spec": {
			rules: Rules{Quotas: []corev1.ResourceQuota{quota("q", rl("requests.cpu", "1"), rl("requests.cpu", "960m"))}},
			old: builder.Pod("p").Container(app("300m", "1")).
				ContainerStatus(corev1.ContainerStatus{Name: "app", AllocatedResources: rl("cpu", "800m")}).Obj(),
			pod: builder.Pod("p").Container(app("850m", "1")).
				ContainerStatus(corev1.ContainerStatus{Name: "app", AllocatedResources: rl("cpu", "800m")}).Obj(),
			want: []Violation{{Object: "ResourceQuota/q", Resource: "requests.cpu",
				Message: "exceeded quota: q, requested: requests.cpu=50m, used: requests.cpu=960m, limited: requests.cpu=1"}},
		},
		"a quota scoped to BestEffort pods does not see a Burstable one": {
			rules: Rules{Quotas: []corev1.ResourceQuota{quota("be", rl("requests.cpu", "0"), rl("requests.cpu", "0"), corev1.ResourceQuotaScopeBestEffort)}},
			pod:   builder.Pod("p").Container(app("500m", "1")).Obj(),
		},
		"a finished pod is charged nothing": {
			rules: Rules{Quotas: []corev1.ResourceQuota{quota("q", rl("requests.cpu", "0"), rl("requests.cpu", "0"))}},
			pod:   builder.Pod("p").Container(app("500m", "1")).Phase(corev1.PodSucceeded).Obj(),
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := tc.rules.Violations(tc.pod, tc.old)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Violations (-want,+got):\n%s", diff)
			}
		})
	}
}

func TestQuotaScopes(t *testing.T) {
	hard := rl("requests.cpu", "0")
	scoped := func(s ...corev1.ScopedResourceSelectorRequirement) corev1.ResourceQuota {
		q := quota("q", hard, hard)
		q.Spec.ScopeSelector = &corev1.ScopeSelector{MatchExpressions: s}
		return q
	}
	priority := func(op corev1.ScopeSelectorOperator, values ...string) corev1.ResourceQuota {
		return scoped(corev1.ScopedResourceSelectorRequirement{ScopeName: corev1.ResourceQuotaScopePriorityClass, Operator: op, Values: values})
	}
	burstable := builder.Pod("p").Container(builder.Container("app").Requests("100m", ""))
	high := burstable.Obj()
	high.Spec.PriorityClassName = "high"
	terminating := burstable.Obj()
	terminating.Spec.ActiveDeadlineSeconds = ptr.To[int64](60)
	bestEffort := builder.Pod("p").Container(builder.Container("app")).Obj()
	cases := map[string]struct {
		quota     corev1.ResourceQuota
		pod       *corev1.Pod
		wantApply bool
	}{
		"no scope":                           {quota: quota("q", hard, hard), pod: burstable.Obj(), wantApply: true},
		"Terminating, pod with a deadline":   {quota: quota("q", hard, hard, corev1.ResourceQuotaScopeTerminating), pod: terminating, wantApply: true},
		"Terminating, pod without":           {quota: quota("q", hard, hard, corev1.ResourceQuotaScopeTerminating), pod: burstable.Obj()},
		"NotTerminating, pod with":           {quota: quota("q", hard, hard, corev1.ResourceQuotaScopeNotTerminating), pod: terminating},
		"NotBestEffort, Burstable pod":       {quota: quota("q", hard, hard, corev1.ResourceQuotaScopeNotBestEffort), pod: burstable.Obj(), wantApply: true},
		"NotBestEffort, BestEffort pod":      {quota: quota("q", hard, hard, corev1.ResourceQuotaScopeNotBestEffort), pod: bestEffort},
		"PriorityClass In, class in values":  {quota: priority(corev1.ScopeSelectorOpIn, "low", "high"), pod: high, wantApply: true},
		"PriorityClass In, no class":         {quota: priority(corev1.ScopeSelectorOpIn, "high"), pod: burstable.Obj()},
		"PriorityClass NotIn, no class":      {quota: priority(corev1.ScopeSelectorOpNotIn, "high"), pod: burstable.Obj(), wantApply: true},
		"PriorityClass NotIn, class in":      {quota: priority(corev1.ScopeSelectorOpNotIn, "high"), pod: high},
		"PriorityClass Exists, class":        {quota: priority(corev1.ScopeSelectorOpExists), pod: high, wantApply: true},
		"PriorityClass DoesNotExist, class":  {quota: priority(corev1.ScopeSelectorOpDoesNotExist), pod: high},
		"two scopes must both take the pod":  {quota: quota("q", hard, hard, corev1.ResourceQuotaScopeNotBestEffort, corev1.ResourceQuotaScopeTerminating), pod: burstable.Obj()},
		"an unknown scope is taken to apply": {quota: quota("q", hard, hard, "VolumeAttributesClass"), pod: burstable.Obj(), wantApply: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := len(Rules{Quotas: []corev1.ResourceQuota{tc.quota}}.Violations(tc.pod, nil)) > 0
			if got != tc.wantApply {
				t.Errorf("quota applies = %t, want %t", got, tc.wantApply)
			}
		})
	}
}
