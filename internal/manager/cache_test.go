package manager

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/tailorhq/tailor/api/v1alpha1"
)

// Pods are covered by slim_test.go; this is every other object.
func TestTrimKeepsOnlyWhatTailorReads(t *testing.T) {
	at := metav1.NewTime(time.Date(2026, 11, 23, 9, 0, 0, 0, time.UTC))
	fields := metav1.NewFieldsV1(`{"f:spec":{}}`)
	managed := []metav1.ManagedFieldsEntry{
		{Manager: "kubectl", Operation: metav1.ManagedFieldsOperationUpdate, Time: &at, FieldsV1: fields},
		{Manager: "tailor", Operation: metav1.ManagedFieldsOperationUpdate, Subresource: "resize", Time: &at, FieldsV1: fields},
	}
	policy := &v1alpha1.TailorPolicy{ObjectMeta: metav1.ObjectMeta{
		Name: "web", ManagedFields: managed,
		Annotations: map[string]string{lastApplied: `{"big":"copy"}`, "team": "a"},
	}}
	if _, err := trim(policy, nil); err != nil {
		t.Fatal(err)
	}
	if policy.ManagedFields != nil {
		t.Errorf("policy managedFields kept: %v", policy.ManagedFields)
	}
	if diff := cmp.Diff(map[string]string{"team": "a"}, policy.Annotations); diff != "" {
		t.Errorf("policy annotations (-want,+got):\n%s", diff)
	}

	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: "n1", ManagedFields: managed, Labels: map[string]string{"pool": "big"}},
		Spec:       corev1.NodeSpec{Taints: []corev1.Taint{{Key: "gpu", Effect: corev1.TaintEffectNoSchedule}}},
		Status: corev1.NodeStatus{
			Allocatable:      corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("32"), corev1.ResourceMemory: resource.MustParse("128Gi")},
			DeclaredFeatures: []string{"InPlacePodVerticalScaling"},
			Images:           []corev1.ContainerImage{{Names: []string{"registry.example/app@sha256:0123", "registry.example/app:1.2.3"}, SizeBytes: 1 << 30}},
			VolumesInUse:     []corev1.UniqueVolumeName{"kubernetes.io/csi/x"},
		},
	}
	want := node.DeepCopy()
	want.ManagedFields, want.Status.Images, want.Status.VolumesInUse = nil, nil, nil
	if _, err := trim(node, nil); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, node); diff != "" {
		t.Errorf("node (-want,+got):\n%s", diff)
	}

	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web"}}
	tombstone := cache.DeletedFinalStateUnknown{Key: "ns/web", Obj: pod}
	if got, err := trim(tombstone, nil); err != nil || got != any(tombstone) {
		t.Errorf("a tombstone is changed: %v, %v", got, err)
	}
}
