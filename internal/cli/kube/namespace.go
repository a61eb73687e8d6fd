package kube

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tailorhq/tailor/internal/nsrules"
)

// Unread is a namespace object kind a verb could not list, and why.
type Unread struct {
	What string
	Err  error
}

// ReadNamespaceRules lists ns's LimitRanges and ResourceQuotas: what the
// apiserver's admission judges a new pod and a resize by. Two list calls,
// reads only. What cannot be listed is left out of the rules and returned,
// for the verb to say so.
func ReadNamespaceRules(ctx context.Context, c client.Reader, ns string) (*nsrules.Rules, []Unread) {
	var missed []Unread
	var lrs corev1.LimitRangeList
	if err := c.List(ctx, &lrs, client.InNamespace(ns)); err != nil {
		missed = append(missed, Unread{"LimitRanges", err})
	}
	var quotas corev1.ResourceQuotaList
	if err := c.List(ctx, &quotas, client.InNamespace(ns)); err != nil {
		missed = append(missed, Unread{"ResourceQuotas", err})
	}
	return &nsrules.Rules{LimitRanges: lrs.Items, Quotas: quotas.Items}, missed
}
