package shard

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"hash/fnv"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
)

// Shard is one of Count slices of the namespaces a manager may own: those
// of Namespaces, or every namespace of the cluster when it is empty. The
// zero value and Count 1 with no Namespaces own every namespace.
//
// Namespaces scope a manager to a tenant (one manager per team, or one per
// e2e test): everything namespaced it watches but pods is watched in those
// namespaces only. Shards then split that set as they split the cluster.
type Shard struct {
	Index int
	Count int
	// Namespaces, when set, are the only namespaces any shard of s owns.
	Namespaces []string
}

// Validate says what is wrong with s, if anything.
func (s Shard) Validate() error {
	if s.Count < 0 || s.Count > MaxCount {
		return fmt.Errorf("shard count %d: want 1 to %d", s.Count, MaxCount)
	}
	if s.Index < 0 || s.Index >= max(1, s.Count) {
		return fmt.Errorf("shard index %d: want 0 to %d", s.Index, max(1, s.Count)-1)
	}
	seen := make(map[string]bool, len(s.Namespaces))
	for _, ns := range s.Namespaces {
		if errs := validation.IsDNS1123Label(ns); len(errs) > 0 {
			return fmt.Errorf("namespace %q is not a namespace name (%s): list namespaces as kubectl get namespaces prints them, separated by commas", ns, strings.Join(errs, "; "))
		}
		if seen[ns] {
			return fmt.Errorf("namespace %q is listed twice: list each namespace once", ns)
		}
		seen[ns] = true
	}
	return nil
}

// MaxCount bounds the shard count: each shard still watches every pod, so
// past a handful of shards the apiserver's watch traffic grows with no
// saving left in any one manager.
const MaxCount = 64

// Sharded says whether s is one of several shards.
func (s Shard) Sharded() bool { return s.Count > 1 }

// Scoped says whether s is limited to its Namespaces.
func (s Shard) Scoped() bool { return len(s.Namespaces) > 0 }

// OwnsAll says whether s owns every namespace of the cluster.
func (s Shard) OwnsAll() bool { return !s.Sharded() && !s.Scoped() }

// InScope says whether namespace is one of s's Namespaces, which every
// namespace is when s is not scoped; a shard of s may still not own it.
func (s Shard) InScope(namespace string) bool {
	// A linear scan: a tenant has a handful of namespaces, and a map would
	// make Shard a value that cannot be compared or written as a literal.
	return !s.Scoped() || slices.Contains(s.Namespaces, namespace)
}

// Owns says whether namespace belongs to s. Policies are assigned by
// namespace, not one by one, so a shard can keep its own namespaces' pods
// whole and every other pod cut down to its requests.
func (s Shard) Owns(namespace string) bool {
	if !s.InScope(namespace) {
		return false
	}
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

// LeaseName is the leader election lease of s: base alone when s owns
// every namespace (as before shards and scopes existed); base with
// "-ns-" and a hash of the sorted namespace set when scoped, so that
// managers of different tenants never share a lease while replicas of one
// tenant's manager do, whatever order their namespaces were listed in;
// then the shard and the count when sharded, so that managers started with
// different counts never share a lease either. The hash (the first 8 hex
// digits of a SHA-256) keeps the name short and a valid lease name however
// many namespaces there are.
func (s Shard) LeaseName(base string) string {
	name := base
	if s.Scoped() {
		name += "-ns-" + namespacesHash(s.Namespaces)
	}
	if s.Sharded() {
		name += fmt.Sprintf("-shard-%d-of-%d", s.Index, s.Count)
	}
	return name
}

// namespacesHash is a short, stable digest of the set of namespaces.
func namespacesHash(namespaces []string) string {
	sorted := slices.Sorted(slices.Values(namespaces))
	// Namespace names hold no comma, so the joined list is unambiguous.
	sum := sha256.Sum256([]byte(strings.Join(sorted, ",")))
	return hex.EncodeToString(sum[:4])
}

// String names s in logs.
func (s Shard) String() string {
	var parts []string
	if s.Sharded() {
		parts = append(parts, fmt.Sprintf("shard %d of %d", s.Index, s.Count))
	}
	if s.Scoped() {
		parts = append(parts, "namespaces "+strings.Join(s.Namespaces, ", "))
	}
	if len(parts) == 0 {
		return "all namespaces"
	}
	return strings.Join(parts, " of ")
}
