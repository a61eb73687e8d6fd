package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// The scheme plumbing uses apimachinery only, not controller-runtime's
// builder, so that importing the API pulls in no controller machinery.
var (
	// GroupVersion is the group and version of every kind in this package.
	GroupVersion = schema.GroupVersion{Group: "autoscaling.tailor.dev", Version: "v1alpha1"}

	// SchemeBuilder registers this package's kinds with a runtime.Scheme.
	SchemeBuilder = runtime.NewSchemeBuilder(addKnownTypes)

	// AddToScheme adds this package's kinds to a scheme; clients that read
	// or write TailorPolicy or TailorCheckpoint objects need it.
	AddToScheme = SchemeBuilder.AddToScheme
)

func addKnownTypes(s *runtime.Scheme) error {
	s.AddKnownTypes(GroupVersion, &TailorPolicy{}, &TailorPolicyList{}, &TailorCheckpoint{}, &TailorCheckpointList{})
	metav1.AddToGroupVersion(s, GroupVersion)
	return nil
}
