//go:build controller

package controller

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	authnv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/tailorhq/tailor/api/v1alpha1"
	"github.com/tailorhq/tailor/internal/agent"
	"github.com/tailorhq/tailor/internal/agent/report"
	"github.com/tailorhq/tailor/internal/manager"
	"github.com/tailorhq/tailor/internal/recommend"
	"github.com/tailorhq/tailor/test/builder"
)

// The agent source end to end on the real apiserver, without a kubelet: a
// report pushed with a real pod-bound service-account token (the apiserver
// puts the agent pod's node in its TokenReview) wakes the manager, whose
// sync period is an hour, and the memory of a container on course for its
// limit is raised at once. A container the policy caps gets a MemoryAtRisk
// event instead. A token bound to a pod on another node speaks for nothing
// here.
func TestAgentReportRaisesMemoryBeforeTheKill(t *testing.T) {
	e := newEnv(t, controllerOptions{})
	ctx := context.Background()
	limits := func(name string) *builder.PodWrapper {
		return builder.Pod(name).Container(builder.Container("app").Requests("100m", "256Mi").Limits("200m", "256Mi").
			ResizePolicy(corev1.ResourceMemory, corev1.NotRequired))
	}
	free := e.pod("free", limits("free-0"))
	capped := e.pod("capped", limits("capped-0"))
	memoryOnly := func(max string) func(*v1alpha1.TailorPolicySpec) {
		return func(s *v1alpha1.TailorPolicySpec) {
			cp := v1alpha1.ContainerPolicy{ContainerName: "*", ControlledResources: []corev1.ResourceName{corev1.ResourceMemory}}
			if max != "" {
				cp.MaxAllowed = corev1.ResourceList{corev1.ResourceMemory: resource.MustParse(max)}
			}
			s.ResourcePolicy = &v1alpha1.ResourcePolicy{ContainerPolicies: []v1alpha1.ContainerPolicy{cp}}
			s.Behavior = &v1alpha1.Behavior{MinResizeInterval: &metav1.Duration{Duration: time.Second}}
		}
	}
	e.policy("free", memoryOnly(""))
	e.policy("capped", memoryOnly("256Mi"))

	// The agent: its service account, and its pod on the test's node, to
	// which its token is bound. A second one sits on another node.
	here := e.agentToken("agent-here", e.node)
	elsewhere := e.agentToken("agent-elsewhere", e.addNode("other-"+e.ns, "8", "32Gi"))

	rec := recommend.DefaultConfig()
	// A thin margin, so only the risk raises: 256Mi idles at 128Mi.
	rec.MemoryMinMargin, rec.MemoryJitterMargin = 16*mi, 0
	addr := runAgentManager(t, manager.Options{
		AgentServiceAccount: e.ns + ":agent", AgentFallback: "none", AgentService: e.ns + "/" + agentService,
		SyncPeriod: time.Hour, Recommender: &rec,
	})
	// The agent checks the managers against the CA they publish.
	client := agentClient(t, e.ns)

	push := func(tok string, ws, growth float64, urgent bool) int {
		t.Helper()
		var r report.Report
		for _, p := range []*corev1.Pod{free, capped} {
			_, id, _ := strings.Cut(p.Status.ContainerStatuses[0].ContainerID, "://")
			c := report.Container{PodUID: string(p.UID), ID: id, Time: time.Now(), Window: 5, CPU: 0.05,
				WorkingSet: uint64(ws), MemoryLimit: 256 * mi, MemoryGrowth: growth}
			if urgent {
				c.Urgent, c.MemoryAtRisk, r.Urgent = "memory: on course for the limit", true, true
			}
			r.Containers = append(r.Containers, c)
		}
		body, _ := json.Marshal(r)
		var code int
		// The server starts with the manager: retry until it listens.
		_ = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
			req, _ := http.NewRequestWithContext(ctx, http.MethodPost, "https://"+addr+report.Path, bytes.NewReader(body))
			req.Header.Set("Authorization", "Bearer "+tok)
			resp, err := client.Do(req)
			if err != nil {
				// Not listening yet: the manager is starting.
				return false, nil //nolint:nilerr
			}
			_ = resp.Body.Close()
			code = resp.StatusCode
			return true, nil
		})
		return code
	}
	memLimit := func(name string) int64 {
		return e.getPod(name).Spec.Containers[0].Resources.Limits.Memory().Value()
	}

	// With an hour's period a policy syncs only when woken. queued counts
	// the wake-ups; the receiver wakes before it answers, so a report's
	// wake-ups are counted once its push returns.
	queued := func() float64 {
		return metricValue(t, "tailor_agent_wakeups_total", map[string]string{"result": "queued"})
	}
	// syncNow makes policy name sync now, whatever the reports say (an
	// edit of its spec), and returns once that sync has acted: it writes
	// status.observedGeneration last.
	syncNow := func(name string) {
		t.Helper()
		pol := e.getPolicy(name)
		pol.Spec.Behavior.MinResizeInterval.Duration += time.Second
		if err := apiClient.Update(ctx, pol); err != nil {
			t.Fatalf("edit policy %s: %v", name, err)
		}
		err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
			return e.getPolicy(name).Status.ObservedGeneration >= pol.Generation, nil
		})
		if err != nil {
			t.Fatalf("policy %s did not sync generation %d within a minute", name, pol.Generation)
		}
	}

	before := queued()
	if code := push(here, 128*mi, 0, false); code != http.StatusNoContent {
		t.Fatalf("a calm report from the agent: HTTP %d", code)
	}
	if got := queued() - before; got != 0 {
		t.Fatalf("a calm report woke %v pods", got)
	}
	// A sync that reads the calm report leaves the pods as they are. It
	// also makes sure both policies have synced once, so the manager knows
	// which pods they select: a policy's first sync comes from the initial
	// list at the queue's low priority, behind every policy the tier's
	// earlier tests left, and a wake-up for a pod whose policy has not yet
	// synced finds no policy to wake (that sync reads the newest report).
	syncNow("free")
	syncNow("capped")
	if memLimit("free-0") != 256*mi || memLimit("capped-0") != 256*mi {
		t.Fatalf("memory changed on a calm report: %d, %d", memLimit("free-0"), memLimit("capped-0"))
	}
	// The agent on the other node claims this node's pods are on course
	// for their limits: accepted as its own node's report, used for none:
	// it wakes no pod here, and a sync after it reads this node's report.
	before = queued()
	if code := push(elsewhere, 250*mi, 50*mi, true); code != http.StatusNoContent {
		t.Fatalf("the other node's agent: HTTP %d", code)
	}
	if got := queued() - before; got != 0 {
		t.Fatalf("another node's agent woke %v pods of this node", got)
	}
	syncNow("free")
	if memLimit("free-0") != 256*mi {
		t.Fatalf("another node's agent changed this node's pod: limit %d", memLimit("free-0"))
	}

	start := time.Now()
	var err error
	if code := push(here, 178*mi, 50*mi, true); code != http.StatusNoContent {
		t.Fatalf("an urgent report: HTTP %d", code)
	}
	err = wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		return memLimit("free-0") > 256*mi, nil
	})
	if err != nil {
		pol := e.getPolicy("free")
		st, _ := json.MarshalIndent(pol.Status, "", " ")
		t.Fatalf("memory limit not raised within a minute of the urgent report (sync period 1h): %d\npolicy status: %s", memLimit("free-0"), st)
	}
	got := memLimit("free-0")
	t.Logf("memory limit 256Mi -> %dMi %s after the urgent report", got>>20, time.Since(start).Round(time.Millisecond))
	// A 50Mi/s ramp from 178Mi leads to 678Mi in the recommender's 10s
	// lead; one risk raises to at most twice the limit, plus the margin.
	if got < 512*mi || got > 600*mi {
		t.Errorf("raised to %dMi: want twice the 256Mi limit and its margin", got>>20)
	}
	if memLimit("capped-0") != 256*mi {
		t.Errorf("the capped pod was raised past its policy's maxAllowed: %d", memLimit("capped-0"))
	}
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		evs, err := clientset.EventsV1().Events(e.ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		for _, ev := range evs.Items {
			if ev.Reason == "MemoryAtRisk" && ev.Regarding.Name == "capped-0" {
				t.Logf("event on capped-0: %s", ev.Note)
				if !strings.Contains(ev.Note, "growing 50Mi/s") || !strings.Contains(ev.Note, "does not raise it: it already has its policy's maxAllowed memory, 256Mi") {
					return false, fmt.Errorf("the event does not say what and why: %q", ev.Note)
				}
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		st, _ := json.MarshalIndent(e.getPolicy("capped").Status, "", " ")
		t.Errorf("no MemoryAtRisk event on the capped pod: %v\nwake-ups queued %v, dropped %v\npolicy status: %s", err,
			queued(), metricValue(t, "tailor_agent_wakeups_total", map[string]string{"result": "dropped"}), st)
	}
}

// agentService is the report Service's name the controller tests' managers
// make their certificate for, in the test's namespace.
const agentService = "tailor-manager-agents"

// agentToken is a token of ServiceAccount "agent" of e's namespace (made
// if need be) with the agents' audience, bound to a new pod name on node:
// the TokenReview names that node. e's writer asks for all three.
func (e *env) agentToken(name, node string) string {
	e.t.Helper()
	ctx := context.Background()
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: e.ns, Name: "agent"}}
	if err := e.writer.Create(ctx, sa); err != nil && !apierrors.IsAlreadyExists(err) {
		e.t.Fatal(err)
	}
	p := builder.Pod(name).Namespace(e.ns).Node(node).Container(builder.Container("agent").Requests("10m", "32Mi")).Obj()
	p.Spec.ServiceAccountName = "agent"
	if err := e.writer.Create(ctx, p); err != nil {
		e.t.Fatal(err)
	}
	tr := &authnv1.TokenRequest{Spec: authnv1.TokenRequestSpec{
		Audiences: []string{report.Audience}, ExpirationSeconds: new(int64(600)),
		BoundObjectRef: &authnv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: p.Name, UID: p.UID},
	}}
	if err := e.writer.SubResource("token").Create(ctx, sa, tr); err != nil {
		e.t.Fatalf("token for the agent on %s: %v", node, err)
	}
	return tr.Status.Token
}

// runAgentManager starts a manager reading the agents (o's agent fields,
// with the agent source; no metrics or probes) on a free loopback port,
// stops it when the test ends, and returns the report address.
func runAgentManager(t *testing.T, o manager.Options) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	_ = ln.Close()
	o.MetricsSource, o.AgentAddr, o.MetricsAddr, o.ProbeAddr, o.SkipNameValidation = "agent", addr, "0", "0", true
	m, err := manager.New(restConfig, o)
	if err != nil {
		t.Fatal(err)
	}
	mctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- m.Start(mctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("manager: %v", err)
		}
	})
	return addr
}

// agentClient is the client an agent pushes to the managers of ns with:
// it waits for the CA bundle the managers publish (ConfigMap
// tailor-agent-ca), and checks their certificate against it for the
// report Service's name, as the agent does.
func agentClient(t *testing.T, ns string) *http.Client {
	t.Helper()
	trust := agent.NewTrust(report.ServerName(agentService, ns), 5*time.Second)
	err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		cm, err := clientset.CoreV1().ConfigMaps(ns).Get(ctx, manager.DefaultAgentCAConfigMap, metav1.GetOptions{})
		if err != nil {
			return false, nil //nolint:nilerr // not published yet
		}
		_, err = trust.SetBundle([]byte(cm.Data[report.CABundleKey]))
		return err == nil, nil
	})
	if err != nil {
		t.Fatalf("the managers published no CA bundle in %s/%s within 2m", ns, manager.DefaultAgentCAConfigMap)
	}
	c, err := trust.Client()
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// Garbage bearer tokens sent to the manager's agent receiver cost the
// apiserver no more TokenReviews than the receiver's per-source limit lets
// through (a burst of 5, then 1 a second): the limit is checked before the
// review, so a pod that can reach the receiver cannot make the manager load
// the apiserver. Counted by the apiserver itself, from its
// apiserver_request_total for tokenreviews.
func TestAgentReceiverGarbageTokensCostFewReviews(t *testing.T) {
	e := newEnv(t, controllerOptions{})
	addr := runAgentManager(t, manager.Options{
		AgentServiceAccount: e.ns + ":agent", AgentFallback: "none", AgentService: e.ns + "/" + agentService, SyncPeriod: time.Hour,
	})
	client := agentClient(t, e.ns)
	send := func(i int) (int, error) {
		req, _ := http.NewRequestWithContext(context.Background(), http.MethodPost, "https://"+addr+report.Path, strings.NewReader("{}"))
		req.Header.Set("Authorization", fmt.Sprintf("Bearer garbage-%d-%s", i, e.ns))
		resp, err := client.Do(req)
		if err != nil {
			return 0, err
		}
		_ = resp.Body.Close()
		return resp.StatusCode, nil
	}
	// The receiver listens once the manager has started.
	if err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, 2*time.Minute, true, func(context.Context) (bool, error) {
		_, err := send(-1)
		return err == nil, nil
	}); err != nil {
		t.Fatalf("the agent receiver at %s did not answer: %v", addr, err)
	}
	// The probe above may have cost one review and taken a token of the
	// burst; the count starts after it.
	before := tokenReviews(t)
	start := time.Now()
	const n = 300
	codes := map[int]int{}
	for i := range n {
		code, err := send(i)
		if err != nil {
			t.Fatalf("push %d: %v", i, err)
		}
		codes[code]++
	}
	elapsed := time.Since(start)
	reviews := tokenReviews(t) - before
	// What the limiter can let through in the time the pushes took: the
	// burst left after the probe and one a second.
	allowed := 5 + int(elapsed.Seconds()) + 1
	t.Logf("%d garbage pushes in %s: answers %v, %d TokenReviews at the apiserver (allowed %d)", n, elapsed.Round(time.Millisecond), codes, reviews, allowed)
	if reviews > allowed {
		t.Errorf("%d garbage tokens cost %d TokenReviews, want at most %d (the per-source limit)", n, reviews, allowed)
	}
	if codes[http.StatusOK] > 0 {
		t.Errorf("%d garbage pushes were accepted", codes[http.StatusOK])
	}
	if codes[http.StatusTooManyRequests] == 0 {
		t.Errorf("no push was refused for the rate limit: %v", codes)
	}
}

// tokenReviews is how many TokenReviews the apiserver has served, by its
// own metrics.
func tokenReviews(t *testing.T) int {
	t.Helper()
	body, err := clientset.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(context.Background())
	if err != nil {
		t.Fatalf("reading the apiserver's metrics: %v", err)
	}
	total := 0
	for _, line := range strings.Split(string(body), "\n") {
		if !strings.HasPrefix(line, "apiserver_request_total{") || !strings.Contains(line, `resource="tokenreviews"`) {
			continue
		}
		fields := strings.Fields(line)
		v, err := strconv.ParseFloat(fields[len(fields)-1], 64)
		if err != nil {
			t.Fatalf("apiserver metric line %q: %v", line, err)
		}
		total += int(v)
	}
	return total
}
