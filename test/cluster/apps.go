package cluster

import (
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tailorhq/tailor/api/v1alpha1"
	"github.com/tailorhq/tailor/test/builder"
)

// App is a real application as hack/apps.sh packs it, and the client that
// loads it from a pod of its own. The e2e apps phase and the application
// benchmark (make bench-e2e) run the same ones.
type App struct {
	Name, Image string
	// Command is the server's (empty: the image's); User the uid it runs
	// as (0: the image's).
	Command []string
	User    int64
	// Requests and Limits are cpu and memory at the start: a workload
	// sized for its quiet hours.
	Requests, Limits [2]string
	// Latency says which latency the client reports; Peak is how many
	// clients load it at its peak.
	Latency string
	Peak    int

	// prepare runs once before the stages; run is one stage of the load
	// at a number of clients for a number of seconds.
	prepare string
	run     func(clients, seconds int) string
	// sample reads one line of what the client printed.
	sample func(line string) (perSecond, latencyMs float64, ok bool)
}

// jvmService is test/images/jvm's service, run with options.
func jvmService(options ...string) []string {
	return append(append([]string{"/opt/java/bin/java"}, options...), "-jar", "/app/service.jar")
}

// The clients' lines: redis-benchmark -q's per command, pgbench -P's
// progress every 10 s, and test/images/jvm Load's every 10 s.
var (
	redisLine = regexp.MustCompile(`(SET|GET): ([0-9.]+) requests per second, p50=([0-9.]+) msec`)
	pgLine    = regexp.MustCompile(`progress: [0-9.]+ s, ([0-9.]+) tps, lat ([0-9.]+) ms`)
	jvmLine   = regexp.MustCompile(`rps=([0-9.]+) mean_ms=[0-9.]+ p50_ms=([0-9.]+)`)
)

func twoFloats(re *regexp.Regexp, line string, a, b int) (float64, float64, bool) {
	m := re.FindStringSubmatch(line)
	if m == nil {
		return 0, 0, false
	}
	x, err1 := strconv.ParseFloat(m[a], 64)
	y, err2 := strconv.ParseFloat(m[b], 64)
	return x, y, err1 == nil && err2 == nil
}

// javaLoad is the JVM client (test/images/jvm Load): threads sending
// requests of 20 ms of CPU that allocate 256 KiB as they go.
func javaLoad(clients, seconds int) string {
	return fmt.Sprintf(`/opt/java/bin/java -Xmx32m -cp /app/service.jar Load "http://$SERVER:8080/work?ms=20&kb=256" %d %d`, clients, seconds)
}

func javaSample(line string) (float64, float64, bool) { return twoFloats(jvmLine, line, 1, 2) }

// RealApps are the real applications: each starts at 100m of cpu limited at
// 200m and is driven past it.
var RealApps = []App{{
	// Redis, its dataset growing under SETs of 512-byte values over
	// 200,000 keys (about 100 MiB) while GETs read it.
	Name: "redis", Image: "tailor.local/redis:7", Latency: "p50 of SET and GET", Peak: 16,
	Requests: [2]string{"100m", "64Mi"}, Limits: [2]string{"200m", "320Mi"},
	run: func(clients, seconds int) string {
		return fmt.Sprintf(`end=$(( $(date +%%s) + %d ))
while [ "$(date +%%s)" -lt "$end" ]; do redis-benchmark -h "$SERVER" -q -t set,get -n 20000 -c %d -P 4 -d 512 -r 200000; done`, seconds, clients)
	},
	sample: func(line string) (float64, float64, bool) {
		// redis-benchmark -q redraws its line with carriage returns;
		// the last draw is the result.
		if i := strings.LastIndexByte(line, '\r'); i >= 0 {
			line = line[i+1:]
		}
		return twoFloats(redisLine, line, 2, 3)
	},
}, {
	// PostgreSQL 15 under pgbench's TPC-B-like transactions, scale 5.
	Name: "postgres", Image: "tailor.local/postgres:15", User: 999, Latency: "mean per transaction", Peak: 8,
	Requests: [2]string{"100m", "128Mi"}, Limits: [2]string{"200m", "512Mi"},
	prepare: `export PATH=/usr/lib/postgresql/15/bin:$PATH
until pg_isready -q -h "$SERVER" -U postgres; do sleep 1; done
pgbench -q -h "$SERVER" -U postgres -i -s 5 postgres`,
	run: func(clients, seconds int) string {
		return fmt.Sprintf(`pgbench -h "$SERVER" -U postgres -c %d -j %d -T %d -P 10 postgres`, clients, min(clients, 2), seconds)
	},
	sample: func(line string) (float64, float64, bool) { return twoFloats(pgLine, line, 1, 2) },
}, {
	// A JVM service with a fixed heap (G1, -Xmx96m).
	Name: "jvm", Image: "tailor.local/jvm:17", Latency: "p50 per request", Peak: 8,
	Command:  jvmService("-Xmx96m", "-XX:+UseG1GC"),
	Requests: [2]string{"100m", "160Mi"}, Limits: [2]string{"200m", "480Mi"},
	run: javaLoad, sample: javaSample,
}, {
	// The same service with its heap a share of the limit it starts
	// under (G1, MaxRAMPercentage=25: 120Mi of 480Mi), which tailor never
	// lowers (the share would follow only at a restart).
	Name: "jvm-maxram", Image: "tailor.local/jvm:17", Latency: "p50 per request", Peak: 8,
	Command:  jvmService("-XX:MaxRAMPercentage=25", "-XX:+UseG1GC"),
	Requests: [2]string{"100m", "160Mi"}, Limits: [2]string{"200m", "480Mi"},
	run: javaLoad, sample: javaSample,
}, {
	// The same service on ZGC (-Xmx96m), whose heap tailor could move at
	// run time (SoftMaxHeapSize).
	Name: "jvm-zgc", Image: "tailor.local/jvm:17", Latency: "p50 per request", Peak: 8,
	Command:  jvmService("-Xmx96m", "-XX:+UseZGC"),
	Requests: [2]string{"100m", "192Mi"}, Limits: [2]string{"200m", "480Mi"},
	run: javaLoad, sample: javaSample,
}}

// RealApp is the application of that name.
func RealApp(name string) (App, bool) {
	for _, a := range RealApps {
		if a.Name == name {
			return a, true
		}
	}
	return App{}, false
}

// AppMaxCPU is the most cpu AppPolicy lets tailor give an application.
const AppMaxCPU = "700m"

// AppPolicy is the benchmark's policy of the applications: cpu up to
// AppMaxCPU, read over a minute, lowered after 30 s of quiet, so that a day
// fits in minutes.
var AppPolicy = AppPolicyOver(time.Minute, 30*time.Second)

// AppPolicyOver is AppPolicy with cpu read over window and lowered after
// quiet: the gate's check takes half the quiet, its day being a few
// minutes (a minute is the least window a policy takes).
func AppPolicyOver(window, quiet time.Duration) func(*v1alpha1.TailorPolicySpec) {
	return func(s *v1alpha1.TailorPolicySpec) {
		s.ResourcePolicy = &v1alpha1.ResourcePolicy{ContainerPolicies: []v1alpha1.ContainerPolicy{{
			ContainerName: "*",
			MaxAllowed:    corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(AppMaxCPU)},
			Recommender:   &v1alpha1.RecommenderOverrides{CPUWindow: &metav1.Duration{Duration: window}},
		}}}
		s.Behavior.ScaleDown = &v1alpha1.ScaleDownRules{StabilizationWindow: &metav1.Duration{Duration: quiet}}
	}
}

// Server is the application's container "app", resized without restarts.
func (a App) Server() *builder.ContainerWrapper {
	c := builder.Container("app").Image(a.Image).
		Requests(a.Requests[0], a.Requests[1]).Limits(a.Limits[0], a.Limits[1]).
		ResizePolicy(corev1.ResourceCPU, corev1.NotRequired).ResizePolicy(corev1.ResourceMemory, corev1.NotRequired)
	if len(a.Command) > 0 {
		c.Command(a.Command...)
	}
	return c
}

// RunAs sets the pod to run as the application's user, if it has one.
func (a App) RunAs(p *corev1.Pod) {
	if a.User != 0 {
		p.Spec.SecurityContext = &corev1.PodSecurityContext{RunAsUser: &a.User, RunAsGroup: &a.User}
	}
}

// Client is the pod that loads server (its IP) through the stages, from
// the application's own image. It requests little, so that three
// applications and their clients fit the node with room to raise each
// server, and is limited at 500m: the load is what that buys. It is not labelled app=<name>, so no policy of the test selects it.
func (a App) Client(ns, name, server string, stages ...Stage) *corev1.Pod {
	p := LoadgenPod(ns, name, builder.Container("load").Image(a.Image).
		Command("/bin/sh", "-c", a.Script(stages...)).Requests("100m", "64Mi").Limits("500m", "256Mi"))
	p.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "SERVER", Value: server}}
	p.Spec.RestartPolicy = corev1.RestartPolicyNever
	a.RunAs(p)
	return p
}

// Stage is one part of a load's shape: Clients at once (0: idle) for
// Seconds.
type Stage struct {
	Name    string
	Clients int
	Seconds int
}

// Script is the client's shell script: the stages in order, every line
// the client prints prefixed with its stage's name, and "done" at the end.
func (a App) Script(stages ...Stage) string {
	var b strings.Builder
	if a.prepare != "" {
		b.WriteString(a.prepare + "\n")
	}
	for _, s := range stages {
		cmd := fmt.Sprintf("sleep %d", s.Seconds)
		if s.Clients > 0 {
			cmd = a.run(s.Clients, s.Seconds)
		}
		fmt.Fprintf(&b, "{\n%s\n} 2>&1 | awk '{print \"%s \" $0; fflush()}'\n", cmd, s.Name)
	}
	b.WriteString("echo done\n")
	return b.String()
}

// Sample is what one line of the client said, in its stage.
type Sample struct {
	Stage     string
	PerSecond float64
	LatencyMs float64
}

// Samples reads the client's log.
func (a App) Samples(log string) []Sample {
	var out []Sample
	for _, line := range strings.Split(log, "\n") {
		stage, rest, ok := strings.Cut(strings.TrimRight(line, "\r"), " ")
		if !ok {
			continue
		}
		if per, lat, ok := a.sample(rest); ok {
			out = append(out, Sample{Stage: stage, PerSecond: per, LatencyMs: lat})
		}
	}
	return out
}

// StageFigures is the median throughput and latency of a stage's samples,
// and how many there were.
func StageFigures(samples []Sample, stage string) (perSecond, latencyMs float64, n int) {
	var per, lat []float64
	for _, s := range samples {
		if s.Stage == stage {
			per, lat = append(per, s.PerSecond), append(lat, s.LatencyMs)
		}
	}
	return median(per), median(lat), len(per)
}

func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}
