package store

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/tailorhq/tailor/api/v1alpha1"
	"github.com/tailorhq/tailor/internal/advise"
	"github.com/tailorhq/tailor/internal/controller/policy/policymetrics"
)

// DefaultCheckpointInterval is how often a policy's learnt state is written
// at most: VerticalPodAutoscaler's recommender checkpoints every minute too.
// What a restart loses is at most this much learning, which the next
// samples mostly make up: a peak is seen again, a raise is never delayed.
const DefaultCheckpointInterval = time.Minute

// Checkpoints keeps a policy's learnt state in its TailorCheckpoint and
// reads it back.
type Checkpoints struct {
	Client client.Client
	// APIReader reads from the apiserver, past the cache, where the cache
	// may be behind (a checkpoint the cache has not seen yet); nil reads
	// only through Client.
	APIReader client.Reader
	// Interval is how often learnt state is written at most; 0 is
	// DefaultCheckpointInterval.
	Interval time.Duration
}

// Restore fills a new policy state from the policy's TailorCheckpoint. A
// checkpoint of another policy of the same name (deleted and recreated) is
// ignored; an entry that does not decode is dropped and said, the others
// are kept.
func (k *Checkpoints) Restore(ctx context.Context, policy *v1alpha1.TailorPolicy, state *PolicyState) error {
	cp := &v1alpha1.TailorCheckpoint{}
	if err := k.Client.Get(ctx, client.ObjectKey{Namespace: policy.Namespace, Name: policy.Name}, cp); err != nil {
		switch {
		case apierrors.IsNotFound(err):
			return nil
		case meta.IsNoMatchError(err):
			// Resizing does not depend on checkpoints: without the CRD
			// tailor works, and forgets at a restart, which Ready says.
			state.RestoreProblem = noCheckpointCRD
			return nil
		}
		return fmt.Errorf("reading checkpoint of policy %s/%s: %w", policy.Namespace, policy.Name, err)
	}
	if cp.Spec.PolicyUID != string(policy.UID) {
		return nil
	}
	var bad []string
	for _, c := range cp.Spec.Containers {
		switch err := state.Model.Restore(&policy.Spec, c.Name, c.State, c.UpdateTime.Time); {
		case errors.Is(err, advise.ErrUnusable):
			// The policy itself is invalid: configure reports it.
		case err != nil:
			bad = append(bad, fmt.Sprintf("%s: %v", c.Name, err))
		}
	}
	state.checkpointed = cp.Spec.WriteTime.Time
	state.Canary, state.canaryWritten = canaryState(cp.Spec.Canary), cp.Spec.Canary
	state.Lowered, state.loweredWritten = LoweredState(cp.Spec.Lowered), cp.Spec.Lowered
	if len(bad) > 0 {
		state.RestoreProblem = fmt.Sprintf("checkpoint %s: %d container state(s) could not be read and start afresh (%s)", cp.Name, len(bad), bad[0])
		// An event says so when the sync acts (announce).
		state.RestoreUnsaid = true
	}
	log.FromContext(ctx).V(1).Info("restored checkpoint", "containers", len(cp.Spec.Containers)-len(bad), "written", cp.Spec.WriteTime)
	return nil
}

// Write writes the policy's learnt state when it changed since the last
// write and that was at least the checkpoint interval ago, and its canary's
// state whenever that changed: a restart must not forget a canary being
// watched or a rollback's hold; and the pods the lowering budget counts
// whenever they changed, so a restart does not grant the hour again. The
// checkpoint is owned by the policy, so
// the apiserver deletes it with the policy.
func (k *Checkpoints) Write(ctx context.Context, policy *v1alpha1.TailorPolicy, state *PolicyState, now time.Time) error {
	interval := k.Interval
	if interval == 0 {
		interval = DefaultCheckpointInterval
	}
	canary := canaryCheckpoint(state.Canary)
	lowered := loweredCheckpoint(state.Lowered)
	stateChanged := !equality.Semantic.DeepEqual(canary, state.canaryWritten) || !equality.Semantic.DeepEqual(lowered, state.loweredWritten)
	if !stateChanged && !state.checkpointed.IsZero() && now.Sub(state.checkpointed) < interval {
		return nil
	}
	names := make([]string, 0, len(state.Model.Containers))
	changed := false
	for n, wc := range state.Model.Containers {
		if wc.Fed.IsZero() {
			continue
		}
		names = append(names, n)
		if wc.Changed.After(state.checkpointed) {
			changed = true
		}
	}
	if !changed && !stateChanged {
		return nil
	}
	sort.Strings(names)
	if len(names) > maxCheckpointContainers {
		names = names[:maxCheckpointContainers]
	}
	spec := v1alpha1.TailorCheckpointSpec{PolicyName: policy.Name, PolicyUID: string(policy.UID), WriteTime: metav1.NewTime(now.Truncate(time.Second)), Canary: canary, Lowered: lowered}
	for _, n := range names {
		wc := state.Model.Containers[n]
		b, err := wc.State.MarshalBinary()
		if err != nil {
			return fmt.Errorf("encoding %s of policy %s/%s: %w", n, policy.Namespace, policy.Name, err)
		}
		spec.Containers = append(spec.Containers, v1alpha1.ContainerCheckpoint{Name: n, State: b, UpdateTime: metav1.NewTime(wc.Fed.Truncate(time.Second))})
	}
	cp := &v1alpha1.TailorCheckpoint{}
	err := k.Client.Get(ctx, client.ObjectKey{Namespace: policy.Namespace, Name: policy.Name}, cp)
	switch {
	case apierrors.IsNotFound(err):
		cp = &v1alpha1.TailorCheckpoint{ObjectMeta: metav1.ObjectMeta{Namespace: policy.Namespace, Name: policy.Name}, Spec: spec}
		cp.OwnerReferences = []metav1.OwnerReference{*metav1.NewControllerRef(policy, v1alpha1.GroupVersion.WithKind("TailorPolicy"))}
		err = k.Client.Create(ctx, cp)
		if apierrors.IsAlreadyExists(err) && k.APIReader != nil {
			// The cache is behind the apiserver (its watch is catching up
			// after an outage): update what the apiserver has.
			if err = k.APIReader.Get(ctx, client.ObjectKeyFromObject(cp), cp); err == nil {
				cp.Spec = spec
				err = k.Client.Update(ctx, cp)
			}
		}
	case err == nil:
		if equality.Semantic.DeepEqual(cp.Spec.Containers, spec.Containers) && equality.Semantic.DeepEqual(cp.Spec.Canary, spec.Canary) &&
			equality.Semantic.DeepEqual(cp.Spec.Lowered, spec.Lowered) {
			state.checkpointed, state.canaryWritten, state.loweredWritten = now, canary, lowered
			return nil
		}
		cp.Spec = spec
		cp.OwnerReferences = []metav1.OwnerReference{*metav1.NewControllerRef(policy, v1alpha1.GroupVersion.WithKind("TailorPolicy"))}
		err = k.Client.Update(ctx, cp)
	}
	if meta.IsNoMatchError(err) {
		// Without the CRD nothing is kept: not tried again before the
		// interval, nor for the same canary state.
		state.checkpointed, state.RestoreProblem, state.canaryWritten, state.loweredWritten = now, noCheckpointCRD, canary, lowered
		return nil
	}
	if err != nil {
		policymetrics.CheckpointWritesTotal.WithLabelValues(policy.Namespace, policy.Name, "failed").Inc()
		return fmt.Errorf("writing checkpoint %s/%s: %w", policy.Namespace, policy.Name, err)
	}
	policymetrics.CheckpointWritesTotal.WithLabelValues(policy.Namespace, policy.Name, "written").Inc()
	state.checkpointed, state.RestoreProblem, state.canaryWritten, state.loweredWritten = now, "", canary, lowered
	return nil
}

// noCheckpointCRD is the Ready note of a cluster without the CRD.
const noCheckpointCRD = "the TailorCheckpoint CRD is not installed: what is learnt is not kept across manager restarts (apply config/crd)"

// maxCheckpointContainers is the CRD's bound on a checkpoint's entries.
const maxCheckpointContainers = 64
