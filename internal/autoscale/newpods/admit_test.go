package newpods_test

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	qosutil "k8s.io/kubectl/pkg/util/qos"

	"github.com/tailorhq/tailor/api/v1alpha1"
	"github.com/tailorhq/tailor/internal/autoscale/autoscaletest"
	"github.com/tailorhq/tailor/internal/autoscale/newpods"
	"github.com/tailorhq/tailor/internal/podchange"
	"github.com/tailorhq/tailor/internal/podcontainers"
	"github.com/tailorhq/tailor/internal/propertytest"
	"github.com/tailorhq/tailor/internal/resize"
)

func rl(kv ...string) corev1.ResourceList {
	out := corev1.ResourceList{}
	for i := 0; i+1 < len(kv); i += 2 {
		out[corev1.ResourceName(kv[i])] = resource.MustParse(kv[i+1])
	}
	return out
}

func templateOf(cs ...corev1.Container) *corev1.PodTemplateSpec {
	return &corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: cs}}
}

func ctr(name string, req, lim corev1.ResourceList) corev1.Container {
	return corev1.Container{Name: name, Resources: corev1.ResourceRequirements{Requests: req, Limits: lim}}
}

func target(cpu, memory string) podchange.Target {
	var t podchange.Target
	if cpu != "" {
		q := resource.MustParse(cpu)
		t.CPU = &q
	}
	if memory != "" {
		q := resource.MustParse(memory)
		t.Memory = &q
	}
	return t
}

// admittedText is each admitted container as "name req-cpu/req-mem lim-cpu/lim-mem".
func admittedText(cs []v1alpha1.AdmittedContainer) []string {
	var out []string
	for _, c := range cs {
		out = append(out, fmt.Sprintf("%s %s/%s %s/%s", c.Name, c.Requests.Cpu(), c.Requests.Memory(), c.Limits.Cpu(), c.Limits.Memory()))
	}
	return out
}

func TestAdmit(t *testing.T) {
	off := v1alpha1.UpdateModeOff
	no := false
	requestsOnly := v1alpha1.ControlledValuesRequestsOnly
	modeOff := v1alpha1.ContainerModeOff
	burstable := templateOf(ctr("app", rl("cpu", "100m", "memory", "64Mi"), rl("cpu", "200m", "memory", "128Mi")))
	cases := map[string]struct {
		template    *corev1.PodTemplateSpec
		spec        v1alpha1.TailorPolicySpec
		targets     map[string]podchange.Target
		want        []string
		wantSummary string
		wantHeld    string
	}{
		"requests to the target, limits at the template's ratio": {
			template:    burstable,
			targets:     map[string]podchange.Target{"app": target("250m", "96Mi")},
			want:        []string{"app 250m/96Mi 500m/192Mi"},
			wantSummary: "app: cpu 100m->250m (limit 200m->500m), memory 64Mi->96Mi (limit 128Mi->192Mi)",
		},
		"lowered below the template: nothing runs, no working set floors it": {
			template: burstable,
			targets:  map[string]podchange.Target{"app": target("50m", "40Mi")},
			want:     []string{"app 50m/40Mi 100m/80Mi"},
		},
		"within bounds": {
			template: burstable,
			spec: v1alpha1.TailorPolicySpec{ResourcePolicy: &v1alpha1.ResourcePolicy{ContainerPolicies: []v1alpha1.ContainerPolicy{
				{ContainerName: "*", MinAllowed: rl("memory", "80Mi"), MaxAllowed: rl("cpu", "200m")},
			}}},
			targets: map[string]podchange.Target{"app": target("250m", "40Mi")},
			want:    []string{"app 200m/80Mi 400m/160Mi"},
		},
		"no step limit: a new pod starts at its target": {
			template: burstable,
			spec: v1alpha1.TailorPolicySpec{Behavior: &v1alpha1.Behavior{
				ScaleUp:   &v1alpha1.ScaleUpRules{MaxStepPercent: ptr(int32(10))},
				ScaleDown: &v1alpha1.ScaleDownRules{MaxStepPercent: ptr(int32(10))},
			}},
			targets: map[string]podchange.Target{"app": target("400m", "32Mi")},
			want:    []string{"app 400m/32Mi 800m/64Mi"},
		},
		"guaranteed stays guaranteed": {
			template: templateOf(ctr("app", rl("cpu", "100m", "memory", "64Mi"), rl("cpu", "100m", "memory", "64Mi"))),
			targets:  map[string]podchange.Target{"app": target("300m", "100Mi")},
			want:     []string{"app 300m/100Mi 300m/100Mi"},
		},
		"guaranteed under RequestsOnly cannot move": {
			template: templateOf(ctr("app", rl("cpu", "100m", "memory", "64Mi"), rl("cpu", "100m", "memory", "64Mi"))),
			spec: v1alpha1.TailorPolicySpec{ResourcePolicy: &v1alpha1.ResourcePolicy{ContainerPolicies: []v1alpha1.ContainerPolicy{
				{ContainerName: "*", ControlledValues: &requestsOnly},
			}}},
			targets: map[string]podchange.Target{"app": target("300m", "100Mi")},
		},
		"RequestsOnly stops just below the limit where reaching it would make the pod Guaranteed": {
			template: burstable,
			spec: v1alpha1.TailorPolicySpec{ResourcePolicy: &v1alpha1.ResourcePolicy{ContainerPolicies: []v1alpha1.ContainerPolicy{
				{ContainerName: "*", ControlledValues: &requestsOnly},
			}}},
			targets: map[string]podchange.Target{"app": target("300m", "300Mi")},
			want:    []string{"app 199m/127Mi 200m/128Mi"},
		},
		"no limit is added": {
			template: templateOf(ctr("app", rl("cpu", "100m", "memory", "64Mi"), nil)),
			targets:  map[string]podchange.Target{"app": target("300m", "100Mi")},
			want:     []string{"app 300m/100Mi 0/0"},
		},
		"a resource the template does not request stays unrequested": {
			template: templateOf(ctr("app", rl("memory", "64Mi"), rl("memory", "128Mi"))),
			targets:  map[string]podchange.Target{"app": target("300m", "100Mi")},
			want:     []string{"app 0/100Mi 0/200Mi"},
		},
		"a RestartContainer resize policy restarts nothing at creation": {
			template: templateOf(corev1.Container{Name: "app",
				Resources:    corev1.ResourceRequirements{Requests: rl("cpu", "100m", "memory", "64Mi"), Limits: rl("cpu", "200m", "memory", "128Mi")},
				ResizePolicy: []corev1.ContainerResizePolicy{{ResourceName: corev1.ResourceMemory, RestartPolicy: corev1.RestartContainer}}}),
			targets: map[string]podchange.Target{"app": target("", "96Mi")},
			want:    []string{"app 100m/96Mi 200m/192Mi"},
		},
		"sidecars are sized, other init containers and Off containers are not": {
			template: func() *corev1.PodTemplateSpec {
				always := corev1.ContainerRestartPolicyAlways
				tp := templateOf(ctr("app", rl("cpu", "100m"), nil), ctr("log", rl("cpu", "100m"), nil))
				sidecar := ctr("proxy", rl("cpu", "50m"), nil)
				sidecar.RestartPolicy = &always
				tp.Spec.InitContainers = []corev1.Container{ctr("setup", rl("cpu", "10m"), nil), sidecar}
				return tp
			}(),
			spec: v1alpha1.TailorPolicySpec{ResourcePolicy: &v1alpha1.ResourcePolicy{ContainerPolicies: []v1alpha1.ContainerPolicy{
				{ContainerName: "log", Mode: &modeOff},
			}}},
			targets: map[string]podchange.Target{"app": target("200m", ""), "log": target("200m", ""), "proxy": target("80m", ""), "setup": target("80m", "")},
			want:    []string{"app 200m/0 0/0", "proxy 80m/0 0/0"},
		},
		"a container the template no longer has is ignored": {
			template: burstable,
			targets:  map[string]podchange.Target{"app": target("250m", ""), "gone": target("1", "1Gi")},
			want:     []string{"app 250m/64Mi 500m/128Mi"},
		},
		"the template already matches": {
			template: burstable,
			targets:  map[string]podchange.Target{"app": target("100m", "64Mi")},
		},
		"no recommendation yet": {
			template: burstable,
		},
		"mode Off never mutates": {
			template: burstable,
			spec:     v1alpha1.TailorPolicySpec{UpdatePolicy: &v1alpha1.UpdatePolicy{UpdateMode: off}},
			targets:  map[string]podchange.Target{"app": target("250m", "96Mi")},
			wantHeld: "new pods are not sized at creation: updateMode is Off or applyOnCreate is false",
		},
		"applyOnCreate false": {
			template: burstable,
			spec:     v1alpha1.TailorPolicySpec{UpdatePolicy: &v1alpha1.UpdatePolicy{UpdateMode: v1alpha1.UpdateModeInPlace, ApplyOnCreate: &no}},
			targets:  map[string]podchange.Target{"app": target("250m", "96Mi")},
			wantHeld: "new pods are not sized at creation: updateMode is Off or applyOnCreate is false",
		},
		"pod-level resources": {
			template: func() *corev1.PodTemplateSpec {
				tp := burstable.DeepCopy()
				tp.Spec.Resources = &corev1.ResourceRequirements{Requests: rl("cpu", "1")}
				return tp
			}(),
			targets:  map[string]podchange.Target{"app": target("250m", "96Mi")},
			wantHeld: "the template has pod-level resources: new pods start at its size and are resized in place once running",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := newpods.Admit(newpods.AdmitInput{Template: tc.template, Spec: &tc.spec, Targets: tc.targets,
				Server: resize.Version{Major: 1, Minor: 37}, Now: time.Unix(0, 0)})
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, admittedText(got.Containers)); diff != "" {
				t.Errorf("containers (-want,+got):\n%s", diff)
			}
			if tc.wantSummary != "" && got.Summary != tc.wantSummary {
				t.Errorf("summary %q, want %q", got.Summary, tc.wantSummary)
			}
			if got.Held != tc.wantHeld {
				t.Errorf("held %q, want %q", got.Held, tc.wantHeld)
			}
		})
	}
}

func ptr[T any](v T) *T { return &v }

// TestAdmitInvariants draws thousands of templates (every pod shape the
// decision's generator makes) with policies and targets, and checks what a
// new pod is admitted with: the planner accepts it as a change from the
// template, the QoS class is the template's, no limit is added, no request
// appears, requests stay within minAllowed and maxAllowed where the target
// moved them, the template's values are recorded exactly, and a policy in
// mode Off or with applyOnCreate false admits nothing.
func TestAdmitInvariants(t *testing.T) {
	cases := 5000
	if testing.Short() {
		cases = 500
	}
	seed := propertytest.Seed(t)
	r := rand.New(rand.NewPCG(seed, 7))
	admitted := 0
	for i := range cases {
		caseSeed := r.Uint64()
		n, msg := runAdmitCase(caseSeed)
		if msg != "" {
			t.Fatalf("case %d (seed %d): %s", i, caseSeed, msg)
		}
		admitted += n
	}
	t.Logf("%d generated cases (seed %d): %d admitted with changes", cases, seed, admitted)
	if admitted < cases/4 {
		t.Errorf("only %d of %d cases admitted a change: the generator no longer exercises Admit", admitted, cases)
	}
}

func runAdmitCase(seed uint64) (int, string) {
	in := autoscaletest.Case(seed)
	p := in.Pods[0]
	template := &corev1.PodTemplateSpec{ObjectMeta: p.Pod.ObjectMeta, Spec: p.Pod.Spec}
	got, err := newpods.Admit(newpods.AdmitInput{Template: template, Spec: in.Spec, Targets: p.Targets, Server: in.Server, Now: in.Now})
	if err != nil {
		return 0, err.Error()
	}
	podLevel := template.Spec.Resources != nil && len(template.Spec.Resources.Requests)+len(template.Spec.Resources.Limits) > 0
	if !newpods.ApplyOnCreate(in.Spec) || podLevel {
		if len(got.Containers) > 0 || got.Held == "" {
			return 0, fmt.Sprintf("admitted %v (held %q) where nothing may be", admittedText(got.Containers), got.Held)
		}
		return 0, ""
	}
	if len(got.Containers) == 0 {
		return 0, ""
	}
	pod := &corev1.Pod{ObjectMeta: *template.ObjectMeta.DeepCopy(), Spec: *template.Spec.DeepCopy()}
	var bad []string
	desired := resize.Desired{Containers: map[string]corev1.ResourceRequirements{}}
	for _, ac := range got.Containers {
		c := findSpecContainer(pod, ac.Name)
		if c == nil {
			return 0, fmt.Sprintf("admitted container %s is not in the template", ac.Name)
		}
		pol, _ := in.Spec.PolicyFor(ac.Name)
		if pol.Mode != nil && *pol.Mode == v1alpha1.ContainerModeOff {
			bad = append(bad, ac.Name+" is mode Off but admitted")
		}
		for _, r := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
			check := func(what string, tmpl, recorded, now corev1.ResourceList) {
				tq, had := tmpl[r]
				rq, rec := recorded[r]
				if had != rec || (had && tq.Cmp(rq) != 0) {
					bad = append(bad, fmt.Sprintf("%s template %s %s recorded as %v, template has %v", ac.Name, what, r, recorded, tmpl))
				}
				if _, set := now[r]; set != had {
					bad = append(bad, fmt.Sprintf("%s %s %s present %v in the template, %v admitted", ac.Name, what, r, had, set))
				}
			}
			check("requests", c.Resources.Requests, ac.TemplateRequests, ac.Requests)
			check("limits", c.Resources.Limits, ac.TemplateLimits, ac.Limits)
			tq, had := c.Resources.Requests[r]
			aq := ac.Requests[r]
			if !had || aq.Cmp(tq) == 0 {
				continue
			}
			if hi, ok := pol.MaxAllowed[r]; ok && aq.Cmp(hi) > 0 {
				bad = append(bad, fmt.Sprintf("%s %s request %s above maxAllowed %s", ac.Name, r, aq.String(), hi.String()))
			}
			if lo, ok := pol.MinAllowed[r]; ok && aq.Cmp(lo) < 0 {
				// Only a limit can hold a request below minAllowed.
				if l, lim := ac.Limits[r]; !lim || aq.Cmp(l) > 0 || controlsLimits(pol) {
					bad = append(bad, fmt.Sprintf("%s %s request %s below minAllowed %s", ac.Name, r, aq.String(), lo.String()))
				}
			}
		}
		desired.Containers[ac.Name] = corev1.ResourceRequirements{Requests: ac.Requests, Limits: ac.Limits}
	}
	plan, err := resize.Plan(resize.Input{Pod: pod, Desired: desired, Server: in.Server})
	if err != nil {
		return 0, err.Error()
	}
	if plan.Outcome != resize.Accepted {
		bad = append(bad, fmt.Sprintf("planner refuses it: %s %s", plan.Rule, plan.Message))
	}
	if before, after := qosutil.GetPodQOS(pod), qosutil.ComputePodQOS(plan.AfterPod()); before != after {
		bad = append(bad, fmt.Sprintf("QoS %s -> %s", before, after))
	}
	if len(bad) > 0 {
		return 0, strings.Join(bad, "; ") + "\ntemplate: " + podText(pod)
	}
	return 1, ""
}

func findSpecContainer(p *corev1.Pod, name string) *corev1.Container {
	for i := range p.Spec.Containers {
		if p.Spec.Containers[i].Name == name {
			return &p.Spec.Containers[i]
		}
	}
	for i := range p.Spec.InitContainers {
		if p.Spec.InitContainers[i].Name == name {
			return &p.Spec.InitContainers[i]
		}
	}
	return nil
}

func controlsLimits(pol v1alpha1.ContainerPolicy) bool {
	return pol.ControlledValues == nil || *pol.ControlledValues == v1alpha1.ControlledValuesRequestsAndLimits
}

func podText(p *corev1.Pod) string {
	var b strings.Builder
	for _, c := range podcontainers.Running(&p.Spec) {
		fmt.Fprintf(&b, "%s req=%s lim=%s rp=%v; ", c.Name, listText(c.Resources.Requests), listText(c.Resources.Limits), c.ResizePolicy)
	}
	if p.Spec.Resources != nil {
		fmt.Fprintf(&b, "pod req=%s lim=%s", listText(p.Spec.Resources.Requests), listText(p.Spec.Resources.Limits))
	}
	return b.String()
}

// listText is a resource list's cpu and memory, readably.
func listText(l corev1.ResourceList) string {
	var parts []string
	for _, r := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
		if q, ok := l[r]; ok {
			parts = append(parts, string(r)+":"+q.String())
		}
	}
	return "{" + strings.Join(parts, " ") + "}"
}
