// Package printing holds the few ways of writing a value that more than one
// verb's human output shares, so that a resource the status table, the
// resize preflight and the demo all show reads the same in each.
package printing
