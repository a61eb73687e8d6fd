package act

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/tailorhq/tailor/api/v1alpha1"
	"github.com/tailorhq/tailor/internal/autoscale"
)

// EventUnschedulable: a pod tailor sized found no node with room for it; it
// is replaced once new pods are created smaller.
const EventUnschedulable = "Unschedulable"

// Deleting a pod is a ClusterRole of its own, bound only where an
// admission policy of tailor's sizes new pods (and so marks them
// v1alpha1.AdmittedAnnotation): no other pod is replaceStuck's to delete.
// Bound like tailor-manager-writes: cluster-wide, or in each namespace of
// a scoped manager.
// +kubebuilder:rbac:groups="",resources=pods,verbs=delete,roleName=tailor-replace-unschedulable

// replaceStuck deletes the pods tailor sized that wait unschedulable and
// that the decision found due (autoscale.DecideSync: a new pod of their
// workload would be created smaller, by the entry this sync read, standing
// at least AdmissionSettle so the admission policy's informer has it), so
// their controller creates ones that fit. A pod not yet due is said in
// status; nothing else is touched.
func (r *Actor) replaceStuck(ctx context.Context, policy *v1alpha1.TailorPolicy, in *Input, d autoscale.SyncDecision, blocked map[string]string) error {
	state := in.State
	state.StuckSeen = d.StuckSeen
	var errs []error
	for _, s := range d.Stuck {
		blocked[EventUnschedulable] = s.Message
		if !s.Due {
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
		delete(state.StuckSeen, uid)
		// A replacement of a pod tailor evicted would otherwise come back
		// at the size that did not fit.
		if owner := metav1.GetControllerOf(s.Pod); owner != nil {
			delete(state.Recreations, owner.UID)
		}
		r.Events.Eventf(s.Pod, policy, corev1.EventTypeWarning, EventUnschedulable, "Replace", "%s", s.Message)
		r.Events.Eventf(policy, nil, corev1.EventTypeWarning, EventUnschedulable, "Replace", "%s", s.Message)
		log.FromContext(ctx).Info("unschedulable pod replaced", "pod", klog.KObj(s.Pod), "reason", s.Message)
	}
	if len(errs) > 0 {
		return errs[0]
	}
	return nil
}
