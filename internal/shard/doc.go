// Package shard says which namespaces a manager owns when several managers
// split one cluster between them. A manager holds one lease per shard and
// syncs only the policies of the namespaces its shard owns; it still
// watches every pod, because a node's room counts every pod on it, but
// keeps of another shard's pods only what that count needs.
package shard
