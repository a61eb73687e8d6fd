package agent

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	authnv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"

	"github.com/tailorhq/tailor/internal/agent/report"
)

// NodeNameExtra is the TokenReview extra that names the node of the pod a
// service-account token is bound to.
const NodeNameExtra = "authentication.kubernetes.io/node-name"

// TokenReviewer is the API the Authenticator asks
// (clientset.AuthenticationV1().TokenReviews()).
type TokenReviewer interface {
	Create(ctx context.Context, tr *authnv1.TokenReview, opts metav1.CreateOptions) (*authnv1.TokenReview, error)
}

// Authenticator says which node a report's token speaks for.
type Authenticator struct {
	Reviewer TokenReviewer
	// Username is the agent's identity,
	// system:serviceaccount:<namespace>:<name>.
	Username string
	Clock    clock.PassiveClock
	// TTL is how long a review's answer is reused for the same token, and
	// never past the token's own expiry. Agents push every few seconds; a
	// review each time would cost the apiserver one write per push. A
	// revoked token (its pod deleted) is refused at most TTL later.
	TTL time.Duration

	mu    sync.Mutex
	known map[[32]byte]review
}

type review struct {
	node  string
	err   error
	until time.Time
}

// maxRefusedKept bounds the refused tokens remembered: past it, a refused
// token is not remembered (garbage cannot grow the map; the Receiver's
// limits bound the reviews it costs). Tokens that pass are always kept:
// there are as many as agents.
const maxRefusedKept = 4096

// errNotAgent is a token that is valid but not the agent's, or not bound
// to a node: the manager refuses its report.
var errNotAgent = errors.New("not the agent's token")

// Cached returns the remembered answer for token, and whether there was
// one still in date: a report that has one costs no review.
func (a *Authenticator) Cached(token string) (node string, known bool, err error) {
	key := sha256.Sum256([]byte(token))
	a.mu.Lock()
	defer a.mu.Unlock()
	r, ok := a.known[key]
	if !ok || !a.Clock.Now().Before(r.until) {
		return "", false, nil
	}
	return r.node, true, r.err
}

// Node authenticates token and returns the node its pod runs on: the
// remembered answer, or a TokenReview.
func (a *Authenticator) Node(ctx context.Context, token string) (string, error) {
	if node, ok, err := a.Cached(token); ok {
		return node, err
	}
	node, err := a.review(ctx, token)
	var apiErr transientError
	if errors.As(err, &apiErr) {
		// The apiserver's trouble is not the token's: ask again next time.
		return "", err
	}
	now := a.Clock.Now()
	until := now.Add(a.TTL)
	if exp, ok := expiry(token); ok && err == nil && exp.Before(until) {
		// The apiserver has just checked the token's signature, so its
		// expiry can be read as written.
		until = exp
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.known == nil {
		a.known = map[[32]byte]review{}
	}
	for k, r := range a.known {
		if !now.Before(r.until) {
			delete(a.known, k)
		}
	}
	if err == nil || len(a.known) < maxRefusedKept {
		a.known[sha256.Sum256([]byte(token))] = review{node: node, err: err, until: until}
	}
	return node, err
}

// expiry is the exp claim of a JWT, unverified: only for a token the
// apiserver has just accepted.
func expiry(token string) (time.Time, bool) {
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return time.Time{}, false
	}
	payload, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		return time.Time{}, false
	}
	var claims struct {
		Exp *int64 `json:"exp"`
	}
	if err := json.Unmarshal(payload, &claims); err != nil || claims.Exp == nil {
		return time.Time{}, false
	}
	return time.Unix(*claims.Exp, 0), true
}

type transientError struct{ error }

func (e transientError) Unwrap() error { return e.error }

func (a *Authenticator) review(ctx context.Context, token string) (string, error) {
	tr, err := a.Reviewer.Create(ctx, &authnv1.TokenReview{Spec: authnv1.TokenReviewSpec{
		Token: token, Audiences: []string{report.Audience},
	}}, metav1.CreateOptions{})
	if err != nil {
		return "", transientError{fmt.Errorf("reviewing the agent's token: %w", err)}
	}
	st := tr.Status
	switch {
	case !st.Authenticated:
		return "", fmt.Errorf("token not authenticated: %s", st.Error)
	case !slices.Contains(st.Audiences, report.Audience):
		return "", fmt.Errorf("%w: its audiences %v do not include %q", errNotAgent, st.Audiences, report.Audience)
	case st.User.Username != a.Username:
		return "", fmt.Errorf("%w: it is %q, the agent is %q", errNotAgent, st.User.Username, a.Username)
	}
	nodes := st.User.Extra[NodeNameExtra]
	if len(nodes) != 1 || nodes[0] == "" {
		return "", fmt.Errorf("%w: it is not bound to a pod on a node (no %s)", errNotAgent, NodeNameExtra)
	}
	return nodes[0], nil
}
