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
