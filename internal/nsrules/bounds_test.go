package nsrules

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/tailorhq/tailor/test/builder"
)

func TestContainerBounds(t *testing.T) {
	rules := Rules{LimitRanges: []corev1.LimitRange{
		limitRange("wide", corev1.LimitRangeItem{Type: corev1.LimitTypeContainer, Min: rl("cpu", "100m"), Max: rl("cpu", "8"), MaxLimitRequestRatio: rl("cpu", "10")}),
		limitRange("tight", corev1.LimitRangeItem{Type: corev1.LimitTypeContainer, Min: rl("cpu", "50m"), Max: rl("cpu", "4"), MaxLimitRequestRatio: rl("cpu", "2")}),
		limitRange("pod", corev1.LimitRangeItem{Type: corev1.LimitTypePod, Max: rl("cpu", "1")}),
	}}
	cases := map[string]struct {
		res  corev1.ResourceName
		want Bounds
	}{
		"the tightest of each end, each naming its LimitRange": {
			res: corev1.ResourceCPU,
			want: Bounds{Resource: corev1.ResourceCPU,
				Min:                  &Bound{Quantity: resource.MustParse("100m"), LimitRange: "wide"},
				Max:                  &Bound{Quantity: resource.MustParse("4"), LimitRange: "tight"},
				MaxLimitRequestRatio: &Bound{Quantity: resource.MustParse("2"), LimitRange: "tight"}},
		},
		"unbounded": {res: corev1.ResourceMemory, want: Bounds{Resource: corev1.ResourceMemory}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, rules.ContainerBounds(tc.res), equateQuantities); diff != "" {
				t.Errorf("ContainerBounds (-want,+got):\n%s", diff)
			}
		})
	}
}

func TestClamp(t *testing.T) {
	q := resource.MustParse
	lim := func(s string) *resource.Quantity { v := q(s); return &v }
	cpu := Bounds{Resource: corev1.ResourceCPU,
		Min:                  &Bound{Quantity: q("100m"), LimitRange: "team"},
		Max:                  &Bound{Quantity: q("4"), LimitRange: "team"},
		MaxLimitRequestRatio: &Bound{Quantity: q("2"), LimitRange: "ratio"}}
	memory := Bounds{Resource: corev1.ResourceMemory, Max: &Bound{Quantity: q("1Gi"), LimitRange: "team"}}
	cases := map[string]struct {
		bounds      Bounds
		request     resource.Quantity
		limit       *resource.Quantity
		wantRequest resource.Quantity
		wantLimit   *resource.Quantity
		wantWhy     string
	}{
		"inside: unchanged, no reason": {
			bounds: cpu, request: q("1"), limit: lim("2"), wantRequest: q("1"), wantLimit: lim("2"),
		},
		"request over max": {
			bounds: cpu, request: q("6"), limit: lim("8"), wantRequest: q("4"), wantLimit: lim("4"),
			wantWhy: "capped by LimitRange team max cpu 4; limit capped by LimitRange team max cpu 4",
		},
		"request under min": {
			bounds: cpu, request: q("10m"), limit: lim("150m"), wantRequest: q("100m"), wantLimit: lim("150m"),
			wantWhy: "raised by LimitRange team min cpu 100m",
		},
		"limit over the ratio is lowered, not the request raised": {
			bounds: cpu, request: q("500m"), limit: lim("3"), wantRequest: q("500m"), wantLimit: lim("1"),
			wantWhy: "limit capped by LimitRange ratio maxLimitRequestRatio cpu 2",
		},
		"no limit where one is required: the largest allowed": {
			bounds: cpu, request: q("500m"), wantRequest: q("500m"), wantLimit: lim("1"),
			wantWhy: "limit set by LimitRange ratio, which requires one for cpu",
		},
		"no limit under a max: the max": {
			bounds: memory, request: q("256Mi"), wantRequest: q("256Mi"), wantLimit: lim("1Gi"),
			wantWhy: "limit set by LimitRange team, which requires one for memory",
		},
		"limit below the request follows it": {
			bounds: memory, request: q("512Mi"), limit: lim("256Mi"), wantRequest: q("512Mi"), wantLimit: lim("512Mi"),
			wantWhy: "limit raised to the request",
		},
		"no bounds, no limit: unchanged": {
			bounds: Bounds{Resource: corev1.ResourceCPU}, request: q("3"), wantRequest: q("3"),
		},
		"a zero request under a ratio": {
			bounds:  Bounds{Resource: corev1.ResourceCPU, MaxLimitRequestRatio: &Bound{Quantity: q("3"), LimitRange: "ratio"}},
			request: q("0"), limit: lim("1"), wantRequest: q("1m"), wantLimit: lim("3m"),
			wantWhy: "raised above 0 for LimitRange ratio maxLimitRequestRatio cpu 3; limit capped by LimitRange ratio maxLimitRequestRatio cpu 3",
		},
		"contradicting LimitRanges: the max wins, and says so": {
			bounds: Bounds{Resource: corev1.ResourceCPU,
				Min: &Bound{Quantity: q("2"), LimitRange: "a"}, Max: &Bound{Quantity: q("1"), LimitRange: "b"}},
			request: q("500m"), limit: lim("1"), wantRequest: q("1"), wantLimit: lim("1"),
			wantWhy: "LimitRange a min cpu 2 is above LimitRange b max cpu 1: no value is admitted; raised by LimitRange a min cpu 2",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			gotRequest, gotLimit, gotWhy := tc.bounds.Clamp(tc.request, tc.limit)
			if diff := cmp.Diff(tc.wantRequest, gotRequest, equateQuantities); diff != "" {
				t.Errorf("request (-want,+got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantLimit, gotLimit, equateQuantities); diff != "" {
				t.Errorf("limit (-want,+got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantWhy, gotWhy); diff != "" {
				t.Errorf("why (-want,+got):\n%s", diff)
			}
		})
	}
}

func TestRoom(t *testing.T) {
	q := resource.MustParse
	terminating := int64(30)
	pod := builder.Pod("p").Container(builder.Container("app").Requests("500m", "256Mi").Limits("1", "1Gi")).
		Sidecar(builder.Container("side").Requests("100m", "64Mi").Limits("200m", "128Mi")).Obj()
	jobPod := pod.DeepCopy()
	jobPod.Spec.ActiveDeadlineSeconds = &terminating
	rules := Rules{
		Quotas: []corev1.ResourceQuota{
			quota("all", rl("cpu", "10", "limits.memory", "8Gi"), rl("cpu", "9", "limits.memory", "2Gi")),
			quota("jobs", rl("requests.cpu", "20", "requests.memory", "1Gi"), rl("requests.cpu", "19500m", "requests.memory", "2Gi"), corev1.ResourceQuotaScopeTerminating),
			quota("unknown", rl("limits.cpu", "20"), nil, corev1.ResourceQuotaScopeTerminating),
		},
		LimitRanges: []corev1.LimitRange{limitRange("pods", corev1.LimitRangeItem{Type: corev1.LimitTypePod, Max: rl("cpu", "2", "memory", "1Gi")})},
	}
	podRoom := map[corev1.ResourceName]Cap{
		"requests.cpu":    {Quantity: q("1400m"), By: "LimitRange/pods Pod max cpu 2"},
		"limits.cpu":      {Quantity: q("800m"), By: "LimitRange/pods Pod max cpu 2"},
		"requests.memory": {Quantity: q("704Mi"), By: "LimitRange/pods Pod max memory 1Gi"},
		"limits.memory":   {Quantity: q("0"), By: "LimitRange/pods Pod max memory 1Gi"},
	}
	cases := map[string]struct {
		pod  *corev1.Pod
		want Room
	}{
		"a long-running pod: the unscoped quota only": {
			pod: pod,
			want: Room{Quota: map[corev1.ResourceName]Cap{
				"requests.cpu":  {Quantity: q("1"), By: "ResourceQuota/all cpu"},
				"limits.memory": {Quantity: q("6Gi"), By: "ResourceQuota/all limits.memory"},
			}, Pod: podRoom},
		},
		"a pod with a deadline: the least over all three; over-used and unknown leave none": {
			pod: jobPod,
			want: Room{Quota: map[corev1.ResourceName]Cap{
				"requests.cpu":    {Quantity: q("500m"), By: "ResourceQuota/jobs requests.cpu"},
				"requests.memory": {Quantity: q("0"), By: "ResourceQuota/jobs requests.memory"},
				"limits.memory":   {Quantity: q("6Gi"), By: "ResourceQuota/all limits.memory"},
				"limits.cpu":      {Quantity: q("0"), By: "ResourceQuota/unknown limits.cpu"},
			}, Pod: podRoom},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, rules.Room(tc.pod), equateQuantities); diff != "" {
				t.Errorf("Room (-want,+got):\n%s", diff)
			}
		})
	}
}
