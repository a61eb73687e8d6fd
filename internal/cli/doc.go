// Package cli holds tailor's command-line verbs. Each verb lives in its own
// file with an Options type following kubectl's Complete/Validate/Run shape,
// so verbs are testable without a process and main.go only wires them.
package cli
