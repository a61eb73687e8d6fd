#!/usr/bin/env bash
# metrics-server (metrics.k8s.io) for the local cluster, as a host process:
# the cluster has no kube-proxy and no DNS, so a pod could not be reached
# through a Service. The apiserver reaches it through the aggregation layer,
# routed (--enable-aggregator-routing) to a hand-made EndpointSlice that
# points at this host.
#
#   hack/addons/metrics-server.sh up     build (cached), start, register, wait for `kubectl top`
#   hack/addons/metrics-server.sh down   unregister, stop, remove its state
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"

MS_VERSION="${METRICS_SERVER_VERSION:-v0.9.0}"
MS_BIN="${TAILOR_CACHE}/metrics-server/${MS_VERSION}/bin/metrics-server"
MS_DIR="${TAILOR_DEV_DIR}/metrics-server"
MS_PORT="${METRICS_SERVER_PORT:-4443}"
# The pid file lives with the add-on's own state, not in cluster.sh's run/
# directory, which `cluster.sh down` deletes: the process must stay findable
# across a cluster restart (it reconnects by itself; `up` re-registers it).
PIDFILE="${MS_DIR}/metrics-server.pid"
# 10s is the smallest resolution metrics-server accepts; the kubelet request
# timeout must stay under 90% of it.
MS_RESOLUTION="${METRICS_SERVER_RESOLUTION:-10s}"

kc() { "${K8S_BIN}/kubectl" --kubeconfig "$KUBECONFIG_PATH" "$@"; }


build() {
  if [[ -x "$MS_BIN" ]]; then log "metrics-server ${MS_VERSION}: cached in ${MS_BIN}"; return; fi
  # A wrapper module: `go install pkg@version` refuses modules whose go.mod
  # has replace directives, and this keeps the download cache per version.
  local wrap="${TAILOR_CACHE}/metrics-server/${MS_VERSION}/src"
  mkdir -p "$wrap" "$(dirname "$MS_BIN")"
  if [[ ! -f "$wrap/go.mod" ]]; then
    local gomod goversion
    gomod=$(cd "$wrap" && GOFLAGS=-mod=mod go mod download -json "sigs.k8s.io/metrics-server@${MS_VERSION}" | sed -n 's/.*"GoMod": "\(.*\)",*/\1/p')
    [[ -f "$gomod" ]] || die "could not download sigs.k8s.io/metrics-server@${MS_VERSION} from the module proxy"
    goversion=$(sed -n 's/^go \(.*\)/\1/p' "$gomod")
    printf 'module tailor.local/metrics-server-build\n\ngo %s\n\nrequire sigs.k8s.io/metrics-server %s\n' "$goversion" "$MS_VERSION" > "$wrap/go.mod"
  fi
  log "metrics-server ${MS_VERSION}: building (cold: a few minutes)"
  (cd "$wrap" && CGO_ENABLED=0 GOFLAGS=-mod=mod go build -trimpath -ldflags "-s -w" -o "${MS_BIN}.tmp" sigs.k8s.io/metrics-server/cmd/metrics-server)
  mv "${MS_BIN}.tmp" "$MS_BIN"
}

# identity gives metrics-server its own client certificate (user
# system:metrics-server), bound to the upstream manifests' least-privilege
# roles rather than reusing an admin identity.
identity() {
  mkcert "$MS_DIR" client system:metrics-server
  write_kubeconfig "${MS_DIR}/kubeconfig" metrics-server "${MS_DIR}/client.crt" "${MS_DIR}/client.key"
}

objects() { # host-ip
  cat <<EOF
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: system:metrics-server
rules:
- apiGroups: [""]
  resources: [nodes/metrics]
  verbs: [get]
- apiGroups: [""]
  resources: [pods, nodes]
  verbs: [get, list, watch]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata:
  name: system:metrics-server
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: system:metrics-server}
subjects:
- {apiGroup: rbac.authorization.k8s.io, kind: User, name: system:metrics-server}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata:
  name: metrics-server:system:auth-delegator
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: system:auth-delegator}
subjects:
- {apiGroup: rbac.authorization.k8s.io, kind: User, name: system:metrics-server}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata:
  name: metrics-server-auth-reader
  namespace: kube-system
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: extension-apiserver-authentication-reader}
subjects:
- {apiGroup: rbac.authorization.k8s.io, kind: User, name: system:metrics-server}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: system:aggregated-metrics-reader
  labels:
    rbac.authorization.k8s.io/aggregate-to-view: "true"
    rbac.authorization.k8s.io/aggregate-to-edit: "true"
    rbac.authorization.k8s.io/aggregate-to-admin: "true"
rules:
- apiGroups: [metrics.k8s.io]
  resources: [pods, nodes]
  verbs: [get, list, watch]
---
# No selector: the endpoints are the host process below, not pods.
apiVersion: v1
kind: Service
metadata:
  name: metrics-server
  namespace: kube-system
spec:
  ports:
  - {name: https, port: 443, protocol: TCP, targetPort: ${MS_PORT}}
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata:
  name: metrics-server-host
  namespace: kube-system
  labels:
    kubernetes.io/service-name: metrics-server
    endpointslice.kubernetes.io/managed-by: tailor.local-hack
addressType: IPv4
ports:
- {name: https, port: ${MS_PORT}, protocol: TCP}
endpoints:
- addresses: ["$1"]
  conditions: {ready: true}
---
apiVersion: apiregistration.k8s.io/v1
kind: APIService
metadata:
  name: v1beta1.metrics.k8s.io
spec:
  group: metrics.k8s.io
  version: v1beta1
  groupPriorityMinimum: 100
  versionPriority: 100
  # metrics-server serves a self-signed certificate it makes at start.
  insecureSkipTLSVerify: true
  service: {name: metrics-server, namespace: kube-system, port: 443}
EOF
}

running() { pid_alive metrics-server "$PIDFILE"; }

cmd_up() {
  local t0=$SECONDS ip
  kc get --raw /readyz >/dev/null 2>&1 || die "the cluster is not up (hack/cluster.sh up)"
  build
  identity
  ip=$(node_ip)
  mkdir -p "$LOG_DIR" "${MS_DIR}/certs"
  # Its RBAC first: metrics-server exits at once when it cannot read the
  # extension-apiserver-authentication ConfigMap, and after `cluster.sh down`
  # the apiserver starts empty.
  objects "$ip" | kc apply -f - >/dev/null
  local deadline=$((SECONDS + 60))
  until kc auth can-i get configmap/extension-apiserver-authentication -n kube-system --as system:metrics-server >/dev/null 2>&1; do
    (( SECONDS < deadline )) || die "the RBAC for system:metrics-server never took effect"
    sleep 0.5
  done
  if ! running; then
    log "starting metrics-server on ${ip}:${MS_PORT}"
    # setsid: it must outlive the shell that started it, like the cluster,
    # and holds none of that shell's descriptors (hack/cluster.sh, start).
    setsid "$MS_BIN" \
      --kubeconfig "${MS_DIR}/kubeconfig" \
      --authentication-kubeconfig "${MS_DIR}/kubeconfig" \
      --authorization-kubeconfig "${MS_DIR}/kubeconfig" \
      --bind-address "$ip" --secure-port "$MS_PORT" --cert-dir "${MS_DIR}/certs" \
      --kubelet-insecure-tls --kubelet-preferred-address-types InternalIP \
      --metric-resolution "$MS_RESOLUTION" --kubelet-request-timeout 5s \
      >>"${LOG_DIR}/metrics-server.log" 2>&1 </dev/null 9>&- &
    echo $! > "$PIDFILE"
  fi
  deadline=$((SECONDS + 120))
  # `top node` needs a real scrape; `top pod` succeeds with no pods at all.
  until kc top node >/dev/null 2>&1; do
    running || die "metrics-server exited; see ${LOG_DIR}/metrics-server.log"
    (( SECONDS < deadline )) || die "timed out waiting for kubectl top; see ${LOG_DIR}/metrics-server.log"
    sleep 1
  done
  log "metrics-server ${MS_VERSION} up in $((SECONDS - t0))s: kubectl top node works"
}

cmd_down() {
  if kc get --raw /readyz >/dev/null 2>&1; then
    objects 127.0.0.1 | kc delete --ignore-not-found -f - >/dev/null 2>&1 || true
  fi
  stop_pid metrics-server "$PIDFILE"
  rm -rf "$MS_DIR"
  log "metrics-server down"
}

case "${1:-}" in
  up) cmd_up ;;
  down) cmd_down ;;
  *) echo "usage: $0 up|down" >&2; exit 2 ;;
esac
