package deploy

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/tailorhq/tailor/test/cluster"
	"github.com/tailorhq/tailor/test/manifests"
)

// docs/install.md's "What it is allowed to do, and why" holds two tables
// that say what the manager's ServiceAccount is granted: every rule of
// each role, and which roles each install binds, and where. These are
// their header rows.
const (
	docRulesHeader  = "| role | API group | resource | verbs | why |"
	docShapesHeader = "| install | Helm values | kustomize | cluster-wide | in each watched namespace | in the install's namespace |"
)

// docShape is one row of the installs table: an install, its Helm values
// and kustomize build (either may be missing), and the manager's roles
// bound in each scope, by the tables' role names.
type docShape struct {
	name      string
	helm      []string
	kustomize string
	// bound maps "cluster", "watched" and "own" to the roles bound there.
	bound map[string][]string
}

// docTable is the rows of the markdown table under header in text, each
// a list of cells.
func docTable(t *testing.T, text, header string) [][]string {
	t.Helper()
	i := strings.Index(text, "\n"+header+"\n")
	if i < 0 {
		t.Fatalf("docs/install.md has no table headed %s", header)
	}
	lines := strings.Split(text[i+1:], "\n")[2:]
	var rows [][]string
	for _, l := range lines {
		if !strings.HasPrefix(l, "|") {
			break
		}
		cells := strings.Split(strings.TrimSuffix(strings.TrimPrefix(l, "|"), "|"), "|")
		for j := range cells {
			cells[j] = strings.TrimSpace(cells[j])
		}
		if len(cells) != strings.Count(header, "|")-1 {
			t.Fatalf("docs/install.md: row %q has %d cells, want %d", l, len(cells), strings.Count(header, "|")-1)
		}
		rows = append(rows, cells)
	}
	return rows
}

var (
	// A role cell: `name`, or `name` (variant).
	docRole = regexp.MustCompile("^`([a-z-]+)`(?: \\(([a-z-]+)\\))?$")
	// A resource: `resource`, or `resource` named `name`.
	docResource = regexp.MustCompile("^`([a-z/.]+)`(?: named `([a-z-]+)`)?$")
)

// docList splits a cell of comma-separated items; an empty cell or "none"
// is none.
func docList(cell string) []string {
	if cell == "" || cell == "none" {
		return nil
	}
	return strings.Split(cell, ", ")
}

// docRoleName is a role cell's name: "tailor-metrics-kubelet" or
// "tailor-metrics-kubelet (apiserver-proxy)".
func docRoleName(t *testing.T, cell string) string {
	t.Helper()
	m := docRole.FindStringSubmatch(cell)
	if m == nil {
		t.Fatalf("docs/install.md: %q is not a role (`name`, or `name` (variant))", cell)
	}
	if m[2] != "" {
		return m[1] + " (" + m[2] + ")"
	}
	return m[1]
}

// docGrants reads the two tables: each role's permissions
// (manifests.RuleKeys), and the installs.
func docGrants(t *testing.T) (map[string][]string, []docShape) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(repoRoot(t), "docs", "install.md"))
	if err != nil {
		t.Fatal(err)
	}
	text := string(data)
	rules := map[string][]string{}
	for _, row := range docTable(t, text, docRulesHeader) {
		role := docRoleName(t, row[0])
		group := strings.Trim(row[1], "`")
		if group == "core" {
			group = ""
		}
		for _, r := range docList(row[2]) {
			m := docResource.FindStringSubmatch(r)
			if m == nil {
				t.Fatalf("docs/install.md: %q is not a resource (`resource`, or `resource` named `name`)", r)
			}
			for _, v := range docList(row[3]) {
				// A non-resource URL (the apiserver's /metrics) has no
				// group: RuleKeys names it by verb and path alone.
				if group == "non-resource URL" {
					rules[role] = append(rules[role], v+" "+m[1])
					continue
				}
				rules[role] = append(rules[role], manifests.RuleKey(v, group, m[1], m[2]))
			}
		}
	}
	for role := range rules {
		sort.Strings(rules[role])
	}
	var shapes []docShape
	for _, row := range docTable(t, text, docShapesHeader) {
		s := docShape{name: row[0], kustomize: row[2], bound: map[string][]string{}}
		for _, v := range docList(row[1]) {
			s.helm = append(s.helm, strings.Trim(v, "`"))
		}
		for i, scope := range []string{"cluster", "watched", "own"} {
			for _, r := range docList(row[3+i]) {
				s.bound[scope] = append(s.bound[scope], docRoleName(t, r))
			}
			sort.Strings(s.bound[scope])
		}
		shapes = append(shapes, s)
	}
	return rules, shapes
}

// docWatched are the namespaces the tables' tenant installs watch.
var docWatched = []string{"team-a", "team-b"}

// managerGrants is what objs grant the manager's ServiceAccount (the one
// the manager's Deployment runs as, in namespace), in the tables' terms:
// the roles bound in each scope, and each role's permissions, by the
// name the tables give it (the install's prefix cut off to "tailor-"; a
// role whose rules are a variant's, that variant's name). Every
// RoleBinding outside namespace must be in one of watched, and a role
// bound there must be bound in each of them.
func managerGrants(t *testing.T, objs []*unstructured.Unstructured, namespace, prefix string, docRules map[string][]string, watched []string) (map[string][]string, map[string][]string) {
	t.Helper()
	var sa string
	for _, o := range objs {
		if o.GetKind() == "Deployment" && o.GetNamespace() == namespace {
			sa, _, _ = unstructured.NestedString(o.Object, "spec", "template", "spec", "serviceAccountName")
		}
	}
	if sa == "" {
		t.Fatalf("no manager Deployment in %s", namespace)
	}
	roleRules := manifests.RoleRules(objs)
	name := func(b manifests.Binding) string {
		base, ok := strings.CutPrefix(b.Role, prefix)
		if !ok {
			t.Errorf("%s %s is not named %s...", b.RoleKind, b.Role, prefix)
		}
		base = "tailor-" + base
		ns := b.Namespace
		if b.RoleKind == "ClusterRole" {
			ns = ""
		}
		got, ok := roleRules[manifests.RoleID(b.RoleKind, ns, b.Role)]
		if !ok {
			t.Errorf("a binding refers to %s %s, which is not rendered", b.RoleKind, b.Role)
		}
		// The docs' variant of this role whose rules these are, if any.
		for doc := range docRules {
			if strings.HasPrefix(doc, base+" (") && slices.Equal(docRules[doc], got) {
				return doc
			}
		}
		return base
	}
	bound := map[string][]string{}
	perNamespace := map[string][]string{}
	rules := map[string][]string{}
	for _, b := range manifests.BindingsOf(objs, namespace, sa) {
		role := name(b)
		ns := b.Namespace
		if b.RoleKind == "ClusterRole" {
			ns = ""
		}
		rules[role] = roleRules[manifests.RoleID(b.RoleKind, ns, b.Role)]
		switch {
		case b.Namespace == "":
			bound["cluster"] = append(bound["cluster"], role)
		case b.Namespace == namespace:
			bound["own"] = append(bound["own"], role)
		case slices.Contains(watched, b.Namespace):
			perNamespace[role] = append(perNamespace[role], b.Namespace)
		default:
			t.Errorf("%s %s is bound in namespace %s, which the install does not watch", b.RoleKind, b.Role, b.Namespace)
		}
	}
	for role, nss := range perNamespace {
		sort.Strings(nss)
		nss = slices.Compact(nss)
		if !slices.Equal(nss, watched) {
			t.Errorf("%s is bound in namespaces %v, want each of %v", role, nss, watched)
		}
		bound["watched"] = append(bound["watched"], role)
	}
	// A role bound twice in one scope (kustomize's admission and eviction
	// components both bind tailor-replace-unschedulable) is granted once.
	for scope := range bound {
		sort.Strings(bound[scope])
		bound[scope] = slices.Compact(bound[scope])
	}
	return bound, rules
}

// TestGrantsMatchTheDocs: for each install docs/install.md's table lists,
// the chart (and kustomize, where the row names a build) binds the
// manager's ServiceAccount exactly the roles the row says, where it says,
// and each role holds exactly the rules the other table lists for it.
func TestGrantsMatchTheDocs(t *testing.T) {
	cluster.Offline(t)
	docRules, shapes := docGrants(t)
	if len(shapes) < 10 {
		t.Fatalf("docs/install.md lists %d installs", len(shapes))
	}
	const namespace = "tailor-system"
	seen := map[string]bool{}
	check := func(t *testing.T, s docShape, objs []*unstructured.Unstructured, prefix string) {
		t.Helper()
		bound, rules := managerGrants(t, objs, namespace, prefix, docRules, docWatched)
		for role := range rules {
			seen[role] = true
		}
		if diff := cmp.Diff(s.bound, bound, cmpopts.EquateEmpty()); diff != "" {
			t.Errorf("roles bound to the manager (-docs,+rendered):\n%s", diff)
		}
		for role, got := range rules {
			want, ok := docRules[role]
			if !ok {
				t.Errorf("%s is bound but docs/install.md lists no rule of it", role)
				continue
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("%s's rules (-docs,+rendered):\n%s", role, diff)
			}
		}
	}
	for _, s := range shapes {
		t.Run(s.name+"/helm", func(t *testing.T) {
			if slices.ContainsFunc(s.helm, func(v string) bool { return strings.HasPrefix(v, "watchNamespaces=") }) &&
				!slices.Contains(s.helm, "watchNamespaces={"+strings.Join(docWatched, ",")+"}") {
				t.Fatalf("a tenant install of the docs watches other namespaces than %v: %v", docWatched, s.helm)
			}
			check(t, s, renderHelm(t, "tailor", namespace, s.helm...), "tailor-")
		})
		if s.kustomize == "" {
			continue
		}
		t.Run(s.name+"/kustomize", func(t *testing.T) {
			objs, prefix := docKustomize(t, s.kustomize, namespace)
			check(t, s, objs, prefix)
		})
	}
	for role := range docRules {
		if !seen[role] {
			t.Errorf("docs/install.md lists the rules of %s, which no install it lists binds", role)
		}
	}
}

// docKustomize builds an install the docs' table names: `config/default`
// with components, as docs/install.md's overlay does, in namespace (the
// agent's as docs/agent.md installs it), or config/samples/tenant, with
// `eviction` its opt-in turned on. It returns the objects and the prefix
// of the manager's roles' names.
func docKustomize(t *testing.T, cell, namespace string) ([]*unstructured.Unstructured, string) {
	t.Helper()
	base, with, _ := strings.Cut(cell, " with ")
	var components []string
	for _, c := range docList(with) {
		components = append(components, strings.Trim(c, "`"))
	}
	switch base {
	case "`config/default`":
		if slices.Contains(components, "agent") {
			return renderKustomizeAgent(t, namespace, namespace+"-nodes", ""), "tailor-"
		}
		return renderKustomize(t, namespace, "", components...), "tailor-"
	case "`config/samples/tenant`":
		if len(components) > 1 || (len(components) == 1 && components[0] != "eviction") {
			t.Fatalf("config/samples/tenant offers the eviction opt-in only, not %v", components)
		}
		objs := renderTenantSample(t, len(components) == 1)
		// The tables name the install's namespace the same for every row.
		for _, o := range objs {
			if o.GetNamespace() == "tailor-team-a" {
				o.SetNamespace(namespace)
			}
			moveSubjects(o, "tailor-team-a", namespace)
		}
		return objs, "team-a-tailor-"
	}
	t.Fatalf("docs/install.md: no build %q (`config/default` or `config/samples/tenant`, with components)", cell)
	return nil, ""
}

// moveSubjects renames the namespace of o's subjects (a binding's) from
// one to another.
func moveSubjects(o *unstructured.Unstructured, from, to string) {
	subjects, found, _ := unstructured.NestedSlice(o.Object, "subjects")
	if !found {
		return
	}
	for _, s := range subjects {
		if sub, ok := s.(map[string]any); ok && sub["namespace"] == from {
			sub["namespace"] = to
		}
	}
	_ = unstructured.SetNestedSlice(o.Object, subjects, "subjects")
}

// TestNoWriteBeyondItsNamespaces: whatever the install, the manager is
// never granted nodes/proxy unless kubelet.readVia asks for it, a tenant's
// manager never any pod write (resize, delete, eviction) or other write
// cluster-wide, and no install that renders no admission policy grants
// delete on pods, as the values' words say.
func TestNoWriteBeyondItsNamespaces(t *testing.T) {
	cluster.Offline(t)
	const namespace = "tailor-system"
	podWrites := []string{"patch core/pods/resize", "delete core/pods", "create core/pods/eviction"}
	reviews := []string{"create authentication.k8s.io/tokenreviews", "create authorization.k8s.io/subjectaccessreviews"}
	cases := map[string]struct {
		set []string
		// tenant: no write bound cluster-wide. proxy: nodes/proxy
		// granted. delete: delete on pods granted.
		tenant, proxy, delete bool
	}{
		"defaults":                          {delete: true},
		"kubelet through the apiserver":     {set: []string{"kubelet.readVia=apiserver-proxy"}, proxy: true, delete: true},
		"agent, kubelet fallback":           {set: []string{"agent.enabled=true"}, delete: true},
		"agent, fallback through the proxy": {set: []string{"agent.enabled=true", "kubelet.readVia=apiserver-proxy"}, proxy: true, delete: true},
		"metrics-server":                    {set: []string{"metricsSource=metrics-server"}, delete: true},
		"metrics-server, readVia ignored":   {set: []string{"metricsSource=metrics-server", "kubelet.readVia=apiserver-proxy"}, delete: true},
		"prometheus":                        {set: []string{"metricsSource=prometheus"}, delete: true},
		"evictions":                         {set: []string{"evictions.enabled=true"}, delete: true},
		"evictions, only their policy":      {set: []string{"evictions.enabled=true", "admission.enabled=false"}, delete: true},
		"evictions, no admission policy":    {set: []string{"evictions.enabled=true", "evictions.admissionPolicy=false", "admission.enabled=false"}},
		"no admission policy":               {set: []string{"admission.enabled=false"}},
		"tenant":                            {set: []string{"watchNamespaces={team-a,team-b}"}, tenant: true, delete: true},
		"tenant, evictions, agent, proxy": {set: []string{"watchNamespaces={team-a,team-b}", "evictions.enabled=true", "agent.enabled=true",
			"kubelet.readVia=apiserver-proxy", "shards=2"}, tenant: true, proxy: true, delete: true},
		"tenant, no admission policy": {set: []string{"watchNamespaces={team-a,team-b}", "admission.enabled=false"}, tenant: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			objs := renderHelm(t, "tailor", namespace, tc.set...)
			roleRules := manifests.RoleRules(objs)
			clusterWide, anywhere := map[string]bool{}, map[string]bool{}
			for _, b := range manifests.BindingsOf(objs, namespace, "tailor") {
				ns := b.Namespace
				if b.RoleKind == "ClusterRole" {
					ns = ""
				}
				for _, k := range roleRules[manifests.RoleID(b.RoleKind, ns, b.Role)] {
					anywhere[k] = true
					if b.Namespace == "" {
						clusterWide[k] = true
					}
				}
			}
			if got := anywhere["get core/nodes/proxy"]; got != tc.proxy {
				t.Errorf("get nodes/proxy granted: %t, want %t", got, tc.proxy)
			}
			if got := anywhere["delete core/pods"]; got != tc.delete {
				t.Errorf("delete pods granted: %t, want %t", got, tc.delete)
			}
			if !tc.tenant {
				return
			}
			// Cluster-wide, a tenant's manager reads, and asks the
			// apiserver who a caller is and what it may do; nothing else.
			for k := range clusterWide {
				verb, _, _ := strings.Cut(k, " ")
				if !slices.Contains([]string{"get", "list", "watch"}, verb) && !slices.Contains(reviews, k) {
					t.Errorf("a tenant's manager is granted %s cluster-wide", k)
				}
			}
			for _, k := range podWrites {
				if clusterWide[k] {
					t.Errorf("a tenant's manager is granted %s cluster-wide", k)
				}
			}
			if !anywhere["patch core/pods/resize"] {
				t.Errorf("a tenant's manager is not granted pods/resize in its namespaces")
			}
		})
	}
}

// notesGrant is a line of the install's notes naming a role bound to the
// managers: "  ROLE (cluster-wide): why" or "  ROLE (in NS, NS): why".
var notesGrant = regexp.MustCompile(`(?m)^  (\S+) \((cluster-wide|in [^)]+)\): (.+)$`)

// TestHelmNotesListTheGrants: for each install docs/install.md lists, the
// notes helm prints name exactly the roles the render binds to the
// managers' ServiceAccount, each where it is bound, and say what each is
// for; nodes/proxy is named, with what it reaches, only when it is granted.
func TestHelmNotesListTheGrants(t *testing.T) {
	cluster.Offline(t)
	_, shapes := docGrants(t)
	notes := notesRenderer(t)
	served := []string{mutatingAdmissionPolicy, validatingAdmissionPolicy}
	proxied := false
	for _, s := range shapes {
		proxied = proxied || slices.Contains(s.helm, "kubelet.readVia=apiserver-proxy")
	}
	if !proxied {
		t.Fatal("docs/install.md lists no install reading the kubelets through the apiserver proxy")
	}
	for _, s := range shapes {
		t.Run(s.name, func(t *testing.T) {
			objs := renderHelm(t, "notes", "deploy-notes", s.helm...)
			want := map[string]string{}
			where := map[string][]string{}
			for _, b := range manifests.BindingsOf(objs, "deploy-notes", "notes-tailor") {
				scope := b.Namespace
				if scope == "" {
					scope = "cluster-wide"
				}
				where[b.Role] = append(where[b.Role], scope)
			}
			for role, ws := range where {
				sort.Strings(ws)
				ws = slices.Compact(ws)
				if slices.Contains(ws, "cluster-wide") {
					want[role] = "cluster-wide"
				} else {
					want[role] = "in " + strings.Join(ws, ", ")
				}
			}
			text := notes(served, s.helm...)
			got := map[string]string{}
			for _, m := range notesGrant.FindAllStringSubmatch(text, -1) {
				got[m[1]] = m[2]
				if strings.HasPrefix(m[3], "see docs/install.md") {
					t.Errorf("the notes say nothing of what %s is for", m[1])
				}
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("roles bound to the managers (-rendered,+notes):\n%s\nnotes:\n%s", diff, text)
			}
			proxy := slices.Contains(s.helm, "kubelet.readVia=apiserver-proxy")
			if says := strings.Contains(text, "nodes/proxy"); says != proxy || (proxy && !strings.Contains(text, "EVERY kubelet endpoint")) {
				t.Errorf("the notes name nodes/proxy: %v, want %v, with what it reaches:\n%s", says, proxy, text)
			}
		})
	}
}
