package javaheap

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/tailorhq/tailor/internal/agent/report"
	"github.com/tailorhq/tailor/internal/jvm/perfdata"
	"github.com/tailorhq/tailor/internal/jvm/softmax"
)

const mi = 1 << 20

func TestPlan(t *testing.T) {
	now := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	zgc := perfdata.JVM{Collector: perfdata.ZGC, HeapMax: 1024 * mi, HeapCommitted: 300 * mi, MetaspaceCommitted: 40 * mi, Attachable: true}
	// 1Gi limit, 400Mi working set: non-heap 100Mi, headroom 102.4Mi.
	rc := &report.Container{MemoryLimit: 1024 * mi, WorkingSet: 400 * mi}
	type want struct {
		Set     bool
		SoftMax int64
		Note    string // a part of it
	}
	for name, tc := range map[string]struct {
		mode      Mode
		jvm       perfdata.JVM
		processes int
		st        state
		want      want
	}{
		"zgc, first bound":  {mode: SoftMax, jvm: zgc, want: want{Set: true, SoftMax: 820 * mi}},
		"zgc, lowered":      {mode: SoftMax, jvm: zgc, st: state{softMax: 1024 * mi}, want: want{Set: true, SoftMax: 820 * mi}},
		"zgc, a small step": {mode: SoftMax, jvm: zgc, st: state{softMax: 812 * mi}, want: want{SoftMax: 812 * mi}},
		"read mode":         {mode: Read, jvm: zgc, want: want{Note: "--jvm=read"}},
		"g1 refused": {mode: SoftMax, jvm: perfdata.JVM{Collector: perfdata.G1, HeapMax: 1024 * mi, Attachable: true},
			want: want{Note: "runs G1, which does not honour SoftMaxHeapSize"}},
		"two jvms":             {mode: SoftMax, jvm: zgc, processes: 2, want: want{Note: "2 JVMs"}},
		"attach disabled":      {mode: SoftMax, jvm: perfdata.JVM{Collector: perfdata.ZGC, HeapMax: 1024 * mi}, want: want{Note: "DisableAttachMechanism"}},
		"failed a moment ago":  {mode: SoftMax, jvm: zgc, st: state{failedAt: now.Add(-10 * time.Second), note: "setting failed: x"}, want: want{Note: "setting failed"}},
		"failed a while ago":   {mode: SoftMax, jvm: zgc, st: state{failedAt: now.Add(-2 * retryAfter), note: "setting failed: x"}, want: want{Set: true, SoftMax: 820 * mi}},
		"shenandoah, no limit": {mode: SoftMax, jvm: perfdata.JVM{Collector: perfdata.Shenandoah, HeapMax: 512 * mi, Attachable: true}, want: want{Set: true, SoftMax: 512 * mi}},
	} {
		t.Run(name, func(t *testing.T) {
			c := *rc
			if tc.jvm.Collector == perfdata.Shenandoah {
				c.MemoryLimit = 0
			}
			st := tc.st
			s := plan(tc.mode, now, tc.jvm, max(tc.processes, 1), &c, &st)
			got := want{Set: s.set, SoftMax: s.softMax, Note: tc.want.Note}
			if tc.want.Note != "" && !strings.Contains(s.note, tc.want.Note) {
				got.Note = s.note
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want,+got):\n%s", diff)
			}
			if s.set && s.softMax+nonHeap(tc.jvm, c.WorkingSet)+softmax.Headroom(int64(c.MemoryLimit)) > int64(c.MemoryLimit) && c.MemoryLimit > 0 {
				t.Errorf("bound %d does not fit the limit", s.softMax)
			}
		})
	}
}

// The non-heap is the working set less the committed heap, or the JVM's
// own counters where those say more.
func TestNonHeap(t *testing.T) {
	j := perfdata.JVM{HeapCommitted: 300 * mi, MetaspaceCommitted: 40 * mi, CodeSize: 10 * mi}
	for ws, want := range map[uint64]int64{400 * mi: 100 * mi, 320 * mi: 50 * mi, 100 * mi: 50 * mi, 0: 50 * mi} {
		if got := nonHeap(j, ws); got != want {
			t.Errorf("working set %dMi: non-heap %dMi, want %dMi", ws/mi, got/mi, want/mi)
		}
	}
}

func TestParseMode(t *testing.T) {
	for _, ok := range []string{"off", "read", "softmax"} {
		if _, err := ParseMode(ok); err != nil {
			t.Errorf("%s: %v", ok, err)
		}
	}
	if _, err := ParseMode("on"); err == nil {
		t.Errorf("on taken")
	}
}
