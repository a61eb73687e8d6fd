package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// PodLevelContainerName is the reserved container name under which a
// checkpoint keeps the recommender state of pod-level resources
// (spec.resources of the pod, not of one container). It cannot clash with a
// real container: container names are DNS labels, which have no '_'.
const PodLevelContainerName = "_pod"

// TailorCheckpoint is what tailor has learned about one TailorPolicy's
// workload, so that a restarted manager starts from it instead of from
// nothing, as VerticalPodAutoscalerCheckpoint does for VPA. There is one per
// TailorPolicy, with the policy's name, in its namespace; only the tailor
// manager writes it, and a checkpoint whose policy is gone is deleted.
//
// Unlike VerticalPodAutoscalerCheckpoint, which keeps identity in spec and
// the data in status, everything is in spec and there is no status
// subresource: a checkpoint has no desired state apart from an observed one,
// its one writer replaces it whole in one request, and the manager needs no
// permission on a status subresource.
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:shortName=tcp,categories=tailor
// +kubebuilder:metadata:labels="app.kubernetes.io/name=tailor";"app.kubernetes.io/part-of=tailor"
// +kubebuilder:printcolumn:name="Policy",type=string,JSONPath=`.spec.policyName`,description="The TailorPolicy this checkpoint belongs to"
// +kubebuilder:printcolumn:name="Written",type=date,JSONPath=`.spec.writeTime`,description="When the manager last wrote the checkpoint"
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:validation:XValidation:rule="self.metadata.name == self.spec.policyName",message="a TailorCheckpoint must have the name of its TailorPolicy"
type TailorCheckpoint struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec names the policy and holds the recommender state learned for it.
	// +required
	Spec TailorCheckpointSpec `json:"spec"`
}

// TailorCheckpointList is a list of TailorCheckpoint.
//
// +kubebuilder:object:root=true
type TailorCheckpointList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []TailorCheckpoint `json:"items"`
}

// TailorCheckpointSpec is the recommender state of one policy's workload,
// one entry per container name, aggregated over all of the workload's pods.
type TailorCheckpointSpec struct {
	// policyName is the name of the TailorPolicy, in the same namespace,
	// whose workload this state was learned from.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	PolicyName string `json:"policyName"`

	// policyUID is the uid of that TailorPolicy. A policy deleted and
	// created again under the same name has another uid, and the manager
	// does not restore a checkpoint written for the old one.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=128
	PolicyUID string `json:"policyUID"`

	// writeTime is when the manager last wrote this checkpoint.
	// +required
	WriteTime metav1.Time `json:"writeTime"`

	// containers holds the recorded state of each container name of the
	// workload.
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=64
	Containers []ContainerCheckpoint `json:"containers,omitempty"`

	// nodeClasses holds, for a policy with spec.nodeClasses, the state of
	// each container name learnt on each class of node.
	// +optional
	// +listType=map
	// +listMapKey=class
	// +kubebuilder:validation:MaxItems=16
	NodeClasses []NodeClassCheckpoint `json:"nodeClasses,omitempty"`

	// canary is the state of the policy's canary
	// (spec.behavior.scaleDown.canary): the pods being watched and what
	// they had before, the values a canary proved, and the hold after a
	// rollback. Absent when the policy has none, as in a checkpoint written
	// before canaries existed.
	// +optional
	Canary *CanaryCheckpoint `json:"canary,omitempty"`

	// lowered are the pods lowered within the last hour, for the policy's
	// lowering budget (spec.behavior.scaleDown.budget) and the namespace
	// budgets of its namespace's policies (budget.namespacePods), which
	// count every policy's: a restarted manager counts them and does not
	// grant the hour again. Absent when neither the policy nor another of
	// its namespace has a budget, or it lowered nothing within the hour.
	// +optional
	// +listType=map
	// +listMapKey=uid
	// +kubebuilder:validation:MaxItems=1000
	Lowered []LoweredPod `json:"lowered,omitempty"`
}

// LoweredPod is a pod lowered within the budget's hour, and when.
type LoweredPod struct {
	// uid is the pod's.
	// +required
	// +kubebuilder:validation:MaxLength=128
	UID string `json:"uid"`
	// at is when its last lowering was sent; it counts against the budget
	// for an hour from then.
	// +required
	At metav1.Time `json:"at"`
}

// CanaryCheckpoint is a policy's canary as the manager left it, so that a
// restarted manager or a new leader carries on with it: it does not
// promote a canary early, lower the others while one is watched, or forget
// a rollback's hold.
type CanaryCheckpoint struct {
	// pods are the canary pods being watched.
	// +optional
	// +listType=map
	// +listMapKey=uid
	// +kubebuilder:validation:MaxItems=100
	Pods []CanaryPodCheckpoint `json:"pods,omitempty"`

	// revert are canary pods rolled back whose spec does not show it yet:
	// the rollback is sent again until it does.
	// +optional
	// +listType=map
	// +listMapKey=uid
	// +kubebuilder:validation:MaxItems=100
	Revert []CanaryPodCheckpoint `json:"revert,omitempty"`

	// proven are the values the last promoted canary held through its
	// window, per container, raised by a rollback to what the canary pods
	// had: lowerings to them or above need no canary, and new pods are not
	// sized below them.
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=64
	Proven []CanaryValues `json:"proven,omitempty"`

	// holdUntil is when the hold after the last rollback ends.
	// +optional
	HoldUntil *metav1.Time `json:"holdUntil,omitempty"`

	// trips counts the rollbacks since a canary was last promoted; each
	// doubles the next hold.
	// +optional
	// +kubebuilder:validation:Minimum=0
	Trips int32 `json:"trips,omitempty"`

	// lastResult is how the last canary ended: Promoted or RolledBack.
	// +optional
	// +kubebuilder:validation:Enum=Promoted;RolledBack
	LastResult string `json:"lastResult,omitempty"`

	// learnt says what the last canary showed, for the Canary condition.
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	Learnt string `json:"learnt,omitempty"`
}

// CanaryPodCheckpoint is one canary pod: what it had before its lowering
// and what its guardrails are judged against.
type CanaryPodCheckpoint struct {
	// uid and name are the pod's.
	// +required
	// +kubebuilder:validation:MaxLength=128
	UID string `json:"uid"`
	// +required
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`

	// loweredAt is when its lowering was sent: the window starts then.
	// +required
	LoweredAt metav1.Time `json:"loweredAt"`

	// ready says whether the pod was Ready when it was lowered.
	// +optional
	Ready bool `json:"ready,omitempty"`

	// before are its containers' values before the lowering, which a
	// rollback restores.
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=64
	Before []CanaryValues `json:"before,omitempty"`

	// restarts are its containers' restart counts when it was lowered.
	// +optional
	Restarts map[string]int32 `json:"restarts,omitempty"`
}

// CanaryValues are one container's cpu and memory requests and limits;
// name "_pod" stands for the pod-level resources.
type CanaryValues struct {
	// name is the container's name, or "_pod".
	// +required
	// +kubebuilder:validation:MaxLength=63
	Name string `json:"name"`
	// +optional
	Requests corev1.ResourceList `json:"requests,omitempty"`
	// +optional
	Limits corev1.ResourceList `json:"limits,omitempty"`
}

// ContainerCheckpoint is the recommender state of one container name.
type ContainerCheckpoint struct {
	// name is the container's name, or "_pod" for the pod-level resources
	// (the pod's own spec.resources), a name no container can have.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:XValidation:rule="self == '_pod' || self.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?$')",message="name must be a container name (a DNS label) or _pod"
	Name string `json:"name"`

	// state is the recommender's state for the container, in the binary
	// encoding of tailor's internal/recommend package (a leading version
	// byte, then a fixed little-endian layout of about 500 bytes); base64
	// in JSON. It is opaque to everything but the manager, which discards
	// a state it cannot decode and starts that container afresh.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=2048
	State []byte `json:"state"`

	// updateTime is when the state last took in new usage.
	// +required
	UpdateTime metav1.Time `json:"updateTime"`
}

// NodeClassCheckpoint is what was learnt on one class of node.
type NodeClassCheckpoint struct {
	// class is the nodes' class (TailorPolicy status.recommendation.nodeClasses).
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	Class string `json:"class"`
	// containers holds the state of each container name on the class.
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=16
	Containers []ContainerCheckpoint `json:"containers,omitempty"`
}
