package fleet

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tailorhq/tailor/api/v1alpha1"
	"github.com/tailorhq/tailor/internal/nsrules"
	"github.com/tailorhq/tailor/internal/podchange"
	"github.com/tailorhq/tailor/internal/resize"
	"github.com/tailorhq/tailor/test/builder"
)

func limitRange(name string, item corev1.LimitRangeItem) corev1.LimitRange {
	item.Type = corev1.LimitTypeContainer
	return corev1.LimitRange{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.LimitRangeSpec{Limits: []corev1.LimitRangeItem{item}}}
}

func quota(name string, hard, used corev1.ResourceList) corev1.ResourceQuota {
	return corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.ResourceQuotaSpec{Hard: hard}, Status: corev1.ResourceQuotaStatus{Hard: hard, Used: used}}
}

// Issue #23, findings 1 and 4: what a new pod is created with keeps within
// the namespace's LimitRanges and quotas and keeps the QoS class the pod is
// admitted with, LimitRange defaults applied.
// Issue #23, finding 1, in place: raises are clamped into the LimitRanges
// and cut to what the quotas leave (shared between the pods of a sync); a
// resize the apiserver would refuse anyway is held, naming the object.
func TestDecidePolicyWithinTheNamespaceRules(t *testing.T) {
	mk := func(name string) *corev1.Pod {
		return builder.Pod(name).Node("n1").Container(builder.Container("app").Requests("500m", "256Mi").Limits("1", "512Mi")).Obj()
	}
	a, b := mk("a"), mk("b")
	cases := map[string]struct {
		rules    nsrules.Rules
		want     []string
		wantHeld []string
	}{
		"no rules: both raised in full": {
			want: []string{"a app.cpu=2;", "b app.cpu=2;"},
		},
		"a LimitRange max on cpu caps each raise": {
			rules: nsrules.Rules{LimitRanges: []corev1.LimitRange{limitRange("caps", corev1.LimitRangeItem{Max: builder.List("1500m", "")})}},
			want:  []string{"a app.cpu=1500m;", "b app.cpu=1500m;"},
		},
		"a requests.cpu quota's room is shared: the first raise takes what it needs, the second the rest": {
			rules: nsrules.Rules{Quotas: []corev1.ResourceQuota{quota("team", corev1.ResourceList{"requests.cpu": *q("3")}, corev1.ResourceList{"requests.cpu": *q("1")})}},
			want:  []string{"a app.cpu=2;", "b app.cpu=1;"},
		},
		"a pod already outside a LimitRange made after it cannot be resized: held": {
			rules:    nsrules.Rules{LimitRanges: []corev1.LimitRange{limitRange("floor", corev1.LimitRangeItem{Min: builder.List("", "300Mi")})}},
			wantHeld: []string{"a NamespaceRules", "b NamespaceRules"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			in := PolicyInput{
				Spec: spec(func(s *v1alpha1.TailorPolicySpec) {
					s.Behavior = &v1alpha1.Behavior{MaxConcurrentResizes: ptr(int32(2))}
				}),
				Pods: []PodInput{
					{Pod: a, Targets: map[string]podchange.Target{"app": {CPU: q("2")}}, RaiseSince: now.Add(-2 * time.Minute)},
					{Pod: b, Targets: map[string]podchange.Target{"app": {CPU: q("2")}}, RaiseSince: now.Add(-time.Minute)},
				},
				Nodes: map[string]*resize.NodeState{"n1": nodeState("16", "16Gi", a, b)}, Server: v137, Now: now, Rules: &tc.rules,
			}
			d, err := DecidePolicy(in)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, sent(d)); diff != "" {
				t.Errorf("resizes (-want,+got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantHeld, held(d)); diff != "" {
				t.Errorf("held (-want,+got):\n%s", diff)
			}
		})
	}
}
