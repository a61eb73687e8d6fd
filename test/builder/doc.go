// Package builder holds the fluent builders tailor's tests use to make pods,
// nodes, LimitRanges and ResourceQuotas, so unit tests, the apiserver oracle
// and e2e suites describe objects the same way and a change to a default
// (image, namespace) happens in one place.
package builder
