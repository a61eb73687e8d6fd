package store

import (
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/tailorhq/tailor/api/v1alpha1"
	"github.com/tailorhq/tailor/internal/autoscale/lowering/canary"
)

// canaryCheckpoint is the canary's state as the TailorCheckpoint keeps it,
// nil when there is nothing to keep. Times are kept to the second.
func canaryCheckpoint(s canary.State) *v1alpha1.CanaryCheckpoint {
	if s.IsZero() {
		return nil
	}
	out := &v1alpha1.CanaryCheckpoint{
		Pods: canaryPodsCheckpoint(s.Pods), Revert: canaryPodsCheckpoint(s.Revert),
		Proven: canaryValuesCheckpoint(s.Proven),
		Trips:  s.Trips, LastResult: s.LastResult, Learnt: Truncate(s.Learnt, 1024),
	}
	if !s.HoldUntil.IsZero() {
		// Rounded up: a hold is never cut short by a restart.
		t := metav1.NewTime(s.HoldUntil.Add(time.Second - 1).Truncate(time.Second))
		out.HoldUntil = &t
	}
	return out
}

func canaryPodsCheckpoint(pods []canary.Pod) []v1alpha1.CanaryPodCheckpoint {
	var out []v1alpha1.CanaryPodCheckpoint
	for _, p := range pods {
		out = append(out, v1alpha1.CanaryPodCheckpoint{
			UID: string(p.UID), Name: p.Name, LoweredAt: metav1.NewTime(p.LoweredAt.Truncate(time.Second)), Ready: p.Ready,
			Before: canaryValuesCheckpoint(p.Before), Restarts: p.Restarts,
		})
	}
	return out
}

func canaryValuesCheckpoint(v canary.Values) []v1alpha1.CanaryValues {
	names := make([]string, 0, len(v))
	for n := range v {
		names = append(names, n)
	}
	sort.Strings(names)
	var out []v1alpha1.CanaryValues
	for _, n := range names {
		out = append(out, v1alpha1.CanaryValues{Name: n, Requests: v[n].Requests, Limits: v[n].Limits})
	}
	return out
}

// canaryState is the canary's state restored from a checkpoint; a
// checkpoint written before canaries existed has none, the zero state.
func canaryState(c *v1alpha1.CanaryCheckpoint) canary.State {
	if c == nil {
		return canary.State{}
	}
	out := canary.State{
		Pods: canaryPodsState(c.Pods), Revert: canaryPodsState(c.Revert),
		Proven: canaryValuesState(c.Proven),
		Trips:  c.Trips, LastResult: c.LastResult, Learnt: c.Learnt,
	}
	if c.HoldUntil != nil {
		out.HoldUntil = c.HoldUntil.Time
	}
	return out
}

func canaryPodsState(pods []v1alpha1.CanaryPodCheckpoint) []canary.Pod {
	var out []canary.Pod
	for _, p := range pods {
		out = append(out, canary.Pod{
			UID: types.UID(p.UID), Name: p.Name, LoweredAt: p.LoweredAt.Time, Ready: p.Ready,
			Before: canaryValuesState(p.Before), Restarts: p.Restarts,
		})
	}
	return out
}

func canaryValuesState(v []v1alpha1.CanaryValues) canary.Values {
	if len(v) == 0 {
		return nil
	}
	out := canary.Values{}
	for _, c := range v {
		out[c.Name] = corev1.ResourceRequirements{Requests: c.Requests, Limits: c.Limits}
	}
	return out
}
