package manifest

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

func list(kv ...string) corev1.ResourceList {
	out := corev1.ResourceList{}
	for i := 0; i+1 < len(kv); i += 2 {
		out[corev1.ResourceName(kv[i])] = resource.MustParse(kv[i+1])
	}
	return out
}

func TestPatch(t *testing.T) {
	cases := map[string]struct {
		changes []Change
		want    string
		wantErr string
	}{
		"a Deployment's container and sidecar, with a comment": {
			changes: []Change{{
				Ref:     Ref{Kind: "Deployment", Namespace: "shop", Name: "web"},
				Comment: []string{"shop/deployment/web: app: cpu 500m->200m"},
				Containers: []Container{
					{Name: "app", Requests: list("cpu", "200m"), Limits: list("cpu", "400m")},
					{Name: "proxy", Init: true, Requests: list("memory", "96Mi")},
				},
			}},
			want: `# shop/deployment/web: app: cpu 500m->200m
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: shop
spec:
  template:
    spec:
      containers:
      - name: app
        resources:
          limits:
            cpu: 400m
          requests:
            cpu: 200m
      initContainers:
      - name: proxy
        resources:
          requests:
            memory: 96Mi
`,
		},
		"a CronJob's template is under its jobTemplate; no namespace when the manifest has none": {
			changes: []Change{{
				Ref:        Ref{APIVersion: "batch/v1", Kind: "CronJob", Name: "nightly"},
				Containers: []Container{{Name: "job", Requests: list("cpu", "1", "memory", "512Mi")}},
			}},
			want: `apiVersion: batch/v1
kind: CronJob
metadata:
  name: nightly
spec:
  jobTemplate:
    spec:
      template:
        spec:
          containers:
          - name: job
            resources:
              requests:
                cpu: "1"
                memory: 512Mi
`,
		},
		"documents are separated": {
			changes: []Change{
				{Ref: Ref{Kind: "StatefulSet", Name: "db"}, Containers: []Container{{Name: "pg", Requests: list("cpu", "2")}}},
				{Ref: Ref{Kind: "DaemonSet", Name: "agent"}, Containers: []Container{{Name: "a", Limits: list("memory", "1Gi")}}},
			},
			want: `apiVersion: apps/v1
kind: StatefulSet
metadata:
  name: db
spec:
  template:
    spec:
      containers:
      - name: pg
        resources:
          requests:
            cpu: "2"
---
apiVersion: apps/v1
kind: DaemonSet
metadata:
  name: agent
spec:
  template:
    spec:
      containers:
      - name: a
        resources:
          limits:
            memory: 1Gi
`,
		},
		"every container of a list it changes, in the template's order, so that merging keeps it": {
			changes: []Change{{
				Ref:        Ref{Kind: "Deployment", Name: "web"},
				Names:      []string{"app", "log"},
				InitNames:  []string{"migrate", "proxy", "last"},
				Containers: []Container{{Name: "proxy", Init: true, Requests: list("cpu", "50m")}},
			}},
			want: `apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  template:
    spec:
      initContainers:
      - name: migrate
      - name: proxy
        resources:
          requests:
            cpu: 50m
      - name: last
`,
		},
		"a container the template does not have": {
			changes: []Change{{Ref: Ref{Kind: "Deployment", Name: "web"}, Names: []string{"app"}, Containers: []Container{{Name: "gone", Requests: list("cpu", "1")}}}},
			wantErr: "container gone is not one of the template's",
		},
		"a kind without a template": {
			changes: []Change{{Ref: Ref{Kind: "Pod", Name: "debug"}, Containers: []Container{{Name: "a", Requests: list("cpu", "1")}}}},
			wantErr: "kind Pod has no pod template",
		},
		"a container that changes nothing": {
			changes: []Change{{Ref: Ref{Kind: "Deployment", Name: "web"}, Containers: []Container{{Name: "a"}}}},
			wantErr: "container a changes nothing",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := Patch(tc.changes)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, string(got)); diff != "" {
				t.Errorf("patch (-want,+got):\n%s", diff)
			}
		})
	}
}

const multi = `# the web tier
apiVersion: v1
kind: Service
metadata:
  name: web
---
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web   # the shop's front
  namespace: shop
spec:
  template:
    spec:
      initContainers:
      - name: proxy
        restartPolicy: Always
        resources:
          requests: {cpu: 100m, memory: "64Mi"}
      containers:
      - name: app
        image: app:1
        resources:
          requests:
            cpu: 500m     # measured in March
            memory: '256Mi'
          limits:
            cpu: 1
            memory: 512Mi
---
apiVersion: batch/v1
kind: CronJob
metadata:
  name: nightly
spec:
  jobTemplate:
    spec:
      template:
        spec:
          containers:
          - name: job
            resources:
              limits: {cpu: "2"}`

func TestParse(t *testing.T) {
	objs, err := Parse("apps/web.yaml", []byte(multi))
	if err != nil {
		t.Fatal(err)
	}
	type found struct {
		Ref       Ref
		Doc, Line int
		Requests  string
	}
	var got []found
	for _, o := range objs {
		c := o.Template.Spec.Containers[0]
		got = append(got, found{o.Ref, o.Doc, o.Line, c.Resources.Requests.Cpu().String() + "/" + c.Resources.Limits.Cpu().String()})
	}
	want := []found{
		{Ref{"apps/v1", "Deployment", "shop", "web"}, 2, 8, "500m/1"},
		{Ref{"batch/v1", "CronJob", "", "nightly"}, 3, 32, "0/2"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("objects (-want,+got):\n%s", diff)
	}
	if _, err := Parse("templates/web.yaml", []byte("replicas: {{ .Values.replicas }}\n  bad: [\n")); err == nil || !strings.HasPrefix(err.Error(), "templates/web.yaml: ") {
		t.Errorf("a Helm template: error %v, want one naming the file", err)
	}
}

func TestEdit(t *testing.T) {
	cases := map[string]struct {
		doc        int
		kind       string
		containers []Container
		want       string
		wantMiss   string
	}{
		"values replaced in place, quoting, comments and flow style kept": {
			doc: 2, kind: "Deployment",
			containers: []Container{
				{Name: "app", Requests: list("cpu", "200m", "memory", "300Mi"), Limits: list("cpu", "400m", "memory", "600Mi")},
				{Name: "proxy", Init: true, Requests: list("cpu", "50m", "memory", "1Gi")},
			},
			want: `--- a/apps/web.yaml
+++ b/apps/web.yaml
@@ -17,17 +17,17 @@
       - name: proxy
         restartPolicy: Always
         resources:
-          requests: {cpu: 100m, memory: "64Mi"}
+          requests: {cpu: 50m, memory: "1Gi"}
       containers:
       - name: app
         image: app:1
         resources:
           requests:
-            cpu: 500m     # measured in March
-            memory: '256Mi'
+            cpu: 200m     # measured in March
+            memory: '300Mi'
           limits:
-            cpu: 1
-            memory: 512Mi
+            cpu: 400m
+            memory: 600Mi
 ---
 apiVersion: batch/v1
 kind: CronJob
`,
		},
		"the last line, without a newline": {
			doc: 3, kind: "CronJob",
			containers: []Container{{Name: "job", Limits: list("cpu", "1500m")}},
			want: `--- a/apps/web.yaml
+++ b/apps/web.yaml
@@ -41,4 +41,4 @@
           containers:
           - name: job
             resources:
-              limits: {cpu: "2"}
\ No newline at end of file
+              limits: {cpu: "1500m"}
\ No newline at end of file
`,
		},
		"a value the manifest leaves to the apiserver": {
			doc: 3, kind: "CronJob",
			containers: []Container{{Name: "job", Requests: list("cpu", "1")}},
			wantMiss:   "resources.requests.cpu",
		},
		"a container the manifest does not have": {
			doc: 2, kind: "Deployment",
			containers: []Container{{Name: "gone", Requests: list("cpu", "1")}},
			wantMiss:   "entry in containers",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := Edit([]byte(multi), tc.doc, tc.kind, tc.containers)
			if tc.wantMiss != "" {
				var miss *MissingError
				if !errors.As(err, &miss) || miss.Field != tc.wantMiss {
					t.Fatalf("error %v, want a MissingError of %s", err, tc.wantMiss)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, Diff("apps/web.yaml", []byte(multi), got)); diff != "" {
				t.Errorf("diff (-want,+got):\n%s", diff)
			}
			// What the edit wrote is what the parser reads back.
			objs, err := Parse("apps/web.yaml", got)
			if err != nil {
				t.Fatal(err)
			}
			for _, o := range objs {
				if o.Doc != tc.doc {
					continue
				}
				for _, c := range tc.containers {
					cs := o.Template.Spec.Containers
					if c.Init {
						cs = o.Template.Spec.InitContainers
					}
					for _, have := range cs {
						if have.Name != c.Name {
							continue
						}
						for r, q := range c.Requests {
							if v := have.Resources.Requests[r]; v.Cmp(q) != 0 {
								t.Errorf("%s requests.%s reads back %s, want %s", c.Name, r, v.String(), q.String())
							}
						}
						for r, q := range c.Limits {
							if v := have.Resources.Limits[r]; v.Cmp(q) != 0 {
								t.Errorf("%s limits.%s reads back %s, want %s", c.Name, r, v.String(), q.String())
							}
						}
					}
				}
			}
		})
	}
}

func TestDiffHunks(t *testing.T) {
	var before, after []string
	for i := range 20 {
		before = append(before, "line")
		after = append(after, "line")
		if i == 1 || i == 8 || i == 18 {
			after[i] = "changed"
		}
	}
	b, a := strings.Join(before, "\n")+"\n", strings.Join(after, "\n")+"\n"
	got := Diff("f", []byte(b), []byte(a))
	// Lines 2 and 9 have six unchanged lines between them: one hunk;
	// line 19 has nine: its own.
	want := "--- a/f\n+++ b/f\n@@ -1,12 +1,12 @@\n line\n-line\n+changed\n line\n line\n line\n line\n line\n line\n-line\n+changed\n line\n line\n line\n" +
		"@@ -16,5 +16,5 @@\n line\n line\n line\n-line\n+changed\n line\n"
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("diff (-want,+got):\n%s", diff)
	}
	if got := Diff("f", []byte(b), []byte(b)); got != "" {
		t.Errorf("no change: %q", got)
	}
}
