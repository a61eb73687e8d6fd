package preemption

import (
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tailorhq/tailor/test/builder"
)

var now = time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)

// pod is a running pod of priority prio requesting cpu, labelled app=name,
// started minutes before now.
func pod(name string, prio int32, cpu string, minutes int) *corev1.Pod {
	p := builder.Pod(name).Namespace("ns").UID(name).Node("n1").Priority(prio).Label("app", name).
		Container(builder.Container("app").Requests(cpu, "256Mi")).Running().Obj()
	p.Status.StartTime = &metav1.Time{Time: now.Add(-time.Duration(minutes) * time.Minute)}
	return p
}

// budget is a PodDisruptionBudget of app allowing allowed disruptions.
func budget(app string, allowed int32) policyv1.PodDisruptionBudget {
	return policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: app},
		Spec:       policyv1.PodDisruptionBudgetSpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": app}}},
		Status:     policyv1.PodDisruptionBudgetStatus{DisruptionsAllowed: allowed},
	}
}

func TestPredict(t *testing.T) {
	node := builder.Node("n1").Allocatable("4", "16Gi").Obj()
	optedOut := node.DeepCopy()
	optedOut.Spec.PodPreemptionPolicy = &corev1.NodePodPreemptionPolicy{DisableResizePreemption: []string{"tailor.dev/manager"}}
	// The resized pod asks 2 cores beside 2.5 requested: 0.5 short.
	raised := pod("raised", 1000, "2", 60)
	others := []*corev1.Pod{pod("high", 2000, "500m", 60), pod("mid", 100, "1", 60), pod("low", 0, "1", 60)}
	never := raised.DeepCopy()
	never.Spec.PreemptionPolicy = new(corev1.PreemptNever)
	cases := map[string]struct {
		pod     *corev1.Pod
		node    *corev1.Node
		pods    []*corev1.Pod
		budgets []policyv1.PodDisruptionBudget
		reason  Reason
		victims []string
	}{
		"the least important pod of lower priority goes": {
			pod: raised, node: node, pods: others, reason: Preempts, victims: []string{"low"},
		},
		"a pod a budget protects is given back first": {
			pod: raised, node: node, pods: others, budgets: []policyv1.PodDisruptionBudget{budget("low", 0)},
			reason: Preempts, victims: []string{"mid"},
		},
		"a budget with disruptions left protects nobody": {
			pod: raised, node: node, pods: others, budgets: []policyv1.PodDisruptionBudget{budget("low", 1)},
			reason: Preempts, victims: []string{"low"},
		},
		"a budget is broken when nothing else makes the room": {
			pod: raised, node: node, pods: []*corev1.Pod{pod("high", 2000, "500m", 60), pod("low", 0, "2", 60)},
			budgets: []policyv1.PodDisruptionBudget{budget("low", 0)},
			reason:  Preempts, victims: []string{"low!"},
		},
		"of one priority, the pod started last goes": {
			pod: raised, node: node, pods: []*corev1.Pod{pod("high", 2000, "500m", 60), pod("old", 0, "1", 90), pod("new", 0, "1", 5)},
			reason: Preempts, victims: []string{"new"},
		},
		"as many as the room needs": {
			pod: pod("raised", 1000, "3200m", 60), node: node, pods: others, reason: Preempts, victims: []string{"mid", "low"},
		},
		"pods of equal or higher priority are never preempted": {
			pod: raised, node: node, pods: []*corev1.Pod{pod("high", 2000, "1", 60), pod("equal", 1000, "1500m", 60)}, reason: NotEnough,
		},
		"not enough even without every pod of lower priority": {
			pod: pod("raised", 1000, "3800m", 60), node: node, pods: others, reason: NotEnough,
		},
		"a node that opts out preempts nobody": {
			pod: raised, node: optedOut, pods: others, reason: NodeOptsOut,
		},
		"a pod whose preemptionPolicy is Never preempts nobody": {
			pod: never, node: node, pods: others, reason: PolicyNever,
		},
		"finished pods take no room": {
			pod: raised, node: node, pods: append(slices.Clone(others[:2]), builder.Pod("done").Namespace("ns").UID("done").Node("n1").Priority(0).
				Container(builder.Container("app").Requests("1", "256Mi")).Phase(corev1.PodSucceeded).Obj()),
			reason: Preempts,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			out := Predict(Input{Pod: tc.pod, Node: tc.node, Pods: append([]*corev1.Pod{tc.pod}, tc.pods...), Budgets: tc.budgets, Now: now})
			var victims []string
			for _, v := range out.Victims {
				n := v.Pod.Name
				if v.BreaksBudget {
					n += "!"
				}
				victims = append(victims, n)
			}
			if out.Reason != tc.reason || !slices.Equal(victims, tc.victims) {
				t.Errorf("%s, victims %v; want %s, %v (%s)", out.Reason, victims, tc.reason, tc.victims, out.Message)
			}
			if out.Message == "" {
				t.Error("no message")
			}
		})
	}
}
