package policy

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"

	"github.com/tailorhq/tailor/api/v1alpha1"
	"github.com/tailorhq/tailor/internal/advise"
	"github.com/tailorhq/tailor/internal/controller/policy/gather"
	"github.com/tailorhq/tailor/internal/controller/policy/store"
)

// prepare resolves the policy's selector and gives it its state: kept across
// syncs, rebuilt on a spec change without losing what was learnt, and
// restored from the checkpoint when this process has not seen the policy.
func (r *Reconciler) prepare(ctx context.Context, policy *v1alpha1.TailorPolicy, spec gather.Spec, now time.Time) (*store.PolicyState, error) {
	state, known := r.store.Get(policy.UID)
	sel, cached := cachedSelector(policy, state, now)
	var template *corev1.PodTemplateSpec
	if !cached {
		var err error
		if sel, template, err = r.reader().Selector(ctx, policy, spec); err != nil {
			return nil, err
		}
	}
	if !known {
		state = &store.PolicyState{
			Key:         types.NamespacedName{Namespace: policy.Namespace, Name: policy.Name},
			Model:       advise.NewModel(r.Recommender),
			Pods:        map[types.UID]*store.PodState{},
			Recreations: map[types.UID]v1alpha1.Recreation{},
		}
		// After a restart: replacements may still be on their way, and the
		// last eviction (no earlier than its entry) still paces the next.
		for _, rc := range policy.Status.Recreations {
			state.Recreations[types.UID(rc.OwnerUID)] = rc
			if rc.EvictionTime.After(state.LastEviction) {
				state.LastEviction = rc.EvictionTime.Time
			}
		}
		if err := r.checkpoints().Restore(ctx, policy, state); err != nil {
			return nil, err
		}
	}
	if !known || state.Generation != policy.Generation {
		if err := r.prepareSource(policy, state); err != nil {
			return nil, err
		}
		state.Generation = policy.Generation
	}
	if !cached {
		state.TargetRead = now
		state.Template = template
	}
	state.Selector = sel
	r.store.Put(policy.UID, state)
	return state, nil
}

// targetRefresh is how long a targetRef's selector is reused before the
// target is read again. The workloads' selectors are immutable (apps/v1),
// so a read only notices a target deleted, or recreated with another
// selector. Targets are read from the apiserver, not a cache (any kind
// with a spec.selector may be one, and caching it would mean watching
// every object of that kind in the cluster), so reading at every sync cost
// one GET per policy per sync period.
const targetRefresh = time.Minute

// cachedSelector is the target's selector as last read, while it is newer
// than targetRefresh and the policy's spec is unchanged; ok is false when
// it must be read.
func cachedSelector(policy *v1alpha1.TailorPolicy, state *store.PolicyState, now time.Time) (labels.Selector, bool) {
	if state != nil && policy.Spec.Selector == nil && state.Selector != nil &&
		state.Generation == policy.Generation && now.Sub(state.TargetRead) < targetRefresh {
		return state.Selector, true
	}
	return nil, false
}
