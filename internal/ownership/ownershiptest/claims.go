package ownershiptest

import (
	"fmt"
	"math/rand/v2"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/tailorhq/tailor/internal/ownership"
)

// ClaimsCase is a namespace's pods, as far as which policy sizes them
// needs (their labels and controller chains), and its policies as
// claimants.
type ClaimsCase struct {
	Pods     []ClaimedPod
	Policies []ownership.Claimant
}

// ClaimedPod is a pod's labels and controller chain.
type ClaimedPod struct {
	Name   string
	Labels labels.Set
	Chain  ownership.Chain
}

// Claims draws a ClaimsCase from seed; the same seed gives the same case.
// Pods come from Deployments (through ReplicaSets, some of which the cache
// does not know yet, or whose Deployment is gone), StatefulSets,
// DaemonSets, Jobs and no controller at all, with labels shared across
// workloads (a canary's match its stable's). One to six policies, with
// distinct names, name a workload (any of the pods', one of their
// ReplicaSets, one with no pod; by apps/v1 or another version of its
// group) or select by labels (matchLabels, In, NotIn, Exists, or
// everything); a few are in mode Off; creation times repeat, to the second.
func Claims(seed uint64) ClaimsCase {
	r := rand.New(rand.NewPCG(seed, 6))
	type workload struct {
		ref    metav1.OwnerReference
		labels labels.Set
	}
	controller := func(apiVersion, kind, name string) metav1.OwnerReference {
		return metav1.OwnerReference{APIVersion: apiVersion, Kind: kind, Name: name, UID: types.UID("uid-" + kind + "-" + name), Controller: ptr.To(true)}
	}
	replicaSets := map[string][]metav1.OwnerReference{
		"web-1":    {controller("apps/v1", "Deployment", "web")},
		"web-2":    {controller("apps/v1", "Deployment", "web")},
		"canary-1": {controller("apps/v1", "Deployment", "canary")},
		"orphan-1": nil,
	}
	sources := []workload{
		{controller("apps/v1", "ReplicaSet", "web-1"), labels.Set{"app": "web", "tier": "front"}},
		{controller("apps/v1", "ReplicaSet", "web-2"), labels.Set{"app": "web", "tier": "front"}},
		{controller("apps/v1", "ReplicaSet", "canary-1"), labels.Set{"app": "web", "track": "canary"}},
		{controller("apps/v1", "ReplicaSet", "orphan-1"), labels.Set{"app": "web"}},
		{controller("apps/v1", "ReplicaSet", "unknown-1"), labels.Set{"app": "web", "tier": "front"}},
		{controller("apps/v1", "StatefulSet", "db"), labels.Set{"app": "db", "tier": "back"}},
		{controller("apps/v1", "DaemonSet", "agent"), labels.Set{"app": "agent"}},
		{controller("batch/v1", "Job", "nightly"), labels.Set{"app": "batch", "tier": "back"}},
		{labels: labels.Set{"app": "web"}},
	}
	var c ClaimsCase
	for i := range 1 + r.IntN(8) {
		s := sources[r.IntN(len(sources))]
		var refs []metav1.OwnerReference
		if s.ref.Name != "" {
			refs = []metav1.OwnerReference{s.ref}
		}
		c.Pods = append(c.Pods, ClaimedPod{Name: fmt.Sprintf("pod-%d", i), Labels: s.labels,
			Chain: ownership.ControllerChain(refs, func(name string) ([]metav1.OwnerReference, bool) {
				refs, ok := replicaSets[name]
				return refs, ok
			})})
	}
	targets := []struct{ apiVersion, kind, name string }{
		{"apps/v1", "Deployment", "web"}, {"apps/v1beta2", "Deployment", "web"}, {"apps/v1", "ReplicaSet", "web-1"},
		{"apps/v1", "Deployment", "canary"}, {"apps/v1", "StatefulSet", "db"}, {"apps/v1beta1", "StatefulSet", "db"},
		{"apps/v1", "DaemonSet", "agent"}, {"batch/v1", "Job", "nightly"}, {"apps/v1", "ReplicaSet", "orphan-1"},
		{"apps/v1", "Deployment", "ghost"},
	}
	selectors := []*metav1.LabelSelector{
		{MatchLabels: map[string]string{"app": "web"}},
		{MatchLabels: map[string]string{"tier": "front"}},
		{MatchLabels: map[string]string{"tier": "back"}},
		{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "app", Operator: metav1.LabelSelectorOpIn, Values: []string{"web", "db"}}}},
		{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "track", Operator: metav1.LabelSelectorOpDoesNotExist}}},
		{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "app", Operator: metav1.LabelSelectorOpNotIn, Values: []string{"web"}}}},
		{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "tier", Operator: metav1.LabelSelectorOpExists}}},
		{},
	}
	names := []string{"a", "b", "c", "d", "e", "f", "web", "web-vpa"}
	r.Shuffle(len(names), func(i, j int) { names[i], names[j] = names[j], names[i] })
	t0 := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	created := []time.Time{t0, t0, t0.Add(time.Second), t0.Add(time.Hour)}
	for i := range 1 + r.IntN(6) {
		p := ownership.Claimant{Name: names[i], Created: created[r.IntN(len(created))], RecommendOnly: r.IntN(5) == 0}
		if r.IntN(2) == 0 {
			t := targets[r.IntN(len(targets))]
			w := ownership.WorkloadOf(t.apiVersion, t.kind, t.name)
			p.Target = &w
		} else {
			sel, err := metav1.LabelSelectorAsSelector(selectors[r.IntN(len(selectors))])
			if err != nil {
				panic(err)
			}
			p.Selector = sel
		}
		c.Policies = append(c.Policies, p)
	}
	return c
}
