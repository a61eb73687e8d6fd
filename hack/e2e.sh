#!/usr/bin/env bash
# Brings the local cluster up (building what is missing), runs the e2e suite
# against it and tears it down again, whatever the result.
#   KEEP_CLUSTER=1 hack/e2e.sh         leave the cluster running afterwards
#   E2E_RUN='TestCPU.*' hack/e2e.sh    run a subset
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
HACK_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "${HACK_DIR}/.." && pwd)"

teardown() {
  local rc=$?
  if [[ "${KEEP_CLUSTER:-0}" != 1 ]]; then "${HACK_DIR}/cluster.sh" down || true; fi
  exit "$rc"
}
trap teardown EXIT

t0=$SECONDS
"${HACK_DIR}/cluster.sh" up
# A cluster kept from an earlier run (KEEP_CLUSTER=1) may still hold what a
# killed run left: its tests' namespaces, whose pods take the CPU this run's
# tests count on. They carry the label test/cluster.TestLabel.
leftover=$("${K8S_BIN}/kubectl" --kubeconfig "$KUBECONFIG_PATH" get namespaces -l e2e.tailor.dev/test -o name)
if [[ -n "$leftover" ]]; then
  log "removing what an earlier run left: $(tr '\n' ' ' <<<"$leftover")"
  "${K8S_BIN}/kubectl" --kubeconfig "$KUBECONFIG_PATH" delete namespaces -l e2e.tailor.dev/test --wait --timeout=5m
fi
log "cluster ready after $((SECONDS - t0))s; running e2e suite"
cd "$ROOT"
export TAILOR_KUBECONFIG="$KUBECONFIG_PATH"
# The in-process managers log there; a failed test prints its own lines.
export TAILOR_E2E_LOG_DIR="$LOG_DIR"
# The metrics e2e tests read Prometheus when the add-on runs.
[[ " ${ADDONS-metrics-server prometheus} " == *" prometheus "* ]] && export TAILOR_PROMETHEUS_URL="http://127.0.0.1:${PROMETHEUS_PORT:-9090}"
export PATH="${K8S_BIN}:${PATH}"
# -p 1: packages share one node, and tests that fill it must not race.
set +e
go test -tags e2e -count=1 -p 1 -timeout "${E2E_TIMEOUT:-40m}" -v ${E2E_RUN:+-run "$E2E_RUN"} ./test/... 2>&1 | tee "${LOG_DIR}/e2e.log"
rc=${PIPESTATUS[0]}
set -e
if [[ $rc != 0 ]]; then
  log "failed tests and their messages (the manager's log lines are in the full log):"
  awk -f "${HACK_DIR}/failures.awk" "${LOG_DIR}/e2e.log"
fi
log "e2e suite finished in $((SECONDS - t0))s (exit ${rc}); full log: ${LOG_DIR}/e2e.log"
exit "$rc"
