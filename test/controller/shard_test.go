//go:build controller

package controller

import (
	"context"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/tailorhq/tailor/internal/shard"
	"github.com/tailorhq/tailor/test/builder"
)

// Two managers split the namespaces between them, as shards 0 and 1 of 2,
// each under a real manager and cache. Each syncs only its own shard's
// policies and reads usage only for its own shard's pods. On the node they share,
// the first counts the second's pod, which its cache keeps cut down to its
// requests, in the room it raises into: of two pods alike in every way but
// their node, the one beside that pod is raised only as far as the room it
// leaves, the other further.
func TestShardsSplitNamespacesAndCountEachOthersPods(t *testing.T) {
	var envs [2]*env
	for envs[0] == nil || envs[1] == nil {
		e := newEnv(t, controllerOptions{})
		if i := shard.Of(e.ns, 2); envs[i] == nil {
			envs[i] = e
		}
	}
	a, b := envs[0], envs[1]
	tight := a.addNode("tight-"+rand.String(5), "2", "8Gi")
	// Shard 1's pod, under no policy: 1500m of the tight node's 2 cores.
	b.pod("big", builder.Pod("big-0").Node(tight).Container(builder.Container("app").Requests("1500m", "1Gi").Limits("1500m", "1Gi")))
	// Shard 0's pod beside it, 100m of room left; shard 1's twin on a
	// roomy node.
	a.throttledWeb("web", "web-0", tight)
	b.throttledWeb("other", "other-0", "")

	newManagedController(t, a.controllerDeps(), controllerOptions{SyncPeriod: time.Minute, Shard: shard.Shard{Index: 0, Count: 2}})
	newManagedController(t, b.controllerDeps(), controllerOptions{SyncPeriod: time.Minute, Shard: shard.Shard{Index: 1, Count: 2}})

	var web, other *corev1.Pod
	err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, 2*time.Minute, true, func(context.Context) (bool, error) {
		web, other = a.getPod("web-0"), b.getPod("other-0")
		return web.Generation > 1 && other.Generation > 1, nil
	})
	if err != nil {
		t.Fatalf("not both raised: web-0 generation %d (shard 0), other-0 generation %d (shard 1)", web.Generation, other.Generation)
	}
	webCPU := web.Spec.Containers[0].Resources.Requests[corev1.ResourceCPU]
	otherCPU := other.Spec.Containers[0].Resources.Requests[corev1.ResourceCPU]
	t.Logf("CPU request 400m -> %s beside the other shard's pod, -> %s on a roomy node", webCPU.String(), otherCPU.String())
	if webCPU.Cmp(resource.MustParse("400m")) <= 0 || webCPU.Cmp(resource.MustParse("500m")) > 0 {
		t.Errorf("web-0's CPU request %s: want a raise within the 100m the other shard's 1500m pod leaves (400m-500m)", webCPU.String())
	}
	if otherCPU.Cmp(resource.MustParse("500m")) <= 0 {
		t.Errorf("other-0's CPU request %s: the recommendation its twin was cut from should be above 500m", otherCPU.String())
	}
	// The apiserver is shared with the tier's other tests, whose policies
	// stay behind in their namespaces: each manager syncs those of its own
	// shard too, and must never touch the other shard's.
	for i, e := range []*env{a, b} {
		asked := e.source.Asked()
		if !slices.Contains(asked, e.ns) {
			t.Errorf("shard %d never read usage for its own namespace %s", i, e.ns)
		}
		for _, ns := range asked {
			if shard.Of(ns, 2) != i {
				t.Errorf("shard %d read usage for namespace %s, which shard %d owns", i, ns, shard.Of(ns, 2))
			}
		}
	}
	for _, p := range []struct {
		e    *env
		name string
	}{{a, "web"}, {b, "other"}} {
		err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
			pol := p.e.getPolicy(p.name)
			return pol.Status.ObservedGeneration == pol.Generation, nil
		})
		if err != nil {
			t.Errorf("policy %s/%s has no status for its generation", p.e.ns, p.name)
		}
	}
}
