package manager

import (
	"sort"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
)

// listTable shares equal ResourceLists between cached pods. A ResourceList
// is a map of about 500 bytes however few its entries; a workload's
// replicas carry the same requests and limits (their template's, or what
// tailor resized them to), so 10,000 pods of 1,000 workloads hold a few
// thousand distinct lists, not 20,000. Shared lists are safe because the
// cache's objects are read-only: controller-runtime hands out deep copies,
// and the few reads that skip the copy do not write.
//
// The table forgets what no pod has needed lately, so that lists of
// deleted pods and of replaced recommendations are not kept: it holds two
// generations, and starts a new one when the current one is full; a list
// found in the old generation moves to the new one, and the old one is
// dropped at the next turn. A list it forgot is only no longer shared.
type listTable struct {
	mu        sync.Mutex
	cur, prev map[string]corev1.ResourceList
	size      int
}

// listTableSize is one generation's size: room for the distinct lists of
// a 10,000-pod cluster, at most about 4 MB of lists kept for nothing.
const listTableSize = 4096

func newListTable(size int) *listTable {
	return &listTable{cur: map[string]corev1.ResourceList{}, size: size}
}

// intern is l, or an equal list already held by another cached pod. A nil
// table interns nothing.
func (t *listTable) intern(l corev1.ResourceList) corev1.ResourceList {
	if t == nil || len(l) == 0 {
		return l
	}
	key := listKey(l)
	t.mu.Lock()
	defer t.mu.Unlock()
	if s, ok := t.cur[key]; ok {
		return s
	}
	if s, ok := t.prev[key]; ok {
		l = s
	}
	if len(t.cur) >= t.size {
		t.prev, t.cur = t.cur, make(map[string]corev1.ResourceList, t.size)
	}
	t.cur[key] = l
	return l
}

// listKey names l's quantities exactly: two lists with one key hold equal
// quantities, written alike.
func listKey(l corev1.ResourceList) string {
	names := make([]string, 0, len(l))
	for n := range l {
		names = append(names, string(n))
	}
	sort.Strings(names)
	var b strings.Builder
	for _, n := range names {
		q := l[corev1.ResourceName(n)]
		b.WriteString(n)
		b.WriteByte('=')
		b.WriteString(q.String())
		b.WriteByte(';')
	}
	return b.String()
}
