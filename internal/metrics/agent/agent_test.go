package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	authnv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/tailorhq/tailor/internal/agent/report"
	"github.com/tailorhq/tailor/internal/jvm"
	"github.com/tailorhq/tailor/internal/metrics"
)

const agentUser = "system:serviceaccount:tailor-system:tailor-agent"

var t0 = time.Date(2026, 11, 24, 7, 0, 0, 0, time.UTC)

// reviewer answers TokenReviews from a table of tokens, as the apiserver
// would, and counts them.
type reviewer struct {
	mu     sync.Mutex
	tokens map[string]authnv1.TokenReviewStatus
	err    error
	asked  int
}

func (r *reviewer) Create(_ context.Context, tr *authnv1.TokenReview, _ metav1.CreateOptions) (*authnv1.TokenReview, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.asked++
	if r.err != nil {
		return nil, r.err
	}
	out := tr.DeepCopy()
	if st, ok := r.tokens[tr.Spec.Token]; ok {
		out.Status = st
	} else {
		out.Status = authnv1.TokenReviewStatus{Error: "invalid bearer token"}
	}
	return out, nil
}

func agentOn(node string) authnv1.TokenReviewStatus {
	return authnv1.TokenReviewStatus{Authenticated: true, Audiences: []string{report.Audience}, User: authnv1.UserInfo{
		Username: agentUser, Extra: map[string]authnv1.ExtraValue{NodeNameExtra: {node}},
	}}
}

func newReviewer() *reviewer {
	other := agentOn("node-a")
	other.User.Username = "system:serviceaccount:default:default"
	unbound := agentOn("node-a")
	unbound.User.Extra = nil
	wrongAud := agentOn("node-a")
	wrongAud.Audiences = []string{"https://kubernetes.default.svc"}
	return &reviewer{tokens: map[string]authnv1.TokenReviewStatus{
		"agent-a": agentOn("node-a"), "agent-b": agentOn("node-b"),
		"other-sa": other, "unbound": unbound, "api-audience": wrongAud,
	}}
}

func TestAuthenticator(t *testing.T) {
	rv := newReviewer()
	clk := clocktesting.NewFakeClock(t0)
	a := &Authenticator{Reviewer: rv, Username: agentUser, Clock: clk, TTL: time.Minute}
	ctx := context.Background()
	if node, err := a.Node(ctx, "agent-a"); err != nil || node != "node-a" {
		t.Fatalf("agent token: %q, %v", node, err)
	}
	for token, want := range map[string]string{
		"garbage": "not authenticated", "other-sa": "is \"system:serviceaccount:default:default\"",
		"unbound": "not bound to a pod on a node", "api-audience": "do not include",
	} {
		if _, err := a.Node(ctx, token); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want an error containing %q", token, err, want)
		}
	}
	asked := rv.asked
	if node, err := a.Node(ctx, "agent-a"); err != nil || node != "node-a" {
		t.Errorf("agent token again: %q, %v", node, err)
	}
	if _, err := a.Node(ctx, "garbage"); err == nil {
		t.Errorf("a bad token again: authenticated")
	}
	if rv.asked != asked {
		t.Errorf("answers within the TTL were not reused: %d more reviews", rv.asked-asked)
	}
	clk.Step(time.Minute)
	if _, err := a.Node(ctx, "agent-a"); err != nil {
		t.Fatal(err)
	}
	if rv.asked != asked+1 {
		t.Errorf("an answer past its TTL was reused")
	}
	// The apiserver failing is not the token's fault: not remembered.
	rv.err = errors.New("connection refused")
	clk.Step(time.Minute)
	if _, err := a.Node(ctx, "agent-b"); err == nil {
		t.Fatal("a failed review authenticated")
	}
	rv.err = nil
	if node, err := a.Node(ctx, "agent-b"); err != nil || node != "node-b" {
		t.Errorf("after the apiserver came back: %q, %v", node, err)
	}
}

type wake struct {
	node string
	uids []string
}

func newTestReceiver(clk *clocktesting.FakeClock) (*Receiver, *[]wake) {
	rv := newReviewer()
	r := NewReceiver(&Authenticator{Reviewer: rv, Username: agentUser, Clock: clk, TTL: time.Minute}, clk, logr.Discard(), nil)
	var wakes []wake
	r.Wake = func(node string, uids []string) { wakes = append(wakes, wake{node, uids}) }
	return r, &wakes
}

func post(t *testing.T, h http.Handler, token string, body any) *httptest.ResponseRecorder {
	t.Helper()
	var raw []byte
	switch b := body.(type) {
	case string:
		raw = []byte(b)
	default:
		var err error
		if raw, err = json.Marshal(b); err != nil {
			t.Fatal(err)
		}
	}
	req := httptest.NewRequest(http.MethodPost, report.Path, bytes.NewReader(raw))
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, req)
	return w
}

const (
	podUID  = "3f1c2b4a-5d6e-4f70-8a9b-0c1d2e3f4a5b"
	podUID2 = "0a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d"
	cid     = "8e2f1c0d3b4a59687766554433221100ffeeddccbbaa99887766554433221100"
	cid2    = "1111111111111111111111111111111111111111111111111111111111111111"
)

func good(at time.Time) report.Report {
	th := 0.5
	return report.Report{Urgent: true, Containers: []report.Container{
		{PodUID: podUID, ID: cid, Time: at, Window: 5, CPU: 0.25, Throttled: &th, WorkingSet: 100 << 20, MemoryLimit: 256 << 20, Urgent: "cpu: throttled"},
		{PodUID: podUID2, ID: cid2, Time: at, Window: 5, CPU: 0.01, WorkingSet: 10 << 20},
	}}
}

// The receiver's answers: who may report, what it refuses, and that an
// urgent report wakes the manager for exactly its urgent pods.
func TestReceiver(t *testing.T) {
	clk := clocktesting.NewFakeClock(t0)
	r, wakes := newTestReceiver(clk)
	if w := post(t, r, "", good(t0)); w.Code != http.StatusUnauthorized {
		t.Errorf("no token: %d", w.Code)
	}
	if w := post(t, r, "garbage", good(t0)); w.Code != http.StatusUnauthorized {
		t.Errorf("bad token: %d", w.Code)
	}
	if w := post(t, r, "other-sa", good(t0)); w.Code != http.StatusForbidden {
		t.Errorf("another service account: %d", w.Code)
	}
	if w := post(t, r, "agent-a", good(t0)); w.Code != http.StatusNoContent {
		t.Fatalf("agent: %d %s", w.Code, w.Body)
	}
	if len(*wakes) != 1 || (*wakes)[0].node != "node-a" || len((*wakes)[0].uids) != 1 || (*wakes)[0].uids[0] != podUID {
		t.Errorf("wake-ups %+v, want node-a's %s", *wakes, podUID)
	}
	bad := good(t0)
	bad.Containers[0].CPU = -1
	nan := good(t0)
	nan.Containers[1].ID = cid
	for name, body := range map[string]any{"garbage": "<html>", "negative cpu": bad, "a container twice": nan,
		"unknown field": `{"containers":[],"sudo":true}`} {
		clk.Step(time.Second)
		if w := post(t, r, "agent-b", body); w.Code != http.StatusBadRequest {
			t.Errorf("%s: %d, want 400", name, w.Code)
		}
	}
	// A node pushing faster than twice a second, past a burst of 3.
	var codes []int
	for range 5 {
		codes = append(codes, post(t, r, "agent-a", good(t0)).Code)
	}
	if codes[len(codes)-1] != http.StatusTooManyRequests {
		t.Errorf("a flood from one node: %v, want it throttled", codes)
	}
}

func pod(name, node, uid, id string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID(uid)},
		Spec:       corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "app"}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, ContainerStatuses: []corev1.ContainerStatus{{
			Name: "app", ContainerID: "containerd://" + id, State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}},
		}}},
	}
}

// fallback answers every pod it is asked for, and records them.
type fallback struct {
	asked []string
	err   error
}

func (f *fallback) Name() string { return "kubelet" }
func (f *fallback) Usage(_ context.Context, pods []*corev1.Pod) (metrics.Result, error) {
	res := metrics.Result{Usage: map[metrics.Key]metrics.Usage{}}
	for _, p := range pods {
		f.asked = append(f.asked, p.Name)
	}
	if f.err != nil {
		return res, f.err
	}
	for _, p := range pods {
		k := metrics.Key{Namespace: p.Namespace, Pod: p.Name, Container: "app"}
		res.Usage[k] = metrics.Usage{Key: k, CPU: 1, Memory: 1}
	}
	return res, nil
}

// Pods on a node with a fresh report are read from it; the rest from the
// fallback. A container ID reported under another pod's UID is not used.
func TestSource(t *testing.T) {
	clk := clocktesting.NewFakeClock(t0)
	r, _ := newTestReceiver(clk)
	if w := post(t, r, "agent-a", good(t0)); w.Code != http.StatusNoContent {
		t.Fatal(w.Code)
	}
	fb := &fallback{}
	s := &Source{Receiver: r, Fallback: fb, Clock: clk}
	onA := pod("a", "node-a", podUID, cid)
	// The agent reported cid2 under podUID2; a pod claiming it under its
	// own UID gets nothing from the report.
	thief := pod("thief", "node-a", podUID, cid2)
	onB := pod("b", "node-b", podUID2, cid2)
	clk.Step(2 * time.Second)
	res, err := s.Usage(context.Background(), []*corev1.Pod{onA, thief, onB})
	if err != nil {
		t.Fatal(err)
	}
	u, ok := res.Usage[metrics.Key{Namespace: "ns", Pod: "a", Container: "app"}]
	if !ok || u.CPU != 0.25 || u.Memory != 100<<20 || u.Window != 5*time.Second || u.Throttled == nil || *u.Throttled != 0.5 {
		t.Errorf("a: %+v, %v", u, ok)
	}
	if _, ok := res.Usage[metrics.Key{Namespace: "ns", Pod: "thief", Container: "app"}]; ok {
		t.Errorf("a pod got another pod's container's figures")
	}
	if len(fb.asked) != 1 || fb.asked[0] != "b" {
		t.Errorf("fallback asked for %v, want [b]", fb.asked)
	}
	// The report grows old: node-a's pods go to the fallback too.
	clk.Step(DefaultNodeMaxAge)
	fb.asked = nil
	if _, err := s.Usage(context.Background(), []*corev1.Pod{onA}); err != nil || len(fb.asked) != 1 {
		t.Errorf("stale node: fallback asked %v, err %v", fb.asked, err)
	}
	// The fallback failing holds its pods, and only when it had every pod
	// is it the sync's error.
	fb.err = errors.New("kubelet down")
	if _, err := s.Usage(context.Background(), []*corev1.Pod{onB}); err == nil {
		t.Errorf("no agent and no fallback: no error")
	}
	post(t, r, "agent-a", good(clk.Now()))
	res, err = s.Usage(context.Background(), []*corev1.Pod{onA, onB})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.ProblemsFor(metrics.Key{Namespace: "ns", Pod: "b", Container: "app"})) != 1 || len(res.Usage) != 1 {
		t.Errorf("fallback down: usage %v problems %v", res.Usage, res.Problems)
	}
}

// An agent speaks only for the node its token is bound to: the node comes
// from the TokenReview, never from the report, and a pod is read only from
// its own node's report. A report from node-a naming a container of a pod
// on node-b (its ID and pod UID, with figures of its choosing) never
// reaches that pod, whether node-b's agent reports or not.
func TestAgentReportsOnlyItsOwnNodesPods(t *testing.T) {
	clk := clocktesting.NewFakeClock(t0)
	r, wakes := newTestReceiver(clk)
	forged := report.Report{Urgent: true, Containers: []report.Container{
		{PodUID: podUID2, ID: cid2, Time: t0, Window: 5, CPU: 64, WorkingSet: 1 << 40, Urgent: "memory: at risk"},
	}}
	if w := post(t, r, "agent-a", forged); w.Code != http.StatusNoContent {
		t.Fatalf("agent-a: %d %s", w.Code, w.Body)
	}
	// The wake-up names the reporting node: the manager looks up the
	// UIDs among node-a's pods only (manager.waker).
	for _, wk := range *wakes {
		if wk.node != "node-a" {
			t.Errorf("node-a's report woke node %s's pods", wk.node)
		}
	}
	onB := pod("b", "node-b", podUID2, cid2)
	fb := &fallback{}
	s := &Source{Receiver: r, Fallback: fb, Clock: clk}
	key := metrics.Key{Namespace: "ns", Pod: "b", Container: "app"}
	res, err := s.Usage(context.Background(), []*corev1.Pod{onB})
	if err != nil {
		t.Fatal(err)
	}
	if u := res.Usage[key]; u.CPU != 1 || u.Memory != 1 || len(fb.asked) != 1 {
		t.Errorf("node-b without a report of its own: %+v (fallback asked %v), want the fallback's figures", u, fb.asked)
	}
	honest := report.Report{Containers: []report.Container{{PodUID: podUID2, ID: cid2, Time: t0, Window: 5, CPU: 0.1, WorkingSet: 10 << 20}}}
	if w := post(t, r, "agent-b", honest); w.Code != http.StatusNoContent {
		t.Fatalf("agent-b: %d %s", w.Code, w.Body)
	}
	// node-a reports again after node-b: the newer report is still not b's.
	clk.Step(time.Second)
	forged.Containers[0].Time = clk.Now()
	if w := post(t, r, "agent-a", forged); w.Code != http.StatusNoContent {
		t.Fatalf("agent-a again: %d %s", w.Code, w.Body)
	}
	res, err = s.Usage(context.Background(), []*corev1.Pod{onB})
	if err != nil {
		t.Fatal(err)
	}
	if u, ok := res.Usage[key]; !ok || u.CPU != 0.1 || u.Memory != 10<<20 {
		t.Errorf("node-b's pod: %+v, %v, want node-b's own report (0.1 cores, 10Mi)", u, ok)
	}
}

// What an agent in its JVM mode read of a container's JVM reaches the
// usage the decision reads (podchange.Input.JVM, through advise); a
// container it read no JVM of has none.
func TestSourceCarriesTheJVMsFigures(t *testing.T) {
	clk := clocktesting.NewFakeClock(t0)
	r, _ := newTestReceiver(clk)
	rep := good(t0)
	rep.Containers[0].JVM = &report.JVM{Collector: "ZGC", HeapMax: 256 << 20, HeapCommitted: 64 << 20, HeapUsed: 40 << 20, NonHeap: 36 << 20}
	if w := post(t, r, "agent-a", rep); w.Code != http.StatusNoContent {
		t.Fatalf("%d %s", w.Code, w.Body)
	}
	s := &Source{Receiver: r, Fallback: &fallback{}, Clock: clk}
	res, err := s.Usage(context.Background(), []*corev1.Pod{pod("a", "node-a", podUID, cid), pod("b", "node-a", podUID2, cid2)})
	if err != nil {
		t.Fatal(err)
	}
	a := res.Usage[metrics.Key{Namespace: "ns", Pod: "a", Container: "app"}]
	if a.JVM == nil || *a.JVM != (jvm.Measured{HeapMax: 256 << 20, NonHeap: 36 << 20}) {
		t.Errorf("a's JVM: %+v", a.JVM)
	}
	if b, ok := res.Usage[metrics.Key{Namespace: "ns", Pod: "b", Container: "app"}]; !ok || b.JVM != nil {
		t.Errorf("b (no JVM read): %+v, %v", b.JVM, ok)
	}
}
