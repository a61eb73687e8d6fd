package agent

import (
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"
)

// stepSecond steps Run's fake clock by a second once Run waits on it, and
// fails unless the pushes counted reach exactly want: Run pushes from its
// own goroutine, so the count is waited for (5s at most) and read again a
// moment later, which a push too many would have reached by then.
func stepSecond(t *testing.T, clk *clocktesting.FakeClock, t0 time.Time, count func() int, want int) {
	t.Helper()
	for !clk.HasWaiters() {
		time.Sleep(time.Millisecond)
	}
	clk.Step(time.Second)
	deadline := time.Now().Add(5 * time.Second)
	for count() < want && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	time.Sleep(20 * time.Millisecond)
	if n := count(); n != want {
		t.Fatalf("at %s: %d pushes, want %d", clk.Now().Sub(t0), n, want)
	}
}
