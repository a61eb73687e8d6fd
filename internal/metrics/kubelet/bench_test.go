package kubelet_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/tailorhq/tailor/internal/metrics/kubelet"
)

// pagedNodes serves every node's pages with every policy's pod on it,
// measured at the current pass's time, and counts the requests.
type pagedNodes struct {
	policies []string

	mu   sync.Mutex
	at   time.Time
	cpu  float64
	gets int
}

func (p *pagedNodes) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	parts := strings.Split(strings.TrimPrefix(r.URL.Path, "/api/v1/nodes/"), "/")
	if len(parts) != 4 {
		http.Error(w, "unexpected path "+r.URL.Path, http.StatusNotFound)
		return
	}
	p.mu.Lock()
	p.gets++
	at, cpu := p.at, p.cpu
	p.mu.Unlock()
	var pods []string
	for _, policy := range p.policies {
		pods = append(pods, policy+"-"+parts[0])
	}
	body := resourcePage(cpu, at, pods...)
	if parts[3] == "cadvisor" {
		body = cadvisorPage(cpu, 10*cpu, at, pods...)
	}
	_, _ = w.Write([]byte(body))
}

// BenchmarkUsageSharedAcrossPolicies is one sync pass (an op) over 20
// policies whose pods run on each of 50 nodes (a DaemonSet each, or
// Deployments spread by topology: the worst case of the scale issue), with
// throttling on, as the manager's single reconcile worker does it: one
// policy after another, all within the share window. Without sharing a pass
// reads both pages of every node for every policy, 50 x 20 x 2 = 2000
// proxied GETs; with it, each node once, 50 x 2 = 100. The GETs are
// exact, so they are checked. The time is CPU on localhost (generating and
// parsing pages, no round trip to a kubelet), printed, not checked: against
// a real apiserver each GET also waits a round trip, which only the
// concurrent cases overlap.
func BenchmarkUsageSharedAcrossPolicies(b *testing.B) {
	const nodes, policies = 50, 20
	var nodeNames, names []string
	for n := range nodes {
		nodeNames = append(nodeNames, fmt.Sprintf("node-%02d", n))
	}
	for p := range policies {
		names = append(names, fmt.Sprintf("policy%02d", p))
	}
	podsOf := map[string][]*corev1.Pod{}
	for _, p := range names {
		podsOf[p] = policyPods(p, nodeNames...)
	}
	for _, bc := range []struct {
		name        string
		shareFor    time.Duration
		concurrency int
		wantGets    int
	}{
		{"before=serial,unshared", -1, 1, nodes * policies * 2},
		{"concurrent,unshared", -1, kubelet.DefaultConcurrency, nodes * policies * 2},
		{"concurrent,shared5s", kubelet.DefaultShareFor, kubelet.DefaultConcurrency, nodes * 2},
	} {
		b.Run(bc.name, func(b *testing.B) {
			proxy := &pagedNodes{policies: names, at: t0}
			clk := clocktesting.NewFakePassiveClock(t0)
			src := newSource(b, proxy, kubelet.Options{Throttling: true, ShareFor: bc.shareFor, Concurrency: bc.concurrency, Clock: clk})
			passes := 0
			for ; b.Loop(); passes++ {
				i := passes
				// A new sync period: the kubelet has refreshed its stats.
				at := t0.Add(time.Duration(i) * 10 * time.Second)
				clk.SetTime(at)
				proxy.mu.Lock()
				proxy.at, proxy.cpu = at, float64(i)
				proxy.mu.Unlock()
				for _, p := range names {
					if _, err := src.Usage(context.Background(), podsOf[p]); err != nil {
						b.Fatalf("Usage of %s: %v", p, err)
					}
				}
			}
			proxy.mu.Lock()
			gets := proxy.gets
			proxy.mu.Unlock()
			perPass := float64(gets) / float64(passes)
			b.ReportMetric(perPass, "GETs/pass")
			if perPass != float64(bc.wantGets) {
				b.Errorf("%v proxied GETs per pass, want %d", perPass, bc.wantGets)
			}
		})
	}
}
