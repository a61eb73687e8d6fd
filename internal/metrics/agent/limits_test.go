package agent

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	authnv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/tailorhq/tailor/internal/agent/report"
)

// postFrom posts body with token as if from the remote address from.
func postFrom(t *testing.T, h http.Handler, from, token string, body any) *httptest.ResponseRecorder {
	t.Helper()
	req := httptest.NewRequest(http.MethodPost, report.Path, strings.NewReader(mustJSON(t, body)))
	req.RemoteAddr = from
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, req)
	return w
}

func mustJSON(t *testing.T, body any) string {
	t.Helper()
	if s, ok := body.(string); ok {
		return s
	}
	raw, err := json.Marshal(body)
	if err != nil {
		t.Fatal(err)
	}
	return string(raw)
}

func (r *reviewer) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.asked
}

// One pod sending garbage tokens costs at most its source's burst of
// TokenReviews; the rest are refused before any review, and agents
// elsewhere are not held up by it.
func TestReceiverLimitsReviewsPerSource(t *testing.T) {
	clk := clocktesting.NewFakeClock(t0)
	r, _ := newTestReceiver(clk)
	rv := r.Auth.Reviewer.(*reviewer)
	codes := map[int]int{}
	for i := range 1000 {
		codes[postFrom(t, r, "10.0.0.66:40000", fmt.Sprintf("garbage-%d", i), good(t0)).Code]++
	}
	if got := rv.count(); got > r.PerSourceBurst {
		t.Errorf("1,000 garbage tokens from one pod cost %d TokenReviews, want at most its burst of %d", got, r.PerSourceBurst)
	}
	if codes[http.StatusUnauthorized] != r.PerSourceBurst || codes[http.StatusTooManyRequests] != 1000-r.PerSourceBurst {
		t.Errorf("answers to the garbage %v: want %d refused as unauthenticated, the rest throttled", codes, r.PerSourceBurst)
	}
	if w := postFrom(t, r, "10.0.0.1:40000", "agent-a", good(t0)); w.Code != http.StatusNoContent {
		t.Errorf("the agent of node-a, beside the flood: %d %s", w.Code, w.Body)
	}
	// The flooding pod gets its next review once its limiter refills.
	clk.Step(time.Second)
	asked := rv.count()
	if w := postFrom(t, r, "10.0.0.66:40001", "garbage-next", good(t0)); w.Code != http.StatusUnauthorized {
		t.Errorf("a second later: %d, want the token reviewed and refused", w.Code)
	}
	if rv.count() != asked+1 {
		t.Errorf("a second later: %d reviews, want 1", rv.count()-asked)
	}
}

// Garbage from many pods at once costs at most the global burst of
// reviews, and the map of sources stays bounded; an agent whose token was
// reviewed before goes on reporting with no review at all, and one whose
// token was not waits for the global limiter to refill.
func TestReceiverLimitsReviewsAcrossSources(t *testing.T) {
	clk := clocktesting.NewFakeClock(t0)
	r, _ := newTestReceiver(clk)
	rv := r.Auth.Reviewer.(*reviewer)
	if w := postFrom(t, r, "10.0.0.1:40000", "agent-a", good(t0)); w.Code != http.StatusNoContent {
		t.Fatalf("agent-a: %d %s", w.Code, w.Body)
	}
	for i := range 2 * maxSources {
		postFrom(t, r, fmt.Sprintf("10.1.%d.%d:40000", i/256, i%256), fmt.Sprintf("garbage-%d", i), good(t0))
	}
	if got, want := rv.count(), r.Reviews.Burst(); got > want {
		t.Errorf("%d garbage tokens from as many pods cost %d TokenReviews (agent-a's included), want at most the global burst, %d", 2*maxSources, got, want)
	}
	if n := len(r.sources); n > maxSources {
		t.Errorf("%d sources remembered, want at most %d", n, maxSources)
	}
	asked := rv.count()
	clk.Step(time.Second)
	if w := postFrom(t, r, "10.0.0.1:40000", "agent-a", good(clk.Now())); w.Code != http.StatusNoContent {
		t.Errorf("agent-a, reviewed before the flood: %d %s", w.Code, w.Body)
	}
	if rv.count() != asked {
		t.Errorf("agent-a's remembered token was reviewed again")
	}
	clk.Step(5 * time.Second)
	if w := postFrom(t, r, "10.0.0.2:40000", "agent-b", good(clk.Now())); w.Code != http.StatusNoContent {
		t.Errorf("agent-b, once the global limiter refilled: %d %s", w.Code, w.Body)
	}
}

// blockingReviewer holds every review until release is closed.
type blockingReviewer struct {
	*reviewer
	started chan struct{}
	release chan struct{}
}

func (b *blockingReviewer) Create(ctx context.Context, tr *authnv1.TokenReview, o metav1.CreateOptions) (*authnv1.TokenReview, error) {
	b.started <- struct{}{}
	<-b.release
	return b.reviewer.Create(ctx, tr, o)
}

// At most MaxReviewing reviews are in flight: a slow apiserver does not
// pile up the reports' goroutines, each holding a review.
func TestReceiverLimitsReviewsInFlight(t *testing.T) {
	clk := clocktesting.NewFakeClock(t0)
	r, _ := newTestReceiver(clk)
	br := &blockingReviewer{reviewer: r.Auth.Reviewer.(*reviewer), started: make(chan struct{}, 10), release: make(chan struct{})}
	r.Auth.Reviewer = br
	r.MaxReviewing = 2
	r.Wake = nil // the test's recorder is not safe for concurrent reports
	var wg sync.WaitGroup
	codes := make([]int, 2)
	for i, tok := range []string{"agent-a", "agent-b"} {
		wg.Go(func() { codes[i] = postFrom(t, r, fmt.Sprintf("10.0.0.%d:40000", i+1), tok, good(t0)).Code })
	}
	<-br.started
	<-br.started
	if w := postFrom(t, r, "10.0.0.3:40000", "garbage", good(t0)); w.Code != http.StatusTooManyRequests || !strings.Contains(w.Body.String(), "in flight") {
		t.Errorf("a third review while two are in flight: %d %s, want 429", w.Code, w.Body)
	}
	close(br.release)
	wg.Wait()
	if codes[0] != http.StatusNoContent || codes[1] != http.StatusNoContent {
		t.Errorf("the two reviewed reports: %v, want 204s", codes)
	}
	if w := postFrom(t, r, "10.0.0.3:40000", "garbage", good(t0)); w.Code != http.StatusUnauthorized {
		t.Errorf("once they are done: %d, want the token reviewed and refused", w.Code)
	}
}

// jwt is a token whose payload says it expires at exp (the signature is the
// fake reviewer's business).
func jwt(exp time.Time) string {
	payload := base64.RawURLEncoding.EncodeToString(fmt.Appendf(nil, `{"aud":["%s"],"exp":%d}`, report.Audience, exp.Unix()))
	return "eyJhbGciOiJSUzI1NiJ9." + payload + ".c2ln"
}

// A steady agent costs one review per TTL, none per report; a remembered
// answer never outlives the token it is about.
func TestAuthenticatorRemembersUntilTTLOrExpiry(t *testing.T) {
	clk := clocktesting.NewFakeClock(t0)
	rv := newReviewer()
	long, short := jwt(t0.Add(time.Hour)), jwt(t0.Add(30*time.Second))
	rv.tokens[long], rv.tokens[short] = agentOn("node-c"), agentOn("node-d")
	a := &Authenticator{Reviewer: rv, Username: agentUser, Clock: clk, TTL: 5 * time.Minute}
	r := NewReceiver(a, clk, logr.Discard(), nil)
	for i := range 100 {
		if w := postFrom(t, r, "10.0.0.3:40000", long, good(clk.Now())); w.Code != http.StatusNoContent {
			t.Fatalf("report %d: %d %s", i, w.Code, w.Body)
		}
		clk.Step(time.Second)
	}
	if rv.count() != 1 {
		t.Errorf("100 reports within the TTL cost %d reviews, want 1", rv.count())
	}
	clk.Step(5 * time.Minute)
	if _, err := a.Node(context.Background(), long); err != nil || rv.count() != 2 {
		t.Errorf("past the TTL: %v, %d reviews, want a second one", err, rv.count())
	}
	clk.SetTime(t0)
	if _, err := a.Node(context.Background(), short); err != nil {
		t.Fatal(err)
	}
	asked := rv.count()
	clk.Step(29 * time.Second)
	if _, ok, _ := a.Cached(short); !ok {
		t.Errorf("a token 1s before its expiry: not remembered")
	}
	clk.Step(time.Second)
	if _, ok, _ := a.Cached(short); ok {
		t.Errorf("a token at its expiry: still remembered")
	}
	if rv.count() != asked {
		t.Errorf("Cached reviewed")
	}
}

// Refused tokens are remembered only while there is room; accepted ones
// always.
func TestAuthenticatorBoundsRefused(t *testing.T) {
	clk := clocktesting.NewFakeClock(t0)
	a := &Authenticator{Reviewer: newReviewer(), Username: agentUser, Clock: clk, TTL: time.Minute}
	for i := range maxRefusedKept + 100 {
		_, _ = a.Node(context.Background(), fmt.Sprintf("garbage-%d", i))
	}
	if n := len(a.known); n != maxRefusedKept {
		t.Errorf("%d refused tokens remembered, want %d", n, maxRefusedKept)
	}
	if _, err := a.Node(context.Background(), "agent-a"); err != nil {
		t.Fatal(err)
	}
	if _, ok, err := a.Cached("agent-a"); !ok || err != nil {
		t.Errorf("the agent's token with the map full: remembered %t, %v", ok, err)
	}
}
