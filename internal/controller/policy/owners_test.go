package policy

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"

	"github.com/tailorhq/tailor/internal/ownership"
)

func TestOwnPods(t *testing.T) {
	t0 := time.Date(2026, 11, 23, 9, 0, 0, 0, time.UTC)
	web := ownership.Workload{Group: "apps", Kind: "Deployment", Name: "web"}
	canary := ownership.Workload{Group: "apps", Kind: "Deployment", Name: "web-canary"}
	pod := func(name string) *corev1.Pod {
		p := &corev1.Pod{}
		p.Name, p.UID, p.Labels = name, types.UID(name), map[string]string{"app": "web"}
		return p
	}
	pods := []*corev1.Pod{pod("stable-1"), pod("stable-2"), pod("canary-1")}
	chains := map[types.UID]ownership.Chain{
		"stable-1": {{Group: "apps", Kind: "ReplicaSet", Name: "web-5d9c"}, web},
		"stable-2": {{Group: "apps", Kind: "ReplicaSet", Name: "web-5d9c"}, web},
		"canary-1": {{Group: "apps", Kind: "ReplicaSet", Name: "canary-7f8b"}, canary},
	}
	stable := ownership.Claimant{Name: "stable", Created: t0.Add(time.Hour), Target: &web}
	sel := ownership.Claimant{Name: "sel", Created: t0, Selector: labels.SelectorFromSet(labels.Set{"app": "web"})}
	cases := map[string]struct {
		self         ownership.Claimant
		others       []ownership.Claimant
		vpas         []ownership.VPA
		wantPods     []string
		wantLost     map[string]int
		wantVPA      string
		wantHeld     int
		wantTarget   string
		wantConflict bool
	}{
		"a targetRef policy sizes its target's pods, not the canary's": {
			self: stable, others: []ownership.Claimant{stable}, wantPods: []string{"stable-1", "stable-2"},
		},
		"a selector policy alone sizes every pod it selects": {
			self: sel, others: []ownership.Claimant{sel}, wantPods: []string{"stable-1", "stable-2", "canary-1"},
		},
		"the selector policy loses the stable pods to the targetRef policy": {
			self: sel, others: []ownership.Claimant{sel, stable}, wantPods: []string{"canary-1"},
			wantLost: map[string]int{"stable": 2}, wantConflict: true,
		},
		"a policy in mode Off recommends for every pod it selects, and takes none from the one that sizes them": {
			self:     ownership.Claimant{Name: "watch", Created: t0.Add(-time.Hour), Selector: labels.SelectorFromSet(labels.Set{"app": "web"}), RecommendOnly: true},
			others:   []ownership.Claimant{stable},
			wantPods: []string{"stable-1", "stable-2", "canary-1"},
		},
		"a policy that sizes does not lose its pods to an older one in mode Off": {
			self: stable, others: []ownership.Claimant{stable, {Name: "watch", Created: t0.Add(-time.Hour), Target: &web, RecommendOnly: true}},
			wantPods: []string{"stable-1", "stable-2"},
		},
		"the targetRef policy wins over the older selector policy": {
			self: stable, others: []ownership.Claimant{sel, stable}, wantPods: []string{"stable-1", "stable-2"},
		},
		"of two policies naming one workload the older sizes it, pods or not": {
			self: stable, others: []ownership.Claimant{stable, {Name: "first", Created: t0, Target: &web}},
			wantLost: map[string]int{"first": 2}, wantTarget: "first", wantConflict: true,
		},
		"of two policies naming one workload the older keeps it": {
			self: ownership.Claimant{Name: "first", Created: t0, Target: &web}, others: []ownership.Claimant{stable},
			wantPods: []string{"stable-1", "stable-2"},
		},
		"a policy in mode Off naming the same workload takes nothing from it": {
			self: stable, others: []ownership.Claimant{stable, {Name: "watch", Created: t0, Target: &web, RecommendOnly: true}},
			wantPods: []string{"stable-1", "stable-2"},
		},
		"an acting VPA on the target holds the target's pods": {
			self: stable, others: []ownership.Claimant{stable}, vpas: []ownership.VPA{{Name: "web", Target: web, Mode: "Auto"}},
			wantVPA: "web", wantHeld: 2,
		},
		"an acting VPA on the canary holds only the canary's pods of a selector policy": {
			self: sel, others: []ownership.Claimant{sel}, vpas: []ownership.VPA{{Name: "c", Target: canary, Mode: "Recreate"}},
			wantPods: []string{"stable-1", "stable-2"}, wantVPA: "c", wantHeld: 1,
		},
		"a VPA in mode Off holds nothing": {
			self: stable, others: []ownership.Claimant{stable}, vpas: []ownership.VPA{{Name: "web", Target: web, Mode: "Off"}},
			wantPods: []string{"stable-1", "stable-2"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := ownPods(tc.self, pods, chains, tc.others, tc.vpas)
			var names []string
			for _, p := range got.pods {
				names = append(names, p.Name)
			}
			if diff := cmp.Diff(tc.wantPods, names, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("pods (-want,+got):\n%s", diff)
			}
			if len(got.chains) != len(got.pods) {
				t.Errorf("%d chains for %d pods", len(got.chains), len(got.pods))
			}
			if diff := cmp.Diff(tc.wantLost, got.lost, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("lost (-want,+got):\n%s", diff)
			}
			if got.target != tc.wantTarget {
				t.Errorf("target won by %q, want %q", got.target, tc.wantTarget)
			}
			if got.vpa.Name != tc.wantVPA || got.held != tc.wantHeld {
				t.Errorf("vpa %q holding %d, want %q holding %d", got.vpa.Name, got.held, tc.wantVPA, tc.wantHeld)
			}
			if (got.conflict() != "") != tc.wantConflict || (got.vpaHeld() != "") != (tc.wantVPA != "") {
				t.Errorf("conflict %q, vpa %q", got.conflict(), got.vpaHeld())
			}
		})
	}
}
