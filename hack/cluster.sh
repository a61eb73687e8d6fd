#!/usr/bin/env bash
# A real single-node Kubernetes on this machine: etcd, kube-apiserver,
# kube-controller-manager, kube-scheduler, containerd and a kubelet, all as
# plain processes, for tailor's e2e tests and demo.
#
#   hack/cluster.sh up       install, build and start what is missing (idempotent)
#   hack/cluster.sh build [binary...]   only build what is missing into the cache
#                            (all by default; e.g. etcd kube-apiserver), start nothing
#   hack/cluster.sh down     stop everything and remove all state it created
#   hack/cluster.sh status   what runs, node and pods
#   hack/cluster.sh logs [component]
#   hack/cluster.sh kubeconfig   print the admin kubeconfig path
#   hack/cluster.sh stop|start COMPONENT   stop or start one component of a
#                            cluster that is up (the chaos tests' outages);
#                            start waits until it is ready again
#   hack/cluster.sh pid COMPONENT   its process id (to SIGSTOP it, say)
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
HACK_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"

COMPONENTS=(etcd kube-apiserver kube-controller-manager kube-scheduler containerd kubelet)
RUN_DIR="${TAILOR_DEV_DIR}/run"
CONTAINERD_ROOT="${TAILOR_DEV_DIR}/containerd"
KUBELET_ROOT="${TAILOR_DEV_DIR}/kubelet"
CNI_CONF_DIR="${TAILOR_DEV_DIR}/cni/net.d"
PAUSE_IMAGE="${PAUSE_IMAGE:-registry.k8s.io/pause:3.10}"
# How often cAdvisor refreshes container stats: it bounds how soon any metrics
# source sees a load change. 10s is the kubelet's own default.
#   KUBELET_HOUSEKEEPING=2s hack/cluster.sh up
# In-place resize has been on by default since 1.33; pod-level resources and
# their in-place resize are still gated in the versions we target.
FEATURE_GATES="${FEATURE_GATES:-}"

# Metrics sources beside the kubelet's own: metrics-server and Prometheus run
# as host processes (hack/addons). ADDONS="" starts none.
ADDONS="${ADDONS-metrics-server prometheus}"

# chromium: the dashboard's browser tests (test/e2e TestDashboard).
# ca-certificates: the CA bundle the tailor image carries (hack/images.sh).
PACKAGES=(containerd runc containernetworking-plugins busybox-static iptables conntrack openssl curl iproute2 procps chromium ca-certificates)


install_packages() {
  local missing=()
  for p in "${PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  [[ ${#missing[@]} -eq 0 ]] && return
  log "installing Debian packages: ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  # Debian starts containerd with its own config; ours runs with a private one.
  if command -v systemctl >/dev/null && systemctl is-active -q containerd 2>/dev/null; then
    systemctl stop containerd || true
    systemctl disable containerd 2>/dev/null || true
  fi
}

# ---------------------------------------------------------------- PKI


make_pki() {
  mkdir -p "$PKI_DIR"
  local ip=$1
  if [[ ! -f "${PKI_DIR}/ca.crt" ]]; then
    openssl genrsa -out "${PKI_DIR}/ca.key" 2048 2>/dev/null
    openssl req -x509 -new -key "${PKI_DIR}/ca.key" -subj "/CN=tailor-dev-ca" -days 3650 -out "${PKI_DIR}/ca.crt" 2>/dev/null
  fi
  local svc_ip
  svc_ip=$(awk -F. '{print $1"."$2"."$3"."$4+1}' <<<"${SERVICE_CIDR%/*}")
  mkcert "$PKI_DIR" apiserver kube-apiserver "" "DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local,IP:127.0.0.1,IP:${ip},IP:${svc_ip}"
  mkcert "$PKI_DIR" admin tailor-admin system:masters
  mkcert "$PKI_DIR" apiserver-kubelet-client kube-apiserver-kubelet-client system:masters
  mkcert "$PKI_DIR" front-proxy-client front-proxy-client ""
  mkcert "$PKI_DIR" controller-manager system:kube-controller-manager ""
  mkcert "$PKI_DIR" scheduler system:kube-scheduler ""
  mkcert "$PKI_DIR" kubelet "system:node:${NODE_NAME}" system:nodes
  make_kubelet_serving_cert "$ip"
  [[ -f "${PKI_DIR}/sa.key" ]] || { openssl genrsa -out "${PKI_DIR}/sa.key" 2048 2>/dev/null; openssl rsa -in "${PKI_DIR}/sa.key" -pubout -out "${PKI_DIR}/sa.pub" 2>/dev/null; }
}


# make_kubelet_serving_cert IP: the kubelet's serving certificate, signed by
# the cluster CA for the node's IP, its name and the host's name, as
# serverTLSBootstrap would have it signed: tailor's kubelet source reads the
# kubelet on its own port and verifies it against the cluster CA, which the
# service accounts' ca.crt holds (--root-ca-file). Left to itself the kubelet
# would sign its own, which no client can verify. Made again when the node's
# IP is not among its names (the machine's address changed since).
make_kubelet_serving_cert() {
  local ip=$1 crt="${PKI_DIR}/kubelet-serving.crt" host
  host=$(hostname)
  if [[ -f "$crt" ]] && ! openssl x509 -in "$crt" -noout -ext subjectAltName 2>/dev/null | grep -q "IP Address:${ip}\(,\|$\)"; then
    log "the kubelet's serving certificate does not name ${ip}: making it again"
    rm -f "$crt" "${PKI_DIR}/kubelet-serving.key"
  fi
  local sans="IP:${ip},DNS:${NODE_NAME}"
  [[ "$host" != "$NODE_NAME" ]] && sans+=",DNS:${host}"
  mkcert "$PKI_DIR" kubelet-serving "system:node:${NODE_NAME}" system:nodes "$sans"
}

# ---------------------------------------------------------------- processes

pidfile() { echo "${RUN_DIR}/$1.pid"; }
running() { pid_alive "$1" "$(pidfile "$1")"; }

start() { # name cmd...
  local name=$1; shift
  if running "$name"; then return; fi
  log "starting ${name}"
  # setsid: the component must outlive the shell (make, CI step) that
  # started it; 9>&-: without the gate's lock (hack/test.sh), which a
  # cluster kept up would otherwise hold past the gate's end.
  setsid "$@" >>"${LOG_DIR}/${name}.log" 2>&1 < /dev/null 9>&- &
  echo $! > "$(pidfile "$name")"
}

stop() { stop_pid "$1" "$(pidfile "$1")"; }

wait_for() { # description seconds cmd...
  local what=$1 secs=$2; shift 2
  local deadline=$((SECONDS + secs))
  until "$@" >/dev/null 2>&1; do
    (( SECONDS < deadline )) || die "timed out after ${secs}s waiting for ${what}; see ${LOG_DIR}"
    sleep 0.5
  done
}

kc() { "${K8S_BIN}/kubectl" --kubeconfig "$KUBECONFIG_PATH" "$@"; }

# ---------------------------------------------------------------- components

start_etcd() {
  start etcd "${ETCD_BIN}/etcd" --name tailor-dev --data-dir "${TAILOR_DEV_DIR}/etcd" \
    --listen-client-urls http://127.0.0.1:2379 --advertise-client-urls http://127.0.0.1:2379 \
    --listen-peer-urls http://127.0.0.1:2380 --initial-advertise-peer-urls http://127.0.0.1:2380 \
    --initial-cluster tailor-dev=http://127.0.0.1:2380 --log-level warn \
    --quota-backend-bytes 4294967296
  wait_for etcd 60 curl -fsS http://127.0.0.1:2379/health
}

start_apiserver() {
  local ip=$1
  local gates=()
  [[ -n "$FEATURE_GATES" ]] && gates=(--feature-gates "$FEATURE_GATES")
  start kube-apiserver "${K8S_BIN}/kube-apiserver" \
    --etcd-servers http://127.0.0.1:2379 \
    --advertise-address "$ip" --bind-address 0.0.0.0 --secure-port "$APISERVER_PORT" \
    --service-cluster-ip-range "$SERVICE_CIDR" \
    --authorization-mode Node,RBAC --allow-privileged=true \
    --enable-admission-plugins NodeRestriction \
    --client-ca-file "${PKI_DIR}/ca.crt" \
    --tls-cert-file "${PKI_DIR}/apiserver.crt" --tls-private-key-file "${PKI_DIR}/apiserver.key" \
    --kubelet-client-certificate "${PKI_DIR}/apiserver-kubelet-client.crt" \
    --kubelet-client-key "${PKI_DIR}/apiserver-kubelet-client.key" \
    --kubelet-preferred-address-types InternalIP,Hostname \
    --proxy-client-cert-file "${PKI_DIR}/front-proxy-client.crt" \
    --proxy-client-key-file "${PKI_DIR}/front-proxy-client.key" \
    --requestheader-client-ca-file "${PKI_DIR}/ca.crt" \
    --requestheader-allowed-names front-proxy-client \
    --requestheader-username-headers X-Remote-User --requestheader-group-headers X-Remote-Group \
    --requestheader-extra-headers-prefix X-Remote-Extra- \
    --enable-aggregator-routing=true \
    --service-account-issuer https://kubernetes.default.svc.cluster.local \
    --service-account-key-file "${PKI_DIR}/sa.pub" \
    --service-account-signing-key-file "${PKI_DIR}/sa.key" \
    "${gates[@]}"
  wait_for kube-apiserver 90 curl -fsS --cacert "${PKI_DIR}/ca.crt" \
    --cert "${PKI_DIR}/admin.crt" --key "${PKI_DIR}/admin.key" "https://127.0.0.1:${APISERVER_PORT}/readyz"
}

start_controllers() {
  local gates=()
  [[ -n "$FEATURE_GATES" ]] && gates=(--feature-gates "$FEATURE_GATES")
  start kube-controller-manager "${K8S_BIN}/kube-controller-manager" \
    --kubeconfig "${TAILOR_DEV_DIR}/controller-manager.kubeconfig" \
    --authentication-kubeconfig "${TAILOR_DEV_DIR}/controller-manager.kubeconfig" \
    --authorization-kubeconfig "${TAILOR_DEV_DIR}/controller-manager.kubeconfig" \
    --leader-elect=false --use-service-account-credentials \
    --service-account-private-key-file "${PKI_DIR}/sa.key" --root-ca-file "${PKI_DIR}/ca.crt" \
    --cluster-signing-cert-file "${PKI_DIR}/ca.crt" --cluster-signing-key-file "${PKI_DIR}/ca.key" \
    --service-cluster-ip-range "$SERVICE_CIDR" --bind-address 127.0.0.1 "${gates[@]}"
  start kube-scheduler "${K8S_BIN}/kube-scheduler" \
    --kubeconfig "${TAILOR_DEV_DIR}/scheduler.kubeconfig" \
    --authentication-kubeconfig "${TAILOR_DEV_DIR}/scheduler.kubeconfig" \
    --authorization-kubeconfig "${TAILOR_DEV_DIR}/scheduler.kubeconfig" \
    --leader-elect=false --bind-address 127.0.0.1 "${gates[@]}"
}

start_containerd() {
  mkdir -p "$CONTAINERD_ROOT" "$CNI_CONF_DIR"
  cat > "${TAILOR_DEV_DIR}/containerd.toml" <<EOF
version = 2
root = "${CONTAINERD_ROOT}"
state = "/run/containerd"
[grpc]
  address = "/run/containerd/containerd.sock"
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "${PAUSE_IMAGE}"
  # This VM lacks CAP_SYS_RESOURCE: without this every sandbox fails to start
  # ("can't get final child's PID from pipe: EOF").
  restrict_oom_score_adj = true
  [plugins."io.containerd.grpc.v1.cri".containerd]
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = "${CNI_CONF_DIR}"
EOF
  cat > "${CNI_CONF_DIR}/10-tailor.conflist" <<EOF
{
  "cniVersion": "0.4.0",
  "name": "tailor",
  "plugins": [
    {
      "type": "bridge", "bridge": "cni0", "isGateway": true, "ipMasq": false, "hairpinMode": true,
      "ipam": {"type": "host-local", "ranges": [[{"subnet": "${POD_CIDR}"}]], "routes": [{"dst": "0.0.0.0/0"}]}
    },
    {"type": "loopback"}
  ]
}
EOF
  start containerd /usr/bin/containerd --config "${TAILOR_DEV_DIR}/containerd.toml"
  wait_for containerd 30 ctr --address /run/containerd/containerd.sock version
}

load_images() {
  "${HACK_DIR}/images.sh" build
  # Always import: a rebuilt image keeps its tag, and import is quick.
  local img
  for img in "${IMAGES_DIR}"/*.tar; do
    log "importing image $(cat "${img%.tar}.name")"
    ctr -n k8s.io images import "$img" >/dev/null
  done
}

start_kubelet() {
  local ip=$1
  mkdir -p "$KUBELET_ROOT"
  # Also here, for `cluster.sh start kubelet` on a cluster made before the
  # kubelet had a serving certificate of the cluster CA's.
  make_kubelet_serving_cert "$ip"
  local gates_yaml=""
  if [[ -n "$FEATURE_GATES" ]]; then
    gates_yaml="featureGates:"$'\n'
    local g
    IFS=, read -ra gs <<<"$FEATURE_GATES"
    for g in "${gs[@]}"; do gates_yaml+="  ${g%%=*}: ${g#*=}"$'\n'; done
  fi
  cat > "${TAILOR_DEV_DIR}/kubelet.yaml" <<EOF
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: true}
  x509: {clientCAFile: "${PKI_DIR}/ca.crt"}
authorization: {mode: Webhook}
# Signed by the cluster CA (make_kubelet_serving_cert), so that a client
# reading the kubelet directly can verify it, as tailor's kubelet source does.
tlsCertFile: "${PKI_DIR}/kubelet-serving.crt"
tlsPrivateKeyFile: "${PKI_DIR}/kubelet-serving.key"
containerRuntimeEndpoint: unix:///run/containerd/containerd.sock
cgroupDriver: cgroupfs
# This VM boots cgroup v1, which 1.35+ refuses unless told otherwise.
failCgroupV1: false
failSwapOn: false
oomScoreAdj: 0
# Images are imported locally and can never be pulled again.
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
evictionHard: {"memory.available": "100Mi", "nodefs.available": "1%", "imagefs.available": "1%"}
podCIDR: "${POD_CIDR}"
resolvConf: /etc/resolv.conf
serializeImagePulls: false
syncFrequency: 10s
${gates_yaml}
EOF
  start kubelet "${K8S_BIN}/kubelet" --config "${TAILOR_DEV_DIR}/kubelet.yaml" \
    --kubeconfig "${TAILOR_DEV_DIR}/kubelet.kubeconfig" --root-dir "$KUBELET_ROOT" \
    --hostname-override "$NODE_NAME" --node-ip "$ip" \
    --housekeeping-interval "${KUBELET_HOUSEKEEPING:-10s}"
  wait_for "node ${NODE_NAME} Ready" 120 bash -c "'${K8S_BIN}/kubectl' --kubeconfig '$KUBECONFIG_PATH' get node '$NODE_NAME' -o jsonpath='{.status.conditions[?(@.type==\"Ready\")].status}' | grep -qx True"
}

cmd_up() {
  [[ $EUID -eq 0 ]] || die "the local cluster needs root (containerd, kubelet, cgroups)"
  local t0=$SECONDS
  install_packages
  "${HACK_DIR}/build-k8s.sh"
  mkdir -p "$LOG_DIR" "$RUN_DIR"
  local ip; ip=$(node_ip)
  make_pki "$ip"
  write_kubeconfig "$KUBECONFIG_PATH" admin "${PKI_DIR}/admin.crt" "${PKI_DIR}/admin.key"
  write_kubeconfig "${TAILOR_DEV_DIR}/controller-manager.kubeconfig" controller-manager "${PKI_DIR}/controller-manager.crt" "${PKI_DIR}/controller-manager.key"
  write_kubeconfig "${TAILOR_DEV_DIR}/scheduler.kubeconfig" scheduler "${PKI_DIR}/scheduler.crt" "${PKI_DIR}/scheduler.key"
  write_kubeconfig "${TAILOR_DEV_DIR}/kubelet.kubeconfig" kubelet "${PKI_DIR}/kubelet.crt" "${PKI_DIR}/kubelet.key"
  local t1=$SECONDS
  # etcd's data without etcd running is a cluster that was never taken
  # down (its job or the machine was killed): started as it is, it would
  # bring back the old run's pods, holding the node's CPU. Start afresh.
  if [[ -d "${TAILOR_DEV_DIR}/etcd" ]] && ! running etcd; then
    log "a cluster that was not taken down left its state in ${TAILOR_DEV_DIR}; removing it first"
    cmd_down
    mkdir -p "$LOG_DIR" "$RUN_DIR"
  fi
  start_etcd
  start_apiserver "$ip"
  start_controllers
  start_containerd
  load_images
  start_kubelet "$ip"
  wait_for "default ServiceAccount" 60 "${K8S_BIN}/kubectl" --kubeconfig "$KUBECONFIG_PATH" get serviceaccount default -n default
  local addon
  for addon in ${ADDONS}; do "${HACK_DIR}/addons/${addon}.sh" up; done
  log "cluster up in $((SECONDS - t0))s (start $((SECONDS - t1))s); node ${NODE_NAME} (${ip}), Kubernetes ${K8S_VERSION}"
  log "logs: ${LOG_DIR}"
  echo "$KUBECONFIG_PATH"
}

# clean_iptables removes the kubelet's and CNI's chains: first the rules in
# other chains that jump to them, then their own rules, then the chains.
clean_iptables() {
  local ipt=$1 table rule chain
  command -v "$ipt" >/dev/null || return 0
  for table in filter nat mangle; do
    while read -r rule; do
      [[ -n "$rule" ]] && eval "$ipt -t $table -D ${rule#-A }" 2>/dev/null || true
    done < <("$ipt" -t "$table" -S 2>/dev/null | grep -E '^-A ' | grep -E -- '-j (KUBE-|CNI-)' | grep -vE '^-A (KUBE-|CNI-)')
    for chain in $("$ipt" -t "$table" -S 2>/dev/null | awk '/^-N (KUBE-|CNI-)/ {print $2}'); do
      "$ipt" -t "$table" -F "$chain" 2>/dev/null || true
    done
    for chain in $("$ipt" -t "$table" -S 2>/dev/null | awk '/^-N (KUBE-|CNI-)/ {print $2}'); do
      "$ipt" -t "$table" -X "$chain" 2>/dev/null || true
    done
  done
}

cmd_down() {
  local addon
  for addon in ${ADDONS}; do "${HACK_DIR}/addons/${addon}.sh" down || true; done
  # VPA is not a default add-on; one started by hand (hack/addons/vpa.sh up)
  # goes down with the cluster too, or its processes would outlive it.
  if [[ " ${ADDONS} " != *" vpa "* && -d "${TAILOR_DEV_DIR}/vpa" ]]; then
    "${HACK_DIR}/addons/vpa.sh" down || true
  fi
  # Pods first, while the kubelet still runs, so their cgroups and network
  # namespaces are torn down by the components that made them.
  if running kubelet && running kube-apiserver; then
    kc delete pods --all -A --wait=false --grace-period=0 --force >/dev/null 2>&1 || true
  fi
  local c
  for c in kubelet kube-scheduler kube-controller-manager kube-apiserver; do stop "$c"; done
  if running containerd; then
    # Sandboxes hold network namespaces and mounts; let containerd remove them.
    local ids
    ids=$(ctr -n k8s.io tasks ls -q 2>/dev/null || true)
    for id in $ids; do ctr -n k8s.io tasks kill -s SIGKILL "$id" >/dev/null 2>&1 || true; done
    sleep 1
    for id in $ids; do ctr -n k8s.io tasks delete -f "$id" >/dev/null 2>&1 || true; done
  fi
  stop containerd
  stop etcd
  # Leftover shims outlive containerd by design.
  pkill -f "containerd-shim-runc-v2 -namespace k8s.io" 2>/dev/null || true
  # Host state the components create at fixed paths.
  local m
  for m in $(awk '{print $2}' /proc/mounts | grep -E "^(${TAILOR_DEV_DIR}|/run/containerd|/var/run/netns|/run/netns)" | sort -r); do
    umount -l "$m" 2>/dev/null || true
  done
  rm -rf /run/containerd /var/run/netns/cni-* /run/netns/cni-* /var/lib/kubelet/device-plugins \
    /var/lib/cni/networks/tailor /var/log/containers /var/log/pods
  if ip link show cni0 >/dev/null 2>&1; then ip link delete cni0 || true; fi
  clean_iptables iptables
  clean_iptables ip6tables
  # kubepods cgroups: leaves first.
  local ctl
  for ctl in /sys/fs/cgroup/*/kubepods /sys/fs/cgroup/kubepods; do
    [[ -d "$ctl" ]] && find "$ctl" -depth -type d -exec rmdir {} \; 2>/dev/null || true
  done
  # The admin kubeconfig and PKI stay, so paths printed earlier stay valid;
  # everything with cluster state goes.
  rm -rf "${TAILOR_DEV_DIR}/etcd" "$CONTAINERD_ROOT" "$KUBELET_ROOT" "$RUN_DIR"
  log "cluster down"
}

cmd_status() {
  local c
  for c in "${COMPONENTS[@]}"; do
    if running "$c"; then printf '%-24s running (pid %s)\n' "$c" "$(cat "$(pidfile "$c")")"
    else printf '%-24s stopped\n' "$c"; fi
  done
  echo "kubeconfig: ${KUBECONFIG_PATH}"
  echo "logs:       ${LOG_DIR}"
  if running kube-apiserver; then kc get nodes -o wide 2>/dev/null || true; kc get pods -A 2>/dev/null || true; fi
}

component() { # name: fails unless it is one of COMPONENTS
  local c
  for c in "${COMPONENTS[@]}"; do [[ "$c" == "${1:-}" ]] && return 0; done
  die "unknown component '${1:-}': one of ${COMPONENTS[*]}"
}

cmd_start_one() {
  component "$1"
  case "$1" in
    etcd) start_etcd ;;
    kube-apiserver) start_apiserver "$(node_ip)" ;;
    kube-controller-manager|kube-scheduler) start_controllers ;;
    containerd) start_containerd ;;
    kubelet) start_kubelet "$(node_ip)" ;;
  esac
}

cmd_pid() {
  component "$1"
  running "$1" || die "$1 is not running"
  cat "$(pidfile "$1")"
}

cmd_logs() {
  if [[ $# -gt 0 ]]; then exec tail -n 200 "${LOG_DIR}/$1.log"; fi
  ls -la "$LOG_DIR"
}

case "${1:-}" in
  up) cmd_up ;;
  build) shift; "${HACK_DIR}/build-k8s.sh" "$@" ;;
  down) cmd_down ;;
  status) cmd_status ;;
  logs) shift; cmd_logs "$@" ;;
  kubeconfig) echo "$KUBECONFIG_PATH" ;;
  stop) component "${2:-}"; stop "$2" ;;
  start) cmd_start_one "${2:-}" ;;
  pid) cmd_pid "${2:-}" ;;
  *) echo "usage: $0 up|build [binary...]|down|status|logs [component]|kubeconfig|stop COMPONENT|start COMPONENT|pid COMPONENT" >&2; exit 2 ;;
esac
