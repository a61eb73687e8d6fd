package metrics_test

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/tailorhq/tailor/internal/metrics"
	"github.com/tailorhq/tailor/test/builder"
)

func TestCPUAllowance(t *testing.T) {
	for w, want := range map[time.Duration]float64{0: 2, 5 * time.Second: 2, 15 * time.Second: 2, 30 * time.Second: 1.5, time.Minute: 1.25, 5 * time.Minute: 1.05} {
		if got := metrics.CPUAllowance(w); math.Abs(got-want) > 1e-9 {
			t.Errorf("CPUAllowance(%s) = %v, want %v", w, got, want)
		}
	}
}

func TestScreen(t *testing.T) {
	const mi = 1 << 20
	at := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	node := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4"), corev1.ResourceMemory: resource.MustParse("8Gi")}
	capacity := map[string]corev1.ResourceList{"n1": node}
	limited := builder.Pod("web").Namespace("ns").Node("n1").
		Container(builder.Container("app").Requests("500m", "256Mi").Limits("1", "512Mi")).Running().Obj()
	unlimited := builder.Pod("web").Namespace("ns").Node("n1").Container(builder.Container("app").Requests("500m", "256Mi")).Running().Obj()
	// A resize lowering the limit is on its way: the status's higher
	// limit is still in force.
	lowering := limited.DeepCopy()
	lowering.Spec.Containers[0].Resources.Limits[corev1.ResourceMemory] = resource.MustParse("128Mi")
	lowering.Status.ContainerStatuses[0].Resources = &corev1.ResourceRequirements{Limits: builder.List("1", "512Mi")}
	podLevel := builder.Pod("web").Namespace("ns").Node("n1").PodLimits("2", "1Gi").
		Container(builder.Container("app")).Sidecar(builder.Container("proxy")).Running().
		ContainerStatus(corev1.ContainerStatus{Name: "proxy", State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}).Obj()
	app := metrics.Key{Namespace: "ns", Pod: "web", Container: "app"}
	proxy := metrics.Key{Namespace: "ns", Pod: "web", Container: "proxy"}
	use := func(k metrics.Key, cpu, mem float64, window time.Duration) metrics.Usage {
		return metrics.Usage{Key: k, Time: at, Window: window, CPU: cpu, Memory: mem}
	}
	th := func(u metrics.Usage, v float64) metrics.Usage { u.Throttled = &v; return u }

	// The pod's limits changed 10s before the figures were taken.
	resizedAt := func(*corev1.Pod) time.Time { return at.Add(-10 * time.Second) }
	cases := map[string]struct {
		pod         *corev1.Pod
		resized     func(*corev1.Pod) time.Time
		usage       []metrics.Usage
		wantKept    []metrics.Key
		wantReasons []string // metric/reason of each rejection
	}{
		"within limits": {
			pod: limited, usage: []metrics.Usage{use(app, 1, 512*mi, time.Minute)}, wantKept: []metrics.Key{app},
		},
		"memory at the limit plus its slack": {
			pod: limited, usage: []metrics.Usage{use(app, 0.1, 512*mi*1.02, time.Minute)}, wantKept: []metrics.Key{app},
		},
		"memory above the limit": {
			pod: limited, usage: []metrics.Usage{use(app, 0.1, 600*mi, time.Minute)}, wantReasons: []string{"memory/AboveLimit"},
		},
		"memory above the spec's lowered limit, within the status's": {
			pod: lowering, usage: []metrics.Usage{use(app, 0.1, 500*mi, time.Minute)}, wantKept: []metrics.Key{app},
		},
		"cpu over a 1m window within 1.25 times the limit": {
			pod: limited, usage: []metrics.Usage{use(app, 1.24, 100*mi, time.Minute)}, wantKept: []metrics.Key{app},
		},
		"cpu over a 1m window above 1.25 times the limit": {
			pod: limited, usage: []metrics.Usage{use(app, 1.3, 100*mi, time.Minute)}, wantReasons: []string{"cpu/AboveLimit"},
		},
		"cpu over a 15s window within twice the limit": {
			pod: limited, usage: []metrics.Usage{use(app, 1.9, 100*mi, 15*time.Second)}, wantKept: []metrics.Key{app},
		},
		"cpu over a window straddling a resize: judged against the node alone": {
			pod: limited, resized: resizedAt, usage: []metrics.Usage{use(app, 2.9, 100*mi, 30*time.Second)}, wantKept: []metrics.Key{app},
		},
		"cpu over a window straddling a resize, beyond the node": {
			pod: limited, resized: resizedAt, usage: []metrics.Usage{use(app, 9, 100*mi, 30*time.Second)}, wantReasons: []string{"cpu/AboveNodeCapacity"},
		},
		"cpu over a window after the resize: judged against the limit": {
			pod: limited, resized: resizedAt, usage: []metrics.Usage{use(app, 2.9, 100*mi, 5*time.Second)}, wantReasons: []string{"cpu/AboveLimit"},
		},
		"memory read after the resize: judged against the limit": {
			pod: limited, resized: resizedAt, usage: []metrics.Usage{use(app, 0.1, 600*mi, 5*time.Second)}, wantReasons: []string{"memory/AboveLimit"},
		},
		"no limit: the node bounds memory": {
			pod: unlimited, usage: []metrics.Usage{use(app, 0.1, 9<<30, time.Minute)}, wantReasons: []string{"memory/AboveNodeCapacity"},
		},
		"no limit: the node bounds cpu": {
			pod: unlimited, usage: []metrics.Usage{use(app, 5.1, 100*mi, time.Minute)}, wantReasons: []string{"cpu/AboveNodeCapacity"},
		},
		"no limit, within the node": {
			pod: unlimited, usage: []metrics.Usage{use(app, 4.9, 7<<30, time.Minute)}, wantKept: []metrics.Key{app},
		},
		"NaN": {
			pod: unlimited, usage: []metrics.Usage{use(app, math.NaN(), 100*mi, time.Minute)}, wantReasons: []string{"cpu/Invalid"},
		},
		"negative memory": {
			pod: unlimited, usage: []metrics.Usage{use(app, 0.1, -1, time.Minute)}, wantReasons: []string{"memory/Invalid"},
		},
		"a throttled share above 1 is dropped alone": {
			pod: limited, usage: []metrics.Usage{th(use(app, 0.5, 100*mi, time.Minute), 1.5)}, wantKept: []metrics.Key{app},
			wantReasons: []string{"throttling/Invalid"},
		},
		"one container above the pod's limit": {
			pod: podLevel, usage: []metrics.Usage{use(app, 0.1, 1100*mi, time.Minute), use(proxy, 0.1, 10*mi, time.Minute)},
			wantKept: []metrics.Key{proxy}, wantReasons: []string{"memory/AboveLimit"},
		},
		"the containers together above the pod's limit": {
			pod: podLevel, usage: []metrics.Usage{use(app, 0.1, 600*mi, time.Minute), use(proxy, 0.1, 600*mi, time.Minute)},
			wantReasons: []string{"memory/AboveLimit", "memory/AboveLimit"},
		},
		"the containers together within the pod's limit": {
			pod: podLevel, usage: []metrics.Usage{use(app, 1.2, 600*mi, time.Minute), use(proxy, 0.8, 400*mi, time.Minute)},
			wantKept: []metrics.Key{app, proxy},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			in := metrics.Result{Usage: map[metrics.Key]metrics.Usage{}}
			for _, u := range tc.usage {
				in.Usage[u.Key] = u
			}
			out, rejected := metrics.Screen(in, []*corev1.Pod{tc.pod}, capacity, tc.resized)
			var kept []metrics.Key
			for _, k := range []metrics.Key{app, proxy} {
				if _, ok := out.Usage[k]; ok {
					kept = append(kept, k)
				}
			}
			if diff := cmp.Diff(tc.wantKept, kept); diff != "" {
				t.Errorf("kept (-want,+got):\n%s", diff)
			}
			var reasons []string
			for _, p := range rejected {
				reasons = append(reasons, string(p.Metric)+"/"+string(p.Reason))
			}
			if diff := cmp.Diff(tc.wantReasons, reasons); diff != "" {
				t.Errorf("rejections (-want,+got):\n%s", diff)
			}
			// Every rejection is held with its reason among the problems.
			if diff := cmp.Diff(rejected, out.Problems); len(rejected) > 0 && diff != "" {
				t.Errorf("problems are not the rejections (-want,+got):\n%s", diff)
			}
			if len(in.Usage) != len(tc.usage) {
				t.Errorf("the input was changed")
			}
		})
	}
}

// Property: whatever a source answers, what passes Screen is within what
// the container can physically use (its limits with their slack, its
// node's capacity), and what is within them passes.
func TestScreenProperty(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	const gi = 1 << 30
	for i := range 2000 {
		cpuLim, memLim := 0.1+rng.Float64()*4, float64(1+rng.IntN(8))*gi/4
		nodeCPU, nodeMem := 1+float64(rng.IntN(64)), float64(1+rng.IntN(256))*gi
		c := builder.Container("app")
		limited := rng.IntN(2) == 0
		if limited {
			c = c.Limit(corev1.ResourceCPU, resource.NewMilliQuantity(int64(cpuLim*1000), resource.DecimalSI).String()).
				Limit(corev1.ResourceMemory, resource.NewQuantity(int64(memLim), resource.BinarySI).String())
			cpuLim, memLim = float64(int64(cpuLim*1000))/1000, float64(int64(memLim))
		}
		p := builder.Pod("p").Namespace("ns").Node("n").Container(c).Running().Obj()
		capacity := map[string]corev1.ResourceList{"n": {
			corev1.ResourceCPU:    *resource.NewQuantity(int64(nodeCPU), resource.DecimalSI),
			corev1.ResourceMemory: *resource.NewQuantity(int64(nodeMem), resource.BinarySI),
		}}
		window := time.Duration(1+rng.IntN(300)) * time.Second
		k := metrics.Key{Namespace: "ns", Pod: "p", Container: "app"}
		u := metrics.Usage{Key: k, Window: window, CPU: rng.Float64() * 3 * nodeCPU, Memory: rng.Float64() * 2 * nodeMem}
		out, rejected := metrics.Screen(metrics.Result{Usage: map[metrics.Key]metrics.Usage{k: u}}, []*corev1.Pod{p}, capacity, nil)
		maxCPU, maxMem := nodeCPU*metrics.CPUAllowance(window), nodeMem*(1+metrics.MemorySlack)
		if limited {
			maxCPU, maxMem = min(maxCPU, cpuLim*metrics.CPUAllowance(window)), min(maxMem, memLim*(1+metrics.MemorySlack))
		}
		_, kept := out.Usage[k]
		if possible := u.CPU <= maxCPU && u.Memory <= maxMem; kept != possible {
			t.Fatalf("case %d: cpu %v (most %v) memory %v (most %v): kept %v, rejections %v", i, u.CPU, maxCPU, u.Memory, maxMem, kept, rejected)
		}
		if !kept && (len(rejected) != 1 || !strings.HasPrefix(string(rejected[0].Reason), "Above")) {
			t.Fatalf("case %d: rejections %v, want one saying which bound", i, rejected)
		}
	}
}
