package v1alpha1

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

func TestAddToScheme(t *testing.T) {
	s := runtime.NewScheme()
	if err := AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	for obj, kind := range map[runtime.Object]string{
		&TailorPolicy{}: "TailorPolicy", &TailorPolicyList{}: "TailorPolicyList",
		&TailorCheckpoint{}: "TailorCheckpoint", &TailorCheckpointList{}: "TailorCheckpointList",
	} {
		gvks, _, err := s.ObjectKinds(obj)
		if err != nil {
			t.Fatalf("%T: %v", obj, err)
		}
		want := []schema.GroupVersionKind{{Group: "autoscaling.tailor.dev", Version: "v1alpha1", Kind: kind}}
		if diff := cmp.Diff(want, gvks); diff != "" {
			t.Errorf("%T kinds (-want,+got):\n%s", obj, diff)
		}
	}
}
