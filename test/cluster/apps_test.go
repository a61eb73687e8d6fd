package cluster

import (
	"strings"
	"testing"
)

// The lines are what each client printed here (redis-benchmark 7 with -q,
// pgbench 15 with -P 10, test/images/jvm Load), as the stage's awk
// prefixes them.
func TestSamplesReadEachClient(t *testing.T) {
	for _, tc := range []struct {
		app, log string
		want     []Sample
	}{{
		app: "redis",
		log: "peak \rSET: rps=0.0 (overall: -nan) avg_msec=-nan (overall: -nan)\r      \rSET: 62500.00 requests per second, p50=0.095 msec\n" +
			"peak \rGET: 124999.99 requests per second, p50=0.047 msec\nramp \n",
		want: []Sample{{"peak", 62500, 0.095}, {"peak", 124999.99, 0.047}},
	}, {
		app: "postgres",
		log: "ramp pgbench (15.14 (Debian 15.14-0+deb12u1))\nramp progress: 10.0 s, 312.4 tps, lat 6.391 ms stddev 2.114, 0 failed\n" +
			"ramp latency average = 6.402 ms\npeak progress: 20.0 s, 1045.9 tps, lat 7.640 ms stddev 3.417, 0 failed\n",
		want: []Sample{{"ramp", 312.4, 6.391}, {"peak", 1045.9, 7.640}},
	}, {
		app:  "jvm-zgc",
		log:  "idle \npeak rps=40.6 mean_ms=49.18 p50_ms=48.00 p99_ms=56.53 errors=0\ndone\n",
		want: []Sample{{"peak", 40.6, 48}},
	}} {
		a, ok := RealApp(tc.app)
		if !ok {
			t.Fatalf("no application %q", tc.app)
		}
		got := a.Samples(tc.log)
		if len(got) != len(tc.want) {
			t.Fatalf("%s: %d samples %v, want %v", tc.app, len(got), got, tc.want)
		}
		for i := range got {
			if got[i] != tc.want[i] {
				t.Errorf("%s: sample %d is %+v, want %+v", tc.app, i, got[i], tc.want[i])
			}
		}
	}
}

func TestStageFiguresAreMedians(t *testing.T) {
	s := []Sample{{"peak", 10, 5}, {"ramp", 1, 1}, {"peak", 30, 1}, {"peak", 20, 9}}
	per, lat, n := StageFigures(s, "peak")
	if per != 20 || lat != 5 || n != 3 {
		t.Errorf("peak: %v/s, %v ms over %d samples, want 20/s, 5 ms over 3", per, lat, n)
	}
	if per, lat, n := StageFigures(s, "idle"); per != 0 || lat != 0 || n != 0 {
		t.Errorf("idle: %v/s, %v ms over %d samples, want nothing", per, lat, n)
	}
}

// Every stage of the script is prefixed by its name, and idle stages only
// sleep.
func TestScriptNamesEachStage(t *testing.T) {
	a, _ := RealApp("postgres")
	s := a.Script(Stage{"idle", 0, 30}, Stage{"peak", 8, 90})
	for _, want := range []string{"pgbench -q -h \"$SERVER\" -U postgres -i -s 5", "sleep 30\n} 2>&1 | awk '{print \"idle \" $0; fflush()}'",
		"-c 8 -j 2 -T 90 -P 10 postgres\n} 2>&1 | awk '{print \"peak \" $0; fflush()}'", "echo done"} {
		if !strings.Contains(s, want) {
			t.Errorf("the script lacks %q:\n%s", want, s)
		}
	}
}
