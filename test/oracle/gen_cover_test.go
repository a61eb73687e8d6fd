package oracle

import (
	"math/rand/v2"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/tailorhq/tailor/internal/nsrules"
	"github.com/tailorhq/tailor/internal/nsrules/nsrulestest"
	"github.com/tailorhq/tailor/internal/resize"
	"github.com/tailorhq/tailor/test/builder"
	"github.com/tailorhq/tailor/test/cluster"
)

// TestGeneratorReachesRuleCorners runs without a cluster: it plans generated
// cases offline and checks that the generator reaches every rule the live
// oracle is meant to cover on a 1.37 apiserver, so a generator change cannot
// quietly shrink what the oracle proves.
func TestGeneratorReachesRuleCorners(t *testing.T) {
	cluster.Offline(t)
	g := gen{r: rand.New(rand.NewPCG(1, 0x7a11))}
	server := resize.Version{Major: 1, Minor: 37}
	alloc := builder.List("2", "4Gi")
	seen := map[resize.Rule]int{}
	accepted := 0
	for i := range 2000 {
		pod := g.gatedPod("p")
		// Mimic what the apiserver returns: defaults applied, qosClass set.
		base, err := resize.Plan(resize.Input{Pod: pod, Server: server})
		if err != nil {
			t.Fatalf("case %d: plan of unchanged pod: %v", i, err)
		}
		pod = base.AfterPod()
		pod.Status.QOSClass = base.QoSAfter
		var node *resize.NodeState
		if i%5 == 0 {
			pod.Spec.NodeName = "n"
			pod.Spec.SchedulingGates = nil
			node = &resize.NodeState{Allocatable: alloc}
		}
		d := g.desired(pod, allocOf(node))
		res, err := resize.Plan(resize.Input{Pod: pod, Desired: d, Server: server, Node: node})
		if err != nil {
			t.Fatalf("case %d: %v", i, err)
		}
		if res.Outcome == resize.Accepted && !res.NoChange {
			accepted++
		}
		seen[res.Rule]++
	}
	for _, rule := range []resize.Rule{
		resize.RuleUnsupportedResource, resize.RuleResourceRemoved, resize.RuleRequestsExceedLimits,
		resize.RuleQoSClassChange, resize.RulePodLevelRequestsBelowContainers,
		resize.RulePodLevelLimitBelowContainer, resize.RuleNodeCapacity, resize.RuleUnsupportedPlatform,
	} {
		if seen[rule] == 0 {
			t.Errorf("generator never reached rule %s; seen: %v", rule, seen)
		}
	}
	if accepted < 200 {
		t.Errorf("only %d of 2000 generated cases are accepted; the oracle would barely test acceptance (seen: %v)", accepted, seen)
	}
	t.Logf("rules reached: %v, accepted: %d", seen, accepted)
}

func allocOf(n *resize.NodeState) corev1.ResourceList {
	if n == nil {
		return nil
	}
	return n.Allocatable
}

// TestRuleEdgesReachTheNamespaceRules runs without a cluster: resizes drawn
// by ruleEdge in namespaces drawn as TestOracleUnderNamespaceRules draws
// them are refused by a LimitRange and by a quota, and accepted, often
// enough for the live oracle to test each.
func TestRuleEdgesReachTheNamespaceRules(t *testing.T) {
	cluster.Offline(t)
	r := rand.New(rand.NewPCG(1, 0x5eed))
	g, ng := gen{r: r}, nsrulestest.Gen{R: r}
	server := resize.Version{Major: 1, Minor: 37}
	seen := map[resize.Rule]int{}
	for i := range 1000 {
		base, err := resize.Plan(resize.Input{Pod: g.gatedPod("p"), Server: server})
		if err != nil {
			t.Fatalf("case %d: plan of unchanged pod: %v", i, err)
		}
		pod := base.AfterPod()
		pod.Spec.OS = nil
		pod.Status.QOSClass = base.QoSAfter
		rules := &nsrules.Rules{LimitRanges: ng.LimitRanges()}
		for _, q := range nearQuotas(g, ng, []corev1.Pod{*pod}) {
			q.Status = corev1.ResourceQuotaStatus{Hard: q.Spec.Hard.DeepCopy(), Used: usage(q, []corev1.Pod{*pod})}
			rules.Quotas = append(rules.Quotas, q)
		}
		res, err := resize.Plan(resize.Input{Pod: pod, Desired: g.ruleEdge(pod, rules), Server: server, Rules: rules})
		if err != nil {
			t.Fatalf("case %d: %v", i, err)
		}
		if !res.NoChange {
			seen[res.Rule]++
		}
	}
	for rule, least := range map[resize.Rule]int{resize.RuleNone: 50, resize.RuleLimitRange: 50, resize.RuleResourceQuota: 30} {
		if seen[rule] < least {
			t.Errorf("rule %q judged %d times in 1000, want at least %d; seen: %v", rule, seen[rule], least, seen)
		}
	}
	t.Logf("rules reached: %v", seen)
}
