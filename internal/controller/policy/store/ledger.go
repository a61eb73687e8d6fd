package store

import (
	"sync"
	"time"

	"github.com/tailorhq/tailor/internal/autoscale/lowering/limits"
)

// Ledger is what this process decided to lower in each namespace
// whose lowerings a namespace budget (budget.namespacePods) counts, by
// policy, within the budget's period.
//
// A namespace budget is judged on every policy's lowerings, which each
// policy's TailorCheckpoint keeps, read from the manager's cache. That
// alone is not safe: policies are synced several at once
// (ConcurrentSyncs), and the cache shows a checkpoint some time after it
// is written, so two policies of one namespace could each see room for
// the last pod and together lower two. Hence two things, both in this
// process, which is the only one acting on the namespace (one leader, and
// a shard owns whole namespaces):
//   - what a sync decides to lower is recorded here before its resizes
//     are sent (as its checkpoint is written before them), and the
//     namespace's count is the checkpoints the cache has joined with what
//     is recorded here, so it never misses a lowering of this process
//     however far the cache lags;
//   - a policy with a namespace budget reads the count, decides and
//     records in its namespace's turn, one policy at a time, so no two
//     spend the same room. Only the pure decision runs in the turn (the
//     reads are done before, but for the nodes a recreation rarely asks
//     for; the writes and resizes after), so policies of one namespace
//     wait for each other for milliseconds, and those of other namespaces
//     not at all. The resizes may be sent after the turn: they are
//     counted already.
//
// A policy without a namespace budget records its lowerings too (outside
// the turn: nothing holds them), so the budgets of its namespace count
// them. After a restart or a leader change the ledger starts empty and the
// checkpoints, all on the apiserver before their resizes were sent, are
// the count.
type Ledger struct {
	mu         sync.Mutex
	namespaces map[string]*namespaceLedger
}

// namespaceLedger is one namespace's part of the ledger. It is never
// dropped once made: a namespace's turn must stay one mutex for as long
// as the process runs.
type namespaceLedger struct {
	turn sync.Mutex
	// sent is guarded by Ledger.mu.
	sent limits.LoweredBy
}

func (l *Ledger) namespace(ns string) *namespaceLedger {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.namespaces == nil {
		l.namespaces = map[string]*namespaceLedger{}
	}
	n := l.namespaces[ns]
	if n == nil {
		n = &namespaceLedger{sent: limits.LoweredBy{}}
		l.namespaces[ns] = n
	}
	return n
}

// take waits for the namespace's turn; release ends it.
func (l *Ledger) Take(ns string) (release func()) {
	n := l.namespace(ns)
	n.turn.Lock()
	return n.turn.Unlock
}

// sent is a copy of what the namespace's policies were recorded to have
// lowered within the budget's period, by policy.
func (l *Ledger) Sent(ns string, now time.Time) limits.LoweredBy {
	n := l.namespace(ns)
	l.mu.Lock()
	defer l.mu.Unlock()
	out := limits.LoweredBy{}
	for policy, lowered := range n.sent {
		out.Add(policy, lowered.Within(now))
	}
	return out
}

// record adds a policy's count after its sync (this sync's lowerings in
// it) to the namespace's, and lets go of what the period no longer counts.
func (l *Ledger) Record(ns, policy string, lowered limits.Lowered, now time.Time) {
	n := l.namespace(ns)
	l.mu.Lock()
	defer l.mu.Unlock()
	n.sent.Add(policy, lowered)
	for p, was := range n.sent {
		if within := was.Within(now); len(within) > 0 {
			n.sent[p] = within
		} else {
			delete(n.sent, p)
		}
	}
}
