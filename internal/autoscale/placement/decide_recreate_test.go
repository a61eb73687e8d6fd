package placement

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tailorhq/tailor/api/v1alpha1"
	"github.com/tailorhq/tailor/internal/autoscale/fleet"
	"github.com/tailorhq/tailor/internal/podchange"
	"github.com/tailorhq/tailor/test/builder"
)

func TestDecideRecreate(t *testing.T) {
	owned := builder.Pod("web-1").Node("n1").Owner("ReplicaSet", "web", "rs-uid").Container(burstable()).Obj()
	bigNode := []NodePods{{Node: builder.Node("n2").Allocatable("8", "16Gi").Ready(corev1.ConditionTrue).Obj()}}
	smallNode := []NodePods{{Node: builder.Node("n2").Allocatable("200m", "16Gi").Ready(corev1.ConditionTrue).Obj()}}
	wants := map[string]podchange.Target{"app": {CPU: q("1")}}
	// The template the pod was created from, before tailor resized it.
	template := &corev1.PodTemplateSpec{Spec: builder.Pod("t").Container(builder.Container("app").Requests("100m", "128Mi").Limits("200m", "256Mi")).Obj().Spec}
	const generation = 3
	entry := func(pod string, at time.Time, cpuReq, cpuLim string) *v1alpha1.Recreation {
		return &v1alpha1.Recreation{OwnerUID: "rs-uid", EvictedPod: pod, EvictionTime: metav1.NewTime(at), ObservedGeneration: generation,
			Containers: []v1alpha1.RecreatedContainer{{Name: "app",
				TemplateRequests: builder.List("100m", "128Mi"), TemplateLimits: builder.List("200m", "256Mi"),
				Requests: builder.List(cpuReq, "128Mi"), Limits: builder.List(cpuLim, "256Mi")}}}
	}
	base := func(mutate func(*RecreateInput)) RecreateInput {
		in := RecreateInput{
			Pod: fleet.PodInput{Pod: owned, Targets: wants}, Spec: spec(), Server: v137, MemoryFloorHeadroom: 0.1,
			ShortSince: now.Add(-10 * time.Minute), RecreateAfter: 5 * time.Minute, Settle: time.Second, Nodes: bigNode, Now: now,
			Template: template, Generation: generation,
		}
		if mutate != nil {
			mutate(&in)
		}
		return in
	}
	cases := map[string]struct {
		in        RecreateInput
		wantStep  RecreateStep
		wantWhy   string
		wantRetry time.Duration
	}{
		"short for less than recreateAfter: wait": {
			in:       base(func(in *RecreateInput) { in.ShortSince = now.Add(-time.Minute) }),
			wantStep: RecreateWait, wantRetry: 4 * time.Minute,
		},
		"another eviction within minResizeInterval: paced": {
			in:       base(func(in *RecreateInput) { in.LastEviction = now.Add(-20 * time.Second) }),
			wantStep: RecreateWait, wantWhy: "EvictionPaced", wantRetry: 40 * time.Second,
		},
		"a refused eviction is not asked again before its time": {
			in: base(func(in *RecreateInput) {
				in.BlockedUntil, in.BlockedReason = now.Add(30*time.Second), "EvictionBlocked"
			}),
			wantStep: RecreateWait, wantWhy: "EvictionBlocked", wantRetry: 30 * time.Second,
		},
		"a bare pod would not come back": {
			in:       base(func(in *RecreateInput) { in.Pod.Pod = builder.Pod("bare").Node("n1").Container(burstable()).Obj() }),
			wantStep: RecreateBlocked, wantWhy: "NotRecreatable", wantRetry: time.Minute,
		},
		"pod-level resources cannot be given to a replacement": {
			in: base(func(in *RecreateInput) {
				in.Pod.Pod = builder.Pod("pl").Node("n1").Owner("ReplicaSet", "web", "rs-uid").Container(builder.Container("app")).PodRequests("500m", "").Obj()
			}),
			wantStep: RecreateBlocked, wantWhy: "PodLevelResources", wantRetry: time.Minute,
		},
		"a selector policy's pod: no template to tie the entry to, so no entry": {
			in:       base(func(in *RecreateInput) { in.Template = nil }),
			wantStep: RecreateBlocked, wantWhy: "NoTemplate", wantRetry: time.Minute,
		},
		"a template that no longer sets the pod's cpu limit: its replacement would not be created as planned": {
			in: base(func(in *RecreateInput) {
				in.Template = &corev1.PodTemplateSpec{Spec: builder.Pod("t").Container(builder.Container("app").Requests("100m", "128Mi").Limit(corev1.ResourceMemory, "256Mi")).Obj().Spec}
			}),
			wantStep: RecreateBlocked, wantWhy: "TemplateChanged", wantRetry: time.Minute,
		},
		"the nodes are asked for only when needed": {
			in:       base(func(in *RecreateInput) { in.Nodes = nil }),
			wantStep: RecreateNeedNodes,
		},
		"no node can hold the replacement": {
			in:       base(func(in *RecreateInput) { in.Nodes = smallNode }),
			wantStep: RecreateBlocked, wantWhy: "NoNodeFits", wantRetry: time.Minute,
		},
		"first the replacement's resources are recorded": {
			in:       base(nil),
			wantStep: RecreateRecord, wantRetry: time.Second,
		},
		"an entry for another pod of the owner is replaced": {
			in:       base(func(in *RecreateInput) { in.Entry = entry("web-2", now.Add(-time.Minute), "1", "2") }),
			wantStep: RecreateRecord, wantRetry: time.Second,
		},
		"a recorded entry waits to settle": {
			in:       base(func(in *RecreateInput) { in.Entry = entry("web-1", now.Add(-300*time.Millisecond), "1", "2") }),
			wantStep: RecreateWait, wantRetry: 700 * time.Millisecond,
		},
		"a settled entry that still holds what the pod needs: evict": {
			in:       base(func(in *RecreateInput) { in.Entry = entry("web-1", now.Add(-2*time.Second), "1", "2") }),
			wantStep: RecreateEvict,
		},
		"a settled entry planned for an earlier generation of the policy is rewritten": {
			in: base(func(in *RecreateInput) {
				in.Entry = entry("web-1", now.Add(-2*time.Second), "1", "2")
				in.Entry.ObservedGeneration = generation - 1
			}),
			wantStep: RecreateRecord, wantRetry: time.Second,
		},
		"a settled entry planned from another template is rewritten": {
			in: base(func(in *RecreateInput) {
				in.Entry = entry("web-1", now.Add(-2*time.Second), "1", "2")
				in.Entry.Containers[0].TemplateRequests = builder.List("150m", "128Mi")
			}),
			wantStep: RecreateRecord, wantRetry: time.Second,
		},
		"a settled entry that no longer holds what the pod needs is rewritten": {
			in:       base(func(in *RecreateInput) { in.Entry = entry("web-1", now.Add(-2*time.Second), "800m", "1600m") }),
			wantStep: RecreateRecord, wantRetry: time.Second,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			d, err := DecideRecreate(tc.in)
			if err != nil {
				t.Fatal(err)
			}
			got := []any{d.Step, d.Reason, d.RetryAfter}
			if diff := cmp.Diff([]any{tc.wantStep, tc.wantWhy, tc.wantRetry}, got); diff != "" {
				t.Errorf("step, reason, retry (-want,+got):\n%s\n%s", diff, d.Message)
			}
			if d.Step == RecreateRecord || d.Step == RecreateEvict {
				want := entry("web-1", now, "1", "2").Containers
				if diff := cmp.Diff(want, d.Containers); diff != "" {
					t.Errorf("replacement (-want,+got):\n%s", diff)
				}
				if d.Generation != generation {
					t.Errorf("replacement planned for generation %d, want %d", d.Generation, generation)
				}
			}
		})
	}
}

// TestDecideRecreateKeepsTheQoSClass: a RequestsOnly policy's replacement
// is shaped like an in-place resize, so a pod whose memory has request ==
// limit is not recorded with a cpu request at its limit (which would admit
// the replacement Guaranteed).
func TestDecideRecreateKeepsTheQoSClass(t *testing.T) {
	p := builder.Pod("web-1").Node("n1").Owner("ReplicaSet", "web", "rs-uid").
		Container(builder.Container("app").Requests("100m", "256Mi").Limits("500m", "256Mi")).Obj()
	d, err := DecideRecreate(RecreateInput{
		Pod: fleet.PodInput{Pod: p, Targets: map[string]podchange.Target{"app": {CPU: q("2")}}}, Spec: spec(requestsOnly()), Server: v137,
		RecreateAfter: time.Minute, ShortSince: now.Add(-time.Hour), Settle: time.Second, Now: now,
		Nodes:    []NodePods{{Node: builder.Node("n2").Allocatable("8", "16Gi").Ready(corev1.ConditionTrue).Obj()}},
		Template: &corev1.PodTemplateSpec{Spec: p.Spec},
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []v1alpha1.RecreatedContainer{{Name: "app", TemplateRequests: builder.List("100m", "256Mi"), TemplateLimits: builder.List("500m", "256Mi"),
		Requests: builder.List("499m", "256Mi"), Limits: builder.List("500m", "256Mi")}}
	if d.Step != RecreateRecord || !cmp.Equal(want, d.Containers) {
		t.Errorf("step %s, replacement %s, want Record with %s", d.Step, cmp.Diff(want, d.Containers), ContainersText(want))
	}
}
