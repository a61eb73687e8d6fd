//go:build e2e

package metrics

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// truth samples a container's own cgroup (v1, cgroupfs driver) counters on
// this host: the ground truth every source is compared with. The load a
// loadgen asks for is not what it gets when other work shares the 2 cores,
// so "within a band of 500m" alone would test the machine, not the source.
type truth struct {
	mu  sync.Mutex
	pts []truthPoint
}

type truthPoint struct {
	at                 time.Time
	cpuNanos           int64
	periods, throttled int64
}

// truthTick is how often sampleTruth reads the cgroup: the truth over a
// window starts and ends up to a tick away from the window's own ends.
const truthTick = 250 * time.Millisecond

// sampleTruth reads pod's "app" container counters every truthTick until the test ends.
func sampleTruth(t *testing.T, pod *corev1.Pod) *truth {
	t.Helper()
	cpuacct := cgroupDir(t, pod, "cpuacct")
	cpu := cgroupDir(t, pod, "cpu")
	tr := &truth{}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go func() {
		tick := time.NewTicker(truthTick)
		defer tick.Stop()
		for {
			usage, err1 := readInt(filepath.Join(cpuacct, "cpuacct.usage"))
			periods, throttled, err2 := readCPUStat(filepath.Join(cpu, "cpu.stat"))
			if err1 == nil && err2 == nil {
				tr.mu.Lock()
				tr.pts = append(tr.pts, truthPoint{at: time.Now(), cpuNanos: usage, periods: periods, throttled: throttled})
				tr.mu.Unlock()
			}
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
		}
	}()
	return tr
}

// span returns the samples closest inside [from, to]; ok is false when they
// cover less than half of it (the sampler started later).
func (tr *truth) span(from, to time.Time) (a, b truthPoint, ok bool) {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	var first, last *truthPoint
	for i := range tr.pts {
		p := &tr.pts[i]
		if p.at.Before(from) || p.at.After(to) {
			continue
		}
		if first == nil {
			first = p
		}
		last = p
	}
	if first == nil || last == first || last.at.Sub(first.at) < to.Sub(from)/2 {
		return truthPoint{}, truthPoint{}, false
	}
	return *first, *last, true
}

// cpu is the container's real CPU rate over [from, to], in cores.
func (tr *truth) cpu(from, to time.Time) (float64, bool) {
	a, b, ok := tr.span(from, to)
	if !ok {
		return 0, false
	}
	return float64(b.cpuNanos-a.cpuNanos) / float64(b.at.Sub(a.at).Nanoseconds()), true
}

// throttledFraction is the real fraction of CFS periods throttled over [from, to].
func (tr *truth) throttledFraction(from, to time.Time) (float64, bool) {
	a, b, ok := tr.span(from, to)
	if !ok || b.periods == a.periods {
		return 0, false
	}
	return float64(b.throttled-a.throttled) / float64(b.periods-a.periods), true
}

// cgroupDir finds the container's cgroup v1 directory for a controller.
func cgroupDir(t *testing.T, p *corev1.Pod, controller string) string {
	t.Helper()
	if len(p.Status.ContainerStatuses) == 0 || p.Status.ContainerStatuses[0].ContainerID == "" {
		t.Fatalf("pod %s/%s has no container ID", p.Namespace, p.Name)
	}
	id := p.Status.ContainerStatuses[0].ContainerID
	id = id[strings.Index(id, "://")+3:]
	for _, pattern := range []string{
		filepath.Join("/sys/fs/cgroup", controller, "kubepods", "pod"+string(p.UID), id),
		filepath.Join("/sys/fs/cgroup", controller, "kubepods", "*", "pod"+string(p.UID), id),
	} {
		if m, _ := filepath.Glob(pattern); len(m) == 1 {
			return m[0]
		}
	}
	t.Fatalf("no %s cgroup for pod %s (container %s); this suite reads cgroup v1 with the cgroupfs driver", controller, p.UID, id)
	return ""
}

func readInt(path string) (int64, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	return strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
}

func readCPUStat(path string) (periods, throttled int64, err error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		k, v, _ := strings.Cut(line, " ")
		n, _ := strconv.ParseInt(v, 10, 64)
		switch k {
		case "nr_periods":
			periods = n
		case "nr_throttled":
			throttled = n
		}
	}
	return periods, throttled, nil
}
