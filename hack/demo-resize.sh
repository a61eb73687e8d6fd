#!/usr/bin/env bash
# The resize walkthrough: a real local cluster, a workload, and in-place resizes made
# with `tailor resize`, each checked against the container's cgroup files.
# Ends by itself with a summary; the cluster stays up for you to explore
# (hack/cluster.sh down removes it).
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
HACK_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "${HACK_DIR}/.." && pwd)"
TAILOR="${ROOT}/bin/tailor"
NS=tailor-demo

"${HACK_DIR}/cluster.sh" up >/dev/null
export KUBECONFIG="$KUBECONFIG_PATH"
export PATH="${K8S_BIN}:${PATH}"

step() { printf '\n\033[1m== %s\033[0m\n' "$*"; }
run() { printf '$ %s\n' "$*"; "$@"; }
summary=()
note() { summary+=("$*"); }

# cgroup FILE CONTROLLER POD CONTAINER: a container's cgroup v1 file on this host.
cgroup() {
  local file=$1 ctl=$2 pod=$3 ctr=$4 uid id
  uid=$(kubectl -n "$NS" get pod "$pod" -o jsonpath='{.metadata.uid}')
  id=$(kubectl -n "$NS" get pod "$pod" -o jsonpath="{.status.containerStatuses[?(@.name==\"$ctr\")].containerID}")
  id=${id#*://}
  cat /sys/fs/cgroup/"$ctl"/kubepods/pod"$uid"/"$id"/"$file" /sys/fs/cgroup/"$ctl"/kubepods/*/pod"$uid"/"$id"/"$file" 2>/dev/null | head -1
}

step "A workload: two pods running the load generator"
kubectl delete namespace "$NS" --ignore-not-found --wait=true >/dev/null
kubectl create namespace "$NS" >/dev/null
kubectl -n "$NS" apply -f - >/dev/null <<EOF
apiVersion: v1
kind: Pod
metadata: {name: web}
spec:
  terminationGracePeriodSeconds: 0
  containers:
  - name: app
    image: tailor.local/loadgen:dev
    args: ["--cpu=300m", "--memory=32Mi"]
    resources:
      requests: {cpu: 250m, memory: 64Mi}
      limits: {cpu: "2", memory: 128Mi}
    resizePolicy:
    - {resourceName: cpu, restartPolicy: NotRequired}
    - {resourceName: memory, restartPolicy: NotRequired}
---
apiVersion: v1
kind: Pod
metadata: {name: db}
spec:
  terminationGracePeriodSeconds: 0
  containers:
  - name: app
    image: tailor.local/loadgen:dev
    resources:
      requests: {cpu: 100m, memory: 64Mi}
      limits: {cpu: 500m, memory: 1Gi}
    resizePolicy:
    - {resourceName: cpu, restartPolicy: NotRequired}
    - {resourceName: memory, restartPolicy: RestartContainer}
EOF
kubectl -n "$NS" wait --for=condition=Ready pod/web pod/db --timeout=90s >/dev/null
run "$TAILOR" status -n "$NS"

step "CPU limit 2 -> 3 in place (resizePolicy NotRequired)"
echo "cpu.cfs_quota_us before: $(cgroup cpu.cfs_quota_us cpu web app)"
run "$TAILOR" resize web -n "$NS" --limits cpu=3
echo "cpu.cfs_quota_us after:  $(cgroup cpu.cfs_quota_us cpu web app)"
note "web: cpu limit 2 -> 3 in place, cfs quota now $(cgroup cpu.cfs_quota_us cpu web app), restarts $(kubectl -n "$NS" get pod web -o jsonpath='{.status.containerStatuses[0].restartCount}')"

step "Memory limit 128Mi -> 512Mi in place"
run "$TAILOR" resize web -n "$NS" --limits memory=512Mi
echo "memory.limit_in_bytes after: $(cgroup memory.limit_in_bytes memory web app)"
note "web: memory limit 128Mi -> 512Mi in place, memory.limit_in_bytes $(cgroup memory.limit_in_bytes memory web app)"

step "Memory limit 1Gi -> 2Gi on a container whose memory resizePolicy is RestartContainer"
run "$TAILOR" resize db -n "$NS" --limits memory=2Gi
note "db: memory limit 1Gi -> 2Gi, restarted as predicted: restarts $(kubectl -n "$NS" get pod db -o jsonpath='{.status.containerStatuses[0].restartCount}')"

step "Refused before anything is sent: the QoS class would change"
set +e
run "$TAILOR" resize web -n "$NS" --requests cpu=3,memory=512Mi --dry-run=client
rc=$?
note "web: requests = limits (Burstable -> Guaranteed) refused by the preflight, exit ${rc}"

step "Refused: more than the node's allocatable (tailor's prediction, then the apiserver's own verdict)"
run "$TAILOR" resize web -n "$NS" --requests cpu=5 --limits cpu=5 --dry-run=server
rc=$?
set -e
note "web: cpu request 5 on a 2-cpu node refused by rule NodeCapacity, and the apiserver's dry run agreed, exit ${rc}"

step "Deferred: fill the node, resize, then make room"
# The preflight's headroom says what the other pods leave free for web; fill
# all but 200m of it, so web's 450m increase must wait.
free=$("$TAILOR" resize web -n "$NS" --requests cpu=251m --dry-run=client -o json |
  awk '/"free"/ {f=1} f && /"cpu"/ {gsub(/[",]/, "", $2); print $2; exit}')
free_m=$([[ "$free" == *m ]] && echo "${free%m}" || echo $(( ${free} * 1000 )))
filler=$(( free_m - 250 - 200 ))
echo "free for web: ${free}; filler requests ${filler}m"
kubectl -n "$NS" run filler --image=tailor.local/loadgen:dev --restart=Never \
  --overrides="{\"spec\":{\"terminationGracePeriodSeconds\":0,\"containers\":[{\"name\":\"filler\",\"image\":\"tailor.local/loadgen:dev\",\"resources\":{\"requests\":{\"cpu\":\"${filler}m\"}}}]}}" >/dev/null
kubectl -n "$NS" wait --for=condition=Ready pod/filler --timeout=60s >/dev/null
"$TAILOR" resize web -n "$NS" --requests cpu=700m --timeout 60s &
resizer=$!
sleep 4
echo "(deleting the filler pod to make room)"
kubectl -n "$NS" delete pod filler --grace-period=0 --force >/dev/null 2>&1
wait "$resizer"
note "web: cpu request 250m -> 700m Deferred while the node was full, Done once room appeared"

step "Where things stand"
run "$TAILOR" status -n "$NS" -o wide

step "Summary"
for s in "${summary[@]}"; do echo "  - $s"; done
echo
echo "The cluster is still up: export KUBECONFIG=${KUBECONFIG_PATH}; hack/cluster.sh down removes it."
