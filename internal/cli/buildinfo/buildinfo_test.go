package buildinfo

import (
	"runtime"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

func TestClientVersion(t *testing.T) {
	platform := runtime.GOOS + "/" + runtime.GOARCH
	vcs := func(settings ...string) *debug.BuildInfo {
		bi := &debug.BuildInfo{GoVersion: "go1.26.0", Main: debug.Module{Version: "(devel)"}}
		for i := 0; i < len(settings); i += 2 {
			bi.Settings = append(bi.Settings, debug.BuildSetting{Key: settings[i], Value: settings[i+1]})
		}
		return bi
	}
	cases := map[string]struct {
		version, commit string
		bi              *debug.BuildInfo
		want            Info
	}{
		"stamped by make build": {
			version: "v0.1.0-3-gabcdef0", commit: "abcdef0123", bi: vcs("vcs.revision", "ffff"),
			want: Info{Version: "v0.1.0-3-gabcdef0", Commit: "abcdef0123", GoVersion: "go1.26.0", Platform: platform},
		},
		"go install of a tag": {
			bi:   &debug.BuildInfo{GoVersion: "go1.26.0", Main: debug.Module{Version: "v0.1.0"}},
			want: Info{Version: "v0.1.0", GoVersion: "go1.26.0", Platform: platform},
		},
		"go build in a checkout": {
			bi:   vcs("vcs.revision", "0123abcd", "vcs.modified", "false"),
			want: Info{Version: "(devel)", Commit: "0123abcd", GoVersion: "go1.26.0", Platform: platform},
		},
		"go build in a dirty checkout": {
			bi:   vcs("vcs.revision", "0123abcd", "vcs.modified", "true"),
			want: Info{Version: "(devel)", Commit: "0123abcd-dirty", GoVersion: "go1.26.0", Platform: platform},
		},
		"nothing recorded": {
			want: Info{Version: "(devel)", GoVersion: runtime.Version(), Platform: platform},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, info(tc.version, tc.commit, tc.bi)); diff != "" {
				t.Errorf("clientVersion (-want,+got):\n%s", diff)
			}
		})
	}
}

// The build is exported once, labelled as `tailor version` prints it, and a
// second registration in the same process (a test that runs the manager
// twice) is not an error.
func TestBuildInfoMetric(t *testing.T) {
	reg := prometheus.NewRegistry()
	v := Info{Version: "v0.3.1", Commit: "abc123", GoVersion: "go1.26.0", Platform: "linux/arm64"}
	for range 2 {
		if err := Register(reg, v); err != nil {
			t.Fatal(err)
		}
	}
	want := `# HELP tailor_build_info A constant 1 labelled with the running tailor's version, commit, Go version and platform.
# TYPE tailor_build_info gauge
tailor_build_info{commit="abc123",goversion="go1.26.0",platform="linux/arm64",version="v0.3.1"} 1
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "tailor_build_info"); err != nil {
		t.Error(err)
	}
}
