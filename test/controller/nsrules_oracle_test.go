//go:build controller

package controller

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tailorhq/tailor/internal/nsrules"
	"github.com/tailorhq/tailor/internal/nsrules/nsrulestest"
)

// The oracle's sentinels. Admission reads LimitRanges and ResourceQuotas
// from informers, which lag the writes. One informer sees a resource's
// writes in the order they were made, so once admission sees a namespace's
// last-written LimitRange it sees all that were written before; likewise for
// quotas. The sentinels are that last write: items for claims, which no pod
// rule reads, so a claim probes them unambiguously and nsrules must ignore
// them. When the LimitRanger's cache holds nothing for a namespace it reads
// the apiserver live, which is never behind, so that path cannot fool the
// wait either.
const (
	sentinelName = "zz-sentinel"
	// A claim above sentinelLimit is refused by the sentinel LimitRange (the
	// drawn LimitRanges' claim items allow 10Gi); one above sentinelQuota
	// and within sentinelLimit by the sentinel quota only.
	sentinelLimit = "5Gi"
	sentinelQuota = "1Gi"
)

var oraclePriorityClasses = []string{"nsrules-oracle-high", "nsrules-oracle-low"}

// TestNamespaceRulesOracle checks nsrules against the real apiserver's
// admission: for drawn namespaces (LimitRanges, quotas with the status the
// quota controller would write) and pods, a server-side dry-run create is
// refused exactly when nsrules reports a violation, by the plugin nsrules
// names first (pod validation, then the LimitRanger, then ResourceQuota), and
// the pod the apiserver would store has the cpu and memory Admitted gives.
// Then the same for dry-run updates of pods/resize of existing pods.
func TestNamespaceRulesOracle(t *testing.T) {
	const creates, resizes = 500, 100
	ctx := t.Context()
	start := time.Now()
	for i, name := range oraclePriorityClasses {
		pc := &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Value: int32(1000 * (i + 1))}
		if err := apiClient.Create(ctx, pc); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatalf("creating PriorityClass %s: %v", name, err)
		}
	}
	g := nsrulestest.Gen{R: rand.New(rand.NewPCG(20261125, 1)), PriorityClasses: oraclePriorityClasses}

	// Draw every case first, on one goroutine: the draws stay the same
	// whatever order the apiserver work happens in.
	createCases := make([]oracleCase, creates)
	for i := range createCases {
		createCases[i] = oracleCase{rules: nsrules.Rules{LimitRanges: g.LimitRanges(), Quotas: g.Quotas()}, pod: g.Pod("p")}
	}
	resizeCases := make([]oracleCase, resizes)
	for i := range resizeCases {
		old, resized := resizablePods(g)
		resizeCases[i] = oracleCase{rules: nsrules.Rules{LimitRanges: g.LimitRanges(), Quotas: g.Quotas()}, pod: resized, old: old}
	}

	// How many the apiserver refused, by what: "" (accepted), Invalid,
	// LimitRange, ResourceQuota; creates then resizes.
	var verdicts [2][4]atomic.Int64
	run := func(cases []oracleCase, check func(ctx context.Context, c *oracleCase) error) {
		group, gctx := errgroup.WithContext(ctx)
		group.SetLimit(8)
		for i := range cases {
			group.Go(func() error {
				c := &cases[i]
				if err := c.setUp(gctx); err != nil {
					return fmt.Errorf("case %d: %w", i, err)
				}
				if err := check(gctx, c); err != nil {
					return fmt.Errorf("case %d (namespace %s): %w", i, c.ns, err)
				}
				return nil
			})
		}
		if err := group.Wait(); err != nil {
			t.Fatal(err)
		}
	}
	run(createCases, func(ctx context.Context, c *oracleCase) error {
		got, err := c.checkCreate(ctx)
		verdicts[0][verdictIndex[got]].Add(1)
		return err
	})
	run(resizeCases, func(ctx context.Context, c *oracleCase) error {
		got, err := c.checkResize(ctx)
		verdicts[1][verdictIndex[got]].Add(1)
		return err
	})
	tally := func(v *[4]atomic.Int64) string {
		return fmt.Sprintf("%d accepted, refused: %d invalid, %d by the LimitRanger, %d by ResourceQuota", v[0].Load(), v[1].Load(), v[2].Load(), v[3].Load())
	}
	t.Logf("nsrules agreed with the apiserver on %d dry-run creates (%s) and %d dry-run resizes (%s) in %s",
		creates, tally(&verdicts[0]), resizes, tally(&verdicts[1]), time.Since(start).Round(time.Millisecond))
}

type oracleCase struct {
	rules nsrules.Rules
	pod   *corev1.Pod
	// old is set for a resize: the pod as created, before the LimitRanges
	// and quotas; pod is then the resize's new pod.
	old *corev1.Pod
	ns  string
	// labels are the namespace's labels (an admission policy's binding
	// may select it by them).
	labels map[string]string
}

// setUp writes the case's namespace: the pod to resize first (when there is
// one), then the LimitRanges, the quotas and their status, then the
// sentinels; and waits until admission sees the sentinels.
func (c *oracleCase) setUp(ctx context.Context) error {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "nsrules-oracle-", Labels: c.labels}}
	if err := apiClient.Create(ctx, ns); err != nil {
		return err
	}
	c.ns = ns.Name
	if c.old != nil {
		c.old.Namespace = c.ns
		if err := apiClient.Create(ctx, c.old); err != nil {
			return fmt.Errorf("creating the pod to resize: %w", err)
		}
		// The resize's new pod is the stored one with the drawn values, so
		// that the patch says nothing but them.
		resized := c.old.DeepCopy()
		for i := range resized.Spec.Containers {
			resized.Spec.Containers[i].Resources = *c.pod.Spec.Containers[i].Resources.DeepCopy()
		}
		c.pod = resized
	}
	c.rules.LimitRanges = append(c.rules.LimitRanges, corev1.LimitRange{
		ObjectMeta: metav1.ObjectMeta{Name: sentinelName},
		Spec: corev1.LimitRangeSpec{Limits: []corev1.LimitRangeItem{{
			Type: corev1.LimitTypePersistentVolumeClaim, Max: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse(sentinelLimit)},
		}}},
	})
	storage := corev1.ResourceList{corev1.ResourceRequestsStorage: resource.MustParse(sentinelQuota)}
	c.rules.Quotas = append(c.rules.Quotas, corev1.ResourceQuota{
		ObjectMeta: metav1.ObjectMeta{Name: sentinelName},
		Spec:       corev1.ResourceQuotaSpec{Hard: storage},
		Status:     corev1.ResourceQuotaStatus{Hard: storage, Used: corev1.ResourceList{corev1.ResourceRequestsStorage: resource.MustParse("0")}},
	})
	for i := range c.rules.LimitRanges {
		lr := c.rules.LimitRanges[i].DeepCopy()
		lr.Namespace = c.ns
		if err := apiClient.Create(ctx, lr); err != nil {
			return fmt.Errorf("creating LimitRange %s: %w", lr.Name, err)
		}
		// nsrules gets the LimitRange as stored: the apiserver's defaults in.
		c.rules.LimitRanges[i] = *lr
	}
	for i := range c.rules.Quotas {
		q := c.rules.Quotas[i].DeepCopy()
		q.Namespace = c.ns
		status := q.Status
		if err := apiClient.Create(ctx, q); err != nil {
			return fmt.Errorf("creating ResourceQuota %s: %w", q.Name, err)
		}
		if status.Hard != nil {
			// There is no quota controller: write what it would.
			q.Status = status
			if err := apiClient.Status().Update(ctx, q); err != nil {
				return fmt.Errorf("writing ResourceQuota %s's status: %w", q.Name, err)
			}
		}
		c.rules.Quotas[i] = *q
	}
	return c.awaitSentinels(ctx)
}

// awaitSentinels returns once a claim over the sentinel LimitRange's max is
// refused by it and one within it but over the sentinel quota by that quota.
func (c *oracleCase) awaitSentinels(ctx context.Context) error {
	probe := func(size, want string) wait.ConditionWithContextFunc {
		return func(ctx context.Context) (bool, error) {
			pvc := &corev1.PersistentVolumeClaim{
				ObjectMeta: metav1.ObjectMeta{Name: "probe", Namespace: c.ns},
				Spec: corev1.PersistentVolumeClaimSpec{
					AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
					Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse(size)}},
				},
			}
			err := apiClient.Create(ctx, pvc, client.DryRunAll)
			switch {
			case err == nil:
				return false, nil
			case apierrors.IsForbidden(err) && strings.Contains(err.Error(), want):
				return true, nil
			case apierrors.IsForbidden(err):
				return false, nil // the other sentinel, not yet this one
			}
			return false, fmt.Errorf("probing with a %s claim: %w", size, err)
		}
	}
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := wait.PollUntilContextCancel(wctx, 10*time.Millisecond, true,
		probe("7Gi", "maximum storage usage per PersistentVolumeClaim is "+sentinelLimit)); err != nil {
		return fmt.Errorf("the LimitRanger never saw LimitRange %s: %w", sentinelName, err)
	}
	if err := wait.PollUntilContextCancel(wctx, 10*time.Millisecond, true,
		probe("2Gi", "exceeded quota: "+sentinelName)); err != nil {
		return fmt.Errorf("the quota admission never saw ResourceQuota %s: %w", sentinelName, err)
	}
	return nil
}

// verdict is which check refuses first, in the apiserver's order: pod
// validation (a request above its limit), the LimitRanger, ResourceQuota; ""
// for none.
func verdict(vs []nsrules.Violation) string {
	first := ""
	rank := map[string]int{"Invalid": 0, "LimitRange": 1, "ResourceQuota": 2}
	for _, v := range vs {
		kind := "Invalid"
		if strings.HasPrefix(v.Message, "minimum") || strings.HasPrefix(v.Message, "maximum") || strings.Contains(v.Message, "max limit to request ratio") {
			kind = "LimitRange"
		} else if strings.HasPrefix(v.Object, "ResourceQuota/") {
			kind = "ResourceQuota"
		}
		if first == "" || rank[kind] < rank[first] {
			first = kind
		}
	}
	return first
}

// serverVerdict is what refused the request, by its error; anything else
// than the three is a failure of the oracle itself.
func serverVerdict(err error) (string, error) {
	var status apierrors.APIStatus
	switch {
	case err == nil:
		return "", nil
	case apierrors.IsInvalid(err) && (strings.Contains(err.Error(), "must be less than or equal to") ||
		strings.Contains(err.Error(), "only cpu and memory resources are mutable")):
		return "Invalid", nil
	case apierrors.IsForbidden(err) && strings.Contains(err.Error(), "quota"):
		return "ResourceQuota", nil
	case apierrors.IsForbidden(err) && (strings.Contains(err.Error(), "usage per") || strings.Contains(err.Error(), "max limit to request ratio")):
		return "LimitRange", nil
	case errors.As(err, &status):
		return "", fmt.Errorf("refused for a reason the oracle does not judge: %w", err)
	}
	return "", err
}

var verdictIndex = map[string]int{"": 0, "Invalid": 1, "LimitRange": 2, "ResourceQuota": 3}

// checkCreate returns the apiserver's verdict on a dry-run create of the
// case's pod, and an error where nsrules does not agree with it.
func (c *oracleCase) checkCreate(ctx context.Context) (string, error) {
	admitted := c.rules.Admitted(c.pod)
	want := verdict(c.rules.Violations(admitted, nil))
	sent := c.pod.DeepCopy()
	sent.Namespace = c.ns
	got, err := serverVerdict(apiClient.Create(ctx, sent, client.DryRunAll))
	if err != nil {
		return got, err
	}
	if got != want {
		return got, fmt.Errorf("the apiserver's verdict is %q, nsrules' %q %v\nLimitRanges: %v\nQuotas: %v\npod: %v",
			got, want, c.rules.Violations(admitted, nil), c.rules.LimitRanges, c.rules.Quotas, admitted.Spec)
	}
	if got == "" {
		// Accepted: sent is now what the apiserver would store.
		if diff := cmp.Diff(sized(admitted), sized(sent)); diff != "" {
			return got, fmt.Errorf("the apiserver defaulted the pod otherwise than Admitted (-Admitted,+apiserver):\n%s", diff)
		}
	}
	return got, nil
}

func (c *oracleCase) checkResize(ctx context.Context) (string, error) {
	resized := c.rules.Admitted(c.pod)
	want := verdict(c.rules.Violations(resized, c.old))
	sent := c.pod.DeepCopy()
	got, err := serverVerdict(apiClient.SubResource("resize").Patch(ctx, sent, client.StrategicMergeFrom(c.old), client.DryRunAll))
	if err != nil {
		return got, err
	}
	if got != want {
		return got, fmt.Errorf("the apiserver's verdict on the resize is %q, nsrules' %q %v\nLimitRanges: %v\nQuotas: %v\nold: %v\nnew: %v",
			got, want, c.rules.Violations(resized, c.old), c.rules.LimitRanges, c.rules.Quotas, c.old.Spec, resized.Spec)
	}
	return got, nil
}

// sized is each container's cpu and memory, as strings, for a readable diff.
func sized(pod *corev1.Pod) map[string]string {
	out := map[string]string{}
	for _, c := range append(pod.Spec.InitContainers, pod.Spec.Containers...) {
		for _, res := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
			if q, ok := c.Resources.Requests[res]; ok {
				out[c.Name+" requests."+string(res)] = q.String()
			}
			if q, ok := c.Resources.Limits[res]; ok {
				out[c.Name+" limits."+string(res)] = q.String()
			}
		}
	}
	return out
}

// resizablePods are a Burstable pod whose containers set every cpu and
// memory value, and the same pod with new cpu values (LimitRanges written
// after the pod may default other resources into the resize, which is then
// invalid); memory keeps request below
// limit so the QoS class cannot change, which resize validation refuses.
func resizablePods(g nsrulestest.Gen) (old, resized *corev1.Pod) {
	old = &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "p"},
		Spec:       corev1.PodSpec{RestartPolicy: corev1.RestartPolicyAlways},
	}
	for i := range 1 + g.R.IntN(2) {
		c := corev1.Container{Name: fmt.Sprintf("c%d", i), Image: "registry.k8s.io/pause:3.10"}
		cpuReq, cpuLim := ordered(g, corev1.ResourceCPU)
		memReq := resource.MustParse("64Mi")
		memLim := resource.MustParse("128Mi")
		c.Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: cpuReq, corev1.ResourceMemory: memReq}
		c.Resources.Limits = corev1.ResourceList{corev1.ResourceCPU: cpuLim, corev1.ResourceMemory: memLim}
		old.Spec.Containers = append(old.Spec.Containers, c)
	}
	resized = old.DeepCopy()
	for i := range resized.Spec.Containers {
		cpuReq, cpuLim := ordered(g, corev1.ResourceCPU)
		resized.Spec.Containers[i].Resources.Requests[corev1.ResourceCPU] = cpuReq
		resized.Spec.Containers[i].Resources.Limits[corev1.ResourceCPU] = cpuLim
	}
	return old, resized
}

func ordered(g nsrulestest.Gen, res corev1.ResourceName) (resource.Quantity, resource.Quantity) {
	a, b := g.Quantity(res), g.Quantity(res)
	if a.Cmp(b) > 0 {
		a, b = b, a
	}
	return a, b
}
