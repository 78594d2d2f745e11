#!/usr/bin/env bash
# Install everything linklab uses on a fresh Debian 12 machine. Idempotent:
# a second run changes nothing and finishes in seconds.
#   apt packages -> .venv (pip install -e .[dev]) -> native builds (probes/, emu/)
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD

log() { printf '[setup] %s\n' "$*"; }

SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi

# --- apt ---------------------------------------------------------------------
APT_PACKAGES=(
  # build + python
  build-essential cmake ninja-build pkg-config python3-venv python3-dev git
  # middlewares (real parts, Debian 12)
  libfastrtps-dev fastdds-tools fastddsgen libfastcdr-dev
  cyclonedds-dev cyclonedds-tools
  mosquitto libmosquitto-dev mosquitto-clients
  libssl-dev openssl
  # links and measurements
  iproute2 nftables iptables ethtool iperf3 iputils-ping procps psmisc util-linux kmod
  # report tests
  chromium
  # linklab k8s: the test control plane's etcd, a real node (containerd, runc, CNI
  # plugins), and the probe image built offline (buildah, podman, a static busybox)
  # (Go >= 1.24 builds the control plane: the machine's toolchain, Debian's 1.19 is too old)
  etcd-server containerd runc containernetworking-plugins buildah podman busybox-static
)
missing=()
for p in "${APT_PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  log "apt: installing ${missing[*]}"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  # mosquitto's package starts a system broker on :1883; linklab starts its own
  # brokers inside host namespaces, so keep the system one from grabbing the port.
  if command -v systemctl >/dev/null 2>&1 && systemctl is-active --quiet mosquitto 2>/dev/null; then
    $SUDO systemctl disable --now mosquitto >/dev/null 2>&1 || true
  fi
else
  log "apt: all ${#APT_PACKAGES[@]} packages present"
fi

# --- Rust toolchain (emu/) -----------------------------------------------------
if ! command -v cargo >/dev/null 2>&1 && [ ! -x "$HOME/.cargo/bin/cargo" ]; then
  log "apt: installing cargo (no Rust toolchain found)"
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends cargo >/dev/null
fi

# --- Python venv -----------------------------------------------------------------
PY=/usr/bin/python3
if [ ! -x .venv/bin/python ]; then
  log "venv: creating .venv with $($PY --version)"
  $PY -m venv .venv
fi
stamp=.venv/.linklab-pip-stamp
want=$(sha256sum pyproject.toml | cut -d' ' -f1)
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
  log "venv: pip install -e .[dev]"
  .venv/bin/pip install -q --upgrade pip >/dev/null
  .venv/bin/pip install -q -e ".[dev]"
  echo "$want" > "$stamp"
else
  log "venv: up to date"
fi

# --- native builds -----------------------------------------------------------------
if [ -f probes/CMakeLists.txt ]; then
  log "probes: cmake build (build/probes)"
  cmake -S probes -B build/probes -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
  cmake --build build/probes -- -j2 >/dev/null
fi
if [ -f emu/Cargo.toml ]; then
  log "emu: cargo build --release"
  CARGO=$(command -v cargo || echo "$HOME/.cargo/bin/cargo")
  "$CARGO" build --quiet --release --manifest-path emu/Cargo.toml --target-dir build/emu
fi
# --- linklab k8s: the test control plane (cached: a second run builds nothing) -------
# kube-apiserver, -scheduler, -controller-manager, kubelet, kubectl v1.33.13 and kwok from
# the Go module proxy into ~/.cache/linklab/k8s (cold: about 9 minutes on 2 cores).
if [ "${LINKLAB_SKIP_K8S:-}" != "1" ]; then
  bash scripts/k8s-build.sh
fi
# the machine's containerd service is not what the tests use (they start their own)
if command -v systemctl >/dev/null 2>&1 && systemctl is-active --quiet containerd 2>/dev/null; then
  $SUDO systemctl disable --now containerd >/dev/null 2>&1 || true
fi
log "done"
