package report

import (
	"context"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tailorhq/tailor/internal/cli/kube"
	"github.com/tailorhq/tailor/internal/manifest"
	"github.com/tailorhq/tailor/internal/nsrules"
	"github.com/tailorhq/tailor/internal/report"
	"github.com/tailorhq/tailor/internal/resize"
)

// defaultServer is the Kubernetes version templates are planned for when
// the apiserver's cannot be read.
var defaultServer = resize.Version{Major: 1, Minor: 37}

// templateSource is where one workload's pod template comes from.
type templateSource struct {
	w    *report.Workload
	rows []report.Row
	ref  manifest.Ref
	tpl  *corev1.PodTemplateSpec
	// obj is the manifest the template was read from (--manifests).
	obj *manifest.Object
}

// name is the object as stderr and comments name it: with the workload's
// namespace where its manifest leaves it out.
func (s templateSource) name() manifest.Ref {
	r := s.ref
	if r.Namespace == "" {
		r.Namespace = s.w.Namespace
	}
	return r
}

// planned is one workload's change.
type planned struct {
	src  templateSource
	plan report.TemplatePlan
}

// runTemplates prints, for -o patch, a strategic-merge patch per workload
// whose template differs from the recommendation, and for -o diff a
// unified diff of the manifests under --manifests; each workload left
// out is said on stderr with its reason.
func (o *ReportOptions) runTemplates(ctx context.Context, workloads []*report.Workload, rows []report.Row, now time.Time) error {
	var objects []manifest.Object
	if o.Manifests != "" {
		var err error
		if objects, err = readManifests(o.Manifests, o.streams.ErrOut); err != nil {
			return err
		}
	}
	sources := o.templateSources(ctx, workloads, rows, objects)
	server := o.serverVersion()
	rules := map[string]*nsrules.Rules{}
	hpas := map[string][]autoscalingv2.HorizontalPodAutoscaler{}
	var changes []planned
	for _, src := range sources {
		ns := src.w.Namespace
		if _, ok := rules[ns]; !ok {
			rules[ns], hpas[ns] = o.namespaceRules(ctx, ns)
		}
		plan, err := report.PlanTemplate(report.TemplateInput{Workload: src.w, Rows: src.rows, Ref: src.ref, Template: src.tpl,
			Rules: rules[ns], HPAs: hpas[ns], Server: server, Now: now})
		switch {
		case err != nil:
			o.skipped(src.name(), err.Error())
		case plan.Held != "":
			o.skipped(src.name(), plan.Held)
		case len(plan.Containers) == 0:
			o.skipped(src.name(), "nothing to change: the template already asks for the recommendation")
		default:
			changes = append(changes, planned{src, plan})
		}
		for _, why := range plan.JVMSkipped {
			fmt.Fprintf(o.streams.ErrOut, "heap option of %s not patched: %s\n", src.name(), why)
		}
	}
	if o.Output == "diff" {
		return o.printDiff(changes)
	}
	var docs []manifest.Change
	for _, c := range changes {
		ch := manifest.Change{Ref: c.src.ref, Containers: c.plan.Containers, Comment: patchComment(c), Names: []string{}, InitNames: []string{}}
		for _, ctr := range c.src.tpl.Spec.Containers {
			ch.Names = append(ch.Names, ctr.Name)
		}
		for _, ctr := range c.src.tpl.Spec.InitContainers {
			ch.InitNames = append(ch.InitNames, ctr.Name)
		}
		docs = append(docs, ch)
	}
	out, err := manifest.Patch(docs)
	if err != nil {
		return err
	}
	_, err = o.streams.Out.Write(out)
	return err
}

// patchComment says above a patch what it changes and from what.
func patchComment(c planned) []string {
	where := c.src.name().String()
	if c.src.obj != nil {
		where += fmt.Sprintf(" (%s:%d)", c.src.obj.File, c.src.obj.Line)
	}
	source := ""
	for _, r := range c.src.rows {
		if r.Source != "" {
			source = r.Source
			break
		}
	}
	out := []string{where + ": " + c.plan.Summary, "recommendation from " + source}
	if c.plan.HPA != "" {
		out = append(out, c.plan.HPA)
	}
	for _, j := range c.plan.JVMs {
		out = append(out, j.Container+": "+j.Advice.Message+"; new pods restart their JVM with it")
	}
	return out
}

func (o *ReportOptions) skipped(ref manifest.Ref, why string) {
	fmt.Fprintf(o.streams.ErrOut, "skipped %s: %s\n", ref, why)
}

// printDiff writes the plans into the manifests they were read from, one
// file at a time, and prints a unified diff of each file that changed.
func (o *ReportOptions) printDiff(changes []planned) error {
	byFile := map[string][]planned{}
	var files []string
	for _, c := range changes {
		f := c.src.obj.File
		if _, ok := byFile[f]; !ok {
			files = append(files, f)
		}
		byFile[f] = append(byFile[f], c)
	}
	sort.Strings(files)
	for _, f := range files {
		before, err := os.ReadFile(f)
		if err != nil {
			return err
		}
		after := before
		for _, c := range byFile[f] {
			containers := resourcesOnly(c.plan.Containers)
			for _, j := range c.plan.JVMs {
				fmt.Fprintf(o.streams.ErrOut, "heap option of %s not written into %s: container %s, %s: take it with -o patch\n", c.src.name(), f, j.Container, j.Advice.Suggested)
			}
			if len(containers) == 0 {
				continue
			}
			edited, err := manifest.Edit(after, c.src.obj.Doc, c.src.ref.Kind, containers)
			if err != nil {
				o.skipped(c.src.name(), fmt.Sprintf("%s:%d: %v: take this one with -o patch", f, c.src.obj.Line, err))
				continue
			}
			after = edited
		}
		if _, err := io.WriteString(o.streams.Out, manifest.Diff(filepath.ToSlash(f), before, after)); err != nil {
			return err
		}
	}
	return nil
}

// resourcesOnly is cs without the heap options a plan moves, which -o
// diff does not write into a manifest's own lines, and without the
// containers that change nothing else.
func resourcesOnly(cs []manifest.Container) []manifest.Container {
	var out []manifest.Container
	for _, c := range cs {
		if c.Requests == nil && c.Limits == nil {
			continue
		}
		c.Command, c.Args, c.Env = nil, nil, nil
		out = append(out, c)
	}
	return out
}

// readManifests parses every .yaml and .yml file under dir (hidden
// directories left out); a file that is not YAML (a Helm template) is
// said on warn and passed over.
func readManifests(dir string, warn io.Writer) ([]manifest.Object, error) {
	var out []manifest.Object
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path != dir && strings.HasPrefix(d.Name(), ".") {
				return filepath.SkipDir
			}
			return nil
		}
		if ext := filepath.Ext(path); ext != ".yaml" && ext != ".yml" {
			return nil
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		objs, err := manifest.Parse(path, data)
		if err != nil {
			fmt.Fprintf(warn, "warning: passed over %v\n", err)
			return nil
		}
		out = append(out, objs...)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("--manifests: %w", err)
	}
	return out, nil
}

// templateSources finds each workload's template: in the manifests when
// given, else in the cluster. A workload that has none is said on stderr.
func (o *ReportOptions) templateSources(ctx context.Context, workloads []*report.Workload, rows []report.Row, objects []manifest.Object) []templateSource {
	byWorkload := map[*report.Workload][]report.Row{}
	at := map[string]*report.Workload{}
	for _, w := range workloads {
		at[w.Namespace+"/"+w.Kind+"/"+w.Name] = w
	}
	for _, r := range rows {
		w := at[r.Namespace+"/"+r.Kind+"/"+r.Workload]
		byWorkload[w] = append(byWorkload[w], r)
	}
	var out []templateSource
	seen := map[string]int{}
	for _, w := range workloads {
		ref := manifest.Ref{APIVersion: manifest.APIVersionOf(w.Kind), Kind: w.Kind, Namespace: w.Namespace, Name: w.Name}
		if w.Kind == "Pod" {
			o.skipped(ref, "a pod without a controller has no template: change the manifest that creates it, or resize it in place (tailor resize)")
			continue
		}
		if _, ok := manifest.TemplatePath(w.Kind); !ok {
			o.skipped(ref, fmt.Sprintf("tailor does not know where a %s keeps its pod template", w.Kind))
			continue
		}
		if w.Kind == "Job" {
			var err error
			if ref, err = o.jobOwner(ctx, ref); err != nil {
				o.skipped(ref, err.Error())
				continue
			}
		}
		src := templateSource{w: w, rows: byWorkload[w], ref: ref}
		if objects != nil {
			obj, why := findManifest(objects, ref)
			if obj == nil {
				o.skipped(ref, why)
				continue
			}
			src.obj, src.ref, src.tpl = obj, obj.Ref, obj.Template
			if src.tpl == nil {
				o.skipped(src.name(), fmt.Sprintf("%s:%d has no pod template", obj.File, obj.Line))
				continue
			}
		} else {
			tpl, err := o.clusterTemplate(ctx, ref)
			if err != nil {
				o.skipped(ref, err.Error())
				continue
			}
			src.tpl = tpl
		}
		// A CronJob's runs are one template: the newest run's pods say it.
		key := src.name().String()
		if i, ok := seen[key]; ok {
			if newest(w.Pods).After(newest(out[i].w.Pods)) {
				o.skipped(src.name(), fmt.Sprintf("planned from its newest run, %s %s: %s %s is older", w.Kind, w.Name, out[i].w.Kind, out[i].w.Name))
				out[i] = src
			} else {
				o.skipped(src.name(), fmt.Sprintf("planned from its newest run, %s %s: %s %s is older", out[i].w.Kind, out[i].w.Name, w.Kind, w.Name))
			}
			continue
		}
		seen[key] = len(out)
		out = append(out, src)
	}
	return out
}

func newest(pods []*corev1.Pod) time.Time {
	var t time.Time
	for _, p := range pods {
		if p.CreationTimestamp.After(t) {
			t = p.CreationTimestamp.Time
		}
	}
	return t
}

// jobOwner is the CronJob that runs a Job, or the Job itself.
func (o *ReportOptions) jobOwner(ctx context.Context, ref manifest.Ref) (manifest.Ref, error) {
	var job batchv1.Job
	if err := o.client.Get(ctx, client.ObjectKey{Namespace: ref.Namespace, Name: ref.Name}, &job); err != nil {
		return ref, fmt.Errorf("reading the Job: %w", kube.ExplainAPIError(err, "get", "jobs", ref.Namespace))
	}
	if c := metav1.GetControllerOf(&job); c != nil && c.Kind == "CronJob" {
		return manifest.Ref{APIVersion: manifest.APIVersionOf("CronJob"), Kind: "CronJob", Namespace: ref.Namespace, Name: c.Name}, nil
	}
	return ref, nil
}

// findManifest is the one manifest of ref's kind and name that is ref's
// namespace's or names none.
func findManifest(objects []manifest.Object, ref manifest.Ref) (*manifest.Object, string) {
	var exact, unset []*manifest.Object
	for i := range objects {
		o := &objects[i]
		if o.Ref.Kind != ref.Kind || o.Ref.Name != ref.Name {
			continue
		}
		switch o.Ref.Namespace {
		case ref.Namespace:
			exact = append(exact, o)
		case "":
			unset = append(unset, o)
		}
	}
	found := exact
	if len(found) == 0 {
		found = unset
	}
	switch len(found) {
	case 0:
		return nil, fmt.Sprintf("no manifest of %s %s under --manifests", ref.Kind, ref.Name)
	case 1:
		return found[0], ""
	}
	var where []string
	for _, o := range found {
		where = append(where, fmt.Sprintf("%s:%d", o.File, o.Line))
	}
	return nil, fmt.Sprintf("%d manifests of %s %s (%s): point --manifests at the one the cluster runs", len(found), ref.Kind, ref.Name, strings.Join(where, ", "))
}

// clusterTemplate reads ref's pod template from the cluster.
func (o *ReportOptions) clusterTemplate(ctx context.Context, ref manifest.Ref) (*corev1.PodTemplateSpec, error) {
	key := client.ObjectKey{Namespace: ref.Namespace, Name: ref.Name}
	var obj client.Object
	var tpl func() *corev1.PodTemplateSpec
	switch ref.Kind {
	case "Deployment":
		d := &appsv1.Deployment{}
		obj, tpl = d, func() *corev1.PodTemplateSpec { return &d.Spec.Template }
	case "StatefulSet":
		s := &appsv1.StatefulSet{}
		obj, tpl = s, func() *corev1.PodTemplateSpec { return &s.Spec.Template }
	case "DaemonSet":
		d := &appsv1.DaemonSet{}
		obj, tpl = d, func() *corev1.PodTemplateSpec { return &d.Spec.Template }
	case "ReplicaSet":
		r := &appsv1.ReplicaSet{}
		obj, tpl = r, func() *corev1.PodTemplateSpec { return &r.Spec.Template }
	case "ReplicationController":
		r := &corev1.ReplicationController{}
		obj, tpl = r, func() *corev1.PodTemplateSpec { return r.Spec.Template }
	case "Job":
		j := &batchv1.Job{}
		obj, tpl = j, func() *corev1.PodTemplateSpec { return &j.Spec.Template }
	case "CronJob":
		c := &batchv1.CronJob{}
		obj, tpl = c, func() *corev1.PodTemplateSpec { return &c.Spec.JobTemplate.Spec.Template }
	default:
		return nil, fmt.Errorf("tailor does not know where a %s keeps its pod template", ref.Kind)
	}
	if err := o.client.Get(ctx, key, obj); err != nil {
		resource := strings.ToLower(ref.Kind) + "s"
		return nil, fmt.Errorf("reading its template: %w", kube.ExplainAPIError(err, "get", resource, ref.Namespace))
	}
	if t := tpl(); t != nil {
		return t, nil
	}
	return nil, fmt.Errorf("%s has no pod template", ref)
}

// namespaceRules reads what a new pod of ns must pass (LimitRanges,
// quotas) and the HPAs whose utilization targets hold requests. What
// cannot be read is said on stderr and planned without.
func (o *ReportOptions) namespaceRules(ctx context.Context, ns string) (*nsrules.Rules, []autoscalingv2.HorizontalPodAutoscaler) {
	warn := func(what string, err error) {
		if apierrors.IsNotFound(err) {
			return
		}
		fmt.Fprintf(o.streams.ErrOut, "warning: %s of namespace %s not read, patches are planned without them: %v\n", what, ns, err)
	}
	rules, missed := kube.ReadNamespaceRules(ctx, o.client, ns)
	for _, m := range missed {
		warn(m.What, m.Err)
	}
	var hpas autoscalingv2.HorizontalPodAutoscalerList
	if err := o.client.List(ctx, &hpas, client.InNamespace(ns)); err != nil {
		warn("HorizontalPodAutoscalers", err)
	}
	return rules, hpas.Items
}

// serverVersion is the apiserver's Kubernetes version, for the resize
// rules a new size is checked by.
func (o *ReportOptions) serverVersion() resize.Version {
	if o.server != nil {
		return *o.server
	}
	if o.clients == nil || o.clients.Discovery == nil {
		return defaultServer
	}
	v, err := o.clients.Discovery.ServerVersion()
	if err == nil {
		var parsed resize.Version
		if parsed, err = resize.ParseVersion(v.Major + "." + v.Minor); err == nil {
			return parsed
		}
	}
	fmt.Fprintf(o.streams.ErrOut, "warning: server version not read, planning for Kubernetes %s: %v\n", defaultServer, err)
	return defaultServer
}
