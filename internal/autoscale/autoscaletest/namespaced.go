package autoscaletest

import (
	"maps"
	"math/rand/v2"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tailorhq/tailor/api/v1alpha1"
	"github.com/tailorhq/tailor/internal/autoscale/fleet"
	"github.com/tailorhq/tailor/internal/autoscale/placement"
	"github.com/tailorhq/tailor/internal/nsrules"
	"github.com/tailorhq/tailor/internal/nsrules/nsrulestest"
	"github.com/tailorhq/tailor/internal/resize"
)

// NamespacedCase is a Case in a namespace, with what Admit and
// DecideRecreate plan a workload's new pods from.
type NamespacedCase struct {
	fleet.PolicyInput
	// Templates are the pod templates the pods were created from, one per
	// pod, in order: the pods before the LimitRanger defaulted them.
	Templates []*corev1.PodTemplateSpec
	// Boost is a startupBoost for new pods, or nil.
	Boost *v1alpha1.StartupBoost
	// Room is NewPodRoom over a node or two drawn for the purpose, or nil.
	Room corev1.ResourceList
	// Replicas is how many new pods a rollout creates: the pods.
	Replicas int
}

// Namespaced draws Case(seed), and, from a stream of its own (Case(seed)
// stays what it was), for about two cases in three the namespace's
// LimitRanges and ResourceQuotas (nsrulestest.Gen, some quotas within a
// little of full), pods created after the LimitRanges (their defaults
// applied, where the LimitRanger would have let them in), a startup boost
// and the room a new pod finds.
func Namespaced(seed uint64) NamespacedCase {
	in := Case(seed)
	r := rand.New(rand.NewPCG(seed, 3))
	out := NamespacedCase{PolicyInput: in, Replicas: len(in.Pods)}
	for _, p := range in.Pods {
		out.Templates = append(out.Templates, templateOf(p.Pod))
	}
	if r.IntN(3) != 0 {
		g := nsrulestest.Gen{R: r}
		rules := &nsrules.Rules{LimitRanges: g.LimitRanges(), Quotas: g.Quotas()}
		nearlyFull(r, g, rules.Quotas)
		out.Rules = rules
		out.admitPods(r)
	}
	if r.IntN(3) == 0 {
		out.Boost = &v1alpha1.StartupBoost{FactorPercent: ptr(int32(110 + r.IntN(300)))}
	}
	if r.IntN(2) == 0 {
		var nodes []placement.NodePods
		for i := range 1 + r.IntN(2) {
			nodes = append(nodes, placement.NodePods{Node: ReadyNode("room-"+string(rune('a'+i)), corev1.ResourceList{
				corev1.ResourceCPU:    *resource.NewMilliQuantity(int64(250+r.IntN(6000)), resource.DecimalSI),
				corev1.ResourceMemory: *resource.NewQuantity(int64(256+r.IntN(8<<10))<<20, resource.BinarySI),
			})})
		}
		out.Room = placement.NewPodRoom(placement.NewPodRoomInput{Template: out.Templates[0], Nodes: nodes})
	}
	return out
}

// ReadyNode is a Ready, schedulable node with allocatable alloc.
func ReadyNode(name string, alloc corev1.ResourceList) *corev1.Node {
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Status: corev1.NodeStatus{Allocatable: alloc,
			Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}},
	}
}

// templateOf is the template p was created from: its spec unbound.
func templateOf(p *corev1.Pod) *corev1.PodTemplateSpec {
	t := &corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "x"}}, Spec: *p.Spec.DeepCopy()}
	t.Spec.NodeName = ""
	return t
}

// nearlyFull leaves, now and then, a quota within a little of its hard
// limit: what a raise of a few millicores or mebibytes exceeds.
func nearlyFull(r *rand.Rand, g nsrulestest.Gen, quotas []corev1.ResourceQuota) {
	for i := range quotas {
		q := &quotas[i]
		if q.Status.Used == nil || r.IntN(2) == 0 {
			continue
		}
		// In name order: a draw per resource in map order would give a
		// seed other quotas on each run, and its failure would not replay.
		for _, res := range slices.Sorted(maps.Keys(q.Status.Hard)) {
			hard := q.Status.Hard[res]
			if _, ok := q.Status.Used[res]; !ok || res == corev1.ResourcePods {
				continue
			}
			base := corev1.ResourceCPU
			if res == corev1.ResourceMemory || res == corev1.ResourceRequestsMemory || res == corev1.ResourceLimitsMemory {
				base = corev1.ResourceMemory
			}
			// Up to an eighth of the smallest step Quantity draws.
			left := g.Quantity(base)
			if base == corev1.ResourceCPU {
				left = *resource.NewMilliQuantity(left.MilliValue()/8, resource.DecimalSI)
			} else {
				left = *resource.NewQuantity(left.Value()/8, resource.BinarySI)
			}
			used := hard.DeepCopy()
			used.Sub(left)
			if used.Sign() < 0 {
				used = resource.Quantity{Format: used.Format}
			}
			q.Status.Used[res] = used
		}
	}
}

// admitPods gives most pods the LimitRanges' defaults, as pods created
// after the LimitRanges have them; a pod the LimitRanger would refuse now
// was created before them and keeps what it has. The node's pods are
// replaced alike, and the node made larger by the defaults.
func (c *NamespacedCase) admitPods(r *rand.Rand) {
	limitRanges := nsrules.Rules{LimitRanges: c.Rules.LimitRanges}
	node := c.Nodes[NodeName]
	for i := range c.Pods {
		if r.IntN(4) == 0 {
			continue
		}
		old := c.Pods[i].Pod
		if old.Spec.Resources != nil {
			// Defaults could take its containers above its pod-level
			// resources, which pod validation refuses: drawn as created
			// before the LimitRanges.
			continue
		}
		admitted := limitRanges.Admitted(old)
		if len(limitRanges.Violations(admitted, nil)) > 0 {
			continue
		}
		c.Pods[i].Pod = admitted
		for j, p := range node.Pods {
			if p == old {
				node.Pods[j] = admitted
			}
		}
		// The scheduler placed it with its defaults: the node holds them.
		was := resize.NodeRequests(old)
		for r, q := range resize.NodeRequests(admitted) {
			if a, ok := node.Allocatable[r]; ok {
				a.Add(q)
				a.Sub(was[r])
				node.Allocatable[r] = a
			}
		}
	}
}

// Created is the pod the apiserver creates from template in a namespace
// with rules (nil: none) when tailor's admission policy (or its recreation
// policy) holds entry: the LimitRanger's defaults first, then the entry as
// Applied. It says why the entry did not apply, or "".
func Created(rules *nsrules.Rules, template *corev1.PodTemplateSpec, entry []v1alpha1.AdmittedContainer) (*corev1.Pod, string) {
	if rules == nil {
		rules = &nsrules.Rules{}
	}
	admitted := rules.Admitted(&corev1.Pod{ObjectMeta: template.ObjectMeta, Spec: template.Spec})
	return Applied(admitted, entry)
}

// Applied is admitted (a new pod as the LimitRanger leaves it) with entry
// applied as tailor's admission policies apply it: only when every
// container it names has exactly the values it was planned from (compared
// as the policies' CEL compares them, as canonical strings), each of its
// values merged over the container's. It says why the entry did not apply,
// or "". admitted is not changed.
func Applied(admitted *corev1.Pod, entry []v1alpha1.AdmittedContainer) (*corev1.Pod, string) {
	for _, e := range entry {
		c := containerOf(admitted, e.Name)
		if c == nil {
			return admitted, "container " + e.Name + " is not in the pod"
		}
		for _, res := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
			if text(c.Resources.Requests, res) != text(e.TemplateRequests, res) || text(c.Resources.Limits, res) != text(e.TemplateLimits, res) {
				return admitted, "container " + e.Name + " is created with other " + string(res) + " values than the entry was planned from"
			}
		}
	}
	if len(entry) == 0 {
		return admitted, ""
	}
	pod := *admitted
	pod.Spec.Containers = append([]corev1.Container(nil), admitted.Spec.Containers...)
	pod.Spec.InitContainers = append([]corev1.Container(nil), admitted.Spec.InitContainers...)
	for _, e := range entry {
		c := containerOf(&pod, e.Name)
		c.Resources.Requests = merged(c.Resources.Requests, e.Requests)
		c.Resources.Limits = merged(c.Resources.Limits, e.Limits)
	}
	return &pod, ""
}

func text(l corev1.ResourceList, res corev1.ResourceName) string {
	if q, ok := l[res]; ok {
		return q.String()
	}
	return ""
}

// merged is a new list: dst with src's entries over it.
func merged(dst, src corev1.ResourceList) corev1.ResourceList {
	if len(src) == 0 {
		return dst
	}
	out := make(corev1.ResourceList, len(dst)+len(src))
	for k, v := range dst {
		out[k] = v
	}
	for k, v := range src {
		out[k] = v.DeepCopy()
	}
	return out
}

func containerOf(p *corev1.Pod, name string) *corev1.Container {
	for _, cs := range [][]corev1.Container{p.Spec.Containers, p.Spec.InitContainers} {
		for i := range cs {
			if cs[i].Name == name {
				return &cs[i]
			}
		}
	}
	return nil
}
