package manager

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tailorhq/tailor/api/v1alpha1"
	"github.com/tailorhq/tailor/internal/actuator"
	"github.com/tailorhq/tailor/internal/boost"
	"github.com/tailorhq/tailor/internal/jvm"
	"github.com/tailorhq/tailor/internal/resize"
	"github.com/tailorhq/tailor/internal/shard"
)

// lastApplied is kubectl's copy of an object as applied: often as large as
// the object, and never read by tailor.
const lastApplied = "kubectl.kubernetes.io/last-applied-configuration"

// mirrorPod marks a static pod, which cannot be resized (the planner reads
// it).
const mirrorPod = "kubernetes.io/config.mirror"

// CacheOptions are what the manager's informers keep of each object. The
// manager caches every pod and node of the cluster, so what one keeps is
// multiplied by tens of thousands: pods are cut down to what tailor reads
// (slimPod), nodes lose their image lists, and no object keeps its
// managedFields, which are often most of its size, except the entries of
// tailor's own resizes, whose time says when tailor last resized the pod
// (the controller reads it back after a restart), and, on a pod given a
// startup boost, which fields they own (whether its cpu is still lent), or
// kubectl's last-applied copy.
//
// A manager of one shard (several managers splitting the cluster by
// namespace) keeps another shard's pods as foreignPod, only what a node's
// room counts, and another shard's checkpoints without their state.
//
// A manager scoped to namespaces watches every namespaced type in those
// namespaces only (policies, checkpoints, HPAs: DefaultNamespaces), but
// pods in every namespace, kept as foreignPods outside them, since a node's
// room counts every pod on it; nodes are cluster-scoped. What it reads
// through its cached client must then be a pod, a node, or in its
// namespaces (or listed across them): controller-runtime fails a Get or a
// namespaced List of any other namespace, so every such read is behind
// shard.Owns. Unstructured reads (a policy's targetRef) are not cached,
// but for VerticalPodAutoscalers, read from the cache itself (without their
// status). ReplicaSets are cached by their metadata only, cut down to their
// controller's owner reference (ownerOnly).
func CacheOptions(sh shard.Shard) cache.Options {
	lists := newListTable(listTableSize)
	o := cache.Options{DefaultTransform: func(obj any) (any, error) { return trim(obj, sh, lists) }}
	if sh.Scoped() {
		o.DefaultNamespaces = make(map[string]cache.Config, len(sh.Namespaces))
		for _, ns := range sh.Namespaces {
			o.DefaultNamespaces[ns] = cache.Config{}
		}
		o.ByObject = map[client.Object]cache.ByObject{
			&corev1.Pod{}: {Namespaces: map[string]cache.Config{cache.AllNamespaces: {}}},
		}
	}
	return o
}

// trim cuts obj down; pods' resource lists are shared through lists.
func trim(obj any, sh shard.Shard, lists *listTable) (any, error) {
	switch o := obj.(type) {
	case *corev1.Pod:
		if !sh.Owns(o.Namespace) {
			return foreignPod(o, lists), nil
		}
		return slimPod(o, lists), nil
	case *v1alpha1.TailorCheckpoint:
		if !sh.Owns(o.Namespace) {
			o.Spec = v1alpha1.TailorCheckpointSpec{}
		}
	case *corev1.Node:
		o.Status.Images = nil
		o.Status.VolumesInUse, o.Status.VolumesAttached = nil, nil
	case *metav1.PartialObjectMetadata:
		return ownerOnly(o, sh), nil
	case *unstructured.Unstructured:
		if o.GetKind() == "VerticalPodAutoscaler" {
			// Its status is its recommendation, per container: tailor
			// reads only its spec.
			unstructured.RemoveNestedField(o.Object, "status")
		}
	}
	o, ok := obj.(metav1.Object)
	if !ok {
		// Tombstones of deleted objects pass as they are.
		return obj, nil
	}
	o.SetManagedFields(nil)
	if a := o.GetAnnotations(); a[lastApplied] != "" {
		trimmed := make(map[string]string, len(a)-1)
		for k, v := range a {
			if k != lastApplied {
				trimmed[k] = v
			}
		}
		o.SetAnnotations(trimmed)
	}
	return obj, nil
}

// ownerOnly is what the controller reads of an object cached by its
// metadata (ReplicaSets, of which a cluster may hold thousands: ten per
// Deployment by default): its identity and its controller's owner
// reference, through which a pod's chain reaches its Deployment; nothing
// of another shard's, whose pods this manager does not size.
func ownerOnly(m *metav1.PartialObjectMetadata, sh shard.Shard) *metav1.PartialObjectMetadata {
	out := &metav1.PartialObjectMetadata{TypeMeta: m.TypeMeta, ObjectMeta: metav1.ObjectMeta{
		Name: m.Name, Namespace: m.Namespace, UID: m.UID, ResourceVersion: m.ResourceVersion,
	}}
	if c := metav1.GetControllerOfNoCopy(m); c != nil && sh.Owns(m.Namespace) {
		out.OwnerReferences = []metav1.OwnerReference{*c}
	}
	return out
}

// slimPod is the part of p that tailor reads, in a new object: identity,
// labels and owners; every container's name, resources, resize and restart
// policies; what places the pod (node, priority, tolerations, required node
// affinity, overhead, OS); the phase, QoS class, observed generation,
// pod-level resources, the Ready and resize conditions, PodScheduled while
// False, and each
// container's state, restarts, allocated and actual resources. It drops
// what real pods are mostly made of and tailor never reads: images, env
// and commands (but a JVM's heap option, jvm.Slim), probes, volumes and mounts, security contexts, other
// annotations, IPs, termination messages. At 10,000 pods the cache is most
// of the manager's memory (the scale benchmark, docs/scale.md).
//
// Whatever a sync, the planner or a pod predicate starts to read must be
// kept here: TestSlimPodDecidesAlike checks that the decision over
// generated pods is the same on the slim pods. Resource lists equal to
// another cached pod's are shared through lists (nil: none are).
func slimPod(p *corev1.Pod, lists *listTable) *corev1.Pod {
	s := &corev1.Pod{TypeMeta: p.TypeMeta}
	s.ObjectMeta = metav1.ObjectMeta{
		Name:              p.Name,
		Namespace:         p.Namespace,
		UID:               p.UID,
		ResourceVersion:   p.ResourceVersion,
		Generation:        p.Generation,
		CreationTimestamp: p.CreationTimestamp,
		DeletionTimestamp: p.DeletionTimestamp,
		Labels:            p.Labels,
		OwnerReferences:   p.OwnerReferences,
	}
	for _, k := range []string{mirrorPod, v1alpha1.BoostAnnotation} {
		if v, ok := p.Annotations[k]; ok {
			if s.Annotations == nil {
				s.Annotations = map[string]string{}
			}
			s.Annotations[k] = v
		}
	}
	// Whether an admission policy of tailor's sized the pod (which makes a
	// pod waiting unschedulable tailor's to replace); its value, the
	// summary of what was applied, is for people and is not kept.
	if _, ok := p.Annotations[v1alpha1.AdmittedAnnotation]; ok {
		if s.Annotations == nil {
			s.Annotations = map[string]string{}
		}
		s.Annotations[v1alpha1.AdmittedAnnotation] = ""
	}
	// A pod boosted at its start (annotated at admission, or resized under
	// the boost's field manager) keeps which fields tailor's entries own:
	// that says whether its cpu requests are still the boost's.
	boosted := p.Annotations[v1alpha1.BoostAnnotation] != ""
	for _, mf := range p.ManagedFields {
		boosted = boosted || (mf.Manager == boost.FieldManager && mf.Subresource == "resize")
	}
	for _, mf := range p.ManagedFields {
		if (mf.Manager == actuator.FieldManager || mf.Manager == boost.FieldManager) && mf.Subresource == "resize" {
			if !boosted {
				mf.FieldsV1 = nil
			}
			s.ManagedFields = append(s.ManagedFields, mf)
		}
	}

	s.Spec = corev1.PodSpec{
		InitContainers:    slimContainers(p.Spec.InitContainers, lists),
		Containers:        slimContainers(p.Spec.Containers, lists),
		RestartPolicy:     p.Spec.RestartPolicy,
		NodeSelector:      p.Spec.NodeSelector,
		NodeName:          p.Spec.NodeName,
		Tolerations:       p.Spec.Tolerations,
		Priority:          p.Spec.Priority,
		PreemptionPolicy:  p.Spec.PreemptionPolicy,
		Overhead:          p.Spec.Overhead,
		OS:                p.Spec.OS,
		Resources:         internRequirements(p.Spec.Resources, lists),
		PriorityClassName: p.Spec.PriorityClassName,
	}
	if a := p.Spec.Affinity; a != nil && a.NodeAffinity != nil && a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution != nil {
		s.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
			RequiredDuringSchedulingIgnoredDuringExecution: a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution,
		}}
	}
	// Ephemeral containers have no resources; their names are reported
	// when a resize names one.
	for _, e := range p.Spec.EphemeralContainers {
		s.Spec.EphemeralContainers = append(s.Spec.EphemeralContainers, corev1.EphemeralContainer{
			EphemeralContainerCommon: corev1.EphemeralContainerCommon{Name: e.Name},
		})
	}

	s.Status = corev1.PodStatus{
		ObservedGeneration:    p.Status.ObservedGeneration,
		Phase:                 p.Status.Phase,
		Reason:                p.Status.Reason,
		QOSClass:              p.Status.QOSClass,
		StartTime:             p.Status.StartTime,
		Resources:             internRequirements(p.Status.Resources, lists),
		InitContainerStatuses: slimStatuses(p.Status.InitContainerStatuses, lists),
		ContainerStatuses:     slimStatuses(p.Status.ContainerStatuses, lists),
	}
	// The kubelet's own conditions but Ready and the resize ones say
	// nothing tailor reads; any other (a readiness gate's) may end a
	// startup boost.
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse {
			// A pod the scheduler finds no room for: if tailor sized it,
			// the policy replaces it smaller (placement.DecideStuck).
			s.Status.Conditions = append(s.Status.Conditions, c)
			continue
		}
		switch c.Type {
		case corev1.PodScheduled, corev1.PodInitialized, corev1.ContainersReady, corev1.PodReadyToStartContainers, corev1.DisruptionTarget:
			continue
		}
		s.Status.Conditions = append(s.Status.Conditions, c)
	}
	return s
}

// foreignPod is what a manager keeps of a pod of a namespace another shard
// owns: what the room on its node (resize.Room) and the check that an
// evicted pod fits elsewhere (placement.Placeable) read of the pods beside
// the ones they size. Its requests, as those count them (the larger of
// spec, allocated and actual, with pod-level resources and overhead), are
// folded into one container, so that the same helpers count the same
// figure; its identity, node, priority and phase are kept. Nothing else of
// it is read: its namespace's policies are synced by another manager.
func foreignPod(p *corev1.Pod, lists *listTable) *corev1.Pod {
	reqs := resize.NodeRequests(p)
	var counted corev1.ResourceList
	for _, name := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
		if q, ok := reqs[name]; ok {
			if counted == nil {
				counted = corev1.ResourceList{}
			}
			counted[name] = q
		}
	}
	return &corev1.Pod{
		TypeMeta: p.TypeMeta,
		ObjectMeta: metav1.ObjectMeta{
			Name:              p.Name,
			Namespace:         p.Namespace,
			UID:               p.UID,
			ResourceVersion:   p.ResourceVersion,
			DeletionTimestamp: p.DeletionTimestamp,
		},
		Spec: corev1.PodSpec{
			Containers:       []corev1.Container{{Name: foreignContainer, Resources: corev1.ResourceRequirements{Requests: lists.intern(counted)}}},
			NodeName:         p.Spec.NodeName,
			Priority:         p.Spec.Priority,
			PreemptionPolicy: p.Spec.PreemptionPolicy,
		},
		Status: corev1.PodStatus{Phase: p.Status.Phase},
	}
}

// foreignContainer names the one container of a foreignPod.
const foreignContainer = "requests"

func slimContainers(cs []corev1.Container, lists *listTable) []corev1.Container {
	if cs == nil {
		return nil
	}
	out := make([]corev1.Container, len(cs))
	for i, c := range cs {
		out[i] = corev1.Container{Name: c.Name, ResizePolicy: c.ResizePolicy, RestartPolicy: c.RestartPolicy,
			Resources: corev1.ResourceRequirements{
				Requests: lists.intern(c.Resources.Requests),
				Limits:   lists.intern(c.Resources.Limits),
				Claims:   c.Resources.Claims,
			}}
		// A JVM's heap options: the decision keeps its memory limit
		// above what its heap may reach.
		out[i].Command, out[i].Env = jvm.Slim(&c)
	}
	return out
}

// slimStatuses keeps what tailor reads of each container's status. The
// resources a container reports and has allocated are, but for a resize
// under way, its spec's: shared through lists, they cost nothing more
// (with five lists per container, they were half of a cached pod).
func slimStatuses(ss []corev1.ContainerStatus, lists *listTable) []corev1.ContainerStatus {
	if ss == nil {
		return nil
	}
	out := make([]corev1.ContainerStatus, len(ss))
	for i, c := range ss {
		out[i] = corev1.ContainerStatus{
			Name: c.Name,
			// The agent source finds a container's figures by its ID.
			ContainerID:          c.ContainerID,
			State:                slimState(c.State),
			LastTerminationState: slimState(c.LastTerminationState),
			Ready:                c.Ready,
			RestartCount:         c.RestartCount,
			Started:              c.Started,
			AllocatedResources:   lists.intern(c.AllocatedResources),
			Resources:            internRequirements(c.Resources, lists),
		}
	}
	return out
}

func internRequirements(r *corev1.ResourceRequirements, lists *listTable) *corev1.ResourceRequirements {
	if r == nil {
		return nil
	}
	return &corev1.ResourceRequirements{Requests: lists.intern(r.Requests), Limits: lists.intern(r.Limits), Claims: r.Claims}
}

// slimState drops the messages (a terminated container's is its
// termination message, up to 4 KiB) and keeps the reasons (OOMKilled).
func slimState(st corev1.ContainerState) corev1.ContainerState {
	out := corev1.ContainerState{Running: st.Running}
	if w := st.Waiting; w != nil {
		out.Waiting = &corev1.ContainerStateWaiting{Reason: w.Reason}
	}
	if t := st.Terminated; t != nil {
		out.Terminated = &corev1.ContainerStateTerminated{
			ExitCode: t.ExitCode, Signal: t.Signal, Reason: t.Reason, StartedAt: t.StartedAt, FinishedAt: t.FinishedAt,
		}
	}
	return out
}

// IndexPods adds the index the controller lists a node's pods by.
func IndexPods(mgr ctrl.Manager) error {
	if err := mgr.GetFieldIndexer().IndexField(context.Background(), &corev1.Pod{}, "spec.nodeName", func(o client.Object) []string {
		return []string{o.(*corev1.Pod).Spec.NodeName}
	}); err != nil {
		return fmt.Errorf("indexing pods by node: %w", err)
	}
	return nil
}
