package store

import (
	"fmt"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/tailorhq/tailor/internal/autoscale/lowering/limits"
)

// TestLedgerForgetsTheHour: what the ledger recorded counts for the
// budget's period, each pod at its latest lowering, and no longer.
func TestLedgerForgetsTheHour(t *testing.T) {
	var l Ledger
	at := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	l.Record("team", "web", limits.Lowered{"a": at, "b": at.Add(10 * time.Minute)}, at.Add(10*time.Minute))
	l.Record("team", "web", limits.Lowered{"a": at.Add(20 * time.Minute)}, at.Add(20*time.Minute))
	l.Record("team", "api", limits.Lowered{"c": at.Add(5 * time.Minute)}, at.Add(20*time.Minute))
	got := l.Sent("team", at.Add(65*time.Minute))
	want := limits.LoweredBy{"web": {"a": at.Add(20 * time.Minute), "b": at.Add(10 * time.Minute)}}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("sent at +65m: %v, want %v: c is an hour old, a counts from its second lowering", got, want)
	}
	if got := l.Sent("other", at); len(got) != 0 {
		t.Errorf("another namespace: %v, want nothing", got)
	}
	var none map[types.UID]time.Time
	l.Record("team", "web", none, at.Add(2*time.Hour))
	if got := l.Sent("team", at.Add(2*time.Hour)); len(got) != 0 {
		t.Errorf("two hours on: %v, want nothing", got)
	}
}
