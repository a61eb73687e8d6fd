package policystatus

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tailorhq/tailor/api/v1alpha1"
	"github.com/tailorhq/tailor/internal/controller/policy/gather"
	"github.com/tailorhq/tailor/internal/controller/policy/policymetrics"
	"github.com/tailorhq/tailor/internal/controller/policy/store"
	"github.com/tailorhq/tailor/internal/ownership"
	"github.com/tailorhq/tailor/internal/podchange"
)

// maxPodsInStatus bounds status.pods (the CRD allows 256).
const maxPodsInStatus = 256

// SetCondition sets one condition, its message bounded as the CRD bounds
// it.
func SetCondition(status *v1alpha1.TailorPolicyStatus, typ string, s metav1.ConditionStatus, reason, msg string, gen int64) {
	meta.SetStatusCondition(&status.Conditions, metav1.Condition{
		Type: typ, Status: s, Reason: reason, Message: store.Truncate(msg, 1024), ObservedGeneration: gen,
	})
}

// Input is what a sync found and did, for the policy's status.
type Input struct {
	State *store.PolicyState
	Pods  []*corev1.Pod
	// Source names the metrics source usage is read from.
	Source string
	// Recommendation is the workload's as the model advises it this sync
	// (nil: none yet), and Defaults the maxAllowed a container whose
	// policy sets none gets.
	Recommendation *v1alpha1.Recommendation
	Defaults       map[corev1.ResourceName]podchange.DefaultBound
	// Admission is the entry new pods are sized by.
	Admission *v1alpha1.Admission
	// HPA describes the HorizontalPodAutoscalers of the target, "" when
	// there are none, and Holds the requests they hold.
	HPA   string
	Holds ownership.Holds
	// Blocked is what held resizes back, by reason.
	Blocked map[string]string
	// NotBoosted says which containers the startup boost leaves alone, and
	// why.
	NotBoosted map[string]bool
	// VPAHeld and Conflict say which VerticalPodAutoscaler and which other
	// policies size some of the policy's pods, "" when none does.
	VPAHeld, Conflict string
	// JVMs says whether any of the pods runs a JVM, and HeapFits which of
	// them cannot use their memory limit.
	JVMs     bool
	HeapFits []HeapFit
}

// Fill writes the workload's recommendations, the pods' last resizes and
// the conditions. Everything is sorted and bounded, so an unchanged state
// writes an unchanged status, which Write then skips.
func Fill(status *v1alpha1.TailorPolicyStatus, policy *v1alpha1.TailorPolicy, in Input, now time.Time) {
	gen, state, pods := policy.Generation, in.State, in.Pods
	rec := in.Recommendation
	if rec == nil {
		rec = &v1alpha1.Recommendation{}
	}
	for _, cr := range rec.ContainerRecommendations {
		cpu, mem := cr.Target[corev1.ResourceCPU], cr.Target[corev1.ResourceMemory]
		policymetrics.Recommendation.WithLabelValues(policy.Namespace, policy.Name, cr.ContainerName, "cpu").Set(float64(cpu.MilliValue()) / 1000)
		policymetrics.Recommendation.WithLabelValues(policy.Namespace, policy.Name, cr.ContainerName, "memory").Set(float64(mem.Value()))
	}
	if len(rec.ContainerRecommendations) > 0 {
		status.Recommendation = rec
		msg := fmt.Sprintf("recommendations for %d container(s) of %d pod(s)", len(rec.ContainerRecommendations), len(pods))
		if n := len(rec.NodeClasses); n > 0 {
			msg += fmt.Sprintf(" on %d class(es) of node", n)
		}
		if capped := podchange.DefaultCapped(&policy.Spec, in.Defaults, rec.ContainerRecommendations); capped != "" {
			msg += "; " + capped
		}
		SetCondition(status, v1alpha1.ConditionRecommendationProvided, metav1.ConditionTrue, "Recommended", store.Truncate(msg, 1024), gen)
	} else {
		msg := fmt.Sprintf("no usage from metrics source %s yet for %d selected pod(s)", in.Source, len(pods))
		// Say why: a query Prometheus refuses or a series it lacks shows
		// here, not only in the manager's log.
		if n := len(state.Problems); n > 0 {
			msg += fmt.Sprintf("; %d problem(s), first: %s", n, state.Problems[0].String())
		}
		SetCondition(status, v1alpha1.ConditionRecommendationProvided, metav1.ConditionFalse, "NoUsageYet", msg, gen)
	}

	status.Admission = in.Admission
	if a := status.Admission; a != nil {
		a.Message, a.Summary = store.Truncate(a.Message, 1024), store.Truncate(a.Summary, 1024)
	}
	if in.HPA != "" && !in.Holds.Empty() {
		SetCondition(status, v1alpha1.ConditionRequestsHeldForHPA, metav1.ConditionTrue, "HPAUtilization", in.HPA, gen)
	} else {
		msg := "no HorizontalPodAutoscaler scales the target"
		if policy.Spec.TargetRef == nil {
			msg = "no HorizontalPodAutoscaler scales the workloads of the selected pods"
		}
		if in.HPA != "" {
			msg = in.HPA
		}
		SetCondition(status, v1alpha1.ConditionRequestsHeldForHPA, metav1.ConditionFalse, "NoUtilizationHPA", msg, gen)
	}

	status.Pods = nil
	for _, ps := range state.Pods {
		if ps.LastResize.IsZero() || ps.Result == "" {
			continue
		}
		status.Pods = append(status.Pods, v1alpha1.PodResizeStatus{
			PodName: ps.Name, LastResizeTime: metav1.NewTime(ps.LastResize.Truncate(time.Second)), Result: ps.ResizeResult(), Message: store.Truncate(ps.Message, 1024),
		})
	}
	// Most recent first, then by name, so the 256 kept are always the same.
	sort.Slice(status.Pods, func(i, j int) bool {
		a, b := status.Pods[i], status.Pods[j]
		if !a.LastResizeTime.Equal(&b.LastResizeTime) {
			return b.LastResizeTime.Before(&a.LastResizeTime)
		}
		return a.PodName < b.PodName
	})
	if len(status.Pods) > maxPodsInStatus {
		status.Pods = status.Pods[:maxPodsInStatus]
	}

	if blocked := in.Blocked; len(blocked) > 0 {
		reasons := make([]string, 0, len(blocked))
		for k := range blocked {
			reasons = append(reasons, k)
		}
		sort.Strings(reasons)
		var msgs []string
		for _, k := range reasons {
			msgs = append(msgs, k+": "+blocked[k])
		}
		SetCondition(status, v1alpha1.ConditionResizesBlocked, metav1.ConditionTrue, reasons[0], strings.Join(msgs, "; "), gen)
	} else {
		SetCondition(status, v1alpha1.ConditionResizesBlocked, metav1.ConditionFalse, "NotBlocked", "nothing holds resizes back", gen)
	}
	setJVMHeap(status, in.JVMs, in.HeapFits, int64(len(pods)), gen)
	status.Recreations = state.RecreationList(now)
	ready := fmt.Sprintf("%d pod(s) selected; usage from %s", len(pods), in.Source)
	if state.MetricsIgnored != "" {
		ready += "; " + state.MetricsIgnored
	}
	if len(in.NotBoosted) > 0 {
		notes := make([]string, 0, len(in.NotBoosted))
		for n := range in.NotBoosted {
			notes = append(notes, n)
		}
		sort.Strings(notes)
		ready += "; startup boost: " + strings.Join(notes, "; ")
	}
	if held := gather.HeldFor(state.Problems); held != "" {
		ready += "; " + held + ": held"
	}
	if state.RestoreProblem != "" {
		ready += "; " + state.RestoreProblem
	}
	switch {
	case in.VPAHeld != "":
		SetCondition(status, v1alpha1.ConditionReady, metav1.ConditionFalse, v1alpha1.ReasonVerticalPodAutoscaler, in.VPAHeld, gen)
		return
	case in.Conflict != "":
		SetCondition(status, v1alpha1.ConditionReady, metav1.ConditionFalse, v1alpha1.ReasonConflict, in.Conflict+"; "+ready, gen)
		return
	}
	if err := state.MetricsErr; err != nil {
		SetCondition(status, v1alpha1.ConditionReady, metav1.ConditionFalse, "MetricsUnavailable",
			fmt.Sprintf("metrics source %s: %v; nothing is lowered until usage is back, OOM kills are still answered", in.Source, err), gen)
		return
	}
	SetCondition(status, v1alpha1.ConditionReady, metav1.ConditionTrue, "Active", ready, gen)
}

// Write updates the status subresource when it changed.
func Write(ctx context.Context, c client.Client, policy *v1alpha1.TailorPolicy, status *v1alpha1.TailorPolicyStatus) error {
	if equality.Semantic.DeepEqual(&policy.Status, status) {
		return nil
	}
	patch := client.MergeFrom(policy.DeepCopy())
	policy.Status = *status
	if err := c.Status().Patch(ctx, policy, patch); err != nil {
		if apierrors.IsNotFound(err) {
			// Deleted during the sync: its delete event forgets it.
			return nil
		}
		return fmt.Errorf("writing status of policy %s/%s: %w", policy.Namespace, policy.Name, err)
	}
	return nil
}
