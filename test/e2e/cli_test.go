//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tailorhq/tailor/internal/cli"
	"github.com/tailorhq/tailor/internal/cli/exit"
	"github.com/tailorhq/tailor/test/builder"
	"github.com/tailorhq/tailor/test/cluster"
)

// The seed scenarios, through `tailor resize` as a person runs it. Each test
// asserts that what tailor predicted is what the apiserver and kubelet did.

// cliReport is the part of `tailor resize -o json` the tests read.
type cliReport struct {
	Outcome    string `json:"outcome"`
	Rule       string `json:"rule"`
	Predicted  string `json:"predicted"`
	QoSBefore  string `json:"qosBefore"`
	QoSAfter   string `json:"qosAfter"`
	Containers []struct {
		Name    string `json:"name"`
		Restart bool   `json:"restart"`
	} `json:"containers"`
	ServerDryRun *struct {
		Outcome           string `json:"outcome"`
		MatchesPrediction bool   `json:"matchesPrediction"`
	} `json:"serverDryRun"`
	Preemption *struct {
		Gate    string `json:"gate"`
		Reason  string `json:"reason"`
		Victims []struct {
			Namespace string `json:"namespace"`
			Name      string `json:"name"`
		} `json:"victims"`
		Message string `json:"message"`
	} `json:"preemption"`
	Result *struct {
		State             string  `json:"state"`
		Seconds           float64 `json:"seconds"`
		MatchesPrediction bool    `json:"matchesPrediction"`
		Restarts          []struct {
			Container string `json:"container"`
			Before    int32  `json:"before"`
			After     int32  `json:"after"`
		} `json:"restarts"`
	} `json:"result"`
}

// tailor runs the CLI in-process against the local cluster. It may run in
// a goroutine, so it reports with Errorf, never Fatalf.
func tailor(t *testing.T, args ...string) (cliReport, int, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	args = append(args, "--kubeconfig", *kubeconfig, "-o", "json")
	code := cli.Execute("tailor", args, nil, &out, &errOut)
	var r cliReport
	if out.Len() > 0 {
		if err := json.Unmarshal(out.Bytes(), &r); err != nil {
			t.Errorf("tailor %v: output is not JSON (%v):\n%s\nstderr: %s", args, err, out.String(), errOut.String())
		}
	}
	t.Logf("tailor %v -> exit %d; stderr: %s", args, code, errOut.String())
	return r, code, errOut.String()
}

// wantDone asserts an applied resize finished as predicted and records its time.
func wantDone(t *testing.T, what string, r cliReport, code int) {
	t.Helper()
	if code != exit.OK || r.Result == nil {
		t.Fatalf("%s: exit %d, result %+v; want exit 0 and a result", what, code, r.Result)
	}
	if r.Result.State != "Done" || !r.Result.MatchesPrediction {
		t.Fatalf("%s: result %s, matchesPrediction %v (predicted %s)", what, r.Result.State, r.Result.MatchesPrediction, r.Predicted)
	}
	recordConvergence(t, what+" (tailor resize)", time.Duration(r.Result.Seconds*float64(time.Second)))
}

func restartsOf(t *testing.T, r cliReport, container string) (int32, int32) {
	t.Helper()
	for _, rc := range r.Result.Restarts {
		if rc.Container == container {
			return rc.Before, rc.After
		}
	}
	t.Fatalf("no restart count for %s in %+v", container, r.Result.Restarts)
	return 0, 0
}

func TestCLICPULimitInPlace(t *testing.T) {
	cluster.Shared(t)
	reserveCPU(t, 300) // 250m; the CLI moves the limit
	ns := newNamespace(t)
	pod := createRunningPod(t, loadgenPod(ns, "web", app().Requests("250m", "64Mi").Limits("2", "128Mi").
		ResizePolicy(corev1.ResourceCPU, corev1.NotRequired)))
	r, code, _ := tailor(t, "resize", "web", "-n", ns, "--limits", "cpu=3")
	if r.Outcome != "Accepted" || r.Predicted != "InPlace" || r.Containers[0].Restart {
		t.Fatalf("prediction = %s/%s restart %v, want Accepted/InPlace without restart", r.Outcome, r.Predicted, r.Containers[0].Restart)
	}
	wantDone(t, "cpu limit 2 -> 3", r, code)
	if b, a := restartsOf(t, r, "app"); b != a {
		t.Errorf("restarts %d -> %d, want none", b, a)
	}
	waitCgroup(t, pod, "app", "cpu", "cpu.cfs_quota_us", 300000)
}

func TestCLIMemoryLimitRestartContainer(t *testing.T) {
	cluster.Shared(t)
	reserveCPU(t, 100) // 100m
	ns := newNamespace(t)
	pod := createRunningPod(t, loadgenPod(ns, "db", app().Requests("100m", "64Mi").Limits("500m", "1Gi").
		ResizePolicy(corev1.ResourceMemory, corev1.RestartContainer)))
	r, code, _ := tailor(t, "resize", "db", "-n", ns, "--limits", "memory=2Gi")
	if r.Outcome != "Accepted" || !r.Containers[0].Restart {
		t.Fatalf("prediction = %s restart %v, want Accepted with a restart", r.Outcome, r.Containers[0].Restart)
	}
	wantDone(t, "memory limit 1Gi -> 2Gi, RestartContainer", r, code)
	if b, a := restartsOf(t, r, "app"); a != b+1 {
		t.Errorf("restarts %d -> %d, want exactly one restart", b, a)
	}
	waitCgroup(t, pod, "app", "memory", "memory.limit_in_bytes", 2<<30)
}

func TestCLIMemoryLimitInPlace(t *testing.T) {
	cluster.Shared(t)
	reserveCPU(t, 100) // 100m
	ns := newNamespace(t)
	pod := createRunningPod(t, loadgenPod(ns, "web", app().Requests("100m", "64Mi").Limits("500m", "128Mi").
		ResizePolicy(corev1.ResourceMemory, corev1.NotRequired)))
	if got := readCgroup(t, pod, "app", "memory", "memory.limit_in_bytes"); got != 128<<20 {
		t.Fatalf("memory.limit_in_bytes before = %d, want %d", got, 128<<20)
	}
	r, code, _ := tailor(t, "resize", "web", "-n", ns, "--limits", "memory=512Mi")
	wantDone(t, "memory limit 128Mi -> 512Mi", r, code)
	if b, a := restartsOf(t, r, "app"); b != a {
		t.Errorf("restarts %d -> %d, want none", b, a)
	}
	waitCgroup(t, pod, "app", "memory", "memory.limit_in_bytes", 512<<20)
}

func TestCLIDeferredCompletesWhenRoomAppears(t *testing.T) {
	cluster.Quiet(t)
	ns := newNamespace(t)
	ctx := context.Background()
	target := createRunningPod(t, loadgenPod(ns, "web", app().Requests("100m", "32Mi").Limits("1", "64Mi")))
	filler := fillCPU(t, ns, 200)

	type run struct {
		r    cliReport
		code int
	}
	done := make(chan run, 1)
	go func() {
		r, code, _ := tailor(t, "resize", "web", "-n", ns, "--requests", "cpu=500m", "--timeout", "90s")
		done <- run{r, code}
	}()
	waitCondition(t, target, corev1.PodResizePending, corev1.PodReasonDeferred, 30*time.Second, explainNodeRoom)
	zero := int64(0)
	if err := clientset.CoreV1().Pods(ns).Delete(ctx, filler.Name, metav1.DeleteOptions{GracePeriodSeconds: &zero}); err != nil {
		t.Fatal(err)
	}
	res := <-done
	if res.r.Predicted != "Deferred" {
		t.Errorf("predicted %q, want Deferred", res.r.Predicted)
	}
	wantDone(t, "deferred cpu request 100m -> 500m", res.r, res.code)
}

func TestCLIRefusalsNameTheRule(t *testing.T) {
	cluster.Shared(t)
	reserveCPU(t, 300) // 250m; the refused resizes ask no room
	ns := newNamespace(t)
	pod := createRunningPod(t, loadgenPod(ns, "web", app().Requests("250m", "64Mi").Limits("1", "128Mi")))

	// Burstable -> Guaranteed: refused by the preflight, nothing sent.
	r, code, _ := tailor(t, "resize", "web", "-n", ns, "--requests", "cpu=1,memory=128Mi")
	if code != exit.Refused || r.Outcome != "Refused" || r.Rule != "QoSClassChange" {
		t.Errorf("QoS change: exit %d outcome %s rule %s, want exit 3 Refused QoSClassChange", code, r.Outcome, r.Rule)
	}
	if r.QoSBefore != "Burstable" || r.QoSAfter != "Guaranteed" {
		t.Errorf("QoS %s -> %s, want Burstable -> Guaranteed", r.QoSBefore, r.QoSAfter)
	}
	fresh, err := clientset.CoreV1().Pods(ns).Get(context.Background(), "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if fresh.Generation != pod.Generation {
		t.Errorf("a refused resize changed the pod: generation %d -> %d", pod.Generation, fresh.Generation)
	}

	// More than the node's allocatable: the apiserver's dry run agrees.
	node, err := clientset.CoreV1().Nodes().Get(context.Background(), nodeName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	huge := fmt.Sprintf("cpu=%dm", node.Status.Allocatable.Cpu().MilliValue()+1000)
	r, code, _ = tailor(t, "resize", "web", "-n", ns, "--requests", huge, "--limits", huge, "--dry-run=server")
	if code != exit.Refused || r.Rule != "NodeCapacity" {
		t.Errorf("beyond allocatable: exit %d rule %s, want exit 3 NodeCapacity", code, r.Rule)
	}
	if r.ServerDryRun == nil || r.ServerDryRun.Outcome != "Refused" || !r.ServerDryRun.MatchesPrediction {
		t.Errorf("server dry run = %+v, want Refused matching the prediction", r.ServerDryRun)
	}
}

func TestCLIPodLevelResize(t *testing.T) {
	cluster.Shared(t)
	reserveCPU(t, 300) // 200m at pod level
	ns := newNamespace(t)
	p := loadgenPod(ns, "pl", app())
	p.Spec.Resources = &corev1.ResourceRequirements{
		Requests: builder.List("200m", "64Mi"), Limits: builder.List("500m", "128Mi"),
	}
	pod := createRunningPod(t, p)
	podDir := func(controller string) string {
		return cgroupDir(t, pod, "app", controller) + "/.."
	}
	if got := readInt(t, podDir("cpu")+"/cpu.cfs_quota_us"); got != 50000 {
		t.Fatalf("pod cgroup cpu.cfs_quota_us before = %d, want 50000", got)
	}
	r, code, _ := tailor(t, "resize", "pl", "-n", ns, "--pod-level", "--limits", "cpu=800m,memory=256Mi")
	wantDone(t, "pod-level limits cpu 500m -> 800m, memory 128Mi -> 256Mi", r, code)
	if b, a := restartsOf(t, r, "app"); b != a {
		t.Errorf("restarts %d -> %d, want none", b, a)
	}
	// The pod cgroup carries the pod-level limit; the container has no limit
	// of its own, so its effective limit follows.
	waitFile(t, podDir("cpu")+"/cpu.cfs_quota_us", 80000)
	waitFile(t, podDir("memory")+"/memory.limit_in_bytes", 256<<20)
	waitCgroup(t, pod, "app", "cpu", "cpu.cfs_quota_us", 80000)
	fresh, err := clientset.CoreV1().Pods(ns).Get(context.Background(), "pl", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := fresh.Status.Resources.Limits[corev1.ResourceCPU]; got.Cmp(resource.MustParse("800m")) != 0 {
		t.Errorf("status.resources cpu limit = %s, want 800m", got.String())
	}
}
