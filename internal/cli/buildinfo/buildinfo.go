package buildinfo

import (
	"errors"
	"runtime"
	"runtime/debug"

	"github.com/prometheus/client_golang/prometheus"
)

// The release build stamps these with -ldflags -X (the Makefile's build
// target): a binary built from a tag says which one, and a bug report
// carries the exact commit.
var (
	version = ""
	commit  = ""
)

// develVersion is what a build that nobody stamped and Go could not stamp
// either calls itself, as `go version -m` does.
const develVersion = "(devel)"

// Info is a binary's build.
type Info struct {
	Version   string `json:"version"`
	Commit    string `json:"commit,omitempty"`
	GoVersion string `json:"goVersion"`
	Platform  string `json:"platform"`
}

// info reads the link-time stamps first and falls back to what the
// Go toolchain embedded: `go install ...@v0.1.0` records the module version,
// and a build in a git checkout records the revision.
func info(stampedVersion, stampedCommit string, bi *debug.BuildInfo) Info {
	cv := Info{Version: stampedVersion, Commit: stampedCommit, GoVersion: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH}
	if bi != nil {
		cv.GoVersion = bi.GoVersion
		if cv.Version == "" && bi.Main.Version != "" {
			cv.Version = bi.Main.Version
		}
		if cv.Commit == "" {
			modified := false
			for _, s := range bi.Settings {
				switch s.Key {
				case "vcs.revision":
					cv.Commit = s.Value
				case "vcs.modified":
					modified = s.Value == "true"
				}
			}
			if cv.Commit != "" && modified {
				cv.Commit += "-dirty"
			}
		}
	}
	if cv.Version == "" {
		cv.Version = develVersion
	}
	return cv
}

// Current is the running binary's version, as `tailor version --client`
// prints it and the manager and agent log it when they start.
func Current() Info {
	bi, _ := debug.ReadBuildInfo()
	return info(version, commit, bi)
}

// Register exports the build as tailor_build_info, the constant 1
// with the version in its labels (the convention of Prometheus' own
// *_build_info): a fleet's dashboards and alerts can then tell which
// managers run which release during a rollout. A second registration (a
// test running the manager twice in one process) keeps the first.
func Register(reg prometheus.Registerer, v Info) error {
	g := prometheus.NewGauge(prometheus.GaugeOpts{
		Name:        "tailor_build_info",
		Help:        "A constant 1 labelled with the running tailor's version, commit, Go version and platform.",
		ConstLabels: prometheus.Labels{"version": v.Version, "commit": v.Commit, "goversion": v.GoVersion, "platform": v.Platform},
	})
	g.Set(1)
	if err := reg.Register(g); err != nil {
		if are := (prometheus.AlreadyRegisteredError{}); errors.As(err, &are) {
			return nil
		}
		return err
	}
	return nil
}
