package kube

import (
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// ExplainAPIError turns a permission error into one that says what to grant.
func ExplainAPIError(err error, verb, resource, namespace string) error {
	if apierrors.IsForbidden(err) {
		return fmt.Errorf("%w\nhint: grant %q on %q in namespace %q to this identity (kubectl auth can-i %s %s -n %s)", err, verb, resource, namespace, verb, resource, namespace)
	}
	return err
}
