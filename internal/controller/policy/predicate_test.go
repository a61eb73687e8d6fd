package policy

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/event"

	"github.com/tailorhq/tailor/internal/actuator"
	"github.com/tailorhq/tailor/test/builder"
)

// A sync is triggered by what it must not wait for, and not by tailor's own
// resize, which the sync that sent it already knows.
func TestPodChangeMatters(t *testing.T) {
	at := func(sec int) metav1.ManagedFieldsEntry {
		tm := metav1.NewTime(time.Date(2026, 11, 23, 9, 0, sec, 0, time.UTC))
		return metav1.ManagedFieldsEntry{Manager: actuator.FieldManager, Operation: metav1.ManagedFieldsOperationUpdate, Subresource: "resize", Time: &tm}
	}
	base := func() *corev1.Pod {
		p := builder.Pod("web").Node("n").Container(builder.Container("app").Requests("100m", "64Mi")).Running().Obj()
		p.Generation, p.Status.ObservedGeneration = 2, 2
		p.ManagedFields = []metav1.ManagedFieldsEntry{at(0)}
		return p
	}
	cases := map[string]struct {
		change func(p *corev1.Pod)
		want   bool
	}{
		"nothing that matters (a probe's status update)": {change: func(p *corev1.Pod) { p.Status.PodIP = "10.0.0.9" }, want: false},
		"tailor's resize: generation and tailor's entry move": {change: func(p *corev1.Pod) {
			p.Generation = 3
			p.ManagedFields = []metav1.ManagedFieldsEntry{at(30)}
		}, want: false},
		"another writer's resize: generation moves, tailor's entry does not": {change: func(p *corev1.Pod) { p.Generation = 3 }, want: true},
		"tailor's resize seen with the kubelet's answer (a relist)": {change: func(p *corev1.Pod) {
			p.Generation, p.Status.ObservedGeneration = 3, 3
			p.ManagedFields = []metav1.ManagedFieldsEntry{at(30)}
		}, want: true},
		"the kubelet observed the resize": {change: func(p *corev1.Pod) { p.Status.ObservedGeneration = 3 }, want: true},
		"a container restarted":           {change: func(p *corev1.Pod) { p.Status.ContainerStatuses[0].RestartCount++ }, want: true},
		"relabelled":                      {change: func(p *corev1.Pod) { p.Labels = map[string]string{"app": "other"} }, want: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			o := base()
			n := o.DeepCopy()
			tc.change(n)
			if got := podChangeMatters.Update(event.UpdateEvent{ObjectOld: o, ObjectNew: n}); got != tc.want {
				t.Errorf("podChangeMatters = %v, want %v", got, tc.want)
			}
		})
	}
}

// A quota re-plans the namespace's policies when what it allows changes,
// not each time the quota controller recounts what the pods use.
func TestQuotaLimitsChanged(t *testing.T) {
	base := func() *corev1.ResourceQuota {
		q := &corev1.ResourceQuota{Spec: corev1.ResourceQuotaSpec{Hard: builder.List("4", "8Gi")}}
		q.Status = corev1.ResourceQuotaStatus{Hard: builder.List("4", "8Gi"), Used: builder.List("1", "1Gi")}
		return q
	}
	cases := map[string]struct {
		change func(q *corev1.ResourceQuota)
		want   bool
	}{
		"usage recounted":                {change: func(q *corev1.ResourceQuota) { q.Status.Used = builder.List("2", "3Gi") }, want: false},
		"the spec's limits changed":      {change: func(q *corev1.ResourceQuota) { q.Spec.Hard = builder.List("2", "8Gi") }, want: true},
		"status.hard computed from spec": {change: func(q *corev1.ResourceQuota) { q.Status.Hard = builder.List("2", "8Gi") }, want: true},
		"scopes changed": {change: func(q *corev1.ResourceQuota) {
			q.Spec.Scopes = []corev1.ResourceQuotaScope{corev1.ResourceQuotaScopeBestEffort}
		}, want: true},
		"nothing but the resourceVersion": {change: func(q *corev1.ResourceQuota) { q.ResourceVersion = "7" }, want: false},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			n := base()
			tc.change(n)
			if got := quotaLimitsChanged.Update(event.UpdateEvent{ObjectOld: base(), ObjectNew: n}); got != tc.want {
				t.Errorf("passes: %v, want %v", got, tc.want)
			}
		})
	}
}
