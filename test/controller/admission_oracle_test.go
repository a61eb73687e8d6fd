//go:build controller

package controller

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	qosutil "k8s.io/kubectl/pkg/util/qos"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tailorhq/tailor/api/v1alpha1"
	"github.com/tailorhq/tailor/internal/autoscale/autoscaletest"
	"github.com/tailorhq/tailor/internal/autoscale/newpods"
	"github.com/tailorhq/tailor/internal/nsrules"
)

// admissionOracleLabel marks the namespaces the oracle's admission policies
// are bound to.
const admissionOracleLabel = "autoscaling.tailor.dev/admission-oracle"

// TestAdmissionEntriesOracle sends what newpods.Admit plans through the
// real apiserver: for generated cases (autoscaletest.Namespaced: the
// namespace's LimitRanges and quotas, a template, its targets, HPA holds,
// a startup boost, a node's room), the entry is written to a TailorPolicy's
// status.admission, and a pod of the template's Deployment is created as a
// server-side dry run through the LimitRanger, ResourceQuota and tailor's
// MutatingAdmissionPolicy. Where the template's own pod is accepted, the
// pod with the entry must be too, created with exactly the entry's
// resources (autoscaletest.Created predicts it) and the QoS class of the
// template's pod.
func TestAdmissionEntriesOracle(t *testing.T) {
	// Cases in a namespace with LimitRanges or quotas, and without.
	const withRules, without = 150, 50
	ctx := t.Context()
	start := time.Now()
	run := fmt.Sprintf("run-%d", time.Now().UnixNano()%1e9)
	installAdmissionPoliciesFor(t, "oracle-"+run, map[string]string{admissionOracleLabel: run})

	// Draw on one goroutine: the same cases whatever order the apiserver
	// work happens in. A case needs an entry (a target that moves the
	// template), and under rules a template nsrules expects the apiserver
	// to accept (its own oracle checks that), or it shows nothing.
	r := rand.New(rand.NewPCG(20261126, 1))
	var cases []*admissionCase
	ruled := 0
	for drawn := 0; len(cases) < withRules+without; drawn++ {
		if drawn > 100*(withRules+without) {
			t.Fatalf("only %d cases in %d draws plan an entry: the generator no longer exercises Admit", len(cases), drawn)
		}
		seed := r.Uint64()
		c := autoscaletest.Namespaced(seed)
		hasRules := c.Rules != nil && len(c.Rules.LimitRanges)+len(c.Rules.Quotas) > 0
		if hasRules && (ruled == withRules ||
			len(c.Rules.Violations(c.Rules.Admitted(&corev1.Pod{Spec: c.Templates[0].Spec}), nil)) > 0) {
			continue
		}
		if !hasRules && len(cases)-ruled == without {
			continue
		}
		if c.Rules == nil {
			c.Rules = &nsrules.Rules{}
		}
		got, err := admit(c, c.Rules)
		if err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		if len(got.Containers) == 0 {
			continue
		}
		if hasRules {
			ruled++
		}
		cases = append(cases, &admissionCase{seed: seed, c: c, oracle: oracleCase{rules: *c.Rules, labels: map[string]string{admissionOracleLabel: run}}})
	}

	var applied, refused, skipped, appliedRuled, shaped, boosted atomic.Int64
	group, gctx := errgroup.WithContext(ctx)
	group.SetLimit(16)
	for i, ac := range cases {
		group.Go(func() error {
			verdict, err := ac.check(gctx)
			if err != nil {
				return fmt.Errorf("case %d (autoscaletest.Namespaced(%d), namespace %s): %w", i, ac.seed, ac.oracle.ns, err)
			}
			switch verdict {
			case "applied":
				applied.Add(1)
				if len(ac.c.Rules.LimitRanges)+len(ac.c.Rules.Quotas) > 0 {
					appliedRuled.Add(1)
				}
				if ac.shaped {
					shaped.Add(1)
				}
				if ac.entry.Boost != "" {
					boosted.Add(1)
				}
			case "refused":
				refused.Add(1)
			case "skipped":
				skipped.Add(1)
			}
			return nil
		})
	}
	if err := group.Wait(); err != nil {
		t.Fatal(err)
	}
	t.Logf("%d cases with an entry (%d under LimitRanges or quotas): %d applied by the apiserver as planned (%d under LimitRanges or quotas, %d of them planned otherwise than with no rules, %d boosted), %d refused, %d skipped (the template's own pod is refused), in %s",
		len(cases), ruled, applied.Load(), appliedRuled.Load(), shaped.Load(), boosted.Load(), refused.Load(), skipped.Load(), time.Since(start).Round(time.Millisecond))
	if applied.Load() < int64(len(cases))*3/4 {
		t.Errorf("only %d of %d entries were sent: the oracle no longer exercises the admission policy", applied.Load(), len(cases))
	}
}

// admit plans the entry of case c's first template under rules, as the
// manager does for status.admission.
func admit(c autoscaletest.NamespacedCase, rules *nsrules.Rules) (newpods.Admitted, error) {
	spec := c.Spec.DeepCopy()
	spec.StartupBoost = c.Boost
	return newpods.Admit(newpods.AdmitInput{Template: c.Templates[0], Spec: spec, Targets: c.Pods[0].Targets, Server: c.Server, Now: c.Now,
		Holds: c.Holds, Boost: c.Boost, Room: c.Room, Rules: rules, Replicas: c.Replicas})
}

type admissionCase struct {
	seed   uint64
	c      autoscaletest.NamespacedCase
	oracle oracleCase
	entry  newpods.Admitted
	// shaped: the entry differs from the one planned with no rules.
	shaped bool
}

// check writes the case's namespace, sends the template's pod alone, then
// with the entry planned for the rules as stored, and returns "applied",
// "skipped" (the template's pod is refused) or "refused" with an error.
func (ac *admissionCase) check(ctx context.Context) (string, error) {
	if err := ac.oracle.setUp(ctx); err != nil {
		return "", err
	}
	ns := ac.oracle.ns
	// Planned again on the LimitRanges as stored (the apiserver's
	// defaults in) and the sentinels, which nsrules ignores.
	got, err := admit(ac.c, &ac.oracle.rules)
	if err != nil {
		return "", err
	}
	if len(got.Containers) == 0 {
		return "", fmt.Errorf("no entry planned on the rules as stored: %q", got.Held)
	}
	ac.entry = got
	free, err := admit(ac.c, nil)
	if err != nil {
		return "", err
	}
	ac.shaped = !cmp.Equal(free.Containers, got.Containers)
	template := ac.c.Templates[0].DeepCopy()
	for _, cs := range [][]corev1.Container{template.Spec.Containers, template.Spec.InitContainers} {
		for i := range cs {
			cs[i].Image = "registry.k8s.io/pause:3.10"
		}
	}
	newPod := func(deployment, name string) *corev1.Pod {
		const hash = "5d8f9c7b6"
		p := &corev1.Pod{ObjectMeta: *template.ObjectMeta.DeepCopy(), Spec: *template.Spec.DeepCopy()}
		p.Namespace, p.Name = ns, name
		p.Labels["pod-template-hash"] = hash
		p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: deployment + "-" + hash,
			UID: types.UID(fmt.Sprintf("0d1c1b6e-0000-4000-8000-%012d", ac.seed%1e12)), Controller: ptrTo(true)}}
		return p
	}

	// The template's pod alone, before any policy: what refuses it is not
	// the entry's doing.
	asTemplate := newPod("web", "as-template")
	if err := apiClient.Create(ctx, asTemplate, client.DryRunAll); err != nil {
		if _, unknown := serverVerdict(err); unknown != nil {
			return "", fmt.Errorf("the template's pod: %w", unknown)
		}
		return "skipped", nil
	}

	spec := ac.c.Spec.DeepCopy()
	spec.Selector = nil
	spec.TargetRef = &v1alpha1.TargetRef{APIVersion: "apps/v1", Kind: "Deployment", Name: "web"}
	spec.StartupBoost = ac.c.Boost
	if err := writeAdmission(ctx, ns, "web", spec, &v1alpha1.Admission{TargetKind: "Deployment", TargetName: "web",
		Containers: got.Containers, Summary: got.Summary, Boost: got.Boost}); err != nil {
		return "", err
	}
	if err := awaitAdmissionSentinel(ctx, ns, asTemplate, newPod("sentinel", "sentinel")); err != nil {
		return "", err
	}

	sent := newPod("web", "with-entry")
	if err := apiClient.Create(ctx, sent, client.DryRunAll); err != nil {
		return "refused", fmt.Errorf("the apiserver refuses the pod with the entry, its template's alone it accepts: %w\nentry: %s\nLimitRanges: %v\nQuotas: %v",
			err, got.Summary, ac.oracle.rules.LimitRanges, ac.oracle.rules.Quotas)
	}
	want, notApplied := autoscaletest.Created(&ac.oracle.rules, template, got.Containers)
	if notApplied != "" {
		return "", fmt.Errorf("the prediction does not apply the entry: %s", notApplied)
	}
	if sent.Annotations[v1alpha1.AdmittedAnnotation] == "" {
		return "", fmt.Errorf("the admission policy did not apply the entry (%s): the pod is created %v", got.Summary, sized(sent))
	}
	if diff := cmp.Diff(sized(want), sized(sent)); diff != "" {
		return "", fmt.Errorf("the apiserver created the pod otherwise than predicted (-predicted,+apiserver):\n%s\nentry: %s", diff, got.Summary)
	}
	if b := sent.Annotations[v1alpha1.BoostAnnotation]; b != got.Boost {
		return "", fmt.Errorf("boost annotation %q, the entry's %q", b, got.Boost)
	}
	if w, g, tq := qosutil.ComputePodQOS(want), sent.Status.QOSClass, asTemplate.Status.QOSClass; g != w || g != tq {
		return "", fmt.Errorf("the apiserver gives the pod QoS class %s, predicted %s, the template's pod %s", g, w, tq)
	}
	return "applied", nil
}

// writeAdmission creates TailorPolicy name in ns with spec and writes entry
// as its status.admission, planned for the generation it has.
func writeAdmission(ctx context.Context, ns, name string, spec *v1alpha1.TailorPolicySpec, entry *v1alpha1.Admission) error {
	p := &v1alpha1.TailorPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: *spec}
	if err := apiClient.Create(ctx, p); err != nil {
		return fmt.Errorf("creating TailorPolicy %s: %w", name, err)
	}
	entry.ObservedGeneration = p.Generation
	p.Status.ObservedGeneration, p.Status.Admission = p.Generation, entry
	if err := apiClient.Status().Update(ctx, p); err != nil {
		return fmt.Errorf("writing the status of TailorPolicy %s: %w", name, err)
	}
	return nil
}

// awaitAdmissionSentinel returns once the admission policy applies an entry
// written after the case's: a TailorPolicy zz-sentinel for Deployment
// sentinel whose entry keeps asTemplate's first container as it is and only
// annotates. The policy reads TailorPolicies from one informer, which sees
// them in the order they were written, so the case's entry is seen too.
// probe is asTemplate as a pod of the sentinel Deployment: a pod the
// namespace's rules are known to accept.
func awaitAdmissionSentinel(ctx context.Context, ns string, asTemplate, probe *corev1.Pod) error {
	c := asTemplate.Spec.Containers[0]
	keep := v1alpha1.AdmittedContainer{Name: c.Name,
		TemplateRequests: c.Resources.Requests, TemplateLimits: c.Resources.Limits,
		Requests: c.Resources.Requests, Limits: c.Resources.Limits}
	spec := &v1alpha1.TailorPolicySpec{TargetRef: &v1alpha1.TargetRef{APIVersion: "apps/v1", Kind: "Deployment", Name: "sentinel"}}
	if err := writeAdmission(ctx, ns, "zz-sentinel", spec, &v1alpha1.Admission{TargetKind: "Deployment", TargetName: "sentinel",
		Containers: []v1alpha1.AdmittedContainer{keep}, Summary: "sentinel"}); err != nil {
		return err
	}
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	err := wait.PollUntilContextCancel(wctx, 20*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		p := probe.DeepCopy()
		if err := apiClient.Create(ctx, p, client.DryRunAll); err != nil {
			return false, fmt.Errorf("the sentinel pod: %w", err)
		}
		return strings.HasPrefix(p.Annotations[v1alpha1.AdmittedAnnotation], "zz-sentinel: "), nil
	})
	if err != nil {
		return fmt.Errorf("the admission policy never applied the sentinel entry: %w", err)
	}
	return nil
}
