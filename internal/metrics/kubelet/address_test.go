package kubelet

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	"github.com/tailorhq/tailor/test/builder"
)

func TestAddress(t *testing.T) {
	everyType := func() *builder.NodeWrapper {
		return builder.Node("n1").Address(corev1.NodeHostName, "worker-1").Address(corev1.NodeExternalIP, "203.0.113.7").
			Address(corev1.NodeInternalIP, "10.0.0.7").Address(corev1.NodeInternalIP, "10.0.1.7")
	}
	cases := map[string]struct {
		node    *corev1.Node
		types   []corev1.NodeAddressType
		want    string
		wantErr string
	}{
		"default order: the first internal IP, whatever the order of the node's addresses": {
			node: everyType().Obj(), types: DefaultAddressTypes, want: "10.0.0.7:10250",
		},
		"default order: an external IP before the hostname": {
			node:  builder.Node("n1").Address(corev1.NodeHostName, "worker-1").Address(corev1.NodeExternalIP, "203.0.113.7").Obj(),
			types: DefaultAddressTypes, want: "203.0.113.7:10250",
		},
		"default order: the hostname when the node has no IP": {
			node: builder.Node("n1").Address(corev1.NodeHostName, "worker-1").Obj(), types: DefaultAddressTypes, want: "worker-1:10250",
		},
		"a preference given": {
			node: everyType().Obj(), types: []corev1.NodeAddressType{corev1.NodeHostName, corev1.NodeInternalIP}, want: "worker-1:10250",
		},
		"the port the node's status gives": {
			node: everyType().KubeletPort(10255).Obj(), types: DefaultAddressTypes, want: "10.0.0.7:10255",
		},
		"an IPv6 address is bracketed": {
			node: builder.Node("n1").Address(corev1.NodeInternalIP, "fd00::7").Obj(), types: DefaultAddressTypes, want: "[fd00::7]:10250",
		},
		"no address of a preferred type": {
			node: builder.Node("n1").Address(corev1.NodeInternalDNS, "worker-1.internal").Obj(), types: DefaultAddressTypes,
			wantErr: `the node has no address of the types InternalIP, ExternalIP, Hostname (it has ["InternalDNS"]): list one of its types in --kubelet-preferred-address-types`,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := address(tc.node, tc.types)
			gotErr := ""
			if err != nil {
				gotErr = err.Error()
			}
			if diff := cmp.Diff(tc.wantErr, gotErr); diff != "" {
				t.Errorf("error (-want,+got):\n%s", diff)
			}
			if got != tc.want {
				t.Errorf("address = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestParseAddressTypes(t *testing.T) {
	cases := map[string]struct {
		names   []string
		want    []corev1.NodeAddressType
		wantErr string
	}{
		"known types in the order given": {names: []string{"Hostname", "InternalIP"}, want: []corev1.NodeAddressType{corev1.NodeHostName, corev1.NodeInternalIP}},
		"a misspelt type":                {names: []string{"InternalIp"}, wantErr: `unknown address type "InternalIp": use Hostname, InternalIP, ExternalIP, InternalDNS or ExternalDNS`},
		"none":                           {wantErr: "no address type: list at least one of Hostname, InternalIP, ExternalIP, InternalDNS, ExternalDNS"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := ParseAddressTypes(tc.names)
			gotErr := ""
			if err != nil {
				gotErr = err.Error()
			}
			if diff := cmp.Diff(tc.wantErr, gotErr); diff != "" {
				t.Errorf("error (-want,+got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("types (-want,+got):\n%s", diff)
			}
		})
	}
}
