package store

import (
	"sort"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/tailorhq/tailor/api/v1alpha1"
	"github.com/tailorhq/tailor/internal/autoscale/lowering/limits"
)

// loweredCheckpoint is the budget's count as the TailorCheckpoint keeps it,
// sorted by uid; nil when it counts nothing. Times are rounded up to the
// second: a restart never frees the budget early.
func loweredCheckpoint(l limits.Lowered) []v1alpha1.LoweredPod {
	if len(l) == 0 {
		return nil
	}
	out := make([]v1alpha1.LoweredPod, 0, len(l))
	for uid, at := range l {
		out = append(out, v1alpha1.LoweredPod{UID: string(uid), At: metav1.NewTime(at.Add(time.Second - 1).Truncate(time.Second))})
	}
	if len(out) > limits.MaxBudgetPods {
		// More than the largest budget (one lowered to a larger pod count
		// or budget since): the latest count longest, and are kept.
		sort.Slice(out, func(i, j int) bool { return out[i].At.After(out[j].At.Time) })
		out = out[:limits.MaxBudgetPods]
	}
	sort.Slice(out, func(i, j int) bool { return out[i].UID < out[j].UID })
	return out
}

// LoweredState is the budget's count restored from a checkpoint; one
// written before budgets existed has none.
func LoweredState(l []v1alpha1.LoweredPod) limits.Lowered {
	if len(l) == 0 {
		return nil
	}
	out := limits.Lowered{}
	for _, p := range l {
		out[types.UID(p.UID)] = p.At.Time
	}
	return out
}
