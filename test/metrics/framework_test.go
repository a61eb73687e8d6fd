//go:build e2e

package metrics

import (
	"context"
	"flag"
	"fmt"
	"net/http"
	"os"
	"sort"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/tailorhq/tailor/test/builder"
	"github.com/tailorhq/tailor/test/cluster"
)

const loadgenImage = "tailor.local/loadgen:dev"

var (
	kubeconfig = flag.String("kubeconfig", cluster.Kubeconfig(), "admin kubeconfig of the local cluster")

	restConfig *rest.Config
	clientset  *kubernetes.Clientset

	// facts collects the measured figures for the suite's report.
	facts   []string
	factsMu sync.Mutex
)

func TestMain(m *testing.M) {
	flag.Parse()
	var err error
	restConfig, clientset, err = cluster.Connect(*kubeconfig)
	if err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", "metrics e2e", err)
		os.Exit(1)
	}
	code := m.Run()
	factsMu.Lock()
	if len(facts) > 0 {
		sort.Strings(facts)
		fmt.Println("metrics sources, as measured:")
		for _, f := range facts {
			fmt.Println("  " + f)
		}
	}
	factsMu.Unlock()
	os.Exit(code)
}

func record(t *testing.T, format string, args ...any) {
	t.Helper()
	line := fmt.Sprintf(format, args...)
	t.Log(line)
	factsMu.Lock()
	facts = append(facts, line)
	factsMu.Unlock()
}

// newNamespace creates a metrics-* namespace and deletes it afterwards.
func newNamespace(t *testing.T) string {
	t.Helper()
	name := "metrics-" + rand.String(6)
	return cluster.Namespace(t, clientset, name)
}

// loadPod starts a loadgen pod burning cpu and holding memory under the
// given CPU limit, and returns it running (with its IP).
func loadPod(t *testing.T, ns, name, cpu, memory, cpuLimit string) *corev1.Pod {
	t.Helper()
	pod := builder.Pod(name).Namespace(ns).Container(
		builder.Container("app").Image(loadgenImage).
			Args("--listen=:8080", "--cpu="+cpu, "--memory="+memory).
			Requests("100m", "200Mi").Limits(cpuLimit, "400Mi"),
	).Obj()
	ctx := context.Background()
	if _, err := clientset.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create pod %s/%s: %v", ns, name, err)
	}
	var got *corev1.Pod
	err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, 90*time.Second, true, func(ctx context.Context) (bool, error) {
		p, err := clientset.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		got = p
		return p.Status.Phase == corev1.PodRunning && p.Status.PodIP != "" &&
			len(p.Status.ContainerStatuses) == 1 && p.Status.ContainerStatuses[0].Ready, nil
	})
	if err != nil {
		t.Fatalf("pod %s/%s not running: %v (phase %s)", ns, name, err, got.Status.Phase)
	}
	return got
}

// setCPU changes how much CPU the loadgen in pod burns.
func setCPU(t *testing.T, pod *corev1.Pod, millicores int) {
	t.Helper()
	url := fmt.Sprintf("http://%s:8080/cpu?millicores=%d", pod.Status.PodIP, millicores)
	resp, err := http.Get(url)
	if err != nil {
		t.Fatalf("set loadgen CPU: %v", err)
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("set loadgen CPU: %s", resp.Status)
	}
}
