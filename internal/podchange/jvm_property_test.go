package podchange_test

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/tailorhq/tailor/internal/jvm"
	"github.com/tailorhq/tailor/internal/podchange"
	"github.com/tailorhq/tailor/internal/propertytest"
	"github.com/tailorhq/tailor/test/builder"
	"github.com/tailorhq/tailor/test/builder/policyspec"
)

// TestJVMHeapReachProperties: over generated pods of JVMs (a fixed heap, a
// heap sized from the limit) and other programs, with any targets and
// working sets, and for about half of them what the node agent measured of
// a JVM (any heap and non-heap, however unlikely: the container writes
// those figures), no decision lowers a JVM's memory limit under what its
// heap may reach (the larger of jvm.Reach of its -Xmx and the measured
// jvm.MeasuredReach; unmeasured, the limit itself where the heap was sized
// from it), and a limit is never raised for that rule alone.
func TestJVMHeapReachProperties(t *testing.T) {
	stats, cases, seed, took := propertytest.Run(t, 17, checkJVMHeapReach)
	t.Logf("%d generated cases (seed %d) in %s: %d JVM limits lowered by the spec, %d of them stopped at the heap's reach, %d held at a limit the heap was sized from; %d lowered by a measurement, %d of them stopped at its reach; %d other limits lowered",
		cases, seed, took.Round(time.Millisecond), stats["jvmLowered"], stats["atReach"], stats["sizedFromLimit"], stats["measuredLowered"], stats["atMeasuredReach"], stats["otherLowered"])
	if stats["atReach"] == 0 || stats["sizedFromLimit"] == 0 || stats["otherLowered"] == 0 || stats["atMeasuredReach"] == 0 {
		t.Errorf("the generator no longer reaches every kind of lowering: %v", stats)
	}
}

func checkJVMHeapReach(seed uint64, stats map[string]int) string {
	r := rand.New(rand.NewPCG(seed, 17))
	mi := func(lo, hi int) resource.Quantity {
		return *resource.NewQuantity(int64(lo+r.IntN(hi-lo+1))<<20, resource.BinarySI)
	}
	pod := builder.Pod("p")
	targets := map[string]podchange.Target{}
	ws := map[string]resource.Quantity{}
	kinds := map[string]string{}
	measured := map[string]jvm.Measured{}
	for i := range 1 + r.IntN(2) {
		name := fmt.Sprintf("c%d", i)
		req := mi(64, 2048)
		lim := *resource.NewQuantity(req.Value()*int64(1+r.IntN(4)), resource.BinarySI)
		c := builder.Container(name).Request(corev1.ResourceMemory, req.String()).Limit(corev1.ResourceMemory, lim.String())
		switch r.IntN(3) {
		case 0:
			heap := mi(32, 2048)
			c.Command("java", fmt.Sprintf("-Xmx%dm", heap.Value()>>20), "-jar", "app.jar")
			kinds[name] = "fixed"
		case 1:
			c.Command("java", "-XX:MaxRAMPercentage=75.0", "-jar", "app.jar")
			kinds[name] = "sized"
		default:
			c.Command("/app/server")
			kinds[name] = "other"
		}
		if r.IntN(2) == 0 {
			heap, non := mi(16, 8192), mi(0, 1024)
			measured[name] = jvm.Measured{HeapMax: heap.Value(), NonHeap: non.Value()}
		}
		pod.Container(c)
		target := mi(16, 4096)
		targets[name] = podchange.Target{Memory: &target}
		ws[name] = mi(8, int(req.Value()>>20))
	}
	p := pod.Obj()
	d, err := podchange.Decide(podchange.Input{Pod: p, Spec: policyspec.New(), Targets: targets, WorkingSet: ws, JVM: measured, MemoryFloorHeadroom: 0.1, Now: time.Unix(0, 0)})
	if err != nil {
		return err.Error()
	}
	for _, ch := range d.Changes {
		if ch.Resource != corev1.ResourceMemory || ch.LimitNow == nil || ch.LimitNow.Cmp(*ch.LimitBefore) >= 0 {
			continue
		}
		var c *corev1.Container
		for i := range p.Spec.Containers {
			if p.Spec.Containers[i].Name == ch.Container {
				c = &p.Spec.Containers[i]
			}
		}
		if m, ok := measured[ch.Container]; ok {
			stats["measuredLowered"]++
			reach := jvm.MeasuredReach(m)
			if kinds[ch.Container] == "fixed" {
				if spec := jvm.Reach(*jvm.HeapOf(c).Max); spec.Cmp(reach) > 0 {
					reach = spec
				}
			}
			if ch.LimitNow.Cmp(reach) < 0 {
				return fmt.Sprintf("container %s (%v, measured %+v): limit %s -> %s, under the reach %s", ch.Container, c.Command, m, ch.LimitBefore, ch.LimitNow, reach.String())
			}
			if ch.LimitNow.Cmp(reach) == 0 {
				stats["atMeasuredReach"]++
			}
			continue
		}
		switch kinds[ch.Container] {
		case "fixed":
			stats["jvmLowered"]++
			reach := jvm.Reach(*jvm.HeapOf(c).Max)
			if ch.LimitNow.Cmp(reach) < 0 {
				return fmt.Sprintf("container %s (%v): limit %s -> %s, under the heap's reach %s", ch.Container, c.Command, ch.LimitBefore, ch.LimitNow, reach.String())
			}
			if ch.LimitNow.Cmp(reach) == 0 {
				stats["atReach"]++
			}
		case "sized":
			return fmt.Sprintf("container %s (%v): limit %s -> %s, though its heap was sized from the limit", ch.Container, c.Command, ch.LimitBefore, ch.LimitNow)
		default:
			stats["otherLowered"]++
		}
	}
	// A raise is the same with the measurements as without them: they only
	// hold lowerings back.
	unmeasured, err := podchange.Decide(podchange.Input{Pod: p, Spec: policyspec.New(), Targets: targets, WorkingSet: ws, MemoryFloorHeadroom: 0.1, Now: time.Unix(0, 0)})
	if err != nil {
		return err.Error()
	}
	without := map[string]resource.Quantity{}
	for _, ch := range unmeasured.Changes {
		if ch.Resource == corev1.ResourceMemory && ch.LimitNow != nil {
			without[ch.Container] = *ch.LimitNow
		}
	}
	for _, ch := range d.Changes {
		if m, ok := measured[ch.Container]; ok && ch.Resource == corev1.ResourceMemory && ch.LimitNow != nil && ch.LimitNow.Cmp(*ch.LimitBefore) > 0 {
			if w, ok := without[ch.Container]; !ok || w.Cmp(*ch.LimitNow) != 0 {
				return fmt.Sprintf("container %s (measured %+v): limit raised %s -> %s, and without the measurement to %s", ch.Container, m, ch.LimitBefore, ch.LimitNow, w.String())
			}
			stats["measuredRaised"]++
		}
	}
	for _, s := range d.Skips {
		if kinds[s.Container] == "sized" {
			stats["sizedFromLimit"]++
		}
	}
	for _, ch := range d.Changes {
		if kinds[ch.Container] == "sized" && ch.Resource == corev1.ResourceMemory && ch.LimitNow != nil && ch.LimitNow.Cmp(*ch.LimitBefore) == 0 && ch.RequestNow.Cmp(ch.RequestBefore) < 0 {
			stats["sizedFromLimit"]++
		}
	}
	return ""
}
