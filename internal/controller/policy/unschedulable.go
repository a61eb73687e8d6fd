package policy

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/tailorhq/tailor/api/v1alpha1"
	"github.com/tailorhq/tailor/internal/autoscale"
)

// EventUnschedulable: a pod tailor sized found no node with room for it; it
// is replaced once new pods are created smaller.
const EventUnschedulable = "Unschedulable"

// +kubebuilder:rbac:groups="",resources=pods,verbs=delete

// replaceStuck deletes the pods tailor sized that wait unschedulable once a
// new pod of their workload would be created smaller (the entry this sync
// read, planned by an earlier sync against the nodes' free room and standing
// at least AdmissionSettle, so the admission policy's informer has it), so
// their controller creates ones that fit. A pod that is not yet due is said
// in status; nothing else is touched. It returns when to look again.
func (r *Reconciler) replaceStuck(ctx context.Context, policy *v1alpha1.TailorPolicy, in *syncInput, now time.Time, blocked map[string]string) (time.Duration, error) {
	state := in.state
	seen := state.stuckSeen
	state.stuckSeen = map[types.UID]time.Time{}
	if in.newPodRoom == nil && policy.Spec.TargetRef == nil {
		return 0, nil
	}
	stuck, retry := autoscale.DecideStuck(autoscale.StuckInput{Pods: in.unbound, Template: state.template, Entry: policy.Status.Admission, Now: now})
	var errs []error
	for _, s := range stuck {
		blocked[EventUnschedulable] = s.Message
		if !s.Replace {
			// The entry comes down this sync; the pod goes on a later one.
			retry = soonest(retry, AdmissionSettle)
			continue
		}
		first, ok := seen[s.Pod.UID]
		if !ok {
			first = now
		}
		state.stuckSeen[s.Pod.UID] = first
		if wait := first.Add(AdmissionSettle).Sub(now); wait > 0 {
			retry = soonest(retry, wait)
			continue
		}
		uid := s.Pod.UID
		err := r.Client.Delete(ctx, s.Pod, client.Preconditions{UID: &uid})
		switch {
		case apierrors.IsNotFound(err), apierrors.IsConflict(err):
			continue
		case err != nil:
			errs = append(errs, fmt.Errorf("deleting unschedulable pod %s/%s: %w", s.Pod.Namespace, s.Pod.Name, err))
			continue
		}
		delete(state.stuckSeen, uid)
		// A replacement of a pod tailor evicted would otherwise come back
		// at the size that did not fit.
		if owner := metav1.GetControllerOf(s.Pod); owner != nil {
			delete(state.recreations, owner.UID)
		}
		r.Events.Eventf(s.Pod, policy, corev1.EventTypeWarning, EventUnschedulable, "Replace", "%s", s.Message)
		r.Events.Eventf(policy, nil, corev1.EventTypeWarning, EventUnschedulable, "Replace", "%s", s.Message)
		log.FromContext(ctx).Info("unschedulable pod replaced", "pod", klog.KObj(s.Pod), "reason", s.Message)
	}
	if len(errs) > 0 {
		return retry, errs[0]
	}
	return retry, nil
}

func soonest(a, b time.Duration) time.Duration {
	if a == 0 || (b > 0 && b < a) {
		return b
	}
	return a
}
