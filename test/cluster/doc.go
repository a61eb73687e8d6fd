// Package cluster holds what several test suites do to the local cluster
// before they start, such as installing tailor's CRDs, so each suite does not
// carry its own copy.
package cluster
