// Package buildinfo says which build of tailor is running: what `tailor
// version` prints, what the manager and the agent log when they start, and
// the tailor_build_info metric. The release build stamps its version and
// commit here with -ldflags -X.
package buildinfo
