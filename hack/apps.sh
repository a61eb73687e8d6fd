#!/usr/bin/env bash
# Builds the real applications' images without a registry, from Debian's
# packages: Redis 7 (with redis-benchmark), PostgreSQL 15 (with pgbench) and
# a small Java service on the packaged JDK 17 (a jlink runtime). Each image
# is the package's binaries with the shared libraries they load, busybox for
# a shell, and the data files the program reads, packed as hack/images.sh
# packs the project's own images.
#
# They live apart from the gate's images (IMAGES_APPS_DIR) because the gate
# never runs them: hack/cluster.sh imports every image of IMAGES_DIR at each
# start, and a JVM is 60 MB of it. The apps phase (hack/e2e.sh apps) imports
# these.
#
#   hack/apps.sh build    install the packages if missing, (re)build what changed
#   hack/apps.sh import   build, then import the images into the local
#                         cluster's containerd (the apps phase, bench-e2e)
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
source "${ROOT}/hack/images.sh" lib

PACKAGES=(redis-server redis-tools postgresql-15 postgresql-client-15 openjdk-17-jdk-headless busybox-static)
JDK="/usr/lib/jvm/java-17-openjdk-amd64"
PG="/usr/lib/postgresql/15"

install_packages() {
  local missing=() p
  for p in "${PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  [[ ${#missing[@]} -eq 0 ]] && return
  log "installing ${missing[*]} from Debian's packages"
  DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${missing[@]}" >/dev/null
  # The packages start their own servers on the host; the images are what
  # runs them here.
  systemctl disable --now redis-server postgresql >/dev/null 2>&1 || true
}

# with_libs ROOTFS FILE...: FILE and every shared library it loads (ldd's
# answer, symlinks resolved), at the same paths under ROOTFS.
with_libs() {
  local rootfs=$1 f lib; shift
  for f in "$@"; do
    install -D -m 755 "$(readlink -f "$f")" "${rootfs}${f}"
    while read -r lib; do
      [[ -n "$lib" && -e "$lib" && ! -e "${rootfs}${lib}" ]] || continue
      install -D -m 755 "$(readlink -f "$lib")" "${rootfs}${lib}"
    done < <(ldd "$f" 2>/dev/null | awk '/=> \// {print $3} /^\t\// {print $1}')
  done
}

# base ROOTFS: busybox as the shell and its tools, /tmp, and the users the
# applications run as (PostgreSQL refuses to run as root).
base() {
  local rootfs=$1 app
  mkdir -p -m 755 "$rootfs/bin" "$rootfs/etc"
  mkdir -p -m 1777 "$rootfs/tmp"
  cp /bin/busybox "$rootfs/bin/busybox"
  for app in sh cat sleep ls echo wget head grep env dd true ps kill seq date awk; do ln -sf busybox "$rootfs/bin/$app"; done
  printf 'root:x:0:0:root:/root:/bin/sh\npostgres:x:999:999:postgres:/tmp:/bin/sh\napp:x:1000:1000:app:/tmp:/bin/sh\n' > "$rootfs/etc/passwd"
  printf 'root:x:0:\npostgres:x:999:\napp:x:1000:\n' > "$rootfs/etc/group"
  chmod 644 "$rootfs/etc/passwd" "$rootfs/etc/group"
}

# stamp NAME INPUTS...: whether the image NAME must be built: its tar is
# missing, or the hash of its inputs (this script, the packages' versions,
# the sources) changed since it was.
stale() {
  local name=$1; shift
  local want; want=$( { cat "${BASH_SOURCE[0]}"; dpkg-query -W "${PACKAGES[@]}" 2>/dev/null; cat "$@" 2>/dev/null; } | sha256sum | cut -d' ' -f1)
  [[ -f "${IMAGES_APPS_DIR}/${name}.tar" && "$(cat "${IMAGES_APPS_DIR}/${name}.inputs" 2>/dev/null)" == "$want" ]] && return 1
  echo "$want" > "${work}/${name}.inputs"
  return 0
}

built() { mv "${work}/$1.inputs" "${IMAGES_APPS_DIR}/$1.inputs"; }

redis_image() {
  stale redis || return 0
  local rootfs="$work/redis"
  base "$rootfs"
  with_libs "$rootfs" /usr/bin/redis-server /usr/bin/redis-benchmark /usr/bin/redis-cli
  # No persistence: the benchmark measures memory and cpu, not disks.
  IMAGES_DIR="$IMAGES_APPS_DIR" pack redis "tailor.local/redis:7" "$rootfs" \
    '["/usr/bin/redis-server","--bind","0.0.0.0","--protected-mode","no","--save","","--appendonly","no"]'
  built redis
}

postgres_image() {
  stale postgres || return 0
  local rootfs="$work/postgres" f
  base "$rootfs"
  for f in postgres initdb pg_ctl pgbench psql pg_isready; do with_libs "$rootfs" "$PG/bin/$f"; done
  mkdir -p "$rootfs$PG/lib" "$rootfs/usr/share/postgresql/15"
  # The server's modules, not the JIT (llvmjit and its bitcode, which would
  # bring LLVM's 100 MB for queries pgbench never runs long enough to JIT).
  find "$PG/lib" -maxdepth 1 -name '*.so' ! -name 'llvmjit*' -exec cp -L {} "$rootfs$PG/lib/" \;
  cp -rL /usr/share/postgresql/15/. "$rootfs/usr/share/postgresql/15/"
  for f in "$rootfs$PG"/lib/*.so; do
    while read -r lib; do
      [[ -n "$lib" && -e "$lib" && ! -e "${rootfs}${lib}" ]] && install -D -m 755 "$(readlink -f "$lib")" "${rootfs}${lib}"
    done < <(ldd "$f" 2>/dev/null | awk '/=> \// {print $3}')
  done
  # The database lives in the container's /tmp: the benchmark measures
  # memory and cpu, and a pod recreated starts from an empty one.
  cat > "$rootfs/bin/postgres-start" <<EOF
#!/bin/sh
set -e
export PATH=$PG/bin:/bin
if [ ! -f /tmp/pgdata/PG_VERSION ]; then
  initdb -D /tmp/pgdata -U postgres --locale=C --encoding=UTF8 --auth=trust >/tmp/initdb.log
  # The load comes from another pod of the test's namespace.
  echo "host all all 0.0.0.0/0 trust" >> /tmp/pgdata/pg_hba.conf
fi
exec postgres -D /tmp/pgdata -k /tmp -c listen_addresses='*' -c shared_buffers=\${SHARED_BUFFERS:-64MB} -c max_connections=50 -c fsync=off -c jit=off
EOF
  chmod 755 "$rootfs/bin/postgres-start"
  IMAGES_DIR="$IMAGES_APPS_DIR" pack postgres "tailor.local/postgres:15" "$rootfs" '["/bin/postgres-start"]'
  built postgres
}

jvm_image() {
  local src=("${ROOT}/test/images/jvm/Service.java" "${ROOT}/test/images/jvm/Load.java")
  stale jvm "${src[@]}" || return 0
  local rootfs="$work/jvm" jre="/opt/java"
  base "$rootfs"
  # A runtime of the modules the service uses, from the packaged JDK's
  # jmods: the same HotSpot, without 200 MB it never loads.
  "$JDK/bin/jlink" --add-modules java.base,jdk.httpserver,java.management,jdk.management,jdk.jcmd,jdk.attach \
    --strip-debug --no-header-files --no-man-pages --output "$rootfs$jre"
  while read -r lib; do
    [[ -n "$lib" && -e "$lib" && ! -e "${rootfs}${lib}" ]] && install -D -m 755 "$(readlink -f "$lib")" "${rootfs}${lib}"
  done < <(find "$rootfs$jre" -name '*.so' -o -path '*/bin/*' -type f | xargs -r ldd 2>/dev/null | awk '/=> \// {print $3} /^\t\// {print $1}' | sort -u)
  mkdir -p "$work/jvm-classes" "$rootfs/app"
  "$JDK/bin/javac" -d "$work/jvm-classes" "${src[@]}"
  (cd "$work/jvm-classes" && "$JDK/bin/jar" --create --file "$rootfs/app/service.jar" --main-class Service .)
  IMAGES_DIR="$IMAGES_APPS_DIR" pack jvm "tailor.local/jvm:17" "$rootfs" "[\"$jre/bin/java\",\"-jar\",\"/app/service.jar\"]"
  built jvm
}

build() {
  install_packages
  mkdir -p "$IMAGES_APPS_DIR"
  work=$(mktemp -d)
  trap 'rm -rf "$work"' RETURN
  chmod 755 "$work"
  redis_image
  postgres_image
  jvm_image
  log "application images in ${IMAGES_APPS_DIR}"
}

import_images() {
  local img
  build
  for img in "${IMAGES_APPS_DIR}"/*.tar; do
    log "importing image $(cat "${img%.tar}.name")"
    ctr -n k8s.io images import "$img" >/dev/null
  done
}

case "${1:-}" in
  build) build ;;
  import) import_images ;;
  *) echo "usage: $0 build|import" >&2; exit 2 ;;
esac
