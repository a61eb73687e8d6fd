package kubelet

import (
	"context"
	"sync"
	"time"

	"github.com/tailorhq/tailor/internal/metrics"
)

// pages is one read of a node: its parsed metrics pages, or why they could
// not be read (reason says how to report it for the node's containers).
type pages struct {
	resource, cadvisor scrape
	reason             metrics.Reason
	err                error
	// cadvisorReason and cadvisorErr say why the cadvisor page was not
	// read: its containers' throttling figures only are unusable.
	cadvisorReason metrics.Reason
	cadvisorErr    error
}

// read is one read of a node, shared by every caller that needs the node
// while it is in flight and, once done, within ShareFor.
type read struct {
	done chan struct{} // closed when the fields below are set
	pages
	at time.Time // when the read finished
	// abandoned: the reader's context ended before the node answered, so
	// there is nothing to share; a waiter reads again.
	abandoned bool
}

func (r *read) finished() bool {
	select {
	case <-r.done:
		return true
	default:
		return false
	}
}

// fresh says whether a finished read may still be shared.
func (s *Source) fresh(r *read) bool {
	return s.opts.Clock.Since(r.at) < s.opts.ShareFor
}

// dropExpired forgets the reads that can no longer be shared, so nodes no
// caller asks for again do not keep their pages.
func (s *Source) dropExpired() {
	s.readsMu.Lock()
	defer s.readsMu.Unlock()
	for node, r := range s.reads {
		if r.finished() && !s.fresh(r) {
			delete(s.reads, node)
		}
	}
}

// readAll returns the pages of each node, in order, reading at most
// Concurrency nodes at a time. Its error is ctx's: a node that cannot be
// read says so in its pages.
func (s *Source) readAll(ctx context.Context, nodes []string) ([]pages, error) {
	out := make([]pages, len(nodes))
	errs := make([]error, len(nodes))
	next := make(chan int)
	var wg sync.WaitGroup
	for range min(s.opts.Concurrency, len(nodes)) {
		wg.Go(func() {
			for i := range next {
				out[i], errs[i] = s.pagesOf(ctx, nodes[i])
			}
		})
	}
	for i := range nodes {
		next <- i
	}
	close(next)
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

// pagesOf returns node's pages from a read still fresh or in flight, or
// reads them.
func (s *Source) pagesOf(ctx context.Context, node string) (pages, error) {
	for {
		if err := ctx.Err(); err != nil {
			return pages{}, err
		}
		s.readsMu.Lock()
		r := s.reads[node]
		mine := r == nil || (r.finished() && !s.fresh(r))
		if mine {
			r = &read{done: make(chan struct{})}
			s.reads[node] = r
		}
		s.readsMu.Unlock()
		if mine {
			s.fill(ctx, node, r)
		}
		select {
		case <-r.done:
		case <-ctx.Done():
			return pages{}, ctx.Err()
		}
		if !r.abandoned {
			return r.pages, nil
		}
	}
}

// fill reads node's pages into r, holding one of the slots meanwhile.
func (s *Source) fill(ctx context.Context, node string, r *read) {
	defer close(r.done)
	select {
	case s.slots <- struct{}{}:
	case <-ctx.Done():
		s.abandon(node, r)
		return
	}
	p := s.get(ctx, node)
	<-s.slots
	if p.err != nil && ctx.Err() != nil {
		// The node may be fine; only this caller gave up on it.
		s.abandon(node, r)
		return
	}
	r.pages, r.at = p, s.opts.Clock.Now()
	if p.err == nil {
		s.forget(node, p.resource)
	}
}

func (s *Source) abandon(node string, r *read) {
	r.abandoned = true
	s.readsMu.Lock()
	defer s.readsMu.Unlock()
	if s.reads[node] == r {
		delete(s.reads, node)
	}
}

// get reads node's pages: /metrics/resource, and /metrics/cadvisor with
// Throttling. A cadvisor page that cannot be read (over the size cap, or
// failing) costs the node's containers their throttling figures only, each
// saying why, as if throttling were off: cAdvisor's page grows with every
// container on the node, so one tenant's pods can push it over the cap,
// and that must not hold the usage of other tenants' pods on the node,
// which the resource page (a few hundred bytes a container) still gives.
// getPage has logged and counted the refusal.
func (s *Source) get(ctx context.Context, node string) pages {
	var p pages
	p.resource, p.reason, p.err = s.getPage(ctx, node, "resource", cpuUsage, workingSet)
	if p.err == nil && s.opts.Throttling {
		p.cadvisor, p.cadvisorReason, p.cadvisorErr = s.getPage(ctx, node, "cadvisor", throttledPeriod, cfsPeriods)
	}
	return p
}
