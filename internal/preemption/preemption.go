package preemption

import (
	"fmt"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	schedhelper "k8s.io/component-helpers/scheduling/corev1"

	"github.com/tailorhq/tailor/internal/resize"
)

// Gate is the feature gate that turns the scheduler's preemption for
// deferred resizes on.
const Gate = "InPlacePodVerticalScalingSchedulerPreemption"

// Input is a resize the kubelet would defer, and what the scheduler reads
// to preempt for it.
type Input struct {
	// Pod is the pod as the resize leaves its spec (resize.Result's
	// AfterPod): the scheduler counts it at the larger of that and what
	// the kubelet admitted.
	Pod *corev1.Pod
	// Node is the pod's node; its spec.podPreemptionPolicy may opt out.
	Node *corev1.Node
	// Pods are the pods bound to the node; the resized pod among them is
	// skipped, and so are finished ones.
	Pods []*corev1.Pod
	// Budgets are the PodDisruptionBudgets of the candidates' namespaces.
	Budgets []policyv1.PodDisruptionBudget
	// Now stands for the start time of a pod that has none yet.
	Now time.Time
}

// Reason says what the scheduler would do.
type Reason string

const (
	// Preempts: evicting Victims makes the room.
	Preempts Reason = "Preempts"
	// NodeOptsOut: the node's spec.podPreemptionPolicy disables preemption
	// for resizes.
	NodeOptsOut Reason = "NodeOptsOut"
	// PolicyNever: the pod's preemptionPolicy is Never.
	PolicyNever Reason = "PreemptionPolicyNever"
	// NotEnough: even with every pod of lower priority gone the resize
	// would not fit, so none is evicted and the resize stays deferred.
	NotEnough Reason = "NotEnough"
)

// Victim is a pod the scheduler would evict.
type Victim struct {
	Pod *corev1.Pod
	// BreaksBudget: evicting it goes past a PodDisruptionBudget's allowed
	// disruptions; the scheduler does so only when no other choice makes
	// the room.
	BreaksBudget bool
}

// Outcome is the prediction.
type Outcome struct {
	Reason  Reason
	Victims []Victim
	// Message says it in a sentence.
	Message string
}

// Predict says whether and whom the scheduler would preempt for in.Pod's
// deferred resize.
func Predict(in Input) Outcome {
	if p := in.Node.Spec.PodPreemptionPolicy; p != nil && len(p.DisableResizePreemption) > 0 {
		return Outcome{Reason: NodeOptsOut, Message: fmt.Sprintf("node %s disables preemption for resizes (spec.podPreemptionPolicy.disableResizePreemption: %s): the resize stays deferred",
			in.Node.Name, strings.Join(p.DisableResizePreemption, ", "))}
	}
	if pp := in.Pod.Spec.PreemptionPolicy; pp != nil && *pp == corev1.PreemptNever {
		return Outcome{Reason: PolicyNever, Message: "the pod's preemptionPolicy is Never: the scheduler preempts nobody for it, and the resize stays deferred"}
	}
	prio := schedhelper.PodPriority(in.Pod)
	used := resize.NodeRequests(in.Pod)
	var candidates []*corev1.Pod
	for _, p := range in.Pods {
		if p.UID == in.Pod.UID || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			continue
		}
		if schedhelper.PodPriority(p) < prio {
			candidates = append(candidates, p)
			continue
		}
		add(used, resize.NodeRequests(p))
	}
	alloc := in.Node.Status.Allocatable
	if !fits(used, alloc) {
		return Outcome{Reason: NotEnough, Message: fmt.Sprintf("even without the %d pods of lower priority on node %s the resize would not fit: nobody is preempted, and the resize stays deferred",
			len(candidates), in.Node.Name)}
	}
	// The most important first, as the scheduler gives them back; name
	// breaks the scheduler's own ties, which it leaves to its sort.
	sort.SliceStable(candidates, func(i, j int) bool {
		a, b := candidates[i], candidates[j]
		if pa, pb := schedhelper.PodPriority(a), schedhelper.PodPriority(b); pa != pb {
			return pa > pb
		}
		if sa, sb := startTime(a, in.Now), startTime(b, in.Now); !sa.Equal(sb) {
			return sa.Before(sb)
		}
		return a.Namespace+"/"+a.Name < b.Namespace+"/"+b.Name
	})
	violating, rest := byBudget(candidates, in.Budgets)
	var out Outcome
	giveBack := func(p *corev1.Pod, breaks bool) {
		with := resize.NodeRequests(p)
		add(with, used)
		if fits(with, alloc) {
			used = with
			return
		}
		out.Victims = append(out.Victims, Victim{Pod: p, BreaksBudget: breaks})
	}
	for _, p := range violating {
		giveBack(p, true)
	}
	for _, p := range rest {
		giveBack(p, false)
	}
	out.Reason = Preempts
	names := make([]string, len(out.Victims))
	for i, v := range out.Victims {
		names[i] = fmt.Sprintf("%s/%s (priority %d)", v.Pod.Namespace, v.Pod.Name, schedhelper.PodPriority(v.Pod))
		if v.BreaksBudget {
			names[i] += " past its PodDisruptionBudget"
		}
	}
	if len(names) == 0 {
		// The room is there by the scheduler's count (a pod on its way
		// out, a kubelet behind): the kubelet retries without anyone
		// evicted.
		out.Message = "the scheduler finds room without preempting anyone"
		return out
	}
	out.Message = fmt.Sprintf("the scheduler would preempt %d pod(s) of lower priority on node %s to make the room: %s", len(names), in.Node.Name, strings.Join(names, ", "))
	return out
}

// byBudget splits pods, in order, into those whose eviction some
// PodDisruptionBudget of their namespace forbids (counting the pods before
// them as evicted) and the rest, as the scheduler does: a budget with no
// or an empty selector matches nothing, and a pod the budget already
// counts as disrupted costs it nothing.
func byBudget(pods []*corev1.Pod, budgets []policyv1.PodDisruptionBudget) (violating, rest []*corev1.Pod) {
	allowed := make([]int32, len(budgets))
	selectors := make([]labels.Selector, len(budgets))
	for i := range budgets {
		allowed[i] = budgets[i].Status.DisruptionsAllowed
		if s, err := metav1.LabelSelectorAsSelector(budgets[i].Spec.Selector); err == nil && !s.Empty() {
			selectors[i] = s
		}
	}
	for _, p := range pods {
		breaks := false
		if len(p.Labels) > 0 {
			for i := range budgets {
				b := &budgets[i]
				if b.Namespace != p.Namespace || selectors[i] == nil || !selectors[i].Matches(labels.Set(p.Labels)) {
					continue
				}
				if _, disrupted := b.Status.DisruptedPods[p.Name]; disrupted {
					continue
				}
				allowed[i]--
				if allowed[i] < 0 {
					breaks = true
				}
			}
		}
		if breaks {
			violating = append(violating, p)
		} else {
			rest = append(rest, p)
		}
	}
	return violating, rest
}

func startTime(p *corev1.Pod, now time.Time) time.Time {
	if p.Status.StartTime != nil {
		return p.Status.StartTime.Time
	}
	return now
}

// fits reports whether cpu and memory used are within the node's
// allocatable: the only resources a resize changes.
func fits(used, alloc corev1.ResourceList) bool {
	for _, r := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
		a, ok := alloc[r]
		if !ok {
			continue
		}
		if u := used[r]; u.Cmp(a) > 0 {
			return false
		}
	}
	return true
}

// add adds l into to; to's quantities are copied first, so a list they
// were taken from is left as it was.
func add(to, l corev1.ResourceList) {
	for r, q := range l {
		sum := to[r].DeepCopy()
		sum.Add(q)
		to[r] = sum
	}
}
