package ownership

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
)

func controllerRef(apiVersion, kind, name string) metav1.OwnerReference {
	yes := true
	return metav1.OwnerReference{APIVersion: apiVersion, Kind: kind, Name: name, UID: types.UID(kind + "-" + name), Controller: &yes}
}

func TestControllerChain(t *testing.T) {
	deployment := func(name string) []metav1.OwnerReference {
		return []metav1.OwnerReference{controllerRef("apps/v1", "Deployment", name)}
	}
	replicaSets := map[string][]metav1.OwnerReference{
		"web-5d9c":    deployment("web"),
		"canary-7f8b": deployment("web-canary"),
		"orphan-1a2b": nil,
	}
	lookup := func(name string) ([]metav1.OwnerReference, bool) {
		refs, ok := replicaSets[name]
		return refs, ok
	}
	notController := controllerRef("apps/v1", "Deployment", "web")
	notController.Controller = nil
	cases := map[string]struct {
		refs []metav1.OwnerReference
		want Chain
	}{
		"a bare pod": {},
		"an owner that is not the controller is not followed": {refs: []metav1.OwnerReference{notController}},
		"a Deployment's pod, through its ReplicaSet": {
			refs: []metav1.OwnerReference{controllerRef("apps/v1", "ReplicaSet", "web-5d9c")},
			want: Chain{{"apps", "ReplicaSet", "web-5d9c"}, {"apps", "Deployment", "web"}},
		},
		"a canary's pod reaches the canary": {
			refs: []metav1.OwnerReference{controllerRef("apps/v1", "ReplicaSet", "canary-7f8b")},
			want: Chain{{"apps", "ReplicaSet", "canary-7f8b"}, {"apps", "Deployment", "web-canary"}},
		},
		"an orphaned ReplicaSet ends the chain": {
			refs: []metav1.OwnerReference{controllerRef("apps/v1", "ReplicaSet", "orphan-1a2b")},
			want: Chain{{"apps", "ReplicaSet", "orphan-1a2b"}},
		},
		"a ReplicaSet not known yet ends the chain": {
			refs: []metav1.OwnerReference{controllerRef("apps/v1", "ReplicaSet", "new-0000")},
			want: Chain{{"apps", "ReplicaSet", "new-0000"}},
		},
		"a StatefulSet's pod": {
			refs: []metav1.OwnerReference{controllerRef("apps/v1", "StatefulSet", "db")},
			want: Chain{{"apps", "StatefulSet", "db"}},
		},
		"a Job's pod: the Job is not followed to a CronJob": {
			refs: []metav1.OwnerReference{controllerRef("batch/v1", "Job", "nightly-29000000")},
			want: Chain{{"batch", "Job", "nightly-29000000"}},
		},
		"another group's ReplicaSet is not looked up": {
			refs: []metav1.OwnerReference{controllerRef("example.com/v1", "ReplicaSet", "web-5d9c")},
			want: Chain{{"example.com", "ReplicaSet", "web-5d9c"}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, ControllerChain(tc.refs, lookup)); diff != "" {
				t.Errorf("chain (-want,+got):\n%s", diff)
			}
		})
	}
}

func TestClaimedBy(t *testing.T) {
	t0 := time.Date(2026, 11, 23, 9, 0, 0, 0, time.UTC)
	web := Workload{"apps", "Deployment", "web"}
	canary := Workload{"apps", "Deployment", "web-canary"}
	stablePod := Chain{{"apps", "ReplicaSet", "web-5d9c"}, web}
	canaryPod := Chain{{"apps", "ReplicaSet", "canary-7f8b"}, canary}
	appWeb := labels.SelectorFromSet(labels.Set{"app": "web"})
	byTarget := func(name string, created time.Time, w Workload) Claimant {
		return Claimant{Name: name, Created: created, Target: &w}
	}
	bySelector := func(name string, created time.Time) Claimant {
		return Claimant{Name: name, Created: created, Selector: appWeb}
	}
	cases := map[string]struct {
		chain    Chain
		policies []Claimant
		want     string
	}{
		"no policy":                          {chain: stablePod},
		"a selector policy of other pods":    {chain: stablePod, policies: []Claimant{{Name: "db", Selector: labels.SelectorFromSet(labels.Set{"app": "db"})}}},
		"the one policy that claims the pod": {chain: stablePod, policies: []Claimant{bySelector("sel", t0)}, want: "sel"},
		"a targetRef policy beats an older selector policy": {
			chain: stablePod, policies: []Claimant{bySelector("aaa", t0), byTarget("zzz", t0.Add(time.Hour), web)}, want: "zzz",
		},
		"two selector policies: the older wins": {
			chain: stablePod, policies: []Claimant{bySelector("new", t0.Add(time.Second)), bySelector("old", t0)}, want: "old",
		},
		"two policies created at once: the first by name wins": {
			chain: stablePod, policies: []Claimant{bySelector("b", t0), bySelector("a", t0)}, want: "a",
		},
		"a targetRef policy of the canary does not claim the stable pod": {
			chain: stablePod, policies: []Claimant{byTarget("canary", t0, canary), bySelector("sel", t0.Add(time.Hour))}, want: "sel",
		},
		"the stable's targetRef policy does not claim the canary's pod though its labels match": {
			chain: canaryPod, policies: []Claimant{byTarget("stable", t0, web)},
		},
		"a targetRef policy of the ReplicaSet claims its pods": {
			chain: stablePod, policies: []Claimant{byTarget("rs", t0, Workload{"apps", "ReplicaSet", "web-5d9c"})}, want: "rs",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			// The winner does not depend on the order policies are listed in.
			for _, order := range [][]Claimant{tc.policies, reversed(tc.policies)} {
				got, ok := ClaimedBy(labels.Set{"app": "web"}, tc.chain, order)
				if ok != (tc.want != "") || got.Name != tc.want {
					t.Errorf("claimed by %q (%v), want %q", got.Name, ok, tc.want)
				}
			}
		})
	}
}

func reversed[T any](s []T) []T {
	out := make([]T, len(s))
	for i, v := range s {
		out[len(s)-1-i] = v
	}
	return out
}

func TestVPAOn(t *testing.T) {
	web := Workload{"apps", "Deployment", "web"}
	pod := Chain{{"apps", "ReplicaSet", "web-5d9c"}, web}
	cases := map[string]struct {
		vpas []VPA
		want string
	}{
		"none":                      {},
		"Off only recommends":       {vpas: []VPA{{Name: "web", Target: web, Mode: "Off"}}},
		"another workload's":        {vpas: []VPA{{Name: "api", Target: Workload{"apps", "Deployment", "api"}, Mode: "Auto"}}},
		"Auto on the Deployment":    {vpas: []VPA{{Name: "web", Target: web, Mode: "Auto"}}, want: "VerticalPodAutoscaler web (updateMode Auto) on Deployment web"},
		"unset is VPA's Recreate":   {vpas: []VPA{{Name: "web", Target: web}}, want: "VerticalPodAutoscaler web (updateMode unset (Recreate)) on Deployment web"},
		"Initial on the ReplicaSet": {vpas: []VPA{{Name: "rs", Target: pod[0], Mode: "Initial"}}, want: "VerticalPodAutoscaler rs (updateMode Initial) on ReplicaSet web-5d9c"},
		"several: the first by name": {vpas: []VPA{{Name: "b", Target: web, Mode: "Auto"}, {Name: "a", Target: web, Mode: "Off"}, {Name: "c", Target: web, Mode: "Recreate"}},
			want: "VerticalPodAutoscaler b (updateMode Auto) on Deployment web"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, ok := VPAOn(pod, tc.vpas)
			text := ""
			if ok {
				text = got.String()
			}
			if text != tc.want {
				t.Errorf("VPAOn = %q, want %q", text, tc.want)
			}
		})
	}
}

func TestWorkloads(t *testing.T) {
	web := Workload{"apps", "Deployment", "web"}
	got := Workloads([]Chain{{{"apps", "ReplicaSet", "web-5d9c"}, web}, {{"apps", "ReplicaSet", "web-5d9c"}, web}, nil}, web)
	want := []Workload{web, {"apps", "ReplicaSet", "web-5d9c"}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("workloads (-want,+got):\n%s", diff)
	}
}
