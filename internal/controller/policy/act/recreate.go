package act

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/tailorhq/tailor/api/v1alpha1"
	"github.com/tailorhq/tailor/internal/autoscale"
	"github.com/tailorhq/tailor/internal/autoscale/placement"
	"github.com/tailorhq/tailor/internal/controller/policy/policymetrics"
	"github.com/tailorhq/tailor/internal/controller/policy/store"
	"github.com/tailorhq/tailor/internal/observation"
	"github.com/tailorhq/tailor/internal/podchange"
)

// Event reasons of InPlaceOrRecreate.
const (
	EventEvicted         = "Evicted"
	EventEvictionBlocked = "EvictionBlocked"
)

// recreate carries out what the decision says of a pod whose raise finds no
// room on its node, in mode InPlaceOrRecreate: once that has lasted
// recreateAfter, its replacement's resources are recorded for
// status.recreations (written with the sync's status, once, at its end) and,
// on a sync at least AdmissionSettle later, the pod is evicted through the
// Eviction API (PodDisruptionBudgets decide). It returns whether the pod was
// evicted, and when to look again.
func (r *Actor) recreate(ctx context.Context, policy *v1alpha1.TailorPolicy, in *Input, step autoscale.RecreateStepOf,
	now time.Time, blocked map[string]string) (bool, time.Duration, error) {
	state, p, d := in.State, step.Pod, step.RecreateDecision
	ps := state.Pod(p)
	ps.ShortSince = step.ShortSince
	interval := podchange.MinResizeInterval(&policy.Spec)
	block := func(reason, msg string) (bool, time.Duration, error) {
		state.DropPendingRecreation(p)
		msg = "pod " + p.Name + " not evicted: " + msg
		blocked[reason] = msg
		ps.EvictionBlocked = store.EvictionBlock{Reason: reason, Message: msg, Until: now.Add(interval)}
		r.reportOnce(ps, p, policy, "recreate:"+reason, EventEvictionBlocked, msg)
		return false, interval, nil
	}
	switch d.Step {
	case placement.RecreateWait:
		if d.Reason != "" {
			blocked[d.Reason] = d.Message
		}
		return false, d.RetryAfter, nil
	case placement.RecreateBlocked:
		return block(d.Reason, d.Message)
	case placement.RecreateRecord:
		// The replacement reads its resources from status at admission:
		// they are written with this sync's status, a sync before the
		// eviction (taken back if that write fails: recordedThisSync).
		owner := d.Owner
		state.Recreations[owner.UID] = v1alpha1.Recreation{
			OwnerUID: string(owner.UID), OwnerKind: owner.Kind, OwnerName: owner.Name, EvictedPod: p.Name,
			EvictionTime: metav1.NewTime(now), ObservedGeneration: d.Generation, Containers: d.Containers,
		}
		in.recorded = append(in.recorded, owner.UID)
		return false, d.RetryAfter, nil
	case placement.RecreateEvict:
	default:
		return false, 0, fmt.Errorf("deciding recreation of pod %s/%s: unexpected step %s", p.Namespace, p.Name, d.Step)
	}

	owner, text := d.Owner, placement.ContainersText(d.Containers)
	uid := p.UID
	eviction := &policyv1.Eviction{
		ObjectMeta:    metav1.ObjectMeta{Name: p.Name, Namespace: p.Namespace},
		DeleteOptions: &metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}},
	}
	if err := r.Client.SubResource("eviction").Create(ctx, p, eviction); err != nil {
		policymetrics.EvictionsTotal.WithLabelValues(policy.Namespace, policy.Name, "blocked").Inc()
		switch {
		case apierrors.IsTooManyRequests(err):
			return block("EvictionBlocked", "a PodDisruptionBudget does not allow it now: "+err.Error())
		case apierrors.IsForbidden(err):
			return block("EvictionForbidden", "the manager may not evict pods (install config/components/eviction, or set evictions.enabled in the Helm chart): "+err.Error())
		case apierrors.IsNotFound(err), apierrors.IsConflict(err):
			return false, time.Second, nil
		}
		return false, 0, fmt.Errorf("evicting pod %s/%s: %w", p.Namespace, p.Name, err)
	}
	state.LastEviction = now
	ps.LastResize, ps.Result, ps.Outcome = now, store.StateEvicted, store.StateEvicted
	ps.Message = fmt.Sprintf("evicted to be recreated by %s %s with %s: its node has no room in place", owner.Kind, owner.Name, text)
	policymetrics.EvictionsTotal.WithLabelValues(policy.Namespace, policy.Name, "evicted").Inc()
	r.mark(policy, observation.ResizeMark{Time: now, Pod: p.Name, Result: string(v1alpha1.ResizeResultEvicted), Change: ps.Message})
	r.Events.Eventf(p, policy, corev1.EventTypeNormal, EventEvicted, "Evict", "%s", ps.Message)
	log.FromContext(ctx).Info("pod evicted for recreation", "pod", klog.KObj(p), "owner", owner.Name, "resources", text)
	return true, 0, nil
}
