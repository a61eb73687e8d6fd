package oracle

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/yaml"

	"github.com/tailorhq/tailor/internal/nsrules"
	"github.com/tailorhq/tailor/internal/nsrules/nsrulestest"
	"github.com/tailorhq/tailor/internal/resize"
	"github.com/tailorhq/tailor/test/builder"
	"github.com/tailorhq/tailor/test/cluster"
)

var (
	flagRuleNamespaces = flag.Int("oracle.rule-namespaces", 40, "number of generated namespaces (LimitRanges, ResourceQuotas, pods) the resizes under namespace rules are drawn in")
	flagRuleResizes    = flag.Int("oracle.rule-resizes", 25, "resizes drawn in each generated namespace")
)

// TestOracleUnderNamespaceRules checks the one engine's verdict on resizes
// in namespaces with LimitRanges and ResourceQuotas against the real
// apiserver's: first exactly the cases Kubernetes' own in-place resize e2e
// tests send (test/e2e/node/pod_resize.go, doPodResizeResourceQuotaTests and
// doPodResizeLimitRangerTests), with their expected messages; then resizes
// drawn in generated namespaces, biased to the edges of each LimitRange and
// quota. Each resize is planned as tailor resize --dry-run=client plans it
// (the pod and the namespace's rules read from the apiserver) and sent as a
// server-side dry run; the verdicts (accepted, refused by validation,
// refused by admission) must agree in every case, and an admission refusal
// the engine names must be in the apiserver's message.
func TestOracleUnderNamespaceRules(t *testing.T) {
	cluster.Shared(t)
	ctx, cs, server, _ := connect(t, 30*time.Minute)
	o := &rulesOracle{cs: cs, server: server}

	t.Run("Kubernetes e2e: ResourceQuota", func(t *testing.T) {
		ns := o.namespace(ctx, t, "oracle-e2e-quota")
		hard := builder.List("800m", "800Mi")
		quota := builder.Quota("resize-resource-quota", hard, nil)
		if err := o.createQuotas(ctx, ns, []corev1.ResourceQuota{quota}); err != nil {
			t.Fatal(err)
		}
		// The pods come after the quota, as in the e2e test: admission charges them.
		o.createE2EPods(ctx, t, ns)
		cases := []e2eCase{
			{"exceed maximum CPU", "600m", "400Mi", []string{"exceeded quota: resize-resource-quota, requested: cpu=300m, used: cpu=600m, limited: cpu=800m"}},
			{"exceed maximum Memory", "250m", "750Mi", []string{"exceeded quota: resize-resource-quota, requested: memory=450Mi, used: memory=600Mi, limited: memory=800Mi"}},
			{"exceed maximum CPU and Memory", "600m", "750Mi", []string{"exceeded quota: resize-resource-quota, requested: cpu=300m,memory=450Mi, used: cpu=600m,memory=600Mi, limited: cpu=800m,memory=800Mi"}},
			{"valid increase of CPU", "350m", "300Mi", nil},
			{"valid increase of Memory", "350m", "350Mi", nil},
			{"valid increase for both CPU and Memory", "400m", "400Mi", nil},
		}
		o.runE2E(ctx, t, ns, cases)
	})

	t.Run("Kubernetes e2e: LimitRange", func(t *testing.T) {
		ns := o.namespace(ctx, t, "oracle-e2e-limits")
		lr := builder.LimitRange("resize-limit-ranger", corev1.LimitRangeItem{
			Type: corev1.LimitTypeContainer,
			Max:  builder.List("500m", "500Mi"), Min: builder.List("50m", "50Mi"),
			Default: builder.List("100m", "100Mi"), DefaultRequest: builder.List("50m", "50Mi"),
		})
		if err := o.createLimitRanges(ctx, ns, []corev1.LimitRange{lr}); err != nil {
			t.Fatal(err)
		}
		o.createE2EPods(ctx, t, ns)
		cases := []e2eCase{
			{"exceed maximum CPU", "600m", "250Mi", []string{"maximum cpu usage per Container is 500m, but limit is 600m"}},
			{"exceed maximum Memory", "250m", "750Mi", []string{"maximum memory usage per Container is 500Mi, but limit is 750Mi"}},
			{"exceed maximum Memory and CPU", "600m", "600Mi", []string{"maximum cpu usage per Container is 500m, but limit is 600m", "maximum memory usage per Container is 500Mi, but limit is 600Mi"}},
			{"request below min CPU", "10m", "400Mi", []string{"minimum cpu usage per Container is 50m, but request is 10m"}},
			{"request below min Memory", "250m", "10Mi", []string{"minimum memory usage per Container is 50Mi, but request is 10Mi"}},
			{"request below min CPU and min Memory", "10m", "10Mi", []string{"minimum cpu usage per Container is 50m, but request is 10m", "minimum memory usage per Container is 50Mi, but request is 10Mi"}},
			{"valid increase of CPU", "350m", "300Mi", nil},
			{"valid increase of Memory", "350m", "350Mi", nil},
			{"valid increase for both CPU and Memory", "400m", "400Mi", nil},
		}
		o.runE2E(ctx, t, ns, cases)
	})

	t.Run("generated", func(t *testing.T) {
		r := rand.New(rand.NewPCG(*flagSeed, 0x5eed))
		var stats ruleStats
		for i := range *flagRuleNamespaces {
			o.generatedNamespace(ctx, t, i, rand.New(rand.NewPCG(r.Uint64(), r.Uint64())), &stats)
			if t.Failed() && stats.mismatches > 10 {
				break
			}
		}
		t.Logf("under namespace rules: %d namespaces (seed %d), %d resizes compared with the apiserver, %d mismatches; %d pods refused at creation by their LimitRanges; verdicts by tailor rule: %v",
			*flagRuleNamespaces, *flagSeed, stats.compared, stats.mismatches, stats.podsRefused, stats.byRule)
		if stats.mismatches > 0 {
			t.Fatalf("%d of %d resizes: tailor's verdict differs from the apiserver's", stats.mismatches, stats.compared)
		}
		for _, rule := range []resize.Rule{resize.RuleNone, resize.RuleLimitRange, resize.RuleResourceQuota} {
			if stats.byRule[rule] == 0 {
				t.Errorf("no resize was judged %q: the generator no longer reaches it (%v)", rule, stats.byRule)
			}
		}
	})
}

type e2eCase struct {
	name         string
	cpu, memory  string
	wantMessages []string // none: accepted
}

// e2ePod is the e2e tests' pod: one Guaranteed container of 300m/300Mi.
func e2ePod(name string) *corev1.Pod {
	return builder.Pod(name).SchedulingGate("tailor.dev/oracle").TerminationGracePeriod(0).
		Container(builder.Container("c1").Requests("300m", "300Mi").Limits("300m", "300Mi")).Obj()
}

// createE2EPods creates the two pods Kubernetes' in-place resize e2e tests
// create in ns, after its rules, and waits until both are admitted.
func (o *rulesOracle) createE2EPods(ctx context.Context, t *testing.T, ns string) {
	t.Helper()
	for _, name := range []string{"testpod1", "testpod2"} {
		if err := o.createPod(ctx, ns, e2ePod(name)); err != nil {
			t.Fatal(err)
		}
	}
	if err := o.awaitAdmission(ctx, ns); err != nil {
		t.Fatal(err)
	}
}

func (o *rulesOracle) runE2E(ctx context.Context, t *testing.T, ns string, cases []e2eCase) {
	t.Helper()
	for _, tc := range cases {
		v := builder.List(tc.cpu, tc.memory)
		d := resize.Desired{Containers: map[string]corev1.ResourceRequirements{"c1": {Requests: v, Limits: v.DeepCopy()}}}
		j, err := o.judge(ctx, ns, "testpod1", d)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if j.mismatch != "" {
			t.Errorf("%s: %s", tc.name, j.mismatch)
			continue
		}
		if (len(tc.wantMessages) == 0) != (j.plan.Outcome == resize.Accepted) {
			t.Errorf("%s: tailor says %s %s (%s), the e2e test expects the opposite", tc.name, j.plan.Outcome, j.plan.Rule, j.plan.Message)
		}
		said := j.plan.Message
		for _, v := range j.plan.Violations {
			said += "\n" + v.Message
		}
		for _, want := range tc.wantMessages {
			if !strings.Contains(said, want) || !strings.Contains(j.server, want) {
				t.Errorf("%s: want %q in tailor's refusal and the apiserver's\n--- tailor: %s\n--- apiserver: %s", tc.name, want, said, j.server)
			}
		}
	}
}

// rulesOracle sends resizes to namespaces of its own.
type rulesOracle struct {
	cs     kubernetes.Interface
	server resize.Version
}

type ruleStats struct {
	compared, mismatches, podsRefused int
	byRule                            map[resize.Rule]int
}

// generatedNamespace draws one namespace (pods, LimitRanges before or after
// them, quotas a little above what the pods use) and checks resizes of its
// pods, some drawn at a rule's edge.
func (o *rulesOracle) generatedNamespace(ctx context.Context, t *testing.T, i int, r *rand.Rand, stats *ruleStats) {
	t.Helper()
	if stats.byRule == nil {
		stats.byRule = map[resize.Rule]int{}
	}
	g := gen{r: r}
	ng := nsrulestest.Gen{R: r}
	ns := o.namespace(ctx, t, fmt.Sprintf("oracle-rules-%02d", i))
	lrs := ng.LimitRanges()
	first := g.chance(0.3)
	if first {
		if err := o.createLimitRanges(ctx, ns, lrs); err != nil {
			t.Fatal(err)
		}
		// The pods are created under them: wait until the LimitRanger sees them.
		if err := o.awaitAdmission(ctx, ns); err != nil {
			t.Fatal(err)
		}
	}
	var pods []string
	for j := range 4 {
		pod := g.gatedPod(fmt.Sprintf("p%d", j))
		pod.Spec.OS = nil // a Windows pod judges nothing of the namespace
		err := o.createPod(ctx, ns, pod)
		switch {
		case err == nil:
			pods = append(pods, pod.Name)
		case first && (apierrors.IsForbidden(err) || apierrors.IsInvalid(err)):
			// Refused by the LimitRanges, or made invalid by their defaults.
			stats.podsRefused++
		default:
			t.Fatalf("namespace %s: create pod %s: %v\n%s", ns, pod.Name, err, podSummary(pod))
		}
	}
	if !first {
		if err := o.createLimitRanges(ctx, ns, lrs); err != nil {
			t.Fatal(err)
		}
	}
	if len(pods) == 0 {
		return
	}
	stored, err := o.cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := o.createQuotas(ctx, ns, nearQuotas(g, ng, stored.Items)); err != nil {
		t.Fatal(err)
	}
	if err := o.awaitAdmission(ctx, ns); err != nil {
		t.Fatal(err)
	}
	for range *flagRuleResizes {
		name := pods[r.IntN(len(pods))]
		pod, err := o.cs.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		rules, err := o.rules(ctx, ns)
		if err != nil {
			t.Fatal(err)
		}
		d := g.ruleEdge(pod, rules)
		j, err := o.judge(ctx, ns, name, d)
		if err != nil {
			t.Fatal(err)
		}
		if j.plan.NoChange {
			continue
		}
		stats.compared++
		stats.byRule[j.plan.Rule]++
		if j.mismatch != "" {
			stats.mismatches++
			t.Errorf("namespace %s, pod %s: %s\n--- LimitRanges and quotas\n%s--- pod\n%s--- patch\n%s",
				ns, name, j.mismatch, rulesSummary(rules), podSummary(pod), j.plan.Patch)
		}
	}
}

// nearQuotas are zero to two quotas over the cpu and memory names and
// scopes nsrulestest draws, each hard a step above what the pods it takes
// in use: resizes meet them.
func nearQuotas(g gen, ng nsrulestest.Gen, pods []corev1.Pod) []corev1.ResourceQuota {
	drawn := ng.Quotas()
	out := make([]corev1.ResourceQuota, 0, len(drawn))
	for _, q := range drawn {
		hard := corev1.ResourceList{}
		for res := range q.Spec.Hard {
			if slices.Contains(quotaNames, res) {
				hard[res] = resource.Quantity{}
			}
		}
		if len(hard) == 0 {
			continue
		}
		used := usage(corev1.ResourceQuota{Spec: corev1.ResourceQuotaSpec{Hard: hard, Scopes: q.Spec.Scopes, ScopeSelector: q.Spec.ScopeSelector}}, pods)
		for res := range hard {
			h := used[res].DeepCopy()
			if strings.HasSuffix(string(res), "memory") {
				h.Add(resource.MustParse(g.pick([]string{"0", "16Mi", "64Mi", "128Mi", "512Mi", "1Gi"})))
			} else {
				h.Add(resource.MustParse(g.pick([]string{"0", "10m", "50m", "100m", "250m", "500m", "1"})))
			}
			hard[res] = h
		}
		out = append(out, corev1.ResourceQuota{
			ObjectMeta: metav1.ObjectMeta{Name: q.Name},
			Spec:       corev1.ResourceQuotaSpec{Hard: hard, Scopes: q.Spec.Scopes, ScopeSelector: q.Spec.ScopeSelector},
		})
	}
	return out
}

var quotaNames = []corev1.ResourceName{
	corev1.ResourceCPU, corev1.ResourceMemory,
	corev1.ResourceRequestsCPU, corev1.ResourceRequestsMemory,
	corev1.ResourceLimitsCPU, corev1.ResourceLimitsMemory,
}

// usage is what q's status.used says once the quota controller has counted
// pods: nsrules charges each pod to it from nothing.
func usage(q corev1.ResourceQuota, pods []corev1.Pod) corev1.ResourceList {
	q = *q.DeepCopy()
	q.Status.Hard = q.Spec.Hard.DeepCopy()
	q.Status.Used = corev1.ResourceList{}
	for res := range q.Status.Hard {
		q.Status.Used[res] = resource.Quantity{}
	}
	rules := nsrules.Rules{Quotas: []corev1.ResourceQuota{q}}
	for i := range pods {
		rules = rules.Charged(&pods[i], nil, 1)
	}
	return rules.Quotas[0].Status.Used
}

// judged is one resize as tailor predicts it and as the apiserver answers.
type judged struct {
	plan *resize.Result
	// server is the apiserver's message; "" when it accepted.
	server string
	// mismatch says how the two differ; "" when they agree.
	mismatch string
}

// judge plans d for pod name as tailor resize --dry-run=client does (the pod
// and the namespace's LimitRanges and ResourceQuotas read first) and sends
// the patch as a server-side dry run.
func (o *rulesOracle) judge(ctx context.Context, ns, name string, d resize.Desired) (judged, error) {
	pod, err := o.cs.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return judged{}, err
	}
	rules, err := o.rules(ctx, ns)
	if err != nil {
		return judged{}, err
	}
	plan, err := resize.Plan(resize.Input{Pod: pod, Desired: d, Server: o.server, Rules: rules})
	if err != nil {
		return judged{}, fmt.Errorf("planner error on a drawn case: %w", err)
	}
	j := judged{plan: plan}
	if plan.NoChange {
		return j, nil
	}
	_, err = o.cs.CoreV1().Pods(ns).Patch(ctx, name, types.StrategicMergePatchType, plan.Patch,
		metav1.PatchOptions{DryRun: []string{metav1.DryRunAll}}, "resize")
	serverStage := ""
	switch {
	case err == nil:
	case apierrors.IsInvalid(err):
		serverStage = "Invalid"
	case apierrors.IsForbidden(err):
		serverStage = "Forbidden"
	default:
		return judged{}, fmt.Errorf("resize of %s/%s failed for a reason that is not a verdict: %w", ns, name, err)
	}
	if err != nil {
		j.server = err.Error()
		var se apierrors.APIStatus
		if errors.As(err, &se) {
			j.server = se.Status().Message
		}
	}
	tailorStage := stageOf(plan)
	tailorSays := fmt.Sprintf("%s %s %s", plan.Outcome, plan.Rule, plan.Message)
	switch {
	case tailorStage != serverStage:
		j.mismatch = fmt.Sprintf("MISMATCH: tailor %s (%s), the apiserver %q: %s", orAccepted(tailorStage), tailorSays, orAccepted(serverStage), j.server)
	case plan.Rule == resize.RuleLimitRange || plan.Rule == resize.RuleResourceQuota:
		// Where two LimitRanges refuse, the apiserver names the first in its
		// cache's order: one of tailor's must be in its message.
		named := false
		for _, v := range plan.Violations {
			text, _, _ := strings.Cut(v.Message, " (LimitRange/")
			named = named || strings.Contains(j.server, text)
		}
		if !named {
			j.mismatch = fmt.Sprintf("MISMATCH in words: tailor %s, the apiserver: %s", tailorSays, j.server)
		}
	}
	return j, nil
}

// stageOf is where the apiserver refuses what the plan refuses: validation
// (422 Invalid) or admission (403 Forbidden); "" when accepted.
func stageOf(plan *resize.Result) string {
	switch plan.Rule {
	case resize.RuleNone:
		return ""
	case resize.RuleLimitRange, resize.RuleResourceQuota, resize.RuleNodeCapacity, resize.RuleNodeFeatureMissing:
		return "Forbidden"
	case resize.RuleUnsupportedPlatform:
		if strings.HasPrefix(plan.Message, "pod resize is only supported on linux nodes") {
			return "Forbidden"
		}
	}
	return "Invalid"
}

func orAccepted(stage string) string {
	if stage == "" {
		return "Accepted"
	}
	return stage
}

// rules reads ns's LimitRanges and ResourceQuotas, as the CLI does.
func (o *rulesOracle) rules(ctx context.Context, ns string) (*nsrules.Rules, error) {
	lrs, err := o.cs.CoreV1().LimitRanges(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	quotas, err := o.cs.CoreV1().ResourceQuotas(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	return &nsrules.Rules{LimitRanges: lrs.Items, Quotas: quotas.Items}, nil
}

// namespace creates a namespace for the test's pods and rules, deleted when
// the test ends.
func (o *rulesOracle) namespace(ctx context.Context, t *testing.T, prefix string) string {
	t.Helper()
	ns := fmt.Sprintf("%s-%d", prefix, time.Now().UnixNano()%1_000_000_000)
	if _, err := o.cs.CoreV1().Namespaces().Create(ctx, cluster.NewNamespace(ns, nil), metav1.CreateOptions{}); err != nil {
		t.Fatalf("create namespace %s: %v", ns, err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		grace := int64(0)
		_ = o.cs.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{GracePeriodSeconds: &grace})
	})
	return ns
}

// createPod creates pod in ns, retrying while the namespace has no default
// ServiceAccount yet (on a cluster, the controller-manager makes it).
func (o *rulesOracle) createPod(ctx context.Context, ns string, pod *corev1.Pod) error {
	pod = pod.DeepCopy()
	pod.Namespace = ns
	return wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		_, err := o.cs.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{})
		if err != nil && apierrors.IsForbidden(err) && strings.Contains(err.Error(), "serviceaccount") {
			return false, nil
		}
		return true, err
	})
}

func (o *rulesOracle) createLimitRanges(ctx context.Context, ns string, lrs []corev1.LimitRange) error {
	for _, lr := range lrs {
		lr = *lr.DeepCopy()
		lr.Namespace, lr.ResourceVersion = ns, ""
		if _, err := o.cs.CoreV1().LimitRanges(ns).Create(ctx, &lr, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("create LimitRange %s/%s: %w", ns, lr.Name, err)
		}
	}
	return nil
}

// quotaController says whether a quota controller runs (a cluster's
// controller-manager); envtest has none. Found out once, on the first quota.
var quotaController struct {
	once    sync.Once
	present bool
}

// createQuotas creates quotas in ns and waits until each has the status
// the quota controller writes (hard from spec, used counted over the pods).
// Where none runs (envtest), the test writes that status itself.
func (o *rulesOracle) createQuotas(ctx context.Context, ns string, quotas []corev1.ResourceQuota) error {
	for _, q := range quotas {
		q = *q.DeepCopy()
		q.Namespace, q.ResourceVersion, q.Status = ns, "", corev1.ResourceQuotaStatus{}
		if _, err := o.cs.CoreV1().ResourceQuotas(ns).Create(ctx, &q, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("create ResourceQuota %s/%s: %w", ns, q.Name, err)
		}
	}
	for _, q := range quotas {
		if err := o.settleQuota(ctx, ns, q.Name); err != nil {
			return err
		}
	}
	return nil
}

func (o *rulesOracle) settleQuota(ctx context.Context, ns, name string) error {
	counted := func(ctx context.Context) (bool, error) {
		q, err := o.cs.CoreV1().ResourceQuotas(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		for res := range q.Spec.Hard {
			if _, ok := q.Status.Used[res]; !ok {
				return false, nil
			}
		}
		return len(q.Status.Hard) > 0, nil
	}
	quotaController.once.Do(func() {
		quotaController.present = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 15*time.Second, true, counted) == nil
	})
	if quotaController.present {
		return wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, counted)
	}
	pods, err := o.cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	q, err := o.cs.CoreV1().ResourceQuotas(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	used := usage(*q, pods.Items)
	for res := range q.Spec.Hard {
		if _, ok := used[res]; !ok {
			used[res] = resource.MustParse("0") // what no pod of the oracle asks for (storage)
		}
	}
	q.Status = corev1.ResourceQuotaStatus{Hard: q.Spec.Hard.DeepCopy(), Used: used}
	if _, err := o.cs.CoreV1().ResourceQuotas(ns).UpdateStatus(ctx, q, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("write ResourceQuota %s/%s's status: %w", ns, name, err)
	}
	return nil
}

// The sentinels: admission reads LimitRanges and quotas from informers,
// which lag the writes, and one informer sees its writes in order; so once
// admission sees a LimitRange and a quota written after the others, it sees
// those too. Both are for claims, which no pod rule reads (and nsrules must
// ignore): a dry-run claim probes them. Each wait writes new ones, whose
// max and name no earlier one had, so the probe tells them apart.
var sentinels sync.Map // namespace -> *atomic.Int32

// awaitAdmission writes ns's sentinels anew and returns when admission
// refuses a claim over each, naming the new ones.
func (o *rulesOracle) awaitAdmission(ctx context.Context, ns string) error {
	n, _ := sentinels.LoadOrStore(ns, new(atomic.Int32))
	k := n.(*atomic.Int32).Add(1)
	grace := int64(0)
	if k > 1 {
		old := fmt.Sprintf("zz-sentinel-%d", k-1)
		_ = o.cs.CoreV1().LimitRanges(ns).Delete(ctx, old, metav1.DeleteOptions{GracePeriodSeconds: &grace})
		_ = o.cs.CoreV1().ResourceQuotas(ns).Delete(ctx, old, metav1.DeleteOptions{GracePeriodSeconds: &grace})
	}
	name := fmt.Sprintf("zz-sentinel-%d", k)
	limit := fmt.Sprintf("%dGi", 100+k)
	if err := o.createLimitRanges(ctx, ns, []corev1.LimitRange{builder.LimitRange(name, corev1.LimitRangeItem{
		Type: corev1.LimitTypePersistentVolumeClaim, Max: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse(limit)},
	})}); err != nil {
		return err
	}
	if err := o.createQuotas(ctx, ns, []corev1.ResourceQuota{builder.Quota(name,
		corev1.ResourceList{corev1.ResourceRequestsStorage: resource.MustParse("1Gi")}, nil)}); err != nil {
		return err
	}
	probe := func(size, want string) wait.ConditionWithContextFunc {
		return func(ctx context.Context) (bool, error) {
			pvc := &corev1.PersistentVolumeClaim{
				ObjectMeta: metav1.ObjectMeta{Name: "probe", Namespace: ns},
				Spec: corev1.PersistentVolumeClaimSpec{
					AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
					Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse(size)}},
				},
			}
			_, err := o.cs.CoreV1().PersistentVolumeClaims(ns).Create(ctx, pvc, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
			switch {
			case err == nil:
				return false, nil
			case apierrors.IsForbidden(err):
				return strings.Contains(err.Error(), want), nil
			}
			return false, fmt.Errorf("probing with a %s claim: %w", size, err)
		}
	}
	wctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if err := wait.PollUntilContextCancel(wctx, 20*time.Millisecond, true,
		probe("500Gi", "maximum storage usage per PersistentVolumeClaim is "+limit)); err != nil {
		return fmt.Errorf("namespace %s: the LimitRanger never saw LimitRange %s: %w", ns, name, err)
	}
	if err := wait.PollUntilContextCancel(wctx, 20*time.Millisecond, true,
		probe("2Gi", "exceeded quota: "+name)); err != nil {
		return fmt.Errorf("namespace %s: the quota admission never saw ResourceQuota %s: %w", ns, name, err)
	}
	return nil
}

// rulesSummary prints a namespace's LimitRanges' specs and quotas' status.
func rulesSummary(r *nsrules.Rules) string {
	type lr struct {
		Name  string                  `json:"name"`
		Items []corev1.LimitRangeItem `json:"items"`
	}
	type quota struct {
		Name   string                      `json:"name"`
		Scopes []corev1.ResourceQuotaScope `json:"scopes,omitempty"`
		Hard   corev1.ResourceList         `json:"hard"`
		Used   corev1.ResourceList         `json:"used"`
	}
	var s struct {
		LimitRanges []lr    `json:"limitRanges,omitempty"`
		Quotas      []quota `json:"quotas,omitempty"`
	}
	for _, l := range r.LimitRanges {
		s.LimitRanges = append(s.LimitRanges, lr{l.Name, l.Spec.Limits})
	}
	for _, q := range r.Quotas {
		s.Quotas = append(s.Quotas, quota{q.Name, q.Spec.Scopes, q.Status.Hard, q.Status.Used})
	}
	b, err := yaml.Marshal(s)
	if err != nil {
		return fmt.Sprintf("%+v\n", s)
	}
	return string(b)
}
