#!/usr/bin/env bash
# Install everything linklab uses on a fresh Debian 12 machine. Idempotent:
# a second run changes nothing and finishes in seconds.
#   apt packages -> .venv (pip install -e .[dev]: also mkdocs-material for make docs)
#   -> native builds (probes/, emu/, ns3/)
# LINKLAB_SETUP_ONLY=venv (make test-unit): python3-venv and the venv, nothing else -- no
# other apt package, no Rust toolchain, no native build, no Kubernetes.
# LINKLAB_SETUP_ONLY=demo (make demo): what the demo uses -- the build tools, the
# middlewares, the link tools, the venv, the probes and the emulator; not the packages of
# captures, reports in a browser, ns-3, field hosts or Kubernetes, nor their builds.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD

log() { printf '[setup] %s\n' "$*"; }

SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi

ONLY=${LINKLAB_SETUP_ONLY:-}
case "$ONLY" in
  ""|venv|demo) ;;
  *) echo "[setup] LINKLAB_SETUP_ONLY=$ONLY: expected venv or demo (or nothing: all)" >&2
     exit 2 ;;
esac

# --- apt ---------------------------------------------------------------------
DEMO_PACKAGES=(
  # build + python
  build-essential cmake ninja-build pkg-config python3-venv python3-dev git
  # middlewares (real parts, Debian 12)
  libfastrtps-dev fastdds-tools fastddsgen libfastcdr-dev
  cyclonedds-dev cyclonedds-tools
  mosquitto libmosquitto-dev mosquitto-clients
  libssl-dev openssl
  # links and measurements
  iproute2 nftables iptables ethtool iperf3 iputils-ping procps psmisc util-linux kmod
  # rustup, when the machine has no new enough cargo (below)
  curl ca-certificates
)
APT_PACKAGES=(
  "${DEMO_PACKAGES[@]}"
  # RTPS on the wire (tshark's RTPS dissector: heartbeats, AckNacks, NackFrags, repairs)
  tshark
  # the cluster topology (paper 001): userspace WireGuard between nodes, llvm-mc for the
  # eBPF datapath's tc programs, tcpdump for the tests' underlay captures
  wireguard-go wireguard-tools llvm tcpdump
  # report tests
  chromium
  # the ns-3 radio medium (paper 002): ns-3 3.37; linking it needs GSL
  ns3 libns3-dev libgsl-dev
  # field mode (linklab bench with ssh:// hosts, linklab link measure): the ssh client;
  # the tests run their own sshd inside host namespaces (the system one stays off)
  openssh-client openssh-server
  # linklab k8s: the test control plane's etcd, a real node (containerd, runc, CNI
  # plugins), and the probe image built offline (buildah, podman, a static busybox)
  # (Go >= 1.24 builds the control plane: the machine's toolchain, Debian's 1.19 is too old)
  etcd-server containerd runc containernetworking-plugins buildah podman busybox-static
)
if [ "$ONLY" = venv ]; then APT_PACKAGES=(python3-venv); fi
if [ "$ONLY" = demo ]; then APT_PACKAGES=("${DEMO_PACKAGES[@]}"); fi
missing=()
for p in "${APT_PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  log "apt: installing ${missing[*]}"
  # tshark's wireshark-common asks whether non-root users may capture: no, and no prompt
  echo "wireshark-common wireshark-common/install-setuid boolean false" | $SUDO debconf-set-selections
  new_sshd=0
  if [[ " ${missing[*]} " == *" openssh-server "* ]]; then
    # Debian starts and enables sshd when the package is installed. linklab's tests start
    # their own sshd inside host namespaces; the system one must not start listening on
    # this machine because of setup. sshd_not_to_be_run keeps both systemd and the init
    # script from starting it (see /usr/share/doc/openssh-server/README.Debian.gz).
    new_sshd=1
    $SUDO mkdir -p /etc/ssh
    $SUDO touch /etc/ssh/sshd_not_to_be_run
  fi
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  # mosquitto's package starts a system broker on :1883; linklab starts its own
  # brokers inside host namespaces, so keep the system one from grabbing the port.
  if command -v systemctl >/dev/null 2>&1 && systemctl is-active --quiet mosquitto 2>/dev/null; then
    $SUDO systemctl disable --now mosquitto >/dev/null 2>&1 || true
  fi
  if [ "$new_sshd" = 1 ] && command -v systemctl >/dev/null 2>&1 && [ -d /run/systemd/system ]; then
    $SUDO systemctl disable --now ssh.service ssh.socket >/dev/null 2>&1 || true
  fi
else
  log "apt: all ${#APT_PACKAGES[@]} packages present"
fi

# --- Rust toolchain (emu/) -----------------------------------------------------
# The emulator needs Rust >= RUST_MIN (emu/Cargo.toml's rust-version: its lock file is
# version 4). Debian 12's cargo is 1.65 (rustc 1.63): too old, and it reads the crates
# index from GitHub. A machine without a new enough cargo gets RUST_PINNED from
# rustup (static.rust-lang.org), minimal profile, into ~/.cargo and ~/.rustup: once.
RUST_MIN=1.78
RUST_PINNED=1.83.0
cargo_ok() {  # $1: a cargo binary; true when it is at least RUST_MIN
  local v
  v=$("$1" --version 2>/dev/null | awk '{print $2}') || return 1
  [ -n "$v" ] && [ "$(printf '%s\n%s\n' "$RUST_MIN" "$v" | sort -V | head -1)" = "$RUST_MIN" ]
}
CARGO=""
if [ "$ONLY" != venv ]; then
  for candidate in "$(command -v cargo || true)" "$HOME/.cargo/bin/cargo"; do
    if [ -n "$candidate" ] && [ -x "$candidate" ] && cargo_ok "$candidate"; then
      CARGO=$candidate
      break
    fi
  done
  if [ -z "$CARGO" ]; then
    log "rust: installing Rust $RUST_PINNED with rustup (no cargo >= $RUST_MIN found)"
    rustup_dir=$(mktemp -d)   # rustup-init must be called so: it reads its own name
    curl --proto '=https' --tlsv1.2 -sSf -o "$rustup_dir/rustup-init" \
      "https://static.rust-lang.org/rustup/dist/$(uname -m)-unknown-linux-gnu/rustup-init"
    chmod +x "$rustup_dir/rustup-init"
    "$rustup_dir/rustup-init" -y -q --profile minimal --default-toolchain "$RUST_PINNED" \
      --no-modify-path >/dev/null
    rm -rf "$rustup_dir"
    CARGO=$HOME/.cargo/bin/cargo
  fi
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

if [ "$ONLY" = venv ]; then
  log "done (the venv only: no native build, no Kubernetes)"
  exit 0
fi

# --- native builds -----------------------------------------------------------------
if [ -f probes/CMakeLists.txt ]; then
  log "probes: cmake build (build/probes)"
  cmake -S probes -B build/probes -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
  cmake --build build/probes -- -j2 >/dev/null
fi
if [ -f emu/Cargo.toml ]; then
  log "emu: cargo build --release ($("$CARGO" --version))"
  "$CARGO" build --quiet --release --manifest-path emu/Cargo.toml --target-dir build/emu
fi
if [ "$ONLY" = demo ]; then
  log "done (what the demo uses: no ns-3, field, capture or Kubernetes parts)"
  exit 0
fi
if [ -f ns3/linklab-ns3.cc ]; then
  # the ns-3 radio medium (src/linklab/link/wires/ns3.py): main in ns3/linklab-ns3.cc,
  # its parts in the other ns3/*.cc and *.h; rebuilt when any of them changes
  NS3_BIN=build/ns3/linklab-ns3
  if [ ! -x "$NS3_BIN" ] || [ -n "$(find ns3 -name '*.cc' -newer "$NS3_BIN" -o -name '*.h' -newer "$NS3_BIN")" ]; then
    log "ns3: g++ build ($NS3_BIN)"
    mkdir -p build/ns3
    # one translation unit holding every ns3/*.cc: each part includes ns-3's large module
    # headers, so compiling the seven files apart took 38 s here against 11 s as one
    for part in ns3/*.cc; do echo "#include \"../../$part\""; done > build/ns3/all.cc
    g++ -std=c++17 -O2 -Wall -o "$NS3_BIN.tmp" build/ns3/all.cc \
      $(pkg-config --cflags --libs ns3-core ns3-network ns3-wifi ns3-mobility) -lpthread
    mv "$NS3_BIN.tmp" "$NS3_BIN"
  else
    log "ns3: up to date"
  fi
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
