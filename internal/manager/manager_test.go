package manager

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/tailorhq/tailor/internal/shard"
)

func TestKubeletShareFor(t *testing.T) {
	cases := map[string]struct {
		syncPeriod time.Duration
		want       time.Duration
	}{
		"default 10s period: the source's 5s":       {syncPeriod: 10 * time.Second, want: 5 * time.Second},
		"long period: still 5s":                     {syncPeriod: time.Minute, want: 5 * time.Second},
		"short period: half of it":                  {syncPeriod: 2 * time.Second, want: time.Second},
		"no period given: the source's default (0)": {syncPeriod: 0, want: 0},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := kubeletShareFor(tc.syncPeriod); got != tc.want {
				t.Errorf("kubeletShareFor(%s) = %s, want %s", tc.syncPeriod, got, tc.want)
			}
		})
	}
}

// Options.Namespaces narrow the shard; a bad name, or a shard scoped to
// other namespaces, is refused with what to change.
func TestScope(t *testing.T) {
	cases := map[string]struct {
		o       Options
		want    shard.Shard
		wantErr string
	}{
		"all":        {o: Options{}, want: shard.Shard{}},
		"namespaces": {o: Options{Namespaces: []string{"team-a", "team-b"}}, want: shard.Shard{Namespaces: []string{"team-a", "team-b"}}},
		"split": {o: Options{Namespaces: []string{"team-a"}, Shard: shard.Shard{Index: 1, Count: 2}},
			want: shard.Shard{Index: 1, Count: 2, Namespaces: []string{"team-a"}}},
		"set twice alike": {o: Options{Namespaces: []string{"team-a"}, Shard: shard.Shard{Namespaces: []string{"team-a"}}},
			want: shard.Shard{Namespaces: []string{"team-a"}}},
		"set on the shard only": {o: Options{Shard: shard.Shard{Namespaces: []string{"team-a"}}},
			want: shard.Shard{Namespaces: []string{"team-a"}}},
		"set twice apart": {o: Options{Namespaces: []string{"team-a"}, Shard: shard.Shard{Namespaces: []string{"team-b"}}},
			wantErr: "set Options.Namespaces only"},
		"bad name":  {o: Options{Namespaces: []string{"Team_A"}}, wantErr: `the manager's namespaces: namespace "Team_A" is not a namespace name`},
		"twice":     {o: Options{Namespaces: []string{"team-a", "team-a"}}, wantErr: `namespace "team-a" is listed twice`},
		"bad shard": {o: Options{Shard: shard.Shard{Index: 2, Count: 2}}, wantErr: "shard index 2"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := tc.o.scope()
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("scope() error %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("scope(): %v", err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("scope() (-want,+got):\n%s", diff)
			}
		})
	}
}
