// Package v1alpha1 is tailor's policy API: the TailorPolicy custom resource
// that says which pods tailor right-sizes, how far it may go and how it may
// apply a change. Field names follow VerticalPodAutoscaler (targetRef,
// updatePolicy, resourcePolicy.containerPolicies, status.recommendation) and
// HorizontalPodAutoscaler (behavior) so that a migration is mostly renaming
// the kind. What the apiserver can check is checked there, with CEL rules;
// the rest is the controller's job and is reported as a status condition.
//
// +kubebuilder:object:generate=true
// +groupName=autoscaling.tailor.dev
package v1alpha1
