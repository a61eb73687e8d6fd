package main

import (
	"strings"
	"testing"
	"time"

	"github.com/tailorhq/tailor/test/cluster"
)

// TestCheckTakeover checks the medians of the takeover trials against the
// repository's own ranges.json, whose "takeover" entry must parse.
func TestCheckTakeover(t *testing.T) {
	at := func(lease, resize float64) failover {
		return failover{lease: time.Duration(lease * float64(time.Second)), resize: time.Duration(resize * float64(time.Second))}
	}
	typical := takeoverResult{
		crash:    []failover{at(9.1, 10.0), at(9.7, 10.9), at(10.0, 11.2)},
		graceful: []failover{at(1.2, 2.0), at(1.8, 3.1), at(2.1, 3.0)},
	}
	for name, tc := range map[string]struct {
		takeover takeoverResult
		wantErr  string
	}{
		"within the bounds": {takeover: typical},
		"one slow crash of three: the median holds": {takeover: takeoverResult{
			crash: []failover{at(9.1, 10.0), at(20, 25), at(10.0, 11.2)}, graceful: typical.graceful,
		}},
		"a graceful stop waiting out the lease": {
			takeover: takeoverResult{crash: typical.crash, graceful: []failover{at(9.0, 10.0), at(9.5, 10.5), at(1.0, 2.0)}},
			wantErr:  "takeover after SIGTERM: median 9.0s to the lease",
		},
		"a crash takeover later than the lease allows, its resize in time": {
			takeover: takeoverResult{crash: []failover{at(14.0, 15.0), at(14.2, 15.2), at(9.0, 10.0)}, graceful: typical.graceful},
			wantErr:  "takeover after SIGKILL: median 14.0s to the lease",
		},
		"a failed crash trial": {
			takeover: takeoverResult{crash: typical.crash[:2], crashFailures: 1, graceful: typical.graceful},
			wantErr:  "takeover after SIGKILL",
		},
		"no graceful figure": {
			takeover: takeoverResult{crash: typical.crash, gracefulFailures: 3},
			wantErr:  "takeover after SIGTERM",
		},
	} {
		t.Run(name, func(t *testing.T) {
			err := check("ranges.json", nil, nil, nil, nil, nil, &tc.takeover, nil)
			switch {
			case tc.wantErr == "" && err != nil:
				t.Errorf("check: %v, want nil", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Errorf("check: %v, want an error containing %q", err, tc.wantErr)
			}
		})
	}
}

func TestCheckApps(t *testing.T) {
	bounds := []byte(`{"redis": {"latencyRatioMax": 1.5, "throughputRatioMin": 0.7}}`)
	fixed := []appRun{{perSecond: 1000, latencyMs: 2}}
	for _, tc := range []struct {
		name   string
		tailor appRun
		bad    bool
	}{
		{"within", appRun{perSecond: 800, latencyMs: 2.8}, false},
		{"slower", appRun{perSecond: 800, latencyMs: 3.2}, true},
		{"fewer", appRun{perSecond: 600, latencyMs: 2}, true},
		{"killed", appRun{perSecond: 1000, latencyMs: 2, oomKills: 1}, true},
		{"restarted", appRun{perSecond: 1000, latencyMs: 2, restarts: 1}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bad, err := checkApps(bounds, []appResult{{app: cluster.App{Name: "redis"}, fixed: fixed, tailor: []appRun{tc.tailor}}})
			if err != nil {
				t.Fatal(err)
			}
			if (len(bad) > 0) != tc.bad {
				t.Errorf("outside the ranges: %v, want %v", bad, tc.bad)
			}
		})
	}
}
