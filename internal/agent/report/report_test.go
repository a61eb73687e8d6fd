package report

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// A report without JVM figures encodes as before (an older manager takes
// it); one with them validates, and a JVM with no heap maximum does not.
func TestJVMFigures(t *testing.T) {
	c := Container{PodUID: "p", ID: "c", Time: time.Unix(1, 0)}
	b, err := json.Marshal(Report{Containers: []Container{c}})
	if err != nil || strings.Contains(string(b), "jvm") {
		t.Fatalf("%s, %v", b, err)
	}
	c.JVM = &JVM{Collector: "ZGC", HeapMax: 512 << 20, HeapCommitted: 100 << 20, NonHeap: 80 << 20, Processes: 1, SoftMax: 300 << 20}
	r := Report{Containers: []Container{c}}
	if err := r.Validate(); err != nil {
		t.Errorf("valid JVM figures refused: %v", err)
	}
	r.Containers[0].JVM = &JVM{HeapCommitted: 1}
	if err := r.Validate(); err == nil {
		t.Errorf("a JVM without a heap maximum validated")
	}
}

func TestJVMValidate(t *testing.T) {
	ok := JVM{HeapMax: 512 << 20, HeapCommitted: 512 << 20, HeapUsed: 100 << 20, NonHeap: 80 << 20, SoftMax: 300 << 20, Processes: 1}
	if err := ok.Validate(); err != nil {
		t.Errorf("%+v: %v", ok, err)
	}
	for name, bad := range map[string]func(*JVM){
		"no heap max":        func(j *JVM) { j.HeapMax = 0 },
		"huge heap max":      func(j *JVM) { j.HeapMax = MaxJVMBytes + 1 },
		"committed past max": func(j *JVM) { j.HeapCommitted = 2<<30 + 1 },
		"huge non-heap":      func(j *JVM) { j.NonHeap = MaxJVMBytes + 1 },
		"soft max past max":  func(j *JVM) { j.SoftMax = 1 << 30 },
		"negative count":     func(j *JVM) { j.Processes = -1 },
	} {
		j := ok
		bad(&j)
		if err := j.Validate(); err == nil {
			t.Errorf("%s: %+v validated", name, j)
		}
	}
}
