package manager

import (
	"testing"
	"time"
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
