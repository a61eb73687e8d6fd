#!/usr/bin/env bash
# Brings the local cluster up (building what is missing), runs the cluster
# suites against it in phases and tears it down again, whatever the result.
#
#   hack/e2e.sh                        the gate's phases: shared, quiet, apps-check, chaos
#   E2E_PHASES="shared" hack/e2e.sh    some of them
#   E2E_PHASES="apps" hack/e2e.sh      every real application, one at a time (make e2e-apps)
#   KEEP_CLUSTER=1 hack/e2e.sh         leave the cluster running afterwards
#   E2E_RUN='TestCPU.*' hack/e2e.sh    a subset (each test still runs only in its phase)
#
# The phases (test/cluster/phase.go says which test is in which):
#   shared  the tests that touch only their own namespace, side by side
#           (each one's manager is scoped to its namespace), and the suites
#           that only ask the apiserver; packages in parallel too
#   quiet   the tests that need the node to themselves, one at a time
#   apps-check  one trial of Redis, PostgreSQL and a JVM under tailor, side
#           by side, and the JVM heap's test: the gate's check of what
#           make e2e-apps and make bench-e2e run at length
#   chaos   test/chaos, last and alone: it stops and starts the cluster's
#           components, so a cluster it leaves degraded harms no other test
# A failed test is run once more: one that then passes is a flake, printed
# in a FLAKES section at the end; one that fails twice fails the run.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
HACK_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "${HACK_DIR}/.." && pwd)"
PHASES="${E2E_PHASES:-shared quiet apps-check chaos}"
GOTESTSUM="${TAILOR_GOTESTSUM:-gotestsum}"
# go test's JSON of each phase, kept after the cluster (and LOG_DIR) is gone.
E2E_OUT="${E2E_OUT:-${ROOT}/bin/e2e}"
command -v "$GOTESTSUM" >/dev/null || die "no gotestsum: run through make e2e, which installs a pinned one"

teardown() {
  local rc=$?
  # A run that ends while the cluster still comes up stops that first.
  if [[ -n "${cluster_pid:-}" ]]; then kill "$cluster_pid" 2>/dev/null || true; wait "$cluster_pid" 2>/dev/null || true; fi
  if [[ "${KEEP_CLUSTER:-0}" != 1 ]]; then "${HACK_DIR}/cluster.sh" down || true; fi
  exit "$rc"
}
trap teardown EXIT

# Kubernetes 1.37's scheduler preemption for deferred resizes (alpha, off
# by default) is on in the e2e cluster, so that what tailor resize predicts
# of it is checked against the real scheduler
# (TestCLIPredictsPreemptionForADeferredResize). It changes nothing else
# here: tailor never asks for more than a node's room, and the other tests
# that defer a resize run pods of one priority, which preempt nobody.
export FEATURE_GATES="${FEATURE_GATES-InPlacePodVerticalScalingSchedulerPreemption=true}"

t0=$SECONDS
# The cluster comes up while tailor and the release build: neither needs
# the other, and bringing a cluster up mostly waits on its components. Its
# output is kept apart and printed once both are done.
cluster_log=$(mktemp)
timed cluster-up "${HACK_DIR}/cluster.sh" up >"$cluster_log" 2>&1 &
cluster_pid=$!
# The tailor the chaos tests run (TAILOR_E2E_BINARY), as make build stamps it.
timed build make -C "$ROOT" --no-print-directory build >/dev/null || die "make build failed"
# A release at a test version, for test/deploy's TestReleaseInstallsOnTheCluster
# (its image imported as it is, its chart installed with helm). Built only
# for this machine's platform, into bin/ (rebuilt each run).
if [[ " ${PHASES} " == *" shared "* && -z "${TAILOR_RELEASE_DIST:-}" ]]; then
  export TAILOR_RELEASE_VERSION=v0.0.0-e2e TAILOR_RELEASE_DIST="${ROOT}/bin/release-e2e"
  platform="linux/$(go env GOARCH)"
  timed release make -C "$ROOT" --no-print-directory release DIST="$TAILOR_RELEASE_DIST" VERSION="$TAILOR_RELEASE_VERSION" \
    RELEASE_PLATFORMS="$platform" IMAGE_PLATFORMS="$platform" ${TAILOR_HELM:+HELM="$TAILOR_HELM"} >/dev/null || die "make release failed"
fi
up=0
wait "$cluster_pid" || up=$?
cluster_pid=""
cat "$cluster_log"
rm -f "$cluster_log"
((up == 0)) || die "hack/cluster.sh up failed (exit ${up})"
# A cluster kept from an earlier run (KEEP_CLUSTER=1) may still hold what a
# killed run left: its tests' namespaces, whose pods take the CPU this run's
# tests count on. They carry the label test/cluster.TestLabel.
leftover=$("${K8S_BIN}/kubectl" --kubeconfig "$KUBECONFIG_PATH" get namespaces -l e2e.tailor.dev/test -o name)
if [[ -n "$leftover" ]]; then
  log "removing what an earlier run left: $(tr '\n' ' ' <<<"$leftover")"
  "${K8S_BIN}/kubectl" --kubeconfig "$KUBECONFIG_PATH" delete namespaces -l e2e.tailor.dev/test --wait --timeout=5m
fi
log "cluster ready after $((SECONDS - t0))s; running the phases: ${PHASES}"
cd "$ROOT"
export TAILOR_KUBECONFIG="$KUBECONFIG_PATH"
# The in-process managers log there; a failed test prints its own lines.
export TAILOR_E2E_LOG_DIR="$LOG_DIR"
# The metrics e2e tests read Prometheus when the add-on runs.
[[ " ${ADDONS-metrics-server prometheus} " == *" prometheus "* ]] && export TAILOR_PROMETHEUS_URL="http://127.0.0.1:${PROMETHEUS_PORT:-9090}"
export PATH="${K8S_BIN}:${PATH}"

SUITES=(./test/crd ./test/deploy ./test/e2e ./test/metrics ./test/oracle)

# run_phase NAME TIMEOUT PHASE GO_TEST_FLAGS... -- PACKAGES...: one gotestsum
# run, failed tests run once more (--rerun-fails=2 is two attempts at most),
# the whole of go test's JSON kept in E2E_OUT for the FLAKES section. The
# summary leaves out the tests each phase skips (the other phase's).
run_phase() {
  local name=$1 timeout=$2 phase=$3; shift 3
  local flags=()
  while [[ $1 != -- ]]; do flags+=("$1"); shift; done
  shift
  local pkgs="$*"
  TAILOR_E2E_PHASE="$phase" timed "e2e-${name}" "$GOTESTSUM" \
    --format "${E2E_FORMAT:-testname}" --jsonfile "${E2E_OUT}/${name}.json" \
    --hide-summary=skipped \
    --rerun-fails=2 --rerun-fails-max-failures=5 --rerun-fails-run-root-test \
    --packages "$pkgs" -- -tags e2e -count=1 -timeout "$timeout" \
    ${E2E_RUN:+-run "$E2E_RUN"} "${flags[@]}"
}

mkdir -p "$E2E_OUT"
rm -f "${E2E_OUT}"/*.json
rc=0
for phase in $PHASES; do
  case "$phase" in
    # -parallel: the shared tests mostly wait on the kubelet and their
    # managers; eight at once ask the node for about 1.5 of its 2 CPUs.
    shared) run_phase shared 20m "$phase" -p 3 -parallel 8 -- "${SUITES[@]}" || rc=1 ;;
    # -p 1: one package at a time, so a quiet test has the node alone.
    quiet) run_phase quiet 30m "$phase" -p 1 -- "${SUITES[@]}" || rc=1 ;;
    chaos)
      # E2E_BESIDE_CHAOS (hack/test.sh sets it to the benchmarks) runs
      # while the chaos tests do: its output is kept apart and printed
      # after them, so neither log is interleaved with the other.
      beside_pid=""
      if [[ -n "${E2E_BESIDE_CHAOS:-}" ]]; then
        log "beside e2e-chaos: ${E2E_BESIDE_CHAOS} (output: ${E2E_OUT}/beside-chaos.log)"
        bash -c "$E2E_BESIDE_CHAOS" >"${E2E_OUT}/beside-chaos.log" 2>&1 &
        beside_pid=$!
      fi
      run_phase chaos 20m quiet -p 1 -- ./test/chaos || rc=1
      if [[ -n "$beside_pid" ]]; then
        wait "$beside_pid" || rc=1
        log "beside e2e-chaos: its output"
        cat "${E2E_OUT}/beside-chaos.log"
      fi
      ;;
    # The real applications: their images are built and imported by the
    # phases that run them, not at every cluster start. apps (make
    # e2e-apps) runs each alone; apps-check, the gate's, one trial of each
    # kind of application, side by side (E2E_RUN, when set, names tests of
    # either).
    apps | apps-check)
      "${HACK_DIR}/apps.sh" import || die "hack/apps.sh import failed"
      only=(-run '^TestApps' -parallel 1)
      [[ "$phase" == apps-check ]] && only=(-run '^TestApps(RaisedAndLoweredInPlace|JVMLimitKeptAtItsHeapReach)$/^(redis|postgres|jvm)$' -parallel 4)
      [[ -n "${E2E_RUN:-}" ]] && only=()
      run_phase "$phase" 40m apps -p 1 "${only[@]}" -- ./test/e2e || rc=1
      ;;
    *) die "unknown phase ${phase}: choose from shared quiet apps-check chaos apps" ;;
  esac
done
go run ./hack/flakes "${E2E_OUT}"/*.json
log "e2e finished in $((SECONDS - t0))s (exit ${rc}); go test's JSON: ${E2E_OUT}/*.json"
exit "$rc"
