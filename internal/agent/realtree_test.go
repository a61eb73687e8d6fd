package agent

import (
	"os"
	"testing"
	"time"

	"github.com/tailorhq/tailor/internal/agent/cgroup"
)

// BenchmarkRealTree is one tick of the agent on this node's own cgroup
// tree (TAILOR_REAL_CGROUP=/sys/fs/cgroup, as root, on a cgroup v1 node
// with pods running): the kernel's side of the reads, which
// BenchmarkSample100's files cannot show. Skipped elsewhere.
func BenchmarkRealTree(b *testing.B) {
	root := os.Getenv("TAILOR_REAL_CGROUP")
	if root == "" {
		b.Skip("TAILOR_REAL_CGROUP unset")
	}
	tree := cgroup.Tree{Root: root, Version: cgroup.V1}
	col := NewCollector(DefaultThresholds())
	rd := newReader(tree)
	defer rd.close()
	now := t0
	for b.Loop() {
		now = now.Add(time.Second)
		if _, err := rd.sample(col, now); err != nil {
			b.Fatal(err)
		}
		col.Report()
	}
	b.ReportMetric(float64(col.Len()), "containers")
}
