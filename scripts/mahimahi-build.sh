#!/usr/bin/env bash
# Build Mahimahi's mm-link (and nothing else of Mahimahi) into build/mahimahi/bin, for the
# emulator's fidelity benchmark (python -m linklab.emu.fidelity), which runs this script
# the first time it needs mm-link; scripts/setup.sh does not, so setup stays as fast.
# Idempotent: a second run finds build/mahimahi/bin/mm-link at the pinned commit and
# returns at once.
#
# Mahimahi (GPL-3.0-or-later, https://github.com/ravinet/mahimahi) is built from its own
# source, unchanged, outside linklab's source tree; none of its code is part of linklab.
# Its configure script wants Apache, apxs, protobuf and OpenSSL for the web record/replay
# shells; mm-link needs none of them, so this script compiles mm-link's sources
# (src/util, src/packet, src/graphing, src/frontend/{linkshell,link_queue}.cc) with g++
# and a config.h of the three paths they read (iptables, ip, dnsmasq).
#
# The source: $LINKLAB_MAHIMAHI_GIT (a clone or a bare mirror), else a local mirror at
# /work/.mirror/ravinet+mahimahi/repo when there is one, else a clone from GitHub.
set -euo pipefail
cd "$(dirname "$0")/.."

COMMIT=ae477d437615b972217498ba52be07db17a15618   # "Eliminate pessimizing moves (fixes #167)"
UPSTREAM=https://github.com/ravinet/mahimahi
OUT=build/mahimahi
BIN=$OUT/bin/mm-link
log() { printf '[mahimahi] %s\n' "$*" >&2; }

if [ -x "$BIN" ] && [ "$(cat "$OUT/commit" 2>/dev/null)" = "$COMMIT" ]; then
  exit 0
fi

SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
# build: g++ and the graphing libraries mm-link links (its --meter windows);
# run: iptables (its NAT rule), dnsmasq (the DNS it starts inside), setpriv (to start it
# with a real uid other than root, see linklab/emu/mahimahi.py)
PACKAGES=(g++ pkg-config libxcb1-dev libxcb-present-dev libpango1.0-dev libcairo2-dev
          iptables iproute2 dnsmasq-base util-linux git)
missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  log "apt: installing ${missing[*]}"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends \
    "${missing[@]}" >/dev/null
fi

SRC=$OUT/src
rm -rf "$SRC" "$OUT/obj"
mkdir -p "$SRC" "$OUT/obj" "$OUT/bin"
GIT=${LINKLAB_MAHIMAHI_GIT:-}
if [ -z "$GIT" ] && [ -d /work/.mirror/ravinet+mahimahi/repo ]; then
  GIT=/work/.mirror/ravinet+mahimahi/repo
fi
if [ -z "$GIT" ]; then
  GIT=$OUT/repo.git
  [ -d "$GIT" ] || { log "git: cloning $UPSTREAM"; git clone -q --bare "$UPSTREAM" "$GIT"; }
fi
log "source: $COMMIT from $GIT"
# the tree of src/ alone: the mirror may lack the out-of-band trace files
git --git-dir="$GIT" archive --prefix=src/ "$COMMIT:src" | tar -x -C "$SRC"

cat > "$SRC/src/config.h" <<EOF
/* written by linklab's scripts/mahimahi-build.sh in place of configure's */
#define IPTABLES "$(command -v iptables || echo /usr/sbin/iptables)"
#define IP "$(command -v ip || echo /usr/sbin/ip)"
#define DNSMASQ "/usr/sbin/dnsmasq"
EOF

# as src/*/Makefile.am compile them (CXX11_FLAGS; the alternate 100.64/10 address space
# that configure enables by default)
FLAGS=(-std=c++11 -pthread -O2 -D__ALT_CGNAT_SPACE__=1 -I"$SRC/src" -I"$SRC/src/util"
       -I"$SRC/src/packet" -I"$SRC/src/graphing" $(pkg-config --cflags xcb xcb-present pangocairo))
UTIL=(ezio file_descriptor netdevice timestamp child_process signalfd socket address
      system_runner nat util dns_proxy interfaces poller bytestream_queue event_loop temp_file
      dns_server socketpair)
SOURCES=()
for f in "${UTIL[@]}"; do SOURCES+=("util/$f.cc"); done
SOURCES+=(packet/dropping_packet_queue.cc packet/codel_packet_queue.cc packet/pie_packet_queue.cc
          graphing/cairo_objects.cc graphing/display.cc graphing/graph.cc
          graphing/binned_livegraph.cc frontend/link_queue.cc frontend/linkshell.cc)
log "g++: ${#SOURCES[@]} files"
printf '%s\n' "${SOURCES[@]}" | xargs -P "$(nproc)" -I{} sh -c \
  'g++ "$@" -c "'"$SRC"'/src/{}" -o "'"$OUT"'/obj/$(echo {} | tr / _).o"' _ "${FLAGS[@]}"
g++ -pthread -o "$BIN.tmp" "$OUT"/obj/*.o -lrt $(pkg-config --libs xcb xcb-present pangocairo)
mv "$BIN.tmp" "$BIN"
echo "$COMMIT" > "$OUT/commit"
log "built $BIN"
