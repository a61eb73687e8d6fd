package newpods

import (
	"time"

	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/tailorhq/tailor/internal/resize"
	"github.com/tailorhq/tailor/test/builder/policyspec"
)

var now = time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)

var (
	spec            = policyspec.New
	containerPolicy = policyspec.ContainerPolicy
)

func q(s string) *resource.Quantity { v := resource.MustParse(s); return &v }

func ptr[T any](v T) *T { return &v }

var v137 = resize.Version{Major: 1, Minor: 37}
