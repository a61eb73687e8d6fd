// Package preemption predicts what the scheduler does with an in-place
// resize the kubelet defers, where Kubernetes 1.37's scheduler preemption
// for resizes (KEP-5836, feature gate
// InPlacePodVerticalScalingSchedulerPreemption) is on: whether it evicts
// pods of lower priority on the pod's node to make the room, and which.
//
// It follows the scheduler's own choice of victims on one node (the
// DefaultPreemption plugin): every pod of strictly lower priority is a
// candidate; if the resize does not fit even without all of them, none is
// preempted; otherwise candidates are given back, the most important first
// (higher priority, then earlier start) and those whose eviction a
// PodDisruptionBudget forbids before the others, while the resize still
// fits. What is left is evicted. A node whose
// spec.podPreemptionPolicy.disableResizePreemption names any owner, and a
// pod whose preemptionPolicy is Never, preempt nobody.
//
// It is pure: the caller reads the node, its pods and the budgets, and
// says whether the gate is on.
package preemption
