package main

import (
	"context"
	"sync"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tailorhq/tailor/api/v1alpha1"
)

// statusWatch counts, per part of a policy's status, how often a status
// write changed it: what the manager's status writes carry.
type statusWatch struct {
	mu      sync.Mutex
	last    map[string]v1alpha1.TailorPolicyStatus
	counts  map[string]int
	writes  int
	counted bool
}

func watchStatus(ctx context.Context, c client.WithWatch) (*statusWatch, error) {
	w, err := c.Watch(ctx, &v1alpha1.TailorPolicyList{})
	if err != nil {
		return nil, err
	}
	s := &statusWatch{last: map[string]v1alpha1.TailorPolicyStatus{}, counts: map[string]int{}}
	go func() {
		defer w.Stop()
		for ev := range w.ResultChan() {
			p, ok := ev.Object.(*v1alpha1.TailorPolicy)
			if !ok || (ev.Type != watch.Added && ev.Type != watch.Modified) {
				continue
			}
			s.observe(p.Namespace+"/"+p.Name, p.Status)
		}
	}()
	return s, nil
}

func (s *statusWatch) observe(key string, st v1alpha1.TailorPolicyStatus) {
	s.mu.Lock()
	defer s.mu.Unlock()
	old, seen := s.last[key]
	s.last[key] = st
	if !seen || !s.counted || equality.Semantic.DeepEqual(old, st) {
		return
	}
	s.writes++
	if !equality.Semantic.DeepEqual(old.Recommendation, st.Recommendation) {
		s.counts["recommendation"]++
	}
	if !equality.Semantic.DeepEqual(old.Pods, st.Pods) {
		s.counts["pods"]++
	}
	if !equality.Semantic.DeepEqual(old.Recreations, st.Recreations) {
		s.counts["recreations"]++
	}
	byType := func(st v1alpha1.TailorPolicyStatus) map[string]any {
		m := map[string]any{}
		for _, c := range st.Conditions {
			m[c.Type] = c
		}
		return m
	}
	o, n := byType(old), byType(st)
	for t := range n {
		if !equality.Semantic.DeepEqual(o[t], n[t]) {
			s.counts["conditions."+t]++
		}
	}
}

// window starts counting (true) or stops and returns the counts.
func (s *statusWatch) window(on bool) (map[string]int, int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.counted = on
	if on {
		s.counts, s.writes = map[string]int{}, 0
	}
	out := map[string]int{}
	for k, v := range s.counts {
		out[k] = v
	}
	return out, s.writes
}
