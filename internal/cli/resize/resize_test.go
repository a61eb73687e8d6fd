package resize

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	"github.com/tailorhq/tailor/internal/actuator"
	"github.com/tailorhq/tailor/internal/cli/exit"
	"github.com/tailorhq/tailor/internal/resize"
	"github.com/tailorhq/tailor/test/builder"
)

func TestParseResourceList(t *testing.T) {
	cases := map[string]struct {
		in      string
		want    corev1.ResourceList
		wantErr string
	}{
		"empty":                  {in: ""},
		"kubectl quantities":     {in: "cpu=0.5,memory=1G", want: builder.List("500m", "1G")},
		"whole cores and binary": {in: "cpu=3, memory=1Gi", want: builder.List("3", "1Gi")},
		"not name=value":         {in: "cpu", wantErr: `"cpu" is not NAME=QUANTITY`},
		"bad quantity":           {in: "memory=lots", wantErr: `memory="lots" is not a quantity`},
		"negative":               {in: "cpu=-1", wantErr: "must not be negative"},
		"unknown resource":       {in: "foo=1", wantErr: `--requests: unknown resource "foo": use cpu or memory`},
		"misspelt resource":      {in: "cpu=1,memroy=1Gi", wantErr: `unknown resource "memroy"`},
		"not resizable":          {in: "ephemeral-storage=1Gi", wantErr: "ephemeral-storage cannot be resized in place"},
		"hugepages":              {in: "hugepages-2Mi=4Mi", wantErr: "hugepages-2Mi cannot be resized in place"},
		"extended resource":      {in: "nvidia.com/gpu=1", wantErr: "nvidia.com/gpu cannot be resized in place"},
		"repeated":               {in: "cpu=1,cpu=2", wantErr: "cpu is given twice (cpu=1 and cpu=2)"},
		"repeated, spaced":       {in: "memory=1Gi, cpu=1, memory=2Gi", wantErr: "memory is given twice"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := parseResourceList("--requests", tc.in)
			if tc.wantErr != "" {
				var ee *exit.CodeError
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) || !errors.As(err, &ee) || ee.Code != exit.Usage {
					t.Fatalf("error = %v, want usage error containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(tc.want) {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
			for k, v := range tc.want {
				if g := got[k]; g.Cmp(v) != 0 {
					t.Errorf("%s = %s, want %s", k, g.String(), v.String())
				}
			}
		})
	}
}

func TestResizeDesiredPicksContainer(t *testing.T) {
	one := builder.Pod("p").Container(builder.Container("app")).Obj()
	two := builder.Pod("p").Sidecar(builder.Container("proxy")).Container(builder.Container("app")).Obj()
	cases := map[string]struct {
		pod        *corev1.Pod
		container  string
		podLevel   bool
		wantTarget string
		wantErr    string
	}{
		"single container needs no -c":  {pod: one, wantTarget: "app"},
		"sidecar by name":               {pod: two, container: "proxy", wantTarget: "proxy"},
		"several containers need -c":    {pod: two, wantErr: "has containers proxy, app: choose one with -c"},
		"unknown container lists names": {pod: two, container: "db", wantErr: `no container "db" (it has proxy, app)`},
		"pod level":                     {pod: two, podLevel: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			o := &ResizeOptions{Container: tc.container, PodLevel: tc.podLevel, limits: builder.List("1", "")}
			d, err := o.desired(tc.pod)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if tc.podLevel {
				if d.Pod == nil || len(d.Containers) != 0 {
					t.Fatalf("pod-level desired = %+v", d)
				}
				return
			}
			if _, ok := d.Containers[tc.wantTarget]; !ok || len(d.Containers) != 1 {
				t.Errorf("desired targets %v, want only %s", d.Containers, tc.wantTarget)
			}
		})
	}
}

func TestResizeValidate(t *testing.T) {
	cases := map[string]struct {
		o       ResizeOptions
		wantErr string
	}{
		"nothing to do":     {o: ResizeOptions{DryRun: "none", Timeout: 1}, wantErr: "nothing to resize"},
		"pod level with -c": {o: ResizeOptions{DryRun: "none", Timeout: 1, PodLevel: true, Container: "a", limits: builder.List("1", "")}, wantErr: "exclusive"},
		"bad dry run":       {o: ResizeOptions{DryRun: "maybe", Timeout: 1, limits: builder.List("1", "")}, wantErr: `invalid --dry-run "maybe"`},
		"bad output":        {o: ResizeOptions{DryRun: "none", Timeout: 1, Output: "xml", limits: builder.List("1", "")}, wantErr: `invalid -o "xml"`},
		"ok":                {o: ResizeOptions{DryRun: "client", Timeout: 1, limits: builder.List("1", "")}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			err := tc.o.Validate()
			if tc.wantErr == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("error = %v, want %q", err, tc.wantErr)
			}
		})
	}
}

func TestPreflightJSONCarriesTheContract(t *testing.T) {
	pod := builder.Pod("web").Node("n1").ResourceVersion("7").
		Container(builder.Container("app").Requests("500m", "128Mi").Limits("2", "1Gi").
			ResizePolicy(corev1.ResourceMemory, corev1.RestartContainer)).
		QOS(corev1.PodQOSBurstable).Running().Obj()
	plan, err := resize.Plan(resize.Input{
		Pod:     pod,
		Desired: resize.Desired{Containers: map[string]corev1.ResourceRequirements{"app": {Limits: builder.List("3", "2Gi")}}},
		Server:  resize.Version{Major: 1, Minor: 37},
	})
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	o := &ResizeOptions{Output: "json"}
	o.streams.Out = &out
	if err := o.print(newPreflightReport(pod, plan, actuator.Server{GitVersion: "v1.37.1"})); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"outcome": "Accepted"`, `"qosBefore": "Burstable"`, `"qosAfter": "Burstable"`, `"restart": true`, `"patch": {`, `"resourceVersion": "7"`} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("JSON preflight lacks %s:\n%s", want, out.String())
		}
	}
}

func TestResultOfComparesRestartsWithPrediction(t *testing.T) {
	before := builder.Pod("p").Container(builder.Container("app")).Running().Obj()
	after := before.DeepCopy()
	after.Status.ContainerStatuses[0].RestartCount = 1
	plan := &resize.Result{Predicted: resize.InPlace, Containers: []resize.ContainerChange{{Name: "app", Changed: true, Restart: true}}}
	got := resultOf(before, after, actuator.Observation{State: actuator.StateDone}, 0, plan)
	want := []RestartCounter{{Container: "app", Before: 0, After: 1, Predicted: true}}
	if diff := cmp.Diff(want, got.Restarts); diff != "" {
		t.Errorf("Restarts (-want,+got):\n%s", diff)
	}
	if !got.MatchesPrediction {
		t.Errorf("a predicted restart that happened should match")
	}
	plan.Containers[0].Restart = false
	if resultOf(before, after, actuator.Observation{State: actuator.StateDone}, 0, plan).MatchesPrediction {
		t.Errorf("an unpredicted restart must not match")
	}
}
