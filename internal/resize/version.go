package resize

import (
	"fmt"
	"strconv"
	"strings"
)

// Version is a Kubernetes server version (major.minor). Several resize rules
// changed between releases, so the planner needs to know which apiserver it predicts.
type Version struct {
	Major, Minor int
}

// ParseVersion accepts "1.37", "v1.37.1" or a discovery GitVersion such as "v1.37.1+k3s1".
func ParseVersion(s string) (Version, error) {
	t := strings.TrimPrefix(strings.TrimSpace(s), "v")
	parts := strings.SplitN(t, ".", 3)
	if len(parts) < 2 {
		return Version{}, fmt.Errorf("server version %q: want major.minor, e.g. 1.37", s)
	}
	major, err := strconv.Atoi(parts[0])
	if err != nil {
		return Version{}, fmt.Errorf("server version %q: major %q is not a number", s, parts[0])
	}
	// Minor may carry a suffix such as "37+" from some distributions.
	minorStr := strings.TrimRightFunc(parts[1], func(r rune) bool { return r < '0' || r > '9' })
	minor, err := strconv.Atoi(minorStr)
	if err != nil {
		return Version{}, fmt.Errorf("server version %q: minor %q is not a number", s, parts[1])
	}
	return Version{Major: major, Minor: minor}, nil
}

// AtLeast reports whether v is 1.minor or later.
func (v Version) AtLeast(minor int) bool {
	return v.Major > 1 || (v.Major == 1 && v.Minor >= minor)
}

func (v Version) String() string { return fmt.Sprintf("%d.%d", v.Major, v.Minor) }
