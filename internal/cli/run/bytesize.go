package run

import (
	"fmt"
	"strconv"

	"k8s.io/apimachinery/pkg/api/resource"
)

// byteSize is a flag of a size in bytes, given as a number or as a
// Kubernetes quantity (32Mi), as the chart's values write sizes.
type byteSize struct{ v *int64 }

func newByteSize(v *int64, def int64) *byteSize {
	*v = def
	return &byteSize{v: v}
}

func (b *byteSize) String() string {
	if b.v == nil {
		return "0"
	}
	return resource.NewQuantity(*b.v, resource.BinarySI).String()
}

func (b *byteSize) Set(s string) error {
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		*b.v = n
		return nil
	}
	q, err := resource.ParseQuantity(s)
	if err != nil {
		return fmt.Errorf("%q is neither a number of bytes nor a quantity such as 32Mi", s)
	}
	n, ok := q.AsInt64()
	if !ok {
		return fmt.Errorf("%q is not a whole number of bytes", s)
	}
	*b.v = n
	return nil
}

func (b *byteSize) Type() string { return "bytes" }
