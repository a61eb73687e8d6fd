package javaheap

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"

	"github.com/tailorhq/tailor/internal/agent/cgroup"
	"github.com/tailorhq/tailor/internal/agent/report"
	"github.com/tailorhq/tailor/internal/jvm/attach"
	"github.com/tailorhq/tailor/internal/jvm/jvmtest"
	"github.com/tailorhq/tailor/internal/jvm/perfdata"
	"github.com/tailorhq/tailor/internal/jvm/process"
	"github.com/tailorhq/tailor/internal/jvm/softmax"
)

const (
	podUID = "0a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d"
	zgcID  = "1111111111111111111111111111111111111111111111111111111111111111"
	g1ID   = "2222222222222222222222222222222222222222222222222222222222222222"
	noID   = "3333333333333333333333333333333333333333333333333333333333333333"
)

// A cgroup v1 tree whose containers' cgroup.procs name real processes:
// a ZGC JVM (in namespaces of its own, as in a container), a G1 JVM, and
// this test itself (no JVM). The watcher reports the JVMs' figures, moves
// ZGC's bound with its limit both ways, and refuses G1's plainly.
func TestWatcherOnRealJVMs(t *testing.T) {
	zgc := jvmtest.Start(t, jvmtest.Options{Flags: []string{"-XX:+UseZGC", "-Xmx512m"}, LiveMiB: 16, RateMiB: 20, Namespaced: true})
	g1 := jvmtest.Start(t, jvmtest.Options{Flags: []string{"-XX:+UseG1GC", "-Xmx256m"}, LiveMiB: 8, RateMiB: 10})
	root := t.TempDir()
	containers := map[string]cgroup.Container{}
	for id, pid := range map[string]int{zgcID: zgc.Process.PID, g1ID: g1.Process.PID, noID: os.Getpid()} {
		dir := filepath.Join("kubepods/burstable/pod"+podUID, id)
		if err := os.MkdirAll(filepath.Join(root, "memory", dir), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(root, "memory", dir, "cgroup.procs"), []byte(strconv.Itoa(pid)+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		containers[id] = cgroup.Container{PodUID: podUID, ID: id, Dir: dir}
	}
	w := &Watcher{Mode: SoftMax, Tree: cgroup.Tree{Root: root, Version: cgroup.V1}, Proc: "/proc", AttachTimeout: 10 * time.Second, Log: testr.New(t)}
	observe := func(limit uint64) map[string]*report.JVM {
		r := report.Report{}
		for _, id := range []string{zgcID, g1ID, noID} {
			r.Containers = append(r.Containers, report.Container{PodUID: podUID, ID: id, Time: time.Now(), MemoryLimit: limit, WorkingSet: 200 * mi})
		}
		w.Observe(context.Background(), time.Now(), &r, containers)
		if err := r.Validate(); err != nil {
			t.Fatalf("the report: %v", err)
		}
		out := map[string]*report.JVM{}
		for _, c := range r.Containers {
			out[c.ID] = c.JVM
		}
		return out
	}
	readBack := func() int64 {
		v, err := attach.SoftMax(context.Background(), zgc.Process)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}

	// 700Mi: headroom 70Mi; the non-heap is the 200Mi working set less
	// the committed heap, or the counters' few MiB: the bound is capped
	// by -Xmx512m only if that is less than 700 - non-heap - 70.
	for _, limit := range []uint64{700 * mi, 400 * mi, 1024 * mi} {
		got := observe(limit)
		z, g := got[zgcID], got[g1ID]
		if got[noID] != nil {
			t.Errorf("a container without a JVM reported one: %+v", got[noID])
		}
		if z == nil || g == nil {
			t.Fatalf("limit %dMi: ZGC %+v, G1 %+v", limit/mi, z, g)
		}
		t.Logf("limit %dMi: ZGC heap max %dMi committed %dMi, non-heap %dMi, SoftMaxHeapSize %dMi (read back %dMi) %s",
			limit/mi, z.HeapMax/mi, z.HeapCommitted/mi, z.NonHeap/mi, z.SoftMax/mi, readBack()/mi, z.SoftMaxNote)
		if z.Collector != "ZGC" || z.HeapMax != 512*mi || z.Processes != 1 {
			t.Errorf("ZGC's figures: %+v", z)
		}
		if z.SoftMax == 0 || z.SoftMaxLimit != limit || int64(z.SoftMax) != readBack() {
			t.Errorf("limit %dMi: bound %d for limit %d, reads %d", limit/mi, z.SoftMax, z.SoftMaxLimit, readBack())
		}
		if z.SoftMax > z.HeapMax || z.SoftMax+z.NonHeap > limit {
			t.Errorf("limit %dMi: bound %dMi with %dMi non-heap does not fit", limit/mi, z.SoftMax/mi, z.NonHeap/mi)
		}
		if g.Collector != "G1" || g.HeapMax < 256*mi || g.SoftMax != 0 || !strings.Contains(g.SoftMaxNote, "G1, which does not honour SoftMaxHeapSize") {
			t.Errorf("G1's figures: %+v", g)
		}
	}

	if v, err := attach.SoftMax(context.Background(), g1.Process); err != nil || v != 256*mi {
		t.Errorf("G1's SoftMaxHeapSize moved: %d, %v", v, err)
	}
}

// softMaxLimit is what the report alone cannot say otherwise: the limit
// the JVM's bound fits, which lags the container's while an attach
// fails, and is 0 where no bound fits.
func TestActSaysWhichLimitTheBoundFits(t *testing.T) {
	now := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	zgc := perfdata.JVM{Collector: perfdata.ZGC, HeapMax: 2048 * mi, HeapCommitted: 300 * mi, Attachable: true}
	// A proc with no process in it: an attach fails before any signal.
	gone := found{p: process.Process{Proc: t.TempDir(), PID: 1, NSPID: 1}, jvm: zgc}
	w := &Watcher{Mode: SoftMax, AttachTimeout: time.Second, Log: testr.New(t)}
	for name, tc := range map[string]struct {
		limit, workingSet uint64
		st                state
		want              uint64
		note              string
	}{
		"a raise whose attach failed": {limit: 2048 * mi, workingSet: 400 * mi, st: state{softMax: 820 * mi, limit: 1024 * mi},
			want: 1024 * mi, note: "setting SoftMaxHeapSize failed"},
		"kept within a step": {limit: 1024 * mi, workingSet: 400 * mi, st: state{softMax: 812 * mi, limit: 1000 * mi}, want: 1024 * mi},
		"no bound fits":      {limit: 100 * mi, workingSet: 360 * mi, st: state{softMax: softmax.MinSoftMax, limit: 1024 * mi}},
	} {
		t.Run(name, func(t *testing.T) {
			st := tc.st
			rc := &report.Container{ID: zgcID, MemoryLimit: tc.limit, WorkingSet: tc.workingSet}
			w.act(context.Background(), now, gone, 1, rc, &st)
			if st.limit != tc.want || !strings.Contains(st.note, tc.note) {
				t.Errorf("fits %dMi (note %q), want %dMi (note with %q)", st.limit/mi, st.note, tc.want/mi, tc.note)
			}
			if st.softMax != tc.st.softMax {
				t.Errorf("bound %dMi, want it kept at %dMi", st.softMax/mi, tc.st.softMax/mi)
			}
			// Within the retry's wait the bound is not tried again, and
			// still fits what it fitted.
			w.act(context.Background(), now.Add(time.Second), gone, 1, rc, &st)
			if st.limit != tc.want {
				t.Errorf("a second later: fits %dMi, want %dMi", st.limit/mi, tc.want/mi)
			}
		})
	}
}
