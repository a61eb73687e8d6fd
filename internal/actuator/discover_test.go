package actuator

import (
	"errors"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/version"
	fakediscovery "k8s.io/client-go/discovery/fake"
	"k8s.io/client-go/kubernetes/fake"
)

func TestDiscover(t *testing.T) {
	cases := map[string]struct {
		major, minor string
		resize       bool
		wantMode     Mode
		wantErr      error
	}{
		"1.37 serves pods/resize":           {major: "1", minor: "37", resize: true, wantMode: ModeSubresource},
		"1.33 with a distribution's suffix": {major: "1", minor: "33+", resize: true, wantMode: ModeSubresource},
		"1.32 has no pods/resize":           {major: "1", minor: "32", wantErr: ErrUnsupported},
		"1.26 cannot resize in place":       {major: "1", minor: "26", wantErr: ErrUnsupported},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			dc := fake.NewClientset().Discovery().(*fakediscovery.FakeDiscovery)
			dc.FakedServerVersion = &version.Info{Major: tc.major, Minor: tc.minor, GitVersion: "v" + tc.major + "." + tc.minor + ".0"}
			resources := []metav1.APIResource{{Name: "pods"}, {Name: "pods/status"}}
			if tc.resize {
				resources = append(resources, metav1.APIResource{Name: "pods/resize"})
			}
			dc.Resources = []*metav1.APIResourceList{{GroupVersion: "v1", APIResources: resources}}
			got, err := Discover(dc)
			if tc.wantErr != nil {
				if !errors.Is(err, tc.wantErr) {
					t.Fatalf("error = %v, want %v", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got.Mode != tc.wantMode {
				t.Errorf("mode = %s, want %s", got.Mode, tc.wantMode)
			}
		})
	}
}
