package cgroup

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"regexp"
	"strings"
)

// Container is one container's cgroup as found in the tree.
type Container struct {
	PodUID string
	// ID is the runtime's container ID (64 hex digits), as the pod's
	// status names it after "<runtime>://".
	ID string
	// Dir is the cgroup's directory relative to the hierarchy's root (on
	// v1, to each controller's root: the layout is the same under each).
	Dir string
}

// The directories the kubelet makes, with either cgroup driver:
//
//	cgroupfs: kubepods[/burstable|/besteffort]/pod<uid>/<id>
//	systemd:  kubepods.slice[/kubepods-<qos>.slice]/kubepods[-<qos>]-pod<uid_>.slice/<runtime>-<id>.scope
//
// The systemd driver writes the UID's dashes as underscores; <runtime> is
// cri-containerd, crio or docker (CRI-O's crio-conmon-<id> scope is its
// monitor's, not the container's). Nothing that
// does not match is entered or read: the agent walks only the kubelet's
// pods, whatever else a node's tree holds.
var (
	qosDirs      = []string{"burstable", "besteffort", "kubepods-burstable.slice", "kubepods-besteffort.slice"}
	podDirRE     = regexp.MustCompile(`^(?:pod|kubepods(?:-burstable|-besteffort)?-pod)([0-9a-f]{8}[-_][0-9a-f]{4}[-_][0-9a-f]{4}[-_][0-9a-f]{4}[-_][0-9a-f]{12})(?:\.slice)?$`)
	containerRE  = regexp.MustCompile(`^(?:(?:cri-containerd|crio|docker)-)?([0-9a-f]{64})(?:\.scope)?$`)
	errNoPodTree = errors.New("no kubepods cgroup")
)

// List finds every pod container's cgroup in the tree: each directory
// named as the kubelet names a container's, under a directory named as it
// names a pod's. A pod's sandbox (pause) container is listed too; the
// caller keeps only the containers a pod's status names.
func (t Tree) List() ([]Container, error) {
	base := ""
	if t.Version == V1 {
		base = "memory"
	}
	var top string
	for _, name := range []string{"kubepods", "kubepods.slice"} {
		if _, err := os.Stat(path.Join(t.Root, base, name)); err == nil {
			top = name
			break
		}
	}
	if top == "" {
		return nil, fmt.Errorf("%s: %w (is this a Kubernetes node, and the host's cgroup tree mounted there?)", path.Join(t.Root, base), errNoPodTree)
	}
	parents := []string{top}
	for _, q := range qosDirs {
		parents = append(parents, path.Join(top, q))
	}
	var out []Container
	for _, parent := range parents {
		pods, err := t.dirs(path.Join(base, parent))
		if err != nil {
			return nil, err
		}
		for _, pd := range pods {
			m := podDirRE.FindStringSubmatch(pd)
			if m == nil {
				continue
			}
			uid := strings.ReplaceAll(m[1], "_", "-")
			cs, err := t.dirs(path.Join(base, parent, pd))
			if err != nil {
				// The pod went away between the two reads.
				continue
			}
			for _, cd := range cs {
				if cm := containerRE.FindStringSubmatch(cd); cm != nil {
					out = append(out, Container{PodUID: uid, ID: cm[1], Dir: path.Join(parent, pd, cd)})
				}
			}
		}
	}
	return out, nil
}

// dirs lists the names in rel, inside the root; a directory that is not
// there has none. Names only: a cgroup v1 directory holds dozens of
// control files, and telling them from subdirectories would cost a stat
// each, every second. The callers keep only names shaped like a pod's or
// a container's cgroup, which no control file has.
func (t Tree) dirs(rel string) ([]string, error) {
	f, err := os.OpenInRoot(t.Root, rel)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer func() { _ = f.Close() }()
	return f.Readdirnames(-1)
}

// ReadContainer reads the cgroup of a container List found.
func (t Tree) ReadContainer(c Container) (Sample, error) {
	var s Sample
	if err := checkDir(c.Dir); err != nil {
		return s, err
	}
	read := func(controller, name string) ([]byte, error) {
		if t.Version == V2 {
			controller = ""
		}
		return t.file(path.Join(controller, c.Dir, name))
	}
	return s, t.parse(read, &s)
}

func checkDir(dir string) error {
	if !containerRE.MatchString(path.Base(dir)) || strings.Contains(dir, "..") {
		return fmt.Errorf("cgroup %q is not a container's", dir)
	}
	return nil
}
