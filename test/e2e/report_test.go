//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/tailorhq/tailor/api/v1alpha1"
	"github.com/tailorhq/tailor/internal/cli"
	reportcmd "github.com/tailorhq/tailor/internal/cli/report"
	"github.com/tailorhq/tailor/internal/report"
	"github.com/tailorhq/tailor/test/cluster"
)

// runReport runs `tailor report` in-process against the local cluster.
func runReport(t *testing.T, args ...string) (string, int) {
	t.Helper()
	var out, errOut bytes.Buffer
	args = append([]string{"report", "--kubeconfig", *kubeconfig}, args...)
	code := cli.Execute("tailor", args, nil, &out, &errOut)
	if code != 0 {
		t.Logf("tailor %v -> exit %d; stderr: %s", args, code, errOut.String())
	}
	return out.String(), code
}

// `tailor report` on the local cluster: a Deployment a TailorPolicy in mode
// Off selects shows the policy's recommendation and what moving to it
// saves; with Prometheus (the add-on), a Deployment without a policy gets
// what tailor's recommender makes of its history, with its p95 and peak.
// The table, JSON and CSV say the same. It shares the node: each burner
// burns less than it requests, so the CPU its figures measure is its own
// whatever the other tests burn (a container is always given its request).
// Its history is read at a 1m step (the add-on scrapes every 5s), so a
// rate counts a minute after the container's first sample, not five.
func TestReport(t *testing.T) {
	cluster.Shared(t)
	reserveCPU(t, 1000) // two 300m replicas and one of 400m
	ns := newNamespace(t)
	c := startManager(t, ns)
	deployment(t, ns, "sized", 2, app().Args("--listen=:8080", "--cpu=150m", "--memory=24Mi").Requests("300m", "256Mi").Limits("600m", "512Mi"))
	deployment(t, ns, "bare", 1, app().Args("--listen=:8080", "--cpu=100m", "--memory=24Mi").Requests("400m", "512Mi"))
	applyPolicy(t, c, ns, "sized", func(s *v1alpha1.TailorPolicySpec) {
		s.Selector = nil
		s.TargetRef = &v1alpha1.TargetRef{APIVersion: "apps/v1", Kind: "Deployment", Name: "sized"}
		s.UpdatePolicy = &v1alpha1.UpdatePolicy{UpdateMode: v1alpha1.UpdateModeOff}
	})
	p := waitPolicy(t, c, ns, "sized", 3*time.Minute, "a recommendation in mode Off", func(p *v1alpha1.TailorPolicy) bool {
		rec := p.Status.Recommendation
		if rec == nil || len(rec.ContainerRecommendations) == 0 {
			return false
		}
		_, cpu := rec.ContainerRecommendations[0].Target[corev1.ResourceCPU]
		_, mem := rec.ContainerRecommendations[0].Target[corev1.ResourceMemory]
		return cpu && mem
	})
	args := []string{"-n", ns}
	prom := os.Getenv("TAILOR_PROMETHEUS_URL")
	if prom != "" {
		args = append(args, "--prometheus-url", prom, "--window", "15m", "--step", "1m")
	}

	var rows map[string]report.Row
	// A container's CPU rates count once it has run for the rate's range,
	// the 1m step (younger, Prometheus's rate reads low): bare's history
	// needs that long after cAdvisor's first sample of it.
	err := wait.PollUntilContextTimeout(context.Background(), 5*time.Second, 5*time.Minute, true, func(context.Context) (bool, error) {
		out, code := runReport(t, append(args, "-o", "json")...)
		if code != 0 {
			return false, nil
		}
		var list reportcmd.List
		if err := json.Unmarshal([]byte(out), &list); err != nil {
			t.Fatalf("report -o json: %v\n%s", err, out)
		}
		if list.APIVersion != reportcmd.APIVersion {
			t.Fatalf("apiVersion %q", list.APIVersion)
		}
		rows = map[string]report.Row{}
		for _, r := range list.Items {
			rows[r.Workload] = r
		}
		// Wait for what the policy needs to be known, and for
		// Prometheus's CPU history (a rate needs two scrapes) when it runs.
		_, sizedCPU := rows["sized"].Recommended[corev1.ResourceCPU]
		_, bareCPU := rows["bare"].Recommended[corev1.ResourceCPU]
		return sizedCPU && (bareCPU || prom == ""), nil
	})
	if err != nil {
		// The report lists running pods only: say where the others are.
		t.Fatalf("report never showed the history of bare: %v; rows %s; pods: %s", err, mustJSON(rows), podStates(t, ns))
	}
	sized := rows["sized"]
	t.Logf("sized: %s", mustJSON(sized))
	if sized.Source != "policy sized (Off)" || sized.Replicas != 2 || sized.Kind != "Deployment" {
		t.Errorf("sized: source %q, %d replicas, kind %s", sized.Source, sized.Replicas, sized.Kind)
	}
	target := p.Status.Recommendation.ContainerRecommendations[0].Target
	recCPU, want := sized.Recommended[corev1.ResourceCPU], target[corev1.ResourceCPU]
	// The burner asks for 150m of its 300m request (181m recommended in
	// a recorded run): above what it burns, below what it asks.
	if recCPU.MilliValue() < 100 || recCPU.MilliValue() >= 300 {
		t.Errorf("sized cpu recommended %s (the policy's target was %s minutes before); want above the ~150m used, below the 300m asked", recCPU.String(), want.String())
	}
	if got := 2 * float64(300-recCPU.MilliValue()) / 1000; sized.SavingsCPU < got-0.001 || sized.SavingsCPU > got+0.001 {
		t.Errorf("sized saves %.3f cores; two replicas at 300m moved to %s free %.3f", sized.SavingsCPU, recCPU.String(), got)
	}
	if prom != "" {
		bare := rows["bare"]
		t.Logf("bare: %s", mustJSON(bare))
		cpu := bare.Recommended[corev1.ResourceCPU]
		// The burner burns 100m of its 400m request, which the node
		// always gives it: the history's p95 is about what was burnt, and
		// the floor of the recommendation.
		m := regexp.MustCompile(`p95 CPU (\d+)m`).FindStringSubmatch(bare.Reason)
		if m == nil || !strings.Contains(bare.Reason, "memory peak") {
			t.Fatalf("bare reason %q; want the p95 and peaks", bare.Reason)
		}
		p95, _ := strconv.ParseInt(m[1], 10, 64)
		if p95 < 50 || p95 > 150 {
			t.Errorf("bare's p95 CPU %dm from Prometheus; the burner asks for 100m", p95)
		}
		if cpu.MilliValue() < p95 || cpu.MilliValue() >= 400 {
			t.Errorf("bare cpu recommended %s from a history with p95 %dm", cpu.String(), p95)
		}
		if bare.SavingsCPU <= 0 {
			t.Errorf("bare saves %.3f cores asking 400m for 100m", bare.SavingsCPU)
		}
	}
	table, code := runReport(t, args...)
	if code != 0 || !strings.Contains(table, "deployment/sized") || !strings.Contains(table, "policy sized (Off)") || !strings.Contains(table, "would free") {
		t.Errorf("report table (exit %d):\n%s", code, table)
	}
	t.Logf("report:\n%s", table)
	csvOut, code := runReport(t, append(args, "-o", "csv")...)
	lines := strings.Split(strings.TrimSpace(csvOut), "\n")
	if code != 0 || len(lines) != 3 || !strings.HasPrefix(lines[0], "namespace,kind,workload,container,replicas,") {
		t.Errorf("report csv (exit %d):\n%s", code, csvOut)
	}
}

// podStates says, for each pod in ns, its phase and why it is not
// scheduled or not ready when it is not.
func podStates(t *testing.T, ns string) string {
	t.Helper()
	pods, err := clientset.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		return err.Error()
	}
	var out []string
	for i := range pods.Items {
		p := &pods.Items[i]
		s := p.Name + " " + string(p.Status.Phase)
		for _, c := range p.Status.Conditions {
			if c.Status != corev1.ConditionTrue && c.Message != "" {
				s += fmt.Sprintf(" (%s: %s)", c.Type, c.Message)
			}
		}
		out = append(out, s)
	}
	return strings.Join(out, "; ")
}
