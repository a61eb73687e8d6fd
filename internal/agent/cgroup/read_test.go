package cgroup

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
)

const (
	uid = "3f1c2b4a-5d6e-4f70-8a9b-0c1d2e3f4a5b"
	cid = "8e2f1c0d3b4a59687766554433221100ffeeddccbbaa99887766554433221100"
)

// tree writes files (path relative to the root: content) into a new root.
func tree(t *testing.T, files map[string]string) string {
	t.Helper()
	root := t.TempDir()
	for rel, content := range files {
		p := filepath.Join(root, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

// v1Files is a Burstable container's cgroup v1 files as this machine's
// kernel (6.18) writes them (cpu, cpuacct and memory mounted apart), 600Mi
// used of a 1Gi limit.
func v1Files() map[string]string {
	cpu := "cpu/kubepods/burstable/pod" + uid + "/" + cid + "/"
	acct := "cpuacct/kubepods/burstable/pod" + uid + "/" + cid + "/"
	mem := "memory/kubepods/burstable/pod" + uid + "/" + cid + "/"
	return map[string]string{
		acct + "cpuacct.usage":        "123456789012\n",
		cpu + "cpu.stat":              "nr_periods 4000\nnr_throttled 250\nthrottled_time 31000000000\nnr_bursts 0\nburst_time 0\n",
		mem + "memory.usage_in_bytes": "629145600\n",
		mem + "memory.limit_in_bytes": "1073741824\n",
		mem + "memory.stat":           "cache 104857600\nrss 524288000\ninactive_file 52428800\ntotal_cache 104857600\ntotal_rss 524288000\ntotal_inactive_file 52428800\n",
		mem + "memory.failcnt":        "3\n",
		mem + "memory.oom_control":    "oom_kill_disable 0\nunder_oom 0\noom_kill 1\n",
	}
}

// v2Files is the same container under cgroup v2, with PSI figures from a
// container stalling on memory.
func v2Files() map[string]string {
	d := "kubepods/burstable/pod" + uid + "/" + cid + "/"
	return map[string]string{
		d + "cpu.stat":        "usage_usec 123456789\nuser_usec 100000000\nsystem_usec 23456789\nnr_periods 4000\nnr_throttled 250\nthrottled_usec 31000000\nnr_bursts 0\nburst_usec 0\n",
		d + "memory.current":  "629145600\n",
		d + "memory.max":      "1073741824\n",
		d + "memory.stat":     "anon 524288000\nfile 104857600\nactive_file 52428800\ninactive_file 52428800\n",
		d + "memory.events":   "low 0\nhigh 0\nmax 3\noom 1\noom_kill 1\noom_group_kill 0\n",
		d + "cpu.pressure":    "some avg10=1.50 avg60=0.80 avg300=0.20 total=4200000\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=0\n",
		d + "memory.pressure": "some avg10=42.17 avg60=12.05 avg300=3.01 total=98765432\nfull avg10=30.00 avg60=8.00 avg300=2.00 total=61234567\n",
	}
}

func TestRead(t *testing.T) {
	want := Sample{
		CPUUsage: 123456789012 * time.Nanosecond, Periods: 4000, Throttled: 250, ThrottledTime: 31 * time.Second,
		MemoryUsage: 600 << 20, WorkingSet: 550 << 20, MemoryLimit: 1 << 30, LimitHits: 3, OOMKills: 1,
	}
	t.Run("v1", func(t *testing.T) {
		got, err := Tree{Root: tree(t, v1Files()), Version: V1}.Read(corev1.PodQOSBurstable, uid, cid)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("v1 sample (-want,+got):\n%s", diff)
		}
	})
	t.Run("v2", func(t *testing.T) {
		got, err := Tree{Root: tree(t, v2Files()), Version: V2}.Read(corev1.PodQOSBurstable, uid, cid)
		if err != nil {
			t.Fatal(err)
		}
		w := want
		w.CPUUsage = 123456789 * time.Microsecond
		w.CPUPressure = &Pressure{SomeAvg10: 0.015, SomeTotal: 4200 * time.Millisecond}
		w.MemoryPressure = &Pressure{SomeAvg10: 0.4217, FullAvg10: 0.30, SomeTotal: 98765432 * time.Microsecond, FullTotal: 61234567 * time.Microsecond}
		if diff := cmp.Diff(w, got); diff != "" {
			t.Errorf("v2 sample (-want,+got):\n%s", diff)
		}
	})
	t.Run("v1 without a limit", func(t *testing.T) {
		files := v1Files()
		files["memory/kubepods/burstable/pod"+uid+"/"+cid+"/memory.limit_in_bytes"] = "9223372036854771712\n"
		got, err := Tree{Root: tree(t, files), Version: V1}.Read(corev1.PodQOSBurstable, uid, cid)
		if err != nil || got.MemoryLimit != 0 {
			t.Errorf("limit %d, err %v: want 0 (none)", got.MemoryLimit, err)
		}
	})
	t.Run("v2 without a limit or PSI", func(t *testing.T) {
		files := v2Files()
		d := "kubepods/burstable/pod" + uid + "/" + cid + "/"
		files[d+"memory.max"] = "max\n"
		delete(files, d+"cpu.pressure")
		delete(files, d+"memory.pressure")
		got, err := Tree{Root: tree(t, files), Version: V2}.Read(corev1.PodQOSBurstable, uid, cid)
		if err != nil || got.MemoryLimit != 0 || got.CPUPressure != nil || got.MemoryPressure != nil {
			t.Errorf("got %+v, err %v: want no limit and no pressure", got, err)
		}
	})
}

// The QoS class picks the parent cgroup, as the kubelet's cgroupfs driver
// lays pods out.
func TestDir(t *testing.T) {
	tr := Tree{Root: "/sys/fs/cgroup", Version: V1}
	for qos, want := range map[corev1.PodQOSClass]string{
		corev1.PodQOSGuaranteed: "/sys/fs/cgroup/memory/kubepods/pod" + uid + "/" + cid,
		corev1.PodQOSBurstable:  "/sys/fs/cgroup/memory/kubepods/burstable/pod" + uid + "/" + cid,
		corev1.PodQOSBestEffort: "/sys/fs/cgroup/memory/kubepods/besteffort/pod" + uid + "/" + cid,
	} {
		got, err := tr.Dir("memory", qos, uid, cid)
		if err != nil || got != want {
			t.Errorf("%s: %q, %v; want %q", qos, got, err, want)
		}
	}
	v2, err := Tree{Root: "/sys/fs/cgroup", Version: V2}.Dir("memory", corev1.PodQOSBurstable, uid, cid)
	if want := "/sys/fs/cgroup/kubepods/burstable/pod" + uid + "/" + cid; err != nil || v2 != want {
		t.Errorf("v2: %q, %v; want %q", v2, err, want)
	}
}

// A pod cannot make the agent read outside the pods' cgroups: IDs that are
// not what the kubelet and the runtime make are refused, and a symlink in
// the tree does not lead out of it.
func TestReadStaysInTheTree(t *testing.T) {
	tr := Tree{Root: tree(t, v2Files()), Version: V2}
	for name, ids := range map[string][2]string{
		"UID with a path":        {"../../../etc", cid},
		"UID not a UUID":         {"pod", cid},
		"container ID with ..":   {uid, "../" + cid[3:]},
		"container ID too short": {uid, "abc"},
		"container ID upper":     {uid, strings.ToUpper(cid)},
	} {
		if _, err := tr.Read(corev1.PodQOSBurstable, ids[0], ids[1]); err == nil {
			t.Errorf("%s: read", name)
		}
	}
	if _, err := tr.Read("Platinum", uid, cid); err == nil {
		t.Errorf("an unknown QoS class was read")
	}

	outside := t.TempDir()
	if err := os.WriteFile(filepath.Join(outside, "memory.current"), []byte("1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	d := filepath.Join(tr.Root, "kubepods/burstable/pod"+uid, cid)
	if err := os.Remove(filepath.Join(d, "memory.current")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(outside, "memory.current"), filepath.Join(d, "memory.current")); err != nil {
		t.Fatal(err)
	}
	if _, err := tr.Read(corev1.PodQOSBurstable, uid, cid); err == nil {
		t.Errorf("a symlink out of the tree was followed")
	}
}

func TestContainerID(t *testing.T) {
	if got, err := ContainerID("containerd://" + cid); err != nil || got != cid {
		t.Errorf("containerd ID: %q, %v", got, err)
	}
	for _, bad := range []string{"", cid, "containerd://", "containerd://../x", "docker://" + cid[:12]} {
		if _, err := ContainerID(bad); err == nil {
			t.Errorf("ContainerID(%q) accepted", bad)
		}
	}
}

// PSI files as kernels write them, and what is refused.
func TestParsePressure(t *testing.T) {
	cases := map[string]struct {
		raw     string
		want    Pressure
		wantErr string
	}{
		"memory, stalling": {
			raw:  "some avg10=42.17 avg60=12.05 avg300=3.01 total=98765432\nfull avg10=30.00 avg60=8.00 avg300=2.00 total=61234567\n",
			want: Pressure{SomeAvg10: 0.4217, FullAvg10: 0.30, SomeTotal: 98765432 * time.Microsecond, FullTotal: 61234567 * time.Microsecond},
		},
		"cpu before 5.13: no full line": {
			raw:  "some avg10=0.00 avg60=0.00 avg300=0.00 total=12\n",
			want: Pressure{SomeTotal: 12 * time.Microsecond},
		},
		"empty":              {raw: "", wantErr: `no "some" line`},
		"garbage":            {raw: "<html>", wantErr: "want some or full"},
		"avg over 100%":      {raw: "some avg10=101.00 avg60=0 avg300=0 total=0\n", wantErr: "want a percentage"},
		"negative average":   {raw: "some avg10=-1.00 avg60=0 avg300=0 total=0\n", wantErr: "want a percentage"},
		"total not a number": {raw: "some avg10=0.00 total=x\n", wantErr: "total"},
		"field without =":    {raw: "some avg10\n", wantErr: "name=value"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := ParsePressure([]byte(tc.raw))
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want,+got):\n%s", diff)
			}
		})
	}
}
