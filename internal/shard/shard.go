package shard

import (
	"fmt"
	"hash/fnv"
)

// Shard is one of Count slices of the cluster's namespaces. The zero value
// and Count 1 own every namespace.
type Shard struct {
	Index int
	Count int
}

// Validate says what is wrong with s, if anything.
func (s Shard) Validate() error {
	if s.Count < 0 || s.Count > MaxCount {
		return fmt.Errorf("shard count %d: want 1 to %d", s.Count, MaxCount)
	}
	if s.Index < 0 || s.Index >= max(1, s.Count) {
		return fmt.Errorf("shard index %d: want 0 to %d", s.Index, max(1, s.Count)-1)
	}
	return nil
}

// MaxCount bounds the shard count: each shard still watches every pod, so
// past a handful of shards the apiserver's watch traffic grows with no
// saving left in any one manager.
const MaxCount = 64

// Sharded says whether s owns less than every namespace.
func (s Shard) Sharded() bool { return s.Count > 1 }

// Owns says whether namespace belongs to s. Policies are assigned by
// namespace, not one by one, so a shard can keep its own namespaces' pods
// whole and every other pod cut down to its requests.
func (s Shard) Owns(namespace string) bool {
	if !s.Sharded() {
		return true
	}
	return Of(namespace, s.Count) == s.Index
}

// Of is the shard of count that owns namespace. It is a jump consistent
// hash (Lamping and Veach, 2014) of the namespace's FNV-1a hash: every
// manager computes it alike with nothing shared, and going from n shards
// to n+1 moves only the namespaces the new shard takes, about 1/(n+1) of
// them, so a resharding leaves the other shards' policies where they were.
func Of(namespace string, count int) int {
	if count <= 1 {
		return 0
	}
	h := fnv.New64a()
	_, _ = h.Write([]byte(namespace))
	key := h.Sum64()
	var b, j int64 = -1, 0
	for j < int64(count) {
		b = j
		key = key*2862933555777941757 + 1
		j = int64(float64(b+1) * (float64(int64(1)<<31) / float64((key>>33)+1)))
	}
	return int(b)
}

// LeaseName is the leader election lease of s: base alone when unsharded
// (as before shards existed), else base with the shard and the count, so
// that managers started with different counts never share a lease.
func (s Shard) LeaseName(base string) string {
	if !s.Sharded() {
		return base
	}
	return fmt.Sprintf("%s-shard-%d-of-%d", base, s.Index, s.Count)
}

// String names s in logs.
func (s Shard) String() string {
	if !s.Sharded() {
		return "all namespaces"
	}
	return fmt.Sprintf("shard %d of %d", s.Index, s.Count)
}
