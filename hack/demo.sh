#!/usr/bin/env bash
# tailor's demo: a real local cluster, the tailor manager, and a sample
# workload driven through idle, a CPU spike, idle and memory growth while
# tailor resizes its pods in place. Ends by itself with a summary; the
# cluster stays up for you to explore (hack/cluster.sh down removes it).
#   DEMO_SPEED=2 hack/demo.sh        phases twice as fast
#   DEMO_SOURCE=metrics-server ...   another metrics source (see hack/addons)
#   DEMO_DASHBOARD_PORT=8090 ...     where the dashboard listens (127.0.0.1)
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
HACK_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "${HACK_DIR}/.." && pwd)"
TAILOR="${ROOT}/bin/tailor"
NS=tailor-demo

"${HACK_DIR}/cluster.sh" up >/dev/null
export KUBECONFIG="$KUBECONFIG_PATH"
export PATH="${K8S_BIN}:${PATH}"

log "installing the TailorPolicy and TailorCheckpoint CRDs"
kubectl apply --server-side --force-conflicts -f "${ROOT}/config/crd/bases" >/dev/null
kubectl wait --for=condition=Established crd/tailorpolicies.autoscaling.tailor.dev crd/tailorcheckpoints.autoscaling.tailor.dev --timeout=60s >/dev/null
kubectl delete namespace "$NS" --ignore-not-found --wait=true >/dev/null

log "starting tailor manager (logs: ${LOG_DIR}/manager.log)"
"$TAILOR" manager --metrics-source "${DEMO_SOURCE:-kubelet}" --sync-period 3s --leader-elect=false \
  --metrics-bind-address 127.0.0.1:8082 --health-probe-bind-address 127.0.0.1:8083 \
  --dashboard-bind-address "127.0.0.1:${DEMO_DASHBOARD_PORT:-8090}" \
  >"${LOG_DIR}/manager.log" 2>&1 &
manager=$!
trap 'kill "$manager" 2>/dev/null || true' EXIT
for _ in $(seq 1 30); do curl -fsS http://127.0.0.1:8083/readyz >/dev/null 2>&1 && break; sleep 1; done
curl -fsS http://127.0.0.1:8083/readyz >/dev/null || die "tailor manager did not become ready; see ${LOG_DIR}/manager.log"

log "dashboard: http://127.0.0.1:${DEMO_DASHBOARD_PORT:-8090} (open it now to watch the resizes; workload page: /workload/${NS}/web)"
"$TAILOR" demo -n "$NS" --speed "${DEMO_SPEED:-1}"

echo
echo "tailor's own metrics were at http://127.0.0.1:8082/metrics; the policy: kubectl -n ${NS} get tailorpolicy web -o yaml"
echo "The cluster is still up: export KUBECONFIG=${KUBECONFIG_PATH}; hack/cluster.sh down removes it."
if [[ -t 0 ]]; then
  read -rp "The manager and its dashboard (http://127.0.0.1:${DEMO_DASHBOARD_PORT:-8090}) run until you press Enter. " _
fi
