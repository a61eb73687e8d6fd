package cgroup

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

const (
	uid2 = "0a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d"
	cid2 = "1111111111111111111111111111111111111111111111111111111111111111"
	cid3 = "2222222222222222222222222222222222222222222222222222222222222222"
)

// Both drivers' layouts are found, and only what the kubelet names like a
// pod's or a container's cgroup is listed.
func TestList(t *testing.T) {
	cgroupfs := map[string]string{
		"kubepods/pod" + uid + "/" + cid + "/memory.current":              "1\n",
		"kubepods/burstable/pod" + uid2 + "/" + cid2 + "/memory.current":  "1\n",
		"kubepods/besteffort/pod" + uid2 + "/" + cid3 + "/memory.current": "1\n",
		// Not a container's: the pod's own files, a stray directory, a
		// name that is not a UUID.
		"kubepods/burstable/pod" + uid2 + "/memory.current": "1\n",
		"kubepods/burstable/pod" + uid2 + "/notes/x":        "1\n",
		"kubepods/burstable/podnotauid/" + cid + "/x":       "1\n",
		"system.slice/" + cid + "/x":                        "1\n",
		"cgroup.controllers":                                "cpu memory\n",
	}
	systemd := map[string]string{
		"kubepods.slice/kubepods-pod" + underscores(uid) + ".slice/cri-containerd-" + cid + ".scope/x":                                                         "1\n",
		"kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" + underscores(uid2) + ".slice/cri-containerd-" + cid2 + ".scope/x":                    "1\n",
		"kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod" + underscores(uid2) + ".slice/crio-" + cid3 + ".scope/x":                            "1\n",
		"kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" + underscores(uid2) + ".slice/crio-conmon-" + cid3 + ".scope/x":                       "1\n",
		"kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" + underscores(uid2) + ".slice/cri-containerd-" + cid2 + ".scope/nested-" + cid + "/x": "1\n",
	}
	want := []Container{
		{PodUID: uid, ID: cid},
		{PodUID: uid2, ID: cid2},
		{PodUID: uid2, ID: cid3},
	}
	ids := func(cs []Container) []Container {
		out := make([]Container, len(cs))
		for i, c := range cs {
			out[i] = Container{PodUID: c.PodUID, ID: c.ID}
		}
		return out
	}
	for name, tc := range map[string]struct {
		files   map[string]string
		version Version
	}{
		"cgroupfs v2": {cgroupfs, V2},
		"systemd v2":  {systemd, V2},
		"cgroupfs v1": {prefixed("memory/", cgroupfs), V1},
		"systemd v1":  {prefixed("memory/", systemd), V1},
	} {
		t.Run(name, func(t *testing.T) {
			got, err := Tree{Root: tree(t, tc.files), Version: tc.version}.List()
			if err != nil {
				t.Fatal(err)
			}
			// A crio-conmon scope is conmon's, not the container's: its ID
			// repeats the container's, and it is not listed.
			if diff := cmp.Diff(want, ids(got)); diff != "" {
				t.Errorf("(-want,+got):\n%s", diff)
			}
			for _, c := range got {
				if c.PodUID == uid2 && c.ID == cid3 && filepath.Base(c.Dir) != cid3 && filepath.Base(c.Dir) != "crio-"+cid3+".scope" {
					t.Errorf("%s listed from %s, not from its own scope", c.ID, c.Dir)
				}
			}
		})
	}
	if _, err := (Tree{Root: t.TempDir(), Version: V2}).List(); err == nil {
		t.Errorf("a tree without kubepods listed")
	}
}

func underscores(s string) string {
	b := []byte(s)
	for i := range b {
		if b[i] == '-' {
			b[i] = '_'
		}
	}
	return string(b)
}

func prefixed(p string, files map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range files {
		out[p+k] = v
	}
	return out
}

// A listed container reads the same as Read finds it, and a directory
// that is not a container's, or a symlink out of the tree, is refused.
func TestReadContainer(t *testing.T) {
	tr := Tree{Root: tree(t, v1Files()), Version: V1}
	list, err := tr.List()
	if err != nil || len(list) != 1 {
		t.Fatalf("List: %v, %v", list, err)
	}
	got, err := tr.ReadContainer(list[0])
	if err != nil || got.WorkingSet != 550<<20 || got.Throttled != 250 {
		t.Errorf("ReadContainer: %+v, %v", got, err)
	}
	for _, bad := range []string{"kubepods/burstable", "../../etc/" + cid, "kubepods/../../" + cid} {
		if _, err := tr.ReadContainer(Container{Dir: bad}); err == nil {
			t.Errorf("ReadContainer(%q) read", bad)
		}
	}
	outside := t.TempDir()
	if err := os.MkdirAll(filepath.Join(outside, cid), 0o755); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(tr.Root, "memory/kubepods/burstable/pod"+uid2)
	if err := os.MkdirAll(link, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(outside, cid), filepath.Join(link, cid2)); err != nil {
		t.Fatal(err)
	}
	if _, err := tr.ReadContainer(Container{Dir: "kubepods/burstable/pod" + uid2 + "/" + cid2}); err == nil {
		t.Errorf("a container directory linked out of the tree was read")
	}
}

// A handle reads the files again from their start on every Read, and
// cannot be led out of the tree by a container directory that is a link.
func TestHandle(t *testing.T) {
	files := v1Files()
	root := tree(t, files)
	tr := Tree{Root: root, Version: V1}
	list, err := tr.List()
	if err != nil || len(list) != 1 {
		t.Fatalf("List: %v, %v", list, err)
	}
	h, err := tr.Open(list[0], NewBuffer())
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	first, err := h.Read()
	if err != nil || first.WorkingSet != 550<<20 {
		t.Fatalf("first read: %+v, %v", first, err)
	}
	usage := filepath.Join(root, "memory/kubepods/burstable/pod"+uid, cid, "memory.usage_in_bytes")
	if err := os.WriteFile(usage, []byte("734003200\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	second, err := h.Read()
	if err != nil || second.MemoryUsage != 700<<20 || second.WorkingSet != 650<<20 {
		t.Errorf("second read: usage %d working set %d, %v; want 700Mi and 650Mi", second.MemoryUsage>>20, second.WorkingSet>>20, err)
	}
	if _, err := tr.Open(list[0], make([]byte, 10)); err == nil {
		t.Errorf("a handle with a 10-byte buffer opened")
	}

	outside := t.TempDir()
	for name, content := range v1Files() {
		p := filepath.Join(outside, filepath.Base(name))
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	pod := filepath.Join(root, "memory/kubepods/burstable/pod"+uid2)
	if err := os.MkdirAll(pod, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(pod, cid2)); err != nil {
		t.Fatal(err)
	}
	h2, err := tr.Open(Container{PodUID: uid2, ID: cid2, Dir: "kubepods/burstable/pod" + uid2 + "/" + cid2}, NewBuffer())
	if err != nil {
		t.Fatal(err)
	}
	defer h2.Close()
	if _, err := h2.Read(); err == nil {
		t.Errorf("a container directory linked out of the tree was read")
	}
}

// A container's processes are listed; a pid of another namespace (0) is
// not, and a directory that is not a container's is refused.
func TestProcs(t *testing.T) {
	files := v1Files()
	files["memory/kubepods/burstable/pod"+uid+"/"+cid+"/cgroup.procs"] = "12\n0\n345\n"
	tr := Tree{Root: tree(t, files), Version: V1}
	list, err := tr.List()
	if err != nil || len(list) != 1 {
		t.Fatalf("List: %v, %v", list, err)
	}
	got, err := tr.Procs(list[0])
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]int{12, 345}, got); diff != "" {
		t.Errorf("(-want,+got):\n%s", diff)
	}
	if _, err := tr.Procs(Container{Dir: "kubepods/../../etc"}); err == nil {
		t.Errorf("a directory that is not a container's was read")
	}
}
