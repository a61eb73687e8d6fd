package v1alpha1

import (
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
