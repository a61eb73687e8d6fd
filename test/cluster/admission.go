package cluster

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/dynamic"
)

// AdmissionPolicyFile is a file of tailor's MutatingAdmissionPolicies and
// their bindings, relative to the repository's root.
const (
	AdmissionPolicyFile = "config/components/admission/admission_policy.yaml"
	RecreatePolicyFile  = "config/components/eviction/recreate_admission.yaml"
)

var (
	mapGVR        = schema.GroupVersionResource{Group: "admissionregistration.k8s.io", Version: "v1", Resource: "mutatingadmissionpolicies"}
	mapBindingGVR = schema.GroupVersionResource{Group: "admissionregistration.k8s.io", Version: "v1", Resource: "mutatingadmissionpolicybindings"}
)

// ApplyAdmissionPolicies server-side applies the policies and bindings of
// file (one of the files above) and returns what deletes them again. With
// ns set, each is renamed after ns and bound to ns alone, so that one
// test's install admits no other test's pods, nor does its removal take a
// policy away from them.
func ApplyAdmissionPolicies(ctx context.Context, dyn dynamic.Interface, file, ns string) (remove func() error, err error) {
	_, this, _, _ := runtime.Caller(0)
	path := filepath.Join(filepath.Dir(this), "..", "..", file)
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	type applied struct {
		gvr  schema.GroupVersionResource
		name string
	}
	var done []applied
	remove = func() error {
		var errs []error
		for _, a := range done {
			if err := dyn.Resource(a.gvr).Delete(context.Background(), a.name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
				errs = append(errs, fmt.Errorf("deleting %s %s: %w", a.gvr.Resource, a.name, err))
			}
		}
		return errors.Join(errs...)
	}
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	for {
		o := &unstructured.Unstructured{}
		if err := dec.Decode(&o.Object); err != nil {
			if errors.Is(err, io.EOF) {
				break
			}
			return remove, fmt.Errorf("decoding %s: %w", file, err)
		}
		if len(o.Object) == 0 {
			continue
		}
		gvr := mapGVR
		if o.GetKind() == "MutatingAdmissionPolicyBinding" {
			gvr = mapBindingGVR
		}
		if ns != "" {
			if err := scopeAdmissionPolicy(o, ns); err != nil {
				return remove, err
			}
		}
		if _, err := dyn.Resource(gvr).Apply(ctx, o.GetName(), o, metav1.ApplyOptions{FieldManager: "tailor-tests", Force: true}); err != nil {
			return remove, fmt.Errorf("applying %s %s: %w", o.GetKind(), o.GetName(), err)
		}
		done = append(done, applied{gvr, o.GetName()})
	}
	return remove, nil
}

// scopeAdmissionPolicy renames a MutatingAdmissionPolicy or binding after
// ns, and binds it to ns alone.
func scopeAdmissionPolicy(o *unstructured.Unstructured, ns string) error {
	o.SetName(o.GetName() + "-" + ns)
	if o.GetKind() != "MutatingAdmissionPolicyBinding" {
		return nil
	}
	policy, _, _ := unstructured.NestedString(o.Object, "spec", "policyName")
	if err := unstructured.SetNestedField(o.Object, policy+"-"+ns, "spec", "policyName"); err != nil {
		return err
	}
	return unstructured.SetNestedStringMap(o.Object, map[string]string{"kubernetes.io/metadata.name": ns},
		"spec", "matchResources", "namespaceSelector", "matchLabels")
}
