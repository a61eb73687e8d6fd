package manager

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tailorhq/tailor/internal/actuator"
)

// lastApplied is kubectl's copy of an object as applied: often as large as
// the object, and never read by tailor.
const lastApplied = "kubectl.kubernetes.io/last-applied-configuration"

// CacheOptions are what the manager's informers keep of each object: no
// managedFields, which are often most of a pod's size, except the entries of
// tailor's own resizes, whose time says when tailor last resized the pod
// (the controller reads it back after a restart); and no kubectl
// last-applied copy.
func CacheOptions() cache.Options {
	return cache.Options{DefaultTransform: trim}
}

func trim(obj any) (any, error) {
	o, ok := obj.(metav1.Object)
	if !ok {
		// Tombstones of deleted objects pass as they are.
		return obj, nil
	}
	if _, isPod := obj.(*corev1.Pod); isPod {
		var kept []metav1.ManagedFieldsEntry
		for _, mf := range o.GetManagedFields() {
			if mf.Manager == actuator.FieldManager && mf.Subresource == "resize" {
				mf.FieldsV1 = nil
				kept = append(kept, mf)
			}
		}
		o.SetManagedFields(kept)
	} else {
		o.SetManagedFields(nil)
	}
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

// IndexPods adds the index the controller lists a node's pods by.
func IndexPods(mgr ctrl.Manager) error {
	if err := mgr.GetFieldIndexer().IndexField(context.Background(), &corev1.Pod{}, "spec.nodeName", func(o client.Object) []string {
		return []string{o.(*corev1.Pod).Spec.NodeName}
	}); err != nil {
		return fmt.Errorf("indexing pods by node: %w", err)
	}
	return nil
}
