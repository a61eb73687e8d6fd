package agent

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"slices"
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
	// TTL is how long a review's answer is reused for the same token.
	// Agents push every few seconds; a review each time would cost the
	// apiserver one write per push. A revoked token (its pod deleted) is
	// refused at most TTL later.
	TTL time.Duration

	mu    sync.Mutex
	known map[[32]byte]review
}

type review struct {
	node string
	err  error
	at   time.Time
}

// errNotAgent is a token that is valid but not the agent's, or not bound
// to a node: the manager refuses its report.
var errNotAgent = errors.New("not the agent's token")

// Node authenticates token and returns the node its pod runs on.
func (a *Authenticator) Node(ctx context.Context, token string) (string, error) {
	key := sha256.Sum256([]byte(token))
	now := a.Clock.Now()
	a.mu.Lock()
	if r, ok := a.known[key]; ok && now.Sub(r.at) < a.TTL {
		a.mu.Unlock()
		return r.node, r.err
	}
	a.mu.Unlock()
	node, err := a.review(ctx, token)
	var apiErr transientError
	if errors.As(err, &apiErr) {
		// The apiserver's trouble is not the token's: ask again next time.
		return "", err
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.known == nil {
		a.known = map[[32]byte]review{}
	}
	for k, r := range a.known {
		if now.Sub(r.at) >= a.TTL {
			delete(a.known, k)
		}
	}
	a.known[key] = review{node: node, err: err, at: now}
	return node, err
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
