package policy

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tailorhq/tailor/api/v1alpha1"
	"github.com/tailorhq/tailor/internal/actuator"
	"github.com/tailorhq/tailor/internal/recommend"
)

// maxPodsInStatus bounds status.pods (the CRD allows 256).
const maxPodsInStatus = 256

func setCondition(status *v1alpha1.TailorPolicyStatus, typ string, s metav1.ConditionStatus, reason, msg string, gen int64) {
	meta.SetStatusCondition(&status.Conditions, metav1.Condition{
		Type: typ, Status: s, Reason: reason, Message: truncate(msg, 1024), ObservedGeneration: gen,
	})
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n-3] + "..."
}

// fillStatus writes recommendations, pods and conditions from the store.
func (r *Reconciler) fillStatus(status *v1alpha1.TailorPolicyStatus, policy *v1alpha1.TailorPolicy, state *policyState,
	pods []*corev1.Pod, now time.Time, blocked map[string]string) {
	gen := policy.Generation
	// Status speaks per container name: the largest advice over the pods,
	// which is what a new pod of the workload should get.
	byName := map[string]recommend.Recommendation{}
	for key, cs := range state.containers {
		if !cs.seen {
			continue
		}
		cur, ok := byName[key.container]
		if !ok {
			byName[key.container] = cs.last
			continue
		}
		byName[key.container] = maxRecommendation(cur, cs.last)
	}
	names := make([]string, 0, len(byName))
	for n := range byName {
		names = append(names, n)
	}
	sort.Strings(names)
	rec := &v1alpha1.Recommendation{}
	for _, n := range names {
		last := byName[n]
		rec.ContainerRecommendations = append(rec.ContainerRecommendations, v1alpha1.RecommendedContainerResources{
			ContainerName:  n,
			Target:         list(last.CPU.Target, last.Memory.Target),
			LowerBound:     list(last.CPU.Lower, last.Memory.Lower),
			UpperBound:     list(last.CPU.Upper, last.Memory.Upper),
			UncappedTarget: list(last.CPU.Target, last.Memory.Target),
		})
		recommendationGauge.WithLabelValues(policy.Namespace, policy.Name, n, "cpu").Set(last.CPU.Target)
		recommendationGauge.WithLabelValues(policy.Namespace, policy.Name, n, "memory").Set(last.Memory.Target)
	}
	if len(rec.ContainerRecommendations) > 0 {
		status.Recommendation = rec
		setCondition(status, v1alpha1.ConditionRecommendationProvided, metav1.ConditionTrue, "Recommended",
			fmt.Sprintf("recommendations for %d container(s) of %d pod(s)", len(names), len(pods)), gen)
	} else {
		msg := fmt.Sprintf("no usage from metrics source %s yet for %d selected pod(s)", r.Source.Name(), len(pods))
		// Say why: a query Prometheus refuses or a series it lacks shows
		// here, not only in the manager's log.
		if n := len(state.problems); n > 0 {
			msg += fmt.Sprintf("; %d problem(s), first: %s", n, state.problems[0].String())
		}
		setCondition(status, v1alpha1.ConditionRecommendationProvided, metav1.ConditionFalse, "NoUsageYet", msg, gen)
	}

	live := map[types.UID]bool{}
	for _, p := range pods {
		live[p.UID] = true
	}
	status.Pods = nil
	for key := range state.containers {
		if !live[key.pod] {
			delete(state.containers, key)
		}
	}
	for uid, ps := range state.pods {
		// An evicted pod stays in status while its replacement may come.
		keep := ps.result == stateEvicted && now.Sub(ps.lastResize) < RecreationTTL
		if !live[uid] && !keep {
			delete(state.pods, uid)
			continue
		}
		if ps.lastResize.IsZero() || len(status.Pods) >= maxPodsInStatus {
			continue
		}
		status.Pods = append(status.Pods, v1alpha1.PodResizeStatus{
			PodName: ps.name, LastResizeTime: metav1.NewTime(ps.lastResize), Result: resultOf(ps.result), Message: truncate(ps.message, 1024),
		})
	}
	sort.Slice(status.Pods, func(i, j int) bool { return status.Pods[i].PodName < status.Pods[j].PodName })

	if len(blocked) > 0 {
		reasons := make([]string, 0, len(blocked))
		for k := range blocked {
			reasons = append(reasons, k)
		}
		sort.Strings(reasons)
		var msgs []string
		for _, k := range reasons {
			msgs = append(msgs, k+": "+blocked[k])
		}
		setCondition(status, v1alpha1.ConditionResizesBlocked, metav1.ConditionTrue, reasons[0], strings.Join(msgs, "; "), gen)
	} else {
		setCondition(status, v1alpha1.ConditionResizesBlocked, metav1.ConditionFalse, "NotBlocked", "nothing holds resizes back", gen)
	}
	status.Recreations = state.recreationList(now)
	ready := fmt.Sprintf("%d pod(s) selected; usage from %s", len(pods), r.Source.Name())
	if state.metricsIgnored != "" {
		ready += "; " + state.metricsIgnored
	}
	setCondition(status, v1alpha1.ConditionReady, metav1.ConditionTrue, "Active", ready, gen)
}

func maxRecommendation(a, b recommend.Recommendation) recommend.Recommendation {
	pick := func(x, y recommend.Advice) recommend.Advice {
		if y.Target > x.Target {
			return y
		}
		return x
	}
	return recommend.Recommendation{CPU: pick(a.CPU, b.CPU), Memory: pick(a.Memory, b.Memory)}
}

func resultOf(state string) v1alpha1.ResizeResult {
	switch actuator.State(state) {
	case actuator.StateDone:
		return v1alpha1.ResizeResultDone
	case actuator.StateDeferred:
		return v1alpha1.ResizeResultDeferred
	case actuator.StateInfeasible:
		return v1alpha1.ResizeResultInfeasible
	case actuator.StateError:
		return v1alpha1.ResizeResultError
	case stateEvicted:
		return v1alpha1.ResizeResultEvicted
	}
	return v1alpha1.ResizeResultInProgress
}

func list(cpu, mem float64) corev1.ResourceList {
	l := corev1.ResourceList{}
	if cpu > 0 {
		l[corev1.ResourceCPU] = *resource.NewMilliQuantity(int64(cpu*1000+0.5), resource.DecimalSI)
	}
	if mem > 0 {
		l[corev1.ResourceMemory] = *resource.NewQuantity(int64(mem), resource.BinarySI)
	}
	return l
}

// writeStatus updates the status subresource when it changed.
func (r *Reconciler) writeStatus(ctx context.Context, policy *v1alpha1.TailorPolicy, status *v1alpha1.TailorPolicyStatus) error {
	if equality.Semantic.DeepEqual(&policy.Status, status) {
		return nil
	}
	patch := client.MergeFrom(policy.DeepCopy())
	policy.Status = *status
	if err := r.Client.Status().Patch(ctx, policy, patch); err != nil {
		return fmt.Errorf("writing status of policy %s/%s: %w", policy.Namespace, policy.Name, err)
	}
	return nil
}

// runtimeConvert turns an unstructured map into a typed value.
func runtimeConvert(in map[string]any, out any) error {
	b, err := json.Marshal(in)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, out)
}
