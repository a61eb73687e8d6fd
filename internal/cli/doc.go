// Package cli is tailor's command tree: the root command and the wiring of
// each verb's package under it, as kubectl wires pkg/cmd/<verb>. A verb
// lives in a package of its own with an Options type following kubectl's
// Complete/Validate/Run shape, so verbs are testable without a process and
// main.go only calls Execute; what several verbs share (clients, exit codes,
// flags, build info) lives in small packages beside them that import no verb.
package cli
