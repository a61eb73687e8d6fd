package autoscale_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/tailorhq/tailor/api/v1alpha1"
	"github.com/tailorhq/tailor/internal/actuator"
	"github.com/tailorhq/tailor/internal/autoscale"
	"github.com/tailorhq/tailor/internal/autoscale/autoscaletest"
	"github.com/tailorhq/tailor/internal/autoscale/fleet"
	"github.com/tailorhq/tailor/internal/autoscale/placement"
	"github.com/tailorhq/tailor/internal/boost"
	"github.com/tailorhq/tailor/internal/resize"
)

// marked is p with everything tailor reads from a pod that anyone who may
// edit the pod can write (docs/behaviour.md, "What tailor trusts"): the
// admitted and startup-boost annotations, and pods/resize entries under
// both of tailor's field managers, dated now, claiming every container's
// cpu request.
func marked(p *corev1.Pod, now time.Time) *corev1.Pod {
	q := p.DeepCopy()
	if q.Annotations == nil {
		q.Annotations = map[string]string{}
	}
	var boosted, fields []string
	for _, list := range [][]corev1.Container{q.Spec.InitContainers, q.Spec.Containers} {
		for _, c := range list {
			boosted = append(boosted, c.Name+"=64")
			fields = append(fields, fmt.Sprintf(`"k:{\"name\":\"%s\"}":{"f:resources":{"f:requests":{"f:cpu":{}}}}`, c.Name))
		}
	}
	q.Annotations[v1alpha1.AdmittedAnnotation] = "forged: anything"
	q.Annotations[v1alpha1.BoostAnnotation] = strings.Join(boosted, ",")
	raw := fmt.Sprintf(`{"f:spec":{"f:containers":{%s}}}`, strings.Join(fields, ","))
	at := metav1.NewTime(now)
	for _, m := range []string{boost.FieldManager, actuator.FieldManager} {
		q.ManagedFields = append(q.ManagedFields, metav1.ManagedFieldsEntry{Manager: m, Operation: metav1.ManagedFieldsOperationUpdate,
			Subresource: "resize", Time: &at, FieldsType: "FieldsV1", FieldsV1: metav1.NewFieldsV1(raw)})
	}
	return q
}

// markedInput is in and nodes with every pod for which mark says so
// replaced by marked(pod): the policy's own, those bound to the nodes
// (the namespace's and other namespaces'), and those waiting for a node.
func markedInput(in autoscale.SyncInput, nodes []placement.NodePods, mark func(*corev1.Pod) bool) (autoscale.SyncInput, []placement.NodePods) {
	swap := func(p *corev1.Pod) *corev1.Pod {
		if p == nil || !mark(p) {
			return p
		}
		return marked(p, in.Now)
	}
	out := in
	out.Pods = make([]fleet.PodInput, len(in.Pods))
	for i, pin := range in.Pods {
		pin.Pod = swap(pin.Pod)
		out.Pods[i] = pin
	}
	out.Unbound = make([]*corev1.Pod, len(in.Unbound))
	for i, p := range in.Unbound {
		out.Unbound[i] = swap(p)
	}
	if in.Nodes != nil {
		out.Nodes = map[string]*resize.NodeState{}
		for name, ns := range in.Nodes {
			if ns == nil {
				out.Nodes[name] = nil
				continue
			}
			cp := *ns
			cp.Pods = make([]*corev1.Pod, len(ns.Pods))
			for i, p := range ns.Pods {
				cp.Pods[i] = swap(p)
			}
			out.Nodes[name] = &cp
		}
	}
	swapNodes := func(nodes []placement.NodePods) []placement.NodePods {
		if nodes == nil {
			return nil
		}
		res := make([]placement.NodePods, len(nodes))
		for i, np := range nodes {
			np.Pods = append([]*corev1.Pod(nil), np.Pods...)
			for j, p := range np.Pods {
				np.Pods[j] = swap(p)
			}
			res[i] = np
		}
		return res
	}
	return out, swapNodes(nodes)
}

// What a person who may edit pods writes on them (the admitted and
// startup-boost annotations, resize entries under tailor's field managers)
// reaches no further than the policies of the pod's own namespace that
// size it: on any other pod (of another policy, of no policy, of another
// namespace, sharing a node) it changes no policy's decision; and even on
// every pod, the policy's own included, everything a decision acts on
// (resizes, under whichever field manager, deletions of unschedulable
// pods, recreations) is one of the policy's own pods, in its namespace.
func TestPodMarksReachOnlyTheirOwnPolicy(t *testing.T) {
	stats := map[string]int{}
	foreignMarked, syncs, changed := 0, 0, 0
	for seed := range uint64(200) {
		c := autoscaletest.Sync(seed)
		for i, in := range c.Syncs {
			own := map[types.UID]bool{}
			for _, pin := range in.Pods {
				own[pin.Pod.UID] = true
			}
			for _, p := range in.Unbound {
				own[p.UID] = true
			}
			d, msg := decideSync(in, c.Nodes, stats)
			if msg != "" {
				t.Fatalf("autoscaletest.Sync(%d), policy %s: %s", seed, c.Policies[i].Name, msg)
			}
			foreign := func(p *corev1.Pod) bool {
				if !own[p.UID] {
					foreignMarked++
					return true
				}
				return false
			}
			others, nodes := markedInput(in, c.Nodes, foreign)
			d2, msg := decideSync(others, nodes, map[string]int{})
			if msg != "" {
				t.Fatalf("autoscaletest.Sync(%d), policy %s, others marked: %s", seed, c.Policies[i].Name, msg)
			}
			if a, b := syncDecisionText(d), syncDecisionText(d2); a != b {
				t.Fatalf("autoscaletest.Sync(%d), policy %s: marks on other pods changed its decision:\n%s\nthen:\n%s", seed, c.Policies[i].Name, a, b)
			}
			all, nodes := markedInput(in, c.Nodes, func(*corev1.Pod) bool { return true })
			d3, msg := decideSync(all, nodes, map[string]int{})
			if msg != "" {
				t.Fatalf("autoscaletest.Sync(%d), policy %s, all marked: %s", seed, c.Policies[i].Name, msg)
			}
			syncs++
			if syncDecisionText(d3) != syncDecisionText(d) {
				changed++
			}
			var acted []*corev1.Pod
			for _, s := range d3.Sends {
				acted = append(acted, s.Pod)
			}
			for _, s := range d3.Stuck {
				acted = append(acted, s.Pod)
			}
			for _, s := range d3.Recreate {
				acted = append(acted, s.Pod)
			}
			for _, p := range acted {
				if !own[p.UID] || p.Namespace != autoscaletest.Namespace {
					t.Fatalf("autoscaletest.Sync(%d), policy %s: with every pod marked it acts on %s/%s, not one of its own pods", seed, c.Policies[i].Name, p.Namespace, p.Name)
				}
			}
		}
	}
	// The marks do move a policy's decisions about its own pods: were they
	// never read, the test would test nothing.
	if foreignMarked == 0 || changed == 0 {
		t.Fatalf("%d foreign pods marked, %d decisions changed by marks on the policy's own pods: the test tests nothing", foreignMarked, changed)
	}
	t.Logf("%d syncs; %d foreign pods marked; marks on its own pods changed %d decisions", syncs, foreignMarked, changed)
}
