package replay

import (
	"fmt"
	"os"
	"sort"
	"testing"
	"time"

	"github.com/tailorhq/tailor/internal/recommend"
)

func TestExplore(t *testing.T) {
	if os.Getenv("EXPLORE") == "" {
		t.Skip()
	}
	t0 := time.Now()
	ss, err := ReadPaths([]string{"/work/shared/traces/bitbrains-rnd/2013-7"}, FormatAuto)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("read %d series in %v", len(ss), time.Since(t0))
	var pols []Policy
	for i, mut := range []func(*recommend.Config){
		func(c *recommend.Config) {},
		func(c *recommend.Config) { c.ThrottleBump = 1 },
		func(c *recommend.Config) { c.ThrottleBump = 1.1 },
	} {
		c := recommend.DefaultConfig()
		mut(&c)
		p, err := NewTailor(fmt.Sprint("t", i), c)
		if err != nil {
			t.Fatal(err)
		}
		pols = append(pols, p)
	}
	if h := os.Getenv("HALF"); h != "" {
		var keep []Series
		for _, s := range ss {
			n := 0
			fmt.Sscan(s.Name, &n)
			if fmt.Sprint(n%2) == h {
				keep = append(keep, s)
			}
		}
		ss = keep
	}
	t1 := time.Now()
	rep, err := Run(ss, pols, DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("usable %d in %v", len(rep.Series), time.Since(t1))
	type row struct {
		name             string
		used, prov, over float64
	}
	for pi := range pols[:0] {
		var rows []row
		for _, sr := range rep.Series {
			c := sr.Policies[pi].Memory
			rows = append(rows, row{sr.Name, c.SumUsed / float64(c.Samples), c.SumProvisioned / float64(c.Samples), c.OverPct()})
		}
		sort.Slice(rows, func(i, j int) bool { return rows[i].prov-rows[i].used > rows[j].prov-rows[j].used })
		for _, r := range rows[:25] {
			t.Logf("%s used %.3f prov %.3f ratio %.2f over %.2f%%", r.name, r.used/(1<<30), r.prov/(1<<30), r.prov/r.used, r.over)
		}
	}
	for _, p := range rep.Policies {
		t.Logf("%-22s cpu %.2fx %.2f%% p90 %.2f%% %.1f/d   mem %.2fx %.3f%% p90 %.2f%% %.1f/d", p.Policy, p.CPU.ProvisionedOverUsed, p.CPU.OverPct, p.CPU.OverPctP90, p.CPU.ChangesPerDay, p.Memory.ProvisionedOverUsed, p.Memory.OverPct, p.Memory.OverPctP90, p.Memory.ChangesPerDay)
	}
}
