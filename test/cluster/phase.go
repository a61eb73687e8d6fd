package cluster

import (
	"os"
	"testing"
)

// PhaseEnv names the phase of the suite a run of the cluster tests is in:
// hack/e2e.sh runs the suite once per phase on one cluster. Unset (a
// developer's `go test -run X`), every test runs, the ones that share the
// node in parallel after the others.
const PhaseEnv = "TAILOR_E2E_PHASE"

// The phases. Every test of a cluster suite declares which one it belongs
// to by calling Shared or Quiet first (TestEveryClusterTestNamesItsPhase
// fails the tests that do not), so no test is left out of both and none runs
// in both.
const (
	// PhaseShared runs, side by side, the tests that only touch their own
	// namespace (their manager is scoped to it) and ask the node for little
	// room.
	PhaseShared = "shared"
	// PhaseQuiet runs, one at a time, the tests that need the node to
	// themselves: they fill it, count its free room, compare CPU figures,
	// install cluster-wide objects or run a manager that sees every
	// namespace.
	PhaseQuiet = "quiet"
	// PhaseApps runs, one at a time, the real applications under tailor
	// (PostgreSQL, Redis, a JVM): minutes of load each, on images the gate
	// does not build, so only hack/e2e.sh's apps phase runs them.
	PhaseApps = "apps"
)

// Phase is the phase this run is in, "" for all of them.
func Phase() string { return os.Getenv(PhaseEnv) }

// Offline marks t as a test of a cluster suite's package that needs no
// cluster (a render, a parse): make check runs it (test/deploy's
// deploy-render step), so each phase of the cluster suite skips it rather
// than run it twice more.
func Offline(t *testing.T) {
	t.Helper()
	if Phase() != "" {
		t.Skip("needs no cluster: make check runs it")
	}
}

// Shared marks t as a test that can share the node with the other Shared
// tests: it runs in parallel with them, and is skipped in the quiet phase.
func Shared(t *testing.T) {
	t.Helper()
	if Phase() == PhaseQuiet || Phase() == PhaseApps {
		t.Skip("shares the node: runs in the shared phase")
	}
	t.Parallel()
}

// Quiet marks t as a test that needs the node to itself: it runs alone, in
// the quiet phase (or before the Shared tests when every phase runs at
// once, as go test runs sequential tests before parallel ones), and is
// skipped in the shared phase.
func Quiet(t *testing.T) {
	t.Helper()
	if Phase() == PhaseShared || Phase() == PhaseApps {
		t.Skip("needs the node to itself: runs in the quiet phase")
	}
}

// Apps marks t as a test of a real application under load: it needs the
// node to itself for minutes and an image of hack/apps.sh, so it runs in
// the apps phase only (make e2e-apps), or when a developer names it.
func Apps(t *testing.T) {
	t.Helper()
	if Phase() != PhaseApps && Phase() != "" {
		t.Skip("a real application: runs in the apps phase (make e2e-apps)")
	}
}
