package shard

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/util/validation"
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
		wantErr string
	}{
		"zero value":         {s: Shard{}},
		"one":                {s: Shard{Count: 1}},
		"last of three":      {s: Shard{Index: 2, Count: 3}},
		"index too big":      {s: Shard{Index: 3, Count: 3}, wantErr: "shard index 3: want 0 to 2"},
		"index negative":     {s: Shard{Index: -1, Count: 3}, wantErr: "shard index -1: want 0 to 2"},
		"count negative":     {s: Shard{Count: -2}, wantErr: "shard count -2: want 1 to 64"},
		"too many":           {s: Shard{Count: MaxCount + 1}, wantErr: "shard count 65: want 1 to 64"},
		"index unshared":     {s: Shard{Index: 1, Count: 1}, wantErr: "shard index 1: want 0 to 0"},
		"namespaces":         {s: Shard{Namespaces: []string{"team-a", "team-b", "0day"}}},
		"namespaces sharded": {s: Shard{Index: 1, Count: 2, Namespaces: []string{"team-a", "team-b"}}},
		"namespace empty":    {s: Shard{Namespaces: []string{"team-a", ""}}, wantErr: `namespace "" is not a namespace name`},
		"namespace upper":    {s: Shard{Namespaces: []string{"Team-A"}}, wantErr: `namespace "Team-A" is not a namespace name`},
		"namespace spaced":   {s: Shard{Namespaces: []string{" team-a"}}, wantErr: `namespace " team-a" is not a namespace name`},
		"namespace dotted":   {s: Shard{Namespaces: []string{"team.a"}}, wantErr: `namespace "team.a" is not a namespace name`},
		"namespace too long": {s: Shard{Namespaces: []string{strings.Repeat("a", 64)}}, wantErr: "is not a namespace name"},
		"namespace twice":    {s: Shard{Namespaces: []string{"team-a", "team-b", "team-a"}}, wantErr: `namespace "team-a" is listed twice: list each namespace once`},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			err := tc.s.Validate()
			switch {
			case tc.wantErr == "" && err != nil:
				t.Errorf("Validate() = %v, want no error", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Errorf("Validate() = %v, want an error containing %q", err, tc.wantErr)
			}
		})
	}
}

// A scoped shard owns only its namespaces; sharded, each of them is owned
// by the one shard the hash gives it, as it would be unscoped.
func TestOwns(t *testing.T) {
	tenant := []string{"team-a", "team-b", "team-c", "team-d", "team-e", "team-f"}
	cases := map[string]struct {
		s    Shard
		want []string
	}{
		"all":    {s: Shard{}, want: append(slices.Clone(tenant), "other", "kube-system")},
		"scoped": {s: Shard{Namespaces: []string{"team-a", "team-c"}}, want: []string{"team-a", "team-c"}},
		"one":    {s: Shard{Count: 1, Namespaces: []string{"team-b"}}, want: []string{"team-b"}},
	}
	for i := range 2 {
		var want []string
		for _, ns := range tenant {
			if Of(ns, 2) == i {
				want = append(want, ns)
			}
		}
		cases[fmt.Sprintf("shard %d of 2 of the tenant", i)] = struct {
			s    Shard
			want []string
		}{s: Shard{Index: i, Count: 2, Namespaces: tenant}, want: want}
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var got []string
			for _, ns := range append(slices.Clone(tenant), "other", "kube-system") {
				if tc.s.Owns(ns) {
					got = append(got, ns)
				}
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("owned namespaces (-want,+got):\n%s", diff)
			}
		})
	}
}

func TestLeaseName(t *testing.T) {
	const base = "tailor-manager"
	cases := map[string]struct {
		s    Shard
		want string
	}{
		// As before shards and scopes existed: upgrades keep the lease.
		"all":            {s: Shard{Count: 1}, want: "tailor-manager"},
		"sharded":        {s: Shard{Index: 1, Count: 3}, want: "tailor-manager-shard-1-of-3"},
		"scoped":         {s: Shard{Namespaces: []string{"team-a", "team-b"}}, want: "tailor-manager-ns-" + namespacesHash([]string{"team-a", "team-b"})},
		"scoped sharded": {s: Shard{Index: 1, Count: 3, Namespaces: []string{"team-a"}}, want: "tailor-manager-ns-" + namespacesHash([]string{"team-a"}) + "-shard-1-of-3"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, tc.s.LeaseName(base)); diff != "" {
				t.Errorf("LeaseName (-want,+got):\n%s", diff)
			}
			if errs := validation.IsDNS1123Subdomain(tc.s.LeaseName(base)); len(errs) > 0 {
				t.Errorf("lease name %q is not a valid object name: %v", tc.s.LeaseName(base), errs)
			}
		})
	}
}

// Replicas of one tenant's manager share a lease whatever order their
// namespaces were listed in; managers of different tenants never do.
func TestLeaseNameOfASet(t *testing.T) {
	const base = "tailor-manager"
	ab := Shard{Namespaces: []string{"team-a", "team-b"}}.LeaseName(base)
	ba := Shard{Namespaces: []string{"team-b", "team-a"}}.LeaseName(base)
	if ab != ba {
		t.Errorf("one set, two leases: %q and %q", ab, ba)
	}
	seen := map[string][]string{}
	for _, set := range [][]string{{"team-a"}, {"team-b"}, {"team-a", "team-b"}, {"team-a", "team-c"}, {"team-ab"}, {"team-a", "b"}} {
		name := Shard{Namespaces: set}.LeaseName(base)
		if other, ok := seen[name]; ok {
			t.Errorf("namespaces %q and %q share the lease %s", other, set, name)
		}
		seen[name] = set
	}
	if got := (Shard{Namespaces: []string{"a"}}).LeaseName(base); !strings.HasPrefix(got, base+"-ns-") || len(got) != len(base)+len("-ns-")+8 {
		t.Errorf("lease %q: want %s-ns- and 8 hex digits", got, base)
	}
}

func TestString(t *testing.T) {
	cases := map[string]struct {
		s    Shard
		want string
	}{
		"all":            {s: Shard{}, want: "all namespaces"},
		"sharded":        {s: Shard{Index: 1, Count: 2}, want: "shard 1 of 2"},
		"scoped":         {s: Shard{Namespaces: []string{"team-a", "team-b"}}, want: "namespaces team-a, team-b"},
		"scoped sharded": {s: Shard{Index: 0, Count: 2, Namespaces: []string{"team-a"}}, want: "shard 0 of 2 of namespaces team-a"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, tc.s.String()); diff != "" {
				t.Errorf("String (-want,+got):\n%s", diff)
			}
		})
	}
}
