//go:build controller

package controller

import (
	"context"
	"maps"
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/clock"

	"github.com/tailorhq/tailor/internal/metrics"
	"github.com/tailorhq/tailor/internal/podcontainers"
)

// scriptedSource is a metrics.Source whose answers the test sets: usage per
// container, stamped with the fake clock's time at each read (so every sync
// brings a new sample, as a source polled once per sync period does), and
// whatever bad answer a test wants to feed the controller.
type scriptedSource struct {
	clock clock.PassiveClock

	mu       sync.Mutex
	usage    map[metrics.Key]scriptedUsage
	problems []metrics.Problem
	err      error
	reads    int
	// asked is every namespace whose pods a read asked about.
	asked map[string]bool
	// onRead runs once, during the next read: after the controller listed
	// the policy's pods and before it plans any resize from them.
	onRead func()
}

type scriptedUsage struct {
	cpu, memory float64
	throttled   *float64
	// throttledOver is the span the throttled fraction covers, when it is
	// not the CPU rate's.
	throttledOver time.Duration
}

// scriptedWindow is the span every scripted CPU rate covers.
const scriptedWindow = 30 * time.Second

var _ metrics.Source = (*scriptedSource)(nil)

func newScriptedSource(c clock.PassiveClock) *scriptedSource {
	return &scriptedSource{clock: c, usage: map[metrics.Key]scriptedUsage{}, asked: map[string]bool{}}
}

func (s *scriptedSource) Name() string { return "scripted" }

// Set makes the source report cpu cores and memory bytes for one container
// from the next read on, with no throttling figure.
func (s *scriptedSource) Set(ns, pod, container string, cpu, memory float64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.usage[metrics.Key{Namespace: ns, Pod: pod, Container: container}] = scriptedUsage{cpu: cpu, memory: memory}
}

// SetThrottled makes the source report cpu, memory and the fraction of CFS
// periods throttled for one container.
func (s *scriptedSource) SetThrottled(ns, pod, container string, cpu, memory, throttled float64) {
	s.SetThrottledOver(ns, pod, container, cpu, memory, throttled, scriptedWindow)
}

// SetThrottledOver is SetThrottled with the throttled fraction measured
// over its own span, as a source reading it from other samples than the
// CPU counter's may give.
func (s *scriptedSource) SetThrottledOver(ns, pod, container string, cpu, memory, throttled float64, over time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.usage[metrics.Key{Namespace: ns, Pod: pod, Container: container}] = scriptedUsage{cpu: cpu, memory: memory, throttled: &throttled, throttledOver: over}
}

// Forget stops reporting a container: it is then neither in Usage nor in
// Problems, as when a source has no sample yet.
func (s *scriptedSource) Forget(ns, pod, container string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.usage, metrics.Key{Namespace: ns, Pod: pod, Container: container})
}

// Fail makes every read fail with err (nil: answer again).
func (s *scriptedSource) Fail(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.err = err
}

// Problems replaces the problems reported with every answer.
func (s *scriptedSource) Problems(p ...metrics.Problem) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.problems = p
}

// OnNextRead runs f during the next read only.
func (s *scriptedSource) OnNextRead(f func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.onRead = f
}

// Reads is how many times the controller asked for usage.
func (s *scriptedSource) Reads() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.reads
}

// Asked is every namespace whose pods the controller asked about.
func (s *scriptedSource) Asked() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Sorted(maps.Keys(s.asked))
}

// Usage answers for the pods asked about, and only them, like a real source.
// Values are passed through unchecked, so a test can feed the controller
// what a broken source would (NaN, negative).
func (s *scriptedSource) Usage(_ context.Context, pods []*corev1.Pod) (metrics.Result, error) {
	s.mu.Lock()
	hook := s.onRead
	s.onRead = nil
	s.mu.Unlock()
	if hook != nil {
		hook()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.reads++
	if s.err != nil {
		return metrics.Result{}, s.err
	}
	now := s.clock.Now()
	res := metrics.Result{Usage: map[metrics.Key]metrics.Usage{}}
	asked := map[metrics.Key]bool{}
	for _, p := range pods {
		s.asked[p.Namespace] = true
		for _, c := range podcontainers.Names(p) {
			key := metrics.Key{Namespace: p.Namespace, Pod: p.Name, Container: c}
			asked[key] = true
			u, ok := s.usage[key]
			if !ok {
				continue
			}
			got := metrics.Usage{Key: key, Time: now, Window: scriptedWindow, CPU: u.cpu, Memory: u.memory, Throttled: u.throttled}
			if u.throttled != nil {
				got.ThrottledSince = now.Add(-u.throttledOver)
			}
			res.Usage[key] = got
		}
	}
	for _, p := range s.problems {
		if asked[p.Key] {
			res.Problems = append(res.Problems, p)
		}
	}
	res.Sort()
	return res, nil
}
