//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
)

// The tests that fill the node to leave a raise exactly so much room depend
// on the kubelet's count of the node's CPU, which its admission and resize
// checks take from the pods its pod manager holds, at their allocated
// resources. The apiserver's list is only the same count once the two agree:
// a pod bound but not yet delivered to the kubelet, a pod whose deletion the
// kubelet has not finished, and a pod whose resize is pending (spec ahead of
// what the kubelet allocated) are each counted by one and not the other.

// nodeRoom is the node's CPU as the apiserver and the kubelet see it.
type nodeRoom struct {
	free int64
	// unsettled says why the two views may disagree; empty when they agree.
	unsettled string
	// pods describes each pod counted, for a failure's message.
	pods []string
}

func readNodeRoom(ctx context.Context) (nodeRoom, error) {
	var r nodeRoom
	node, err := clientset.CoreV1().Nodes().Get(ctx, nodeName, metav1.GetOptions{})
	if err != nil {
		return r, err
	}
	listed, err := clientset.CoreV1().Pods("").List(ctx, metav1.ListOptions{FieldSelector: "spec.nodeName=" + nodeName})
	if err != nil {
		return r, err
	}
	held, err := kubeletPodUIDs(ctx)
	if err != nil {
		return r, err
	}
	var why []string
	used := int64(0)
	for i := range listed.Items {
		p := &listed.Items[i]
		key := p.Namespace + "/" + p.Name
		if p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			delete(held, p.UID)
			continue
		}
		req := podCPURequestMillis(p)
		used += req
		resizing := podResizeState(p)
		r.pods = append(r.pods, fmt.Sprintf("%s %s %dm%s", key, p.Status.Phase, req, resizing))
		switch {
		case p.DeletionTimestamp != nil:
			why = append(why, key+" is terminating")
		case !held[p.UID]:
			why = append(why, key+" is not on the kubelet yet")
		case resizing != "":
			why = append(why, key+" has a resize pending")
		}
		delete(held, p.UID)
	}
	for uid := range held {
		why = append(why, fmt.Sprintf("the kubelet still holds pod %s, which the apiserver no longer lists", uid))
	}
	sort.Strings(r.pods)
	r.free = node.Status.Allocatable.Cpu().MilliValue() - used
	r.unsettled = strings.Join(why, "; ")
	return r, nil
}

// kubeletPodUIDs are the pods in the kubelet's pod manager, read through
// the apiserver's node proxy.
func kubeletPodUIDs(ctx context.Context) (map[types.UID]bool, error) {
	raw, err := clientset.CoreV1().RESTClient().Get().AbsPath("/api/v1/nodes", nodeName, "proxy", "pods").DoRaw(ctx)
	if err != nil {
		return nil, fmt.Errorf("the kubelet's pod list: %w", err)
	}
	var list corev1.PodList
	if err := json.Unmarshal(raw, &list); err != nil {
		return nil, fmt.Errorf("the kubelet's pod list: %w", err)
	}
	uids := make(map[types.UID]bool, len(list.Items))
	for i := range list.Items {
		p := &list.Items[i]
		if p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed {
			uids[p.UID] = true
		}
	}
	return uids, nil
}

// podResizeState names the resize conditions a pod carries, if any.
func podResizeState(p *corev1.Pod) string {
	var s string
	for _, c := range p.Status.Conditions {
		if (c.Type == corev1.PodResizePending || c.Type == corev1.PodResizeInProgress) && c.Status == corev1.ConditionTrue {
			s += " " + string(c.Type) + "/" + c.Reason
		}
	}
	return s
}

// freeCPUMillis is the node's allocatable CPU minus what its pods request,
// taken once the apiserver and the kubelet count the same pods. Earlier
// tests' namespaces are deleted in the background, and their workloads'
// pods, recreated until their controllers go, hold the node's CPU a while
// longer: it waits for them to leave.
func freeCPUMillis(t *testing.T) int64 {
	t.Helper()
	var room nodeRoom
	var first string
	start := time.Now()
	err := wait.PollUntilContextTimeout(context.Background(), time.Second, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		var err error
		room, err = readNodeRoom(ctx)
		if err != nil {
			return false, err
		}
		if first == "" && room.unsettled != "" {
			first = room.unsettled
		}
		return room.free >= 500 && room.unsettled == "", nil
	})
	if err != nil {
		t.Fatalf("only %dm CPU free on %s after 2m, or not settled (%s); another workload is using the node: %v\npods: %s",
			room.free, nodeName, room.unsettled, err, strings.Join(room.pods, ", "))
	}
	if first != "" {
		t.Logf("waited %.1fs for the node to settle; first: %s", time.Since(start).Seconds(), first)
	}
	return room.free
}

// fillCPU creates a default-priority, idle pod requesting all CPU the node
// has free but leave millicores, so a raise finds exactly that much room.
func fillCPU(t *testing.T, ns string, leave int64) *corev1.Pod {
	t.Helper()
	free := freeCPUMillis(t)
	filler := loadgenPod(ns, "filler", app().Args("--listen=:8080", "--cpu=0", "--memory=8Mi").
		Request(corev1.ResourceCPU, resource.NewMilliQuantity(free-leave, resource.DecimalSI).String()))
	return createRunningPod(t, filler)
}

// explainNodeRoom is what a test that filled the node says when the kubelet
// did not see the room it meant to leave.
func explainNodeRoom() string {
	room, err := readNodeRoom(context.Background())
	if err != nil {
		return "node room: " + err.Error()
	}
	return fmt.Sprintf("node room now: %dm free (unsettled: %q); pods: %s", room.free, room.unsettled, strings.Join(room.pods, ", "))
}
