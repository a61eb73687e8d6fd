package policystatus

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tailorhq/tailor/api/v1alpha1"
	"github.com/tailorhq/tailor/internal/jvm"
)

func TestSetJVMHeap(t *testing.T) {
	fit := func(pod, container, limit, reach, suggested string) HeapFit {
		return HeapFit{Pod: pod, Container: container, Fit: jvm.Fit{Reason: jvm.FitWasted, Limit: resource.MustParse(limit), Reach: resource.MustParse(reach),
			Suggested: suggested, Message: "limit " + limit + ": " + suggested}}
	}
	type want struct {
		Status          metav1.ConditionStatus
		Reason, Message string
	}
	cases := map[string]struct {
		jvms bool
		fits []HeapFit
		want *want
	}{
		"no JVM: no condition": {},
		"JVMs that fit": {
			jvms: true,
			want: &want{metav1.ConditionFalse, "HeapFitsLimit", "every JVM's heap can use its memory limit"},
		},
		"per container, the pod furthest above its reach, by name on a tie": {
			jvms: true,
			fits: []HeapFit{
				fit("web-b", "app", "2Gi", "384Mi", "-Xmx1587m"),
				fit("web-c", "app", "4Gi", "384Mi", "-Xmx3225m"),
				fit("web-a", "app", "4Gi", "384Mi", "-Xmx3225m"),
				fit("web-a", "agent", "1Gi", "300Mi", "-Xmx768m"),
			},
			want: &want{metav1.ConditionTrue, "LimitAboveHeapReach",
				"container agent (pod web-a, 1 of 3 pods): limit 1Gi: -Xmx768m; container app (pod web-a, 3 of 3 pods): limit 4Gi: -Xmx3225m; tailor report -o patch writes the option into the template"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var got []*want
			// Whatever order the pods come in, the same condition.
			for _, order := range [][]HeapFit{tc.fits, reversed(tc.fits)} {
				status := &v1alpha1.TailorPolicyStatus{}
				SetCondition(status, v1alpha1.ConditionJVMHeapRestartAdvised, metav1.ConditionTrue, "Stale", "from an earlier sync", 1)
				setJVMHeap(status, tc.jvms, order, 3, 2)
				var w *want
				if c := meta.FindStatusCondition(status.Conditions, v1alpha1.ConditionJVMHeapRestartAdvised); c != nil {
					w = &want{c.Status, c.Reason, c.Message}
				}
				got = append(got, w)
			}
			for _, g := range got {
				if diff := cmp.Diff(tc.want, g); diff != "" {
					t.Errorf("(-want,+got):\n%s", diff)
				}
			}
		})
	}
}

func reversed(fits []HeapFit) []HeapFit {
	out := make([]HeapFit, 0, len(fits))
	for i := len(fits) - 1; i >= 0; i-- {
		out = append(out, fits[i])
	}
	return out
}
