package manager

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/tailorhq/tailor/api/v1alpha1"
)

func TestTrimKeepsOnlyWhatTailorReads(t *testing.T) {
	at := metav1.NewTime(time.Date(2026, 11, 23, 9, 0, 0, 0, time.UTC))
	fields := metav1.NewFieldsV1(`{"f:spec":{}}`)
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{
		Name:        "web",
		Annotations: map[string]string{lastApplied: `{"big":"copy"}`, "team": "a"},
		ManagedFields: []metav1.ManagedFieldsEntry{
			{Manager: "kubectl", Operation: metav1.ManagedFieldsOperationUpdate, Time: &at, FieldsV1: fields},
			{Manager: "tailor", Operation: metav1.ManagedFieldsOperationUpdate, Subresource: "resize", Time: &at, FieldsV1: fields},
			{Manager: "kubelet", Operation: metav1.ManagedFieldsOperationUpdate, Subresource: "status", Time: &at, FieldsV1: fields},
		},
	}}
	got, err := trim(pod)
	if err != nil {
		t.Fatal(err)
	}
	p := got.(*corev1.Pod)
	want := []metav1.ManagedFieldsEntry{{Manager: "tailor", Operation: metav1.ManagedFieldsOperationUpdate, Subresource: "resize", Time: &at}}
	if diff := cmp.Diff(want, p.ManagedFields); diff != "" {
		t.Errorf("pod managedFields (-want,+got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]string{"team": "a"}, p.Annotations); diff != "" {
		t.Errorf("pod annotations (-want,+got):\n%s", diff)
	}

	policy := &v1alpha1.TailorPolicy{ObjectMeta: metav1.ObjectMeta{Name: "web", ManagedFields: pod.ManagedFields}}
	if _, err := trim(policy); err != nil {
		t.Fatal(err)
	}
	if policy.ManagedFields != nil {
		t.Errorf("policy managedFields kept: %v", policy.ManagedFields)
	}
	tombstone := cache.DeletedFinalStateUnknown{Key: "ns/web", Obj: pod}
	if got, err := trim(tombstone); err != nil || got != any(tombstone) {
		t.Errorf("a tombstone is changed: %v, %v", got, err)
	}
}
