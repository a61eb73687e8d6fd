#!/usr/bin/env bash
# The whole gate (make test, and so CI): make check and the cluster suites
# in their phases on one local cluster, check beside them (below). Each
# phase says when it starts and ends; the run ends with a table of them
# and the FLAKES section (hack/e2e.sh).
#
#   hack/test.sh                 every phase
#   TEST_PHASES="check e2e" hack/test.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "$(dirname "${BASH_SOURCE[0]}")/.."

# Go's build cache keys a package's compile by its directory (without
# -trimpath, which the tests' own runtime.Caller paths rule out), and so
# does golangci-lint's: a fresh clone in a new directory, as CI makes,
# compiled every package of the repository again for each of the gate's
# test binaries and linted from nothing. The gate runs from one stable
# path instead, a symlink to this checkout, so the second clone of the
# same code hits the cache of the first. A lock keeps a second gate of
# another checkout from moving the link under the first; that one runs
# from its own path, uncached (it says so).
GATE_ROOT="${TAILOR_GATE_ROOT:-${TAILOR_CACHE}/gate-src}"
if [[ "$PWD" != "$GATE_ROOT" ]]; then
  mkdir -p "$(dirname "$GATE_ROOT")"
  exec 9>"${GATE_ROOT}.lock"
  if flock -n 9; then
    ln -sfn "$PWD" "$GATE_ROOT"
    log "the gate runs from ${GATE_ROOT} -> ${PWD}: the build caches of an earlier checkout's gate apply"
    cd "$GATE_ROOT"
  else
    exec 9>&-
    log "another gate holds ${GATE_ROOT}: this one runs from ${PWD}, compiling its packages anew"
  fi
fi
PHASES="${TEST_PHASES:-check bench bench-room bench-scale e2e}"
MAKE="${MAKE:-make}"

t0=$SECONDS
table() {
  local rc=$?
  # A run ended early (a phase failed, or ^C) leaves no check behind.
  if [[ -n "${check_pid:-}" ]] && kill -0 "$check_pid" 2>/dev/null; then
    killtree "$check_pid"
    log "check (beside e2e) stopped with the run; its output so far: ${check_log}"
  fi
  echo
  echo "phase timings (seconds) on $(nproc) cores:"
  awk -F'\t' '{ printf "  %-28s %6d  %-6s  CPU %3d%% busy\n", $1, $2, ($3 == 0 ? "passed" : "FAILED"), $4 }' "$TAILOR_TIMINGS"
  printf '  %-28s %6d\n' total $((SECONDS - t0))
  rm -f "$TAILOR_TIMINGS"
  exit "$rc"
}
# Run by hack/e2e.sh beside its chaos phase (below), this script only adds
# its phases' rows to the caller's table.
mark=""
if [[ -z "${TAILOR_TIMINGS:-}" ]]; then
  TAILOR_TIMINGS=$(mktemp)
  export TAILOR_TIMINGS
  trap table EXIT
else
  mark=" (beside chaos)"
fi

# The benchmarks need no cluster and check figures that a loaded machine
# does not move (the replay is deterministic; the scale run's ranges are
# counts, memory and a CPU ratio to its own apiserver, recorded under load).
# test/chaos mostly waits for outages to pass, on the node alone: with the
# e2e phase in this run, the benchmarks run beside it instead of before the
# cluster, which takes their four minutes off the gate's critical path.
if [[ " ${PHASES} " == *" e2e "* && " ${E2E_PHASES:-chaos} " == *" chaos "* ]]; then
  beside=()
  for phase in $PHASES; do
    case "$phase" in bench | bench-room | bench-scale) beside+=("$phase") ;; esac
  done
  if ((${#beside[@]})); then
    export E2E_BESIDE_CHAOS="TEST_PHASES='${beside[*]}' $(pwd)/hack/test.sh"
    PHASES=$(tr ' ' '\n' <<<"$PHASES" | grep -vx -e bench -e bench-room -e bench-scale | tr '\n' ' ')
  fi
fi

# make check computes (builds, lints, tests under -race) while the cluster
# suites mostly wait on the kubelet, their managers and the windows they
# test: with both in this run, check runs beside the e2e phases, in a
# cgroup whose CPU weight is a fraction of one process's, so that the
# node's pods, its kubelet and apiserver and the e2e tests' managers take
# the CPU first whenever they want it and check has what they leave. Its
# output is kept apart and printed when the e2e phases end; a check that
# fails fails the run there. CHECK_BESIDE_E2E=0 runs it first instead, as
# a machine without a writable cpu cgroup does (it says so).
check_log=""
check_pid=""
# check_cgroup: makes the low-weight cgroup and prints its directory, or
# fails when this machine cannot (no cpu controller, not root).
check_cgroup() {
  local dir
  if [[ -w /sys/fs/cgroup/cpu/cpu.shares ]]; then
    # cgroup v1: shares are relative to a nice-0 process's 1024 at the
    # root, and to the kubepods group's 1024 per CPU.
    dir=/sys/fs/cgroup/cpu/tailor-check
    mkdir -p "$dir" && echo "${CHECK_CPU_SHARES:-512}" >"$dir/cpu.shares" || return 1
  elif [[ -w /sys/fs/cgroup/cgroup.subtree_control ]] && grep -qw cpu /sys/fs/cgroup/cgroup.controllers; then
    # cgroup v2: a weight of 50 against the default 100.
    echo +cpu >/sys/fs/cgroup/cgroup.subtree_control 2>/dev/null || true
    dir=/sys/fs/cgroup/tailor-check
    mkdir -p "$dir" && echo "${CHECK_CPU_WEIGHT:-50}" >"$dir/cpu.weight" || return 1
  else
    return 1
  fi
  echo "$dir"
}
if [[ " ${PHASES} " == *" check "* && " ${PHASES} " == *" e2e "* && "${CHECK_BESIDE_E2E:-1}" != 0 ]]; then
  if cg=$(check_cgroup); then
    check_log=$(mktemp)
    log "check runs beside the e2e phases in the cgroup ${cg} (output: ${check_log}, printed at the end)"
    (
      echo "$BASHPID" >"${cg}/cgroup.procs"
      rc=0
      timed "check (beside e2e)" "$MAKE" --no-print-directory check || rc=$?
      log "== check (beside e2e) finished (exit ${rc}); its output follows the e2e phases" 2>&3
      exit "$rc"
    ) 3>&2 >"$check_log" 2>&1 &
    check_pid=$!
    PHASES=$(tr ' ' '\n' <<<"$PHASES" | grep -vx check | tr '\n' ' ')
  else
    log "no writable cpu cgroup here (not root, or no cpu controller): check runs first, alone"
  fi
fi

# check_result: waits for the check started beside the e2e phases, prints
# its output and fails as it did.
check_result() {
  [[ -n "$check_pid" ]] || return 0
  local rc=0
  wait "$check_pid" || rc=$?
  check_pid=""
  echo
  log "check (beside e2e): its output"
  cat "$check_log"
  rm -f "$check_log"
  rmdir "${cg}" 2>/dev/null || true
  return "$rc"
}

rc=0
for phase in $PHASES; do
  case "$phase" in
    # make check: lint, unit tests of every module, renders, the controller tier.
    check) timed check "$MAKE" --no-print-directory check ;;
    # The replay benchmark's figures are deterministic and checked against
    # bench/ranges.json: a change that moves them must say so there.
    bench) timed "bench${mark}" timeout 15m "$MAKE" --no-print-directory bench ;;
    # Room made in place against recreating, tailor's decisions on a
    # simulated fleet: deterministic, checked against bench/room-ranges.json.
    bench-room) timed "bench-room${mark}" timeout 5m "$MAKE" --no-print-directory bench-room ;;
    # The manager at 1,000 pods on its own apiserver, checked against
    # bench/scale-ranges.json.
    bench-scale) timed "bench-scale${mark}" timeout 15m "$MAKE" --no-print-directory bench-scale ;;
    # hack/e2e.sh times its own phases (cluster-up, shared, quiet, chaos).
    e2e) "$MAKE" --no-print-directory e2e || rc=$? ;;
    *) die "unknown phase ${phase}: choose from check bench bench-room bench-scale e2e" ;;
  esac
  ((rc == 0)) || break
done
check_result || rc=$?
exit "$rc"
