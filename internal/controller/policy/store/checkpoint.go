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
	restore := func(c v1alpha1.ContainerCheckpoint, class string) {
		key := advise.Key(c.Name, class)
		switch err := state.Model.Restore(&policy.Spec, key, c.State, c.UpdateTime.Time); {
		case errors.Is(err, advise.ErrUnusable):
			// The policy itself is invalid: configure reports it.
		case err != nil:
			bad = append(bad, fmt.Sprintf("%s: %v", key, err))
		}
	}
	entries := len(cp.Spec.Containers)
	for _, c := range cp.Spec.Containers {
		restore(c, "")
	}
	for _, nc := range cp.Spec.NodeClasses {
		for _, c := range nc.Containers {
			restore(c, nc.Class)
		}
		entries += len(nc.Containers)
	}
	state.checkpointed = cp.Spec.WriteTime.Time
	state.Canary, state.canaryWritten = canaryState(cp.Spec.Canary), cp.Spec.Canary
	state.Lowered, state.loweredWritten = LoweredState(cp.Spec.Lowered), cp.Spec.Lowered
	if len(bad) > 0 {
		state.RestoreProblem = fmt.Sprintf("checkpoint %s: %d container state(s) could not be read and start afresh (%s)", cp.Name, len(bad), bad[0])
		// An event says so when the sync acts (announce).
		state.RestoreUnsaid = true
	}
	log.FromContext(ctx).V(1).Info("restored checkpoint", "containers", entries-len(bad), "written", cp.Spec.WriteTime)
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
	spec := v1alpha1.TailorCheckpointSpec{PolicyName: policy.Name, PolicyUID: string(policy.UID), WriteTime: metav1.NewTime(now.Truncate(time.Second)), Canary: canary, Lowered: lowered}
	if err := checkpointStates(state.Model, names, &spec); err != nil {
		return fmt.Errorf("encoding the state of policy %s/%s: %w", policy.Namespace, policy.Name, err)
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
		if equality.Semantic.DeepEqual(cp.Spec.Containers, spec.Containers) && equality.Semantic.DeepEqual(cp.Spec.NodeClasses, spec.NodeClasses) &&
			equality.Semantic.DeepEqual(cp.Spec.Canary, spec.Canary) &&
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

// The CRD's bounds on a checkpoint's entries: containers, node classes,
// and containers of a class.
const (
	maxCheckpointContainers      = 64
	maxCheckpointClasses         = 16
	maxCheckpointClassContainers = 16
)

// checkpointStates puts the states of keys (advise.Key) into spec: the
// workload's in containers, a node class's in nodeClasses, each list
// sorted and cut to the CRD's bounds (a state left out is learnt again
// after a restart, as a new one is).
func checkpointStates(m *advise.Model, keys []string, spec *v1alpha1.TailorCheckpointSpec) error {
	byClass := map[string][]string{}
	for _, k := range keys {
		n, c := advise.SplitKey(k)
		byClass[c] = append(byClass[c], n)
	}
	entries := func(class string, most int) ([]v1alpha1.ContainerCheckpoint, error) {
		names := byClass[class]
		sort.Strings(names)
		names = names[:min(len(names), most)]
		out := make([]v1alpha1.ContainerCheckpoint, 0, len(names))
		for _, n := range names {
			wc := m.Containers[advise.Key(n, class)]
			b, err := wc.State.MarshalBinary()
			if err != nil {
				return nil, fmt.Errorf("encoding %s: %w", advise.Key(n, class), err)
			}
			out = append(out, v1alpha1.ContainerCheckpoint{Name: n, State: b, UpdateTime: metav1.NewTime(wc.Fed.Truncate(time.Second))})
		}
		return out, nil
	}
	var err error
	if len(byClass[""]) > 0 {
		if spec.Containers, err = entries("", maxCheckpointContainers); err != nil {
			return err
		}
	}
	classes := make([]string, 0, len(byClass))
	for c := range byClass {
		if c != "" {
			classes = append(classes, c)
		}
	}
	sort.Strings(classes)
	for _, c := range classes[:min(len(classes), maxCheckpointClasses)] {
		cs, err := entries(c, maxCheckpointClassContainers)
		if err != nil {
			return err
		}
		spec.NodeClasses = append(spec.NodeClasses, v1alpha1.NodeClassCheckpoint{Class: c, Containers: cs})
	}
	return nil
}
