#!/usr/bin/env bash
# VPA (kubernetes/autoscaler's vertical-pod-autoscaler) for the local cluster,
# as host processes: its recommender, updater and admission controller, built
# from the Go module proxy at VPA_VERSION, with its own RBAC and CRDs from
# the same module, each component under the identity of the ServiceAccount
# upstream's RBAC names. The updater and the admission controller run with
# the InPlace and CPUStartupBoost feature gates on (both alpha in 1.8);
# the recommender reads metrics.k8s.io (hack/addons/metrics-server.sh).
# The admission controller registers its webhook by URL (the cluster has no
# kube-proxy to reach a Service), with a serving certificate of the
# cluster CA for this host's address.
#
#   hack/addons/vpa.sh up     build (cached), install, start, wait for the webhook
#   hack/addons/vpa.sh down   stop, unregister, remove its objects and state
#   hack/addons/vpa.sh build  build (cached) only; bin, crds: print where the
#                             binaries and the CRDs' manifest are
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"

VPA_VERSION="${VPA_VERSION:-v1.8.1}"
VPA_MODULE=k8s.io/autoscaler/vertical-pod-autoscaler
VPA_BIN_DIR="${TAILOR_CACHE}/vpa/${VPA_VERSION}/bin"
VPA_DIR="${TAILOR_DEV_DIR}/vpa"
VPA_WEBHOOK_PORT="${VPA_WEBHOOK_PORT:-8000}"
# How often the recommender and the updater act; upstream's default is 1m.
VPA_INTERVAL="${VPA_INTERVAL:-1m}"
COMPONENTS_VPA=(recommender updater admission-controller)

kc() { "${K8S_BIN}/kubectl" --kubeconfig "$KUBECONFIG_PATH" "$@"; }

# module_dir is where the module proxy's copy of VPA is (its deploy/
# manifests are read from there).
module_dir() {
  (cd "${TAILOR_CACHE}/vpa/${VPA_VERSION}/src" && GOFLAGS=-mod=mod go list -m -f '{{.Dir}}' "$VPA_MODULE")
}

build() {
  local wrap="${TAILOR_CACHE}/vpa/${VPA_VERSION}/src" c
  mkdir -p "$wrap" "$VPA_BIN_DIR"
  if [[ ! -f "$wrap/go.mod" ]]; then
    local gomod goversion
    gomod=$(cd "$wrap" && GOFLAGS=-mod=mod go mod download -json "${VPA_MODULE}@${VPA_VERSION}" | sed -n 's/.*"GoMod": "\(.*\)",*/\1/p')
    [[ -f "$gomod" ]] || die "could not download ${VPA_MODULE}@${VPA_VERSION} from the module proxy"
    goversion=$(sed -n 's/^go \(.*\)/\1/p' "$gomod")
    printf 'module tailor.local/vpa-build\n\ngo %s\n\nrequire %s %s\n' "$goversion" "$VPA_MODULE" "$VPA_VERSION" > "$wrap/go.mod"
  fi
  for c in "${COMPONENTS_VPA[@]}"; do
    if [[ -x "${VPA_BIN_DIR}/vpa-${c}" ]]; then continue; fi
    log "VPA ${VPA_VERSION} ${c}: building (cold: a few minutes)"
    (cd "$wrap" && CGO_ENABLED=0 GOFLAGS=-mod=mod go build -trimpath -ldflags "-s -w" -o "${VPA_BIN_DIR}/vpa-${c}.tmp" "${VPA_MODULE}/pkg/${c}") ||
      die "building VPA ${c} failed"
    mv "${VPA_BIN_DIR}/vpa-${c}.tmp" "${VPA_BIN_DIR}/vpa-${c}"
  done
  log "VPA ${VPA_VERSION}: built in ${VPA_BIN_DIR}"
}

# identities: each component's client certificate names the ServiceAccount
# upstream's RBAC binds (kube-system/vpa-<component>), so that RBAC applies
# as it is, and the admission controller's serving certificate.
identities() {
  local ip=$1 c
  for c in "${COMPONENTS_VPA[@]}"; do
    mkcert "$VPA_DIR" "$c" "system:serviceaccount:kube-system:vpa-${c}" "system:serviceaccounts"
    write_kubeconfig "${VPA_DIR}/${c}.kubeconfig" "vpa-${c}" "${VPA_DIR}/${c}.crt" "${VPA_DIR}/${c}.key"
  done
  mkcert "$VPA_DIR" webhook vpa-webhook "" "IP:${ip}"
}

pidfile() { echo "${VPA_DIR}/${1}.pid"; }
running() { pid_alive "vpa-$1" "$(pidfile "$1")"; }

start_component() { # component args...
  local c=$1; shift
  running "$c" && return
  log "starting VPA ${c}"
  setsid "${VPA_BIN_DIR}/vpa-${c}" --kubeconfig "${VPA_DIR}/${c}.kubeconfig" "$@" \
    >>"${LOG_DIR}/vpa-${c}.log" 2>&1 </dev/null 9>&- &
  echo $! > "$(pidfile "$c")"
}

cmd_up() {
  local t0=$SECONDS ip dir
  kc get --raw /readyz >/dev/null 2>&1 || die "the cluster is not up (hack/cluster.sh up)"
  kc get --raw /apis/metrics.k8s.io/v1beta1 >/dev/null 2>&1 || die "metrics.k8s.io is not served: the recommender reads it (hack/addons/metrics-server.sh up)"
  build
  dir=$(module_dir)
  ip=$(node_ip)
  mkdir -p "$LOG_DIR" "$VPA_DIR"
  identities "$ip"
  kc apply -f "${dir}/deploy/vpa-v1-crd-gen.yaml" >/dev/null
  kc wait --for condition=Established --timeout 60s crd/verticalpodautoscalers.autoscaling.k8s.io crd/verticalpodautoscalercheckpoints.autoscaling.k8s.io >/dev/null
  kc apply -f "${dir}/deploy/vpa-rbac.yaml" >/dev/null
  local deadline=$((SECONDS + 60))
  until kc auth can-i list verticalpodautoscalers.autoscaling.k8s.io --as system:serviceaccount:kube-system:vpa-recommender >/dev/null 2>&1; do
    (( SECONDS < deadline )) || die "the RBAC for VPA's recommender never took effect"
    sleep 0.5
  done
  local gates=(--feature-gates "InPlace=true,CPUStartupBoost=true")
  start_component recommender --address 127.0.0.1:8942 --recommender-interval "$VPA_INTERVAL"
  start_component updater --address 127.0.0.1:8943 --updater-interval "$VPA_INTERVAL" "${gates[@]}"
  start_component admission-controller --address 127.0.0.1:8944 "${gates[@]}" \
    --client-ca-file "${PKI_DIR}/ca.crt" --tls-cert-file "${VPA_DIR}/webhook.crt" --tls-private-key "${VPA_DIR}/webhook.key" \
    --port "$VPA_WEBHOOK_PORT" --register-by-url --webhook-address "https://${ip}" --webhook-port "$VPA_WEBHOOK_PORT"
  deadline=$((SECONDS + 120))
  until kc get mutatingwebhookconfiguration vpa-webhook-config >/dev/null 2>&1; do
    local c
    for c in "${COMPONENTS_VPA[@]}"; do
      running "$c" || die "VPA ${c} exited; see ${LOG_DIR}/vpa-${c}.log"
    done
    (( SECONDS < deadline )) || die "timed out waiting for VPA's webhook to register; see ${LOG_DIR}/vpa-admission-controller.log"
    sleep 1
  done
  log "VPA ${VPA_VERSION} up in $((SECONDS - t0))s: recommender, updater, admission controller (webhook https://${ip}:${VPA_WEBHOOK_PORT})"
}

cmd_down() {
  local c dir
  for c in "${COMPONENTS_VPA[@]}"; do
    stop_pid "vpa-${c}" "$(pidfile "$c")"
  done
  if kc get --raw /readyz >/dev/null 2>&1; then
    kc delete mutatingwebhookconfiguration vpa-webhook-config --ignore-not-found >/dev/null 2>&1 || true
    if dir=$(module_dir 2>/dev/null) && [[ -d "$dir" ]]; then
      kc delete --ignore-not-found -f "${dir}/deploy/vpa-rbac.yaml" >/dev/null 2>&1 || true
      kc delete --ignore-not-found -f "${dir}/deploy/vpa-v1-crd-gen.yaml" >/dev/null 2>&1 || true
    fi
  fi
  rm -rf "$VPA_DIR"
  log "VPA down"
}

case "${1:-}" in
  up) cmd_up ;;
  down) cmd_down ;;
  # For the scale benchmark's VPA run, which starts the components itself
  # against its own apiserver: build them; where they are; VPA's CRDs.
  build) build >&2 ;;
  bin) echo "$VPA_BIN_DIR" ;;
  crds) echo "$(module_dir)/deploy/vpa-v1-crd-gen.yaml" ;;
  *) echo "usage: $0 up|down|build|bin|crds" >&2; exit 2 ;;
esac
