#!/usr/bin/env bash
# The whole gate (make test, and so CI): everything that needs no cluster
# first, so that a broken build or unit test fails in minutes, then the
# cluster suites in their phases on one local cluster. Each phase says when
# it starts and ends; the run ends with a table of them and the FLAKES
# section (hack/e2e.sh).
#
#   hack/test.sh                 every phase
#   TEST_PHASES="check e2e" hack/test.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "$(dirname "${BASH_SOURCE[0]}")/.."
PHASES="${TEST_PHASES:-check bench bench-scale e2e}"
MAKE="${MAKE:-make}"

t0=$SECONDS
table() {
  local rc=$?
  echo
  echo "phase timings (seconds) on $(nproc) cores:"
  awk -F'\t' '{ printf "  %-28s %6d  %s\n", $1, $2, ($3 == 0 ? "passed" : "FAILED") }' "$TAILOR_TIMINGS"
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
    case "$phase" in bench | bench-scale) beside+=("$phase") ;; esac
  done
  if ((${#beside[@]})); then
    export E2E_BESIDE_CHAOS="TEST_PHASES='${beside[*]}' $(pwd)/hack/test.sh"
    PHASES=$(tr ' ' '\n' <<<"$PHASES" | grep -vx -e bench -e bench-scale | tr '\n' ' ')
  fi
fi

for phase in $PHASES; do
  case "$phase" in
    # make check: lint, unit tests of every module, renders, the controller tier.
    check) timed check "$MAKE" --no-print-directory check ;;
    # The replay benchmark's figures are deterministic and checked against
    # bench/ranges.json: a change that moves them must say so there.
    bench) timed "bench${mark}" timeout 15m "$MAKE" --no-print-directory bench ;;
    # The manager at 1,000 pods on its own apiserver, checked against
    # bench/scale-ranges.json.
    bench-scale) timed "bench-scale${mark}" timeout 15m "$MAKE" --no-print-directory bench-scale ;;
    # hack/e2e.sh times its own phases (cluster-up, shared, quiet, chaos).
    e2e) "$MAKE" --no-print-directory e2e ;;
    *) die "unknown phase ${phase}: choose from check bench bench-scale e2e" ;;
  esac
done
