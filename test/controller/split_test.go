//go:build controller

package controller

import (
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/tailorhq/tailor/api/v1alpha1"
	"github.com/tailorhq/tailor/test/builder"
)

// The recommender sizes the memory request from the typical peak and the
// limit from the tail (issue 26). Through the real apiserver: a running
// pod's limit is the higher of the advice and its new request at the
// workload's template ratio (not at its own), a pod without a known
// template gets the advised limit, status says the advice
// (recommendation.targetLimit), and the admission entry sizes new pods
// from it.
func TestSplitMemoryLimitKeepsTheTemplatesRatio(t *testing.T) {
	e := newEnv(t, controllerOptions{})
	// A Deployment's pod, template 256Mi/512Mi (1:2), with a targetRef
	// policy; its limit was since set to 1Gi (1:4), as an advised limit
	// leaves it. And a bare pod, with a selector policy.
	rs := e.ownedDeployment("web", map[string]string{"app": "web"})
	e.pod("web", builder.Pod("web-0").Owner("ReplicaSet", rs.Name, string(rs.UID)).
		Container(builder.Container("app").Requests("500m", "256Mi").Limits("1", "1Gi")))
	e.policy("web", func(s *v1alpha1.TailorPolicySpec) {
		onlyResource(corev1.ResourceMemory)(s)
		s.Selector = nil
		s.TargetRef = &v1alpha1.TargetRef{APIVersion: "apps/v1", Kind: "Deployment", Name: "web"}
	})
	e.pod("bare", builder.Pod("bare-0").Container(builder.Container("app").Requests("500m", "256Mi").Limits("1", "512Mi")))
	e.policy("bare", onlyResource(corev1.ResourceMemory))

	// 300Mi, steady: the request goes to the working set plus 10%
	// (330Mi), the tail is 300Mi and the 256Mi least margin (556Mi).
	for _, name := range []string{"web-0", "bare-0"} {
		e.source.Set(e.ns, name, "app", 0.2, 300*mi)
	}
	e.syncs("web", 3)
	e.syncs("bare", 3)

	web, bare := e.getPod("web-0"), e.getPod("bare-0")
	if req, lim := requestOf(web, "app", corev1.ResourceMemory), limitOf(web, "app", corev1.ResourceMemory); req != "330Mi" || lim != "660Mi" {
		t.Errorf("web-0 memory %s/%s, want 330Mi/660Mi: the request at the working set plus 10%%, the limit at its template's 1:2 (not its own 1:4) above the 556Mi advised", req, lim)
	}
	if req, lim := requestOf(bare, "app", corev1.ResourceMemory), limitOf(bare, "app", corev1.ResourceMemory); req != "330Mi" || lim != "556Mi" {
		t.Errorf("bare-0 memory %s/%s, want 330Mi/556Mi: no template known, the advised limit", req, lim)
	}

	// Status: the advice against what the pods have, so within the band
	// it reads what is in force: each policy's limit as it set it.
	for name, want := range map[string]string{"web": "660Mi", "bare": "556Mi"} {
		pol := e.getPolicy(name)
		var advised string
		if r := pol.Status.Recommendation; r != nil {
			for _, cr := range r.ContainerRecommendations {
				if q, ok := cr.TargetLimit[corev1.ResourceMemory]; ok && cr.ContainerName == "app" {
					advised = q.String()
				}
			}
		}
		if advised != want {
			t.Errorf("policy %s: status.recommendation targetLimit memory %q, want %s: %+v", name, advised, want, pol.Status.Recommendation)
		}
	}
	// A new pod starts as the running one is: the entry is planned from
	// status, the limit the higher of targetLimit and the request at the
	// template's 1:2.
	a := e.getPolicy("web").Status.Admission
	if a == nil || len(a.Containers) != 1 {
		t.Fatalf("status.admission %+v, want an entry for app", a)
	}
	req, lim := a.Containers[0].Requests[corev1.ResourceMemory], a.Containers[0].Limits[corev1.ResourceMemory]
	if req.String() != "330Mi" || lim.String() != "660Mi" {
		t.Errorf("admission entry memory %s/%s, want 330Mi/660Mi", req.String(), lim.String())
	}
}
