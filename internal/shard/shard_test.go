package shard

import (
	"fmt"
	"testing"
)

func namespaces(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("team-%04d", i)
	}
	return out
}

// Every namespace is owned by exactly one shard, whatever the count.
func TestEveryNamespaceHasOneOwner(t *testing.T) {
	for count := 1; count <= 8; count++ {
		for _, ns := range namespaces(2000) {
			owners := 0
			for i := 0; i < count; i++ {
				if (Shard{Index: i, Count: count}).Owns(ns) {
					owners++
				}
			}
			if owners != 1 {
				t.Fatalf("%d shards: namespace %s has %d owners", count, ns, owners)
			}
		}
	}
}

// The shards' shares are near even: a shard's load is what it owns.
func TestSharesAreEven(t *testing.T) {
	const n = 10000
	for _, count := range []int{2, 3, 4, 7} {
		per := make([]int, count)
		for _, ns := range namespaces(n) {
			per[Of(ns, count)]++
		}
		for i, got := range per {
			want := n / count
			if got < want*9/10 || got > want*11/10 {
				t.Errorf("%d shards: shard %d owns %d of %d namespaces, want %d within 10%%", count, i, got, n, want)
			}
		}
	}
}

// Adding a shard moves namespaces only to the new shard, about 1/(n+1) of
// them: resharding leaves the others' policies where they were.
func TestGrowingMovesOnlyToTheNewShard(t *testing.T) {
	all := namespaces(10000)
	for count := 1; count < 8; count++ {
		moved := 0
		for _, ns := range all {
			before, after := Of(ns, count), Of(ns, count+1)
			if before == after {
				continue
			}
			if after != count {
				t.Fatalf("%d -> %d shards: %s moved from %d to %d, not to the new shard", count, count+1, ns, before, after)
			}
			moved++
		}
		want := len(all) / (count + 1)
		if moved < want*8/10 || moved > want*12/10 {
			t.Errorf("%d -> %d shards: %d namespaces moved, want about %d", count, count+1, moved, want)
		}
	}
}

func TestValidate(t *testing.T) {
	cases := map[string]struct {
		s       Shard
		wantErr bool
	}{
		"zero value":     {s: Shard{}},
		"one":            {s: Shard{Count: 1}},
		"last of three":  {s: Shard{Index: 2, Count: 3}},
		"index too big":  {s: Shard{Index: 3, Count: 3}, wantErr: true},
		"index negative": {s: Shard{Index: -1, Count: 3}, wantErr: true},
		"count negative": {s: Shard{Count: -2}, wantErr: true},
		"too many":       {s: Shard{Count: MaxCount + 1}, wantErr: true},
		"index unshared": {s: Shard{Index: 1, Count: 1}, wantErr: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if err := tc.s.Validate(); (err != nil) != tc.wantErr {
				t.Errorf("Validate() = %v, want error %v", err, tc.wantErr)
			}
		})
	}
}

func TestLeaseName(t *testing.T) {
	if got := (Shard{Count: 1}).LeaseName("tailor-manager"); got != "tailor-manager" {
		t.Errorf("unsharded lease %q, want the name from before shards", got)
	}
	if got := (Shard{Index: 1, Count: 3}).LeaseName("tailor-manager"); got != "tailor-manager-shard-1-of-3" {
		t.Errorf("lease %q", got)
	}
}
