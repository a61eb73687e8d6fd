package agent

import (
	"fmt"
	"testing"
	"time"

	"github.com/tailorhq/tailor/internal/agent/cgroup"
)

// BenchmarkSample100 is one tick of the agent on a node of 100 containers
// (a cgroup v1 tree as this machine's kubelet lays it out, on tmpfs-like
// files): list, read every container's files, judge, and report. At one
// tick a second, ns/op divided by 1e9 is the share of a core it costs;
// the cluster measurement (make bench-e2e) is the agent's whole cost.
func BenchmarkSample100(b *testing.B) {
	root := b.TempDir()
	for i := range 100 {
		uid := fmt.Sprintf("%08x-0000-4000-8000-%012x", i/4, i/4)
		id := fmt.Sprintf("%064x", i)
		files := map[string]string{
			"cpuacct/kubepods/burstable/pod" + uid + "/" + id + "/cpuacct.usage":        "123456789\n",
			"cpu/kubepods/burstable/pod" + uid + "/" + id + "/cpu.stat":                 "nr_periods 100\nnr_throttled 3\nthrottled_time 1000\nnr_bursts 0\nburst_time 0\n",
			"memory/kubepods/burstable/pod" + uid + "/" + id + "/memory.usage_in_bytes": "104857600\n",
			"memory/kubepods/burstable/pod" + uid + "/" + id + "/memory.limit_in_bytes": "268435456\n",
			"memory/kubepods/burstable/pod" + uid + "/" + id + "/memory.stat":           v1MemoryStat,
			"memory/kubepods/burstable/pod" + uid + "/" + id + "/memory.failcnt":        "0\n",
			"memory/kubepods/burstable/pod" + uid + "/" + id + "/memory.oom_control":    "oom_kill_disable 0\nunder_oom 0\noom_kill 0\n",
		}
		writeFiles(b, root, files)
	}
	tree := cgroup.Tree{Root: root, Version: cgroup.V1}
	col := NewCollector(DefaultThresholds())
	rd := newReader(tree)
	defer rd.close()
	now := t0
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		now = now.Add(time.Second)
		if _, err := rd.sample(col, now); err != nil {
			b.Fatal(err)
		}
		col.Report()
	}
	if col.Len() != 100 {
		b.Fatalf("tracked %d containers, want 100", col.Len())
	}
}

// v1MemoryStat is a container's memory.stat as this machine's kernel
// writes it (6.18, cgroup v1): the agent parses all of it each tick.
const v1MemoryStat = `cache 4096
rss 104853504
rss_huge 0
shmem 0
mapped_file 0
dirty 0
writeback 0
pgpgin 25600
pgpgout 0
pgfault 25700
pgmajfault 0
inactive_anon 104853504
active_anon 0
inactive_file 4096
active_file 0
unevictable 0
hierarchical_memory_limit 268435456
total_cache 4096
total_rss 104853504
total_rss_huge 0
total_shmem 0
total_mapped_file 0
total_dirty 0
total_writeback 0
total_pgpgin 25600
total_pgpgout 0
total_pgfault 25700
total_pgmajfault 0
total_inactive_anon 104853504
total_active_anon 0
total_inactive_file 4096
total_active_file 0
total_unevictable 0
`
