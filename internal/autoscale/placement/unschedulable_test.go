package placement_test

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tailorhq/tailor/api/v1alpha1"
	"github.com/tailorhq/tailor/internal/autoscale/placement"
	"github.com/tailorhq/tailor/test/builder"
)

func TestDecideStuck(t *testing.T) {
	now := time.Unix(10_000, 0)
	unschedulable := func(p *corev1.Pod, ago time.Duration) *corev1.Pod {
		p.Status.Phase = corev1.PodPending
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse,
			Reason: corev1.PodReasonUnschedulable, LastTransitionTime: metav1.NewTime(now.Add(-ago))}}
		return p
	}
	tmpl := &corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{*builder.Container("app").Requests("500m", "256Mi").Obj()}}}
	// sized is a pod tailor's admission sized (and so marked); unmarked, one
	// its own template made.
	unmarked := func(name, cpu string) *corev1.Pod {
		return builder.Pod(name).Container(builder.Container("app").Requests(cpu, "256Mi")).Obj()
	}
	sized := func(name, cpu string) *corev1.Pod {
		p := unmarked(name, cpu)
		metav1.SetMetaDataAnnotation(&p.ObjectMeta, v1alpha1.AdmittedAnnotation, "web: app cpu 500m->"+cpu)
		return p
	}
	entry := func(cpu string) *v1alpha1.Admission {
		return &v1alpha1.Admission{Containers: []v1alpha1.AdmittedContainer{{Name: "app", Requests: builder.List(cpu, "256Mi")}}}
	}
	type got struct {
		Pod     string
		Replace bool
	}
	cases := map[string]struct {
		pods      []*corev1.Pod
		entry     *v1alpha1.Admission
		want      []got
		wantRetry time.Duration
	}{
		"sized above its template, unschedulable long enough, the entry now smaller: replaced": {
			pods:  []*corev1.Pod{unschedulable(sized("a", "3"), time.Minute)},
			entry: entry("1"),
			want:  []got{{"a", true}},
		},
		"the entry still asks as much: not replaced yet (the entry must come down first)": {
			pods:  []*corev1.Pod{unschedulable(sized("a", "3"), time.Minute)},
			entry: entry("3"),
			want:  []got{{"a", false}},
		},
		"the entry taken back to the template: replaced at the template's size": {
			pods: []*corev1.Pod{unschedulable(sized("a", "3"), time.Minute)},
			want: []got{{"a", true}},
		},
		"above this template but not sized by tailor (an older ReplicaSet's larger template): not tailor's to replace": {
			pods:  []*corev1.Pod{unschedulable(unmarked("a", "3"), time.Minute)},
			entry: entry("1"),
		},
		"at its template's size: not tailor's to replace": {
			pods:  []*corev1.Pod{unschedulable(sized("a", "500m"), time.Minute)},
			entry: entry("100m"),
		},
		"unschedulable for less than UnschedulableAfter: looked at again then": {
			pods:      []*corev1.Pod{unschedulable(sized("a", "3"), 10*time.Second)},
			entry:     entry("1"),
			wantRetry: placement.UnschedulableAfter - 10*time.Second,
		},
		"waiting for something else than room (bound, or not yet tried)": {
			pods:  []*corev1.Pod{sized("a", "3"), builder.Pod("b").Node("n").Container(builder.Container("app").Requests("3", "256Mi")).Obj()},
			entry: entry("1"),
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			stuck, retry := placement.DecideStuck(placement.StuckInput{Pods: tc.pods, Template: tmpl, Entry: tc.entry, Now: now})
			var gotList []got
			for _, s := range stuck {
				gotList = append(gotList, got{s.Pod.Name, s.Replace})
				if s.Message == "" {
					t.Errorf("pod %s: no message", s.Pod.Name)
				}
			}
			if diff := cmp.Diff(tc.want, gotList); diff != "" {
				t.Errorf("stuck (-want,+got):\n%s", diff)
			}
			if retry != tc.wantRetry {
				t.Errorf("retry %s, want %s", retry, tc.wantRetry)
			}
		})
	}
}
