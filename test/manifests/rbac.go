package manifests

import (
	"fmt"
	"sort"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// RuleKey is one permission a rule gives, as "verb group/resource" (core
// for the core group, resource with its subresource), "verb
// group/resource name" when the rule names objects, or "verb URL" for a
// non-resource URL.
func RuleKey(verb, group, resource, name string) string {
	if group == "" {
		group = "core"
	}
	key := verb + " " + group + "/" + resource
	if name != "" {
		key += " " + name
	}
	return key
}

// RuleKeys is every permission rules (a Role's or ClusterRole's) give,
// sorted, each once.
func RuleKeys(rules []any) []string {
	seen := map[string]bool{}
	for _, r := range rules {
		rule, _ := r.(map[string]any)
		verbs, _, _ := unstructured.NestedStringSlice(rule, "verbs")
		groups, _, _ := unstructured.NestedStringSlice(rule, "apiGroups")
		resources, _, _ := unstructured.NestedStringSlice(rule, "resources")
		names, _, _ := unstructured.NestedStringSlice(rule, "resourceNames")
		urls, _, _ := unstructured.NestedStringSlice(rule, "nonResourceURLs")
		if len(names) == 0 {
			names = []string{""}
		}
		for _, v := range verbs {
			for _, u := range urls {
				seen[v+" "+u] = true
			}
			for _, g := range groups {
				for _, res := range resources {
					for _, n := range names {
						seen[RuleKey(v, g, res, n)] = true
					}
				}
			}
		}
	}
	out := make([]string, 0, len(seen))
	for k := range seen {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// Binding is one grant of a role to a subject: the role (its kind and
// name) and where the binding holds, "" for a ClusterRoleBinding, else the
// RoleBinding's namespace.
type Binding struct {
	RoleKind, Role string
	Namespace      string
}

// BindingsOf are the bindings among objs whose subjects include
// ServiceAccount namespace/name.
func BindingsOf(objs []*unstructured.Unstructured, namespace, name string) []Binding {
	var out []Binding
	for _, o := range objs {
		if o.GetKind() != "RoleBinding" && o.GetKind() != "ClusterRoleBinding" {
			continue
		}
		subjects, _, _ := unstructured.NestedSlice(o.Object, "subjects")
		for _, s := range subjects {
			sub, _ := s.(map[string]any)
			if sub["kind"] != "ServiceAccount" || sub["namespace"] != namespace || sub["name"] != name {
				continue
			}
			kind, _, _ := unstructured.NestedString(o.Object, "roleRef", "kind")
			role, _, _ := unstructured.NestedString(o.Object, "roleRef", "name")
			out = append(out, Binding{RoleKind: kind, Role: role, Namespace: o.GetNamespace()})
		}
	}
	return out
}

// RoleRules maps each Role ("Role namespace/name") and ClusterRole
// ("ClusterRole name") among objs to RuleKeys of its rules.
func RoleRules(objs []*unstructured.Unstructured) map[string][]string {
	out := map[string][]string{}
	for _, o := range objs {
		switch o.GetKind() {
		case "ClusterRole", "Role":
			rules, _, _ := unstructured.NestedSlice(o.Object, "rules")
			out[RoleID(o.GetKind(), o.GetNamespace(), o.GetName())] = RuleKeys(rules)
		}
	}
	return out
}

// RoleID names a role as RoleRules keys it.
func RoleID(kind, namespace, name string) string {
	if kind == "Role" {
		return fmt.Sprintf("Role %s/%s", namespace, name)
	}
	return "ClusterRole " + name
}
