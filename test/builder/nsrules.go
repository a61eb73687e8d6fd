package builder

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// LimitRange is a LimitRange named name with items.
func LimitRange(name string, items ...corev1.LimitRangeItem) corev1.LimitRange {
	return corev1.LimitRange{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "LimitRange"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: metav1.NamespaceDefault},
		Spec:       corev1.LimitRangeSpec{Limits: items},
	}
}

// Quota is a ResourceQuota named name limiting hard, with the status the
// quota controller writes once it has counted used (nil: not counted yet,
// so status.used is empty).
func Quota(name string, hard, used corev1.ResourceList) corev1.ResourceQuota {
	q := corev1.ResourceQuota{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ResourceQuota"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: metav1.NamespaceDefault},
		Spec:       corev1.ResourceQuotaSpec{Hard: hard.DeepCopy()},
		Status:     corev1.ResourceQuotaStatus{Hard: hard.DeepCopy()},
	}
	if used != nil {
		q.Status.Used = used.DeepCopy()
	}
	return q
}
