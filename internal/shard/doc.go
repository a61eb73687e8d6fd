// Package shard says which namespaces a manager owns: those it is scoped
// to (one manager per tenant), split between several managers when they
// share one cluster or one tenant. A manager holds one lease per shard and
// scope and syncs only the policies of the namespaces it owns; it still
// watches every pod, because a node's room counts every pod on it, but
// keeps of other namespaces' pods only what that count needs.
package shard
