package main

import (
	"context"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/tailorhq/tailor/api/v1alpha1"
	"github.com/tailorhq/tailor/test/cluster"
)

// hpaResult is, per trial, what the HPA did under cluster.HPARamp alone and
// with a TailorPolicy on the same Deployment (new pods admitted through
// tailor-admission), the two runs one after the other.
type hpaResult struct {
	alone, with []cluster.HPARun
	failures    int
}

// medianOf is the median (nearest rank) of f over the runs.
func medianOf[R any](runs []R, f func(R) float64) float64 {
	xs := make([]float64, len(runs))
	for i, r := range runs {
		xs[i] = f(r)
	}
	return percentile(xs, 50)
}

func changes(r cluster.HPARun) float64   { return float64(len(r.Replicas) - 1) }
func reversals(r cluster.HPARun) float64 { return float64(r.Reversals) }

// measureHPA runs o.hpaTrials pairs of ramps. The gate's TestHPACoexistence
// proves the mechanism on one ramp (tailor leaves the cpu request the HPA
// divides by alone, and the HPA does not flap); this compares the HPA's
// replica changes with and without tailor over several.
func measureHPA(m *running, cs *kubernetes.Clientset, dyn dynamic.Interface, o options) hpaResult {
	var res hpaResult
	for i := range o.hpaTrials {
		alone, with, err := hpaTrial(m, cs, dyn, i)
		if err != nil {
			fmt.Printf("  hpa trial %d: %v\n", i+1, err)
			res.failures++
			continue
		}
		fmt.Printf("  hpa trial %d: alone %s; with tailor %s\n", i+1, alone, with)
		res.alone, res.with = append(res.alone, alone), append(res.with, with)
	}
	return res
}

func hpaTrial(m *running, cs *kubernetes.Clientset, dyn dynamic.Interface, i int) (alone, with cluster.HPARun, err error) {
	ctx := m.ctx
	ns := fmt.Sprintf("reaction-hpa-%d-%d", i, time.Now().Unix()%100000)
	drop, err := trialNamespace(ctx, cs, ns)
	if err != nil {
		return alone, with, err
	}
	defer drop()
	if alone, err = cluster.RunHPARamp(ctx, cs, ns, "alone", cluster.HPARampOptions{}); err != nil {
		return alone, with, fmt.Errorf("HPA alone: %w", err)
	}
	remove, err := cluster.ApplyAdmissionPolicies(ctx, dyn, cluster.AdmissionPolicyFile, ns)
	if remove != nil {
		defer func() { _ = remove() }()
	}
	if err != nil {
		return alone, with, err
	}
	with, err = cluster.RunHPARamp(ctx, cs, ns, "with", cluster.HPARampOptions{Policy: func(ctx context.Context) error {
		// tailor's defaults, but for as many resizes at once as the HPA
		// makes replicas: as TestHPACoexistence runs it.
		return m.client.Create(ctx, cluster.Policy(ns, "with", func(s *v1alpha1.TailorPolicySpec) {
			s.Selector = nil
			s.TargetRef = &v1alpha1.TargetRef{APIVersion: "apps/v1", Kind: "Deployment", Name: "with"}
			s.Behavior.MaxConcurrentResizes = ptr.To[int32](4)
			s.Behavior.MinResizeInterval = &metav1.Duration{Duration: time.Minute}
		}))
	}})
	if err != nil {
		return alone, with, fmt.Errorf("HPA with tailor: %w", err)
	}
	return alone, with, nil
}
