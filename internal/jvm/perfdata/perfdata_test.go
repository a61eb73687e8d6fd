package perfdata_test

import (
	"encoding/binary"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tailorhq/tailor/internal/jvm/jvmtest"
	"github.com/tailorhq/tailor/internal/jvm/perfdata"
)

// Each collector's counters, read from a real JVM's file, say which
// collector it is and the heap's maximum it was started with, and the
// counters Parse reads are those jcmd PerfCounter.print prints.
func TestRealJVM(t *testing.T) {
	const xmx = 256 << 20
	for name, tc := range map[string]struct {
		flag string
		want perfdata.Collector
	}{
		"zgc":        {"-XX:+UseZGC", perfdata.ZGC},
		"g1":         {"-XX:+UseG1GC", perfdata.G1},
		"parallel":   {"-XX:+UseParallelGC", perfdata.Parallel},
		"serial":     {"-XX:+UseSerialGC", perfdata.Serial},
		"shenandoah": {"-XX:+UseShenandoahGC", perfdata.Shenandoah},
	} {
		t.Run(name, func(t *testing.T) {
			j := jvmtest.Start(t, jvmtest.Options{Flags: []string{tc.flag, "-Xmx256m"}, LiveMiB: 16, RateMiB: 40})
			// The collectors update the heap's and metaspace's counters
			// when they run: wait for a collection.
			var c perfdata.Counters
			var got perfdata.JVM
			for start := time.Now(); got.MetaspaceUsed == 0 && time.Since(start) < 20*time.Second; time.Sleep(200 * time.Millisecond) {
				b, err := j.Process.ReadPerfData(perfdata.MaxSize)
				if err != nil {
					t.Fatal(err)
				}
				if c, err = perfdata.Parse(b); err != nil {
					t.Fatal(err)
				}
				if got, err = perfdata.Summarize(c); err != nil {
					t.Fatal(err)
				}
			}
			t.Logf("%+v", got)
			if got.Collector != tc.want {
				t.Errorf("collector %q, want %q", got.Collector, tc.want)
			}
			// G1's generations each report the whole heap and a few bytes
			// of alignment more.
			if got.HeapMax < xmx || got.HeapMax > xmx+1024 {
				t.Errorf("heap max %d, want -Xmx256m's %d", got.HeapMax, xmx)
			}
			if got.HeapCommitted <= 0 || got.HeapCommitted > got.HeapMax+1024 || got.HeapUsed <= 0 {
				t.Errorf("heap committed %d, used %d: want both positive, committed within the max", got.HeapCommitted, got.HeapUsed)
			}
			if got.MetaspaceCommitted < got.MetaspaceUsed || got.MetaspaceUsed <= 0 || got.ClassSpaceCommitted <= 0 || got.ClassSpaceCommitted > got.MetaspaceCommitted {
				t.Errorf("metaspace committed %d, used %d, class space %d: want used within committed, class space within metaspace", got.MetaspaceCommitted, got.MetaspaceUsed, got.ClassSpaceCommitted)
			}
			if got.Threads < 2 || got.NonHeap() <= 0 {
				t.Errorf("threads %d, non-heap %d", got.Threads, got.NonHeap())
			}
			if got.VMArgs == "" || !regexp.MustCompile(`-Xmx256m`).MatchString(got.VMArgs) {
				t.Errorf("vm args %q, want -Xmx256m in them", got.VMArgs)
			}
			sameAsJcmd(t, j.Cmd.Process.Pid, c)
		})
	}
}

// sameAsJcmd compares the counters that do not move (the JVM's
// properties and arguments, the generations' maxima) with what the JDK's
// own reader prints.
func sameAsJcmd(t *testing.T, pid int, c perfdata.Counters) {
	t.Helper()
	jcmd, err := exec.LookPath("jcmd")
	if err != nil {
		t.Log("no jcmd to compare with")
		return
	}
	out, err := exec.Command(jcmd, strconv.Itoa(pid), "PerfCounter.print").Output()
	if err != nil {
		t.Fatalf("jcmd PerfCounter.print: %v", err)
	}
	compared := 0
	for _, m := range regexp.MustCompile(`(?m)^(\S+)=(.*)$`).FindAllStringSubmatch(string(out), -1) {
		name, value := m[1], m[2]
		switch {
		case len(value) >= 2 && value[0] == '"' && (strings.HasPrefix(name, "java.property.") || strings.HasPrefix(name, "java.rt.")):
			if got, ok := c.Strings[name]; !ok || strconv.Quote(got) != value && `"`+got+`"` != value {
				t.Errorf("%s: parsed %q, jcmd %s", name, got, value)
			}
			compared++
		case regexp.MustCompile(`^sun\.gc\.generation\.\d\.maxCapacity$`).MatchString(name):
			if got := c.Longs[name]; strconv.FormatInt(got, 10) != value {
				t.Errorf("%s: parsed %d, jcmd %s", name, got, value)
			}
			compared++
		}
	}
	if compared < 10 {
		t.Errorf("compared %d counters with jcmd's; want at least 10", compared)
	}
}

// A file cut short, or with an offset pointing out of it, is an error.
func TestMalformed(t *testing.T) {
	good := synthetic(binary.LittleEndian)
	if _, err := perfdata.Parse(good); err != nil {
		t.Fatalf("the synthetic file: %v", err)
	}
	cases := map[string]func([]byte) []byte{
		"empty":          func([]byte) []byte { return nil },
		"prologue only":  func(b []byte) []byte { return b[:32] },
		"cut":            func(b []byte) []byte { return b[:len(b)-3] },
		"bad magic":      func(b []byte) []byte { b[0] = 0; return b },
		"bad byte order": func(b []byte) []byte { b[4] = 7; return b },
		"version 1":      func(b []byte) []byte { b[5] = 1; return b },
		"not accessible": func(b []byte) []byte { b[7] = 0; return b },
		"entry offset":   func(b []byte) []byte { binary.LittleEndian.PutUint32(b[24:], 1<<30); return b },
		"negative count": func(b []byte) []byte { binary.LittleEndian.PutUint32(b[28:], 0xffffffff); return b },
		"entry length":   func(b []byte) []byte { binary.LittleEndian.PutUint32(b[32:], 4); return b },
		"name offset":    func(b []byte) []byte { binary.LittleEndian.PutUint32(b[36:], 1000); return b },
		"data offset":    func(b []byte) []byte { binary.LittleEndian.PutUint32(b[48:], 1000); return b },
		"unterminated": func(b []byte) []byte {
			for i := 52; i < 76; i++ {
				b[i] = 'x'
			}
			return b
		},
		"vector too long": func(b []byte) []byte { binary.LittleEndian.PutUint32(b[84+8:], 1000); return b },
	}
	for name, mutate := range cases {
		t.Run(name, func(t *testing.T) {
			b := mutate(append([]byte(nil), good...))
			if _, err := perfdata.Parse(b); err == nil {
				t.Errorf("parsed")
			}
		})
	}
	big := synthetic(binary.BigEndian)
	c, err := perfdata.Parse(big)
	if err != nil || c.Longs["sun.gc.x"] != 42 || c.Strings["java.s"] != "hi" {
		t.Errorf("big endian: %+v, %v", c, err)
	}
}

// synthetic builds a version 2.0 file of two entries, as HotSpot lays it
// out: sun.gc.x = 42 (a long) and java.s = "hi" (a string of 8 bytes).
func synthetic(order binary.ByteOrder) []byte {
	b := make([]byte, 32)
	binary.BigEndian.PutUint32(b[0:], 0xcafec0c0)
	if order == binary.LittleEndian {
		b[4] = 1
	}
	b[5], b[6], b[7] = 2, 0, 1
	order.PutUint32(b[24:], 32)
	order.PutUint32(b[28:], 2)
	// Entry 1 at 32: header 20, name "sun.gc.x\0" (9) padded to 24, data 8.
	e := make([]byte, 20+24+8)
	order.PutUint32(e[0:], uint32(len(e)))
	order.PutUint32(e[4:], 20)
	e[12], e[14] = 'J', 1
	order.PutUint32(e[16:], 44)
	copy(e[20:], "sun.gc.x")
	order.PutUint64(e[44:], 42)
	b = append(b, e...)
	// Entry 2 at 84: header 20, name "java.s\0" padded to 8, data 8.
	s := make([]byte, 20+8+8)
	order.PutUint32(s[0:], uint32(len(s)))
	order.PutUint32(s[4:], 20)
	order.PutUint32(s[8:], 8)
	s[12], s[14] = 'B', 5
	order.PutUint32(s[16:], 28)
	copy(s[20:], "java.s")
	copy(s[28:], "hi")
	return append(b, s...)
}

// Garbage is an error, never a panic, and whatever parses summarizes
// without one.
func FuzzParse(f *testing.F) {
	f.Add(synthetic(binary.LittleEndian))
	f.Add(synthetic(binary.BigEndian))
	f.Add([]byte{0xca, 0xfe, 0xc0, 0xc0, 1, 2, 0, 1})
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := perfdata.Parse(b)
		if err != nil {
			return
		}
		_, _ = perfdata.Summarize(c)
	})
}
