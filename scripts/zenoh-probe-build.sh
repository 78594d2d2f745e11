#!/usr/bin/env bash
# Build the native Zenoh probe and the DDS <-> Zenoh bridge (probes/zenoh: the zenoh
# 1.10.2 crate; the bridge's DDS side is probes/cyclonedds/bridge_dds.c on Debian's
# Cyclone DDS) the first time a Zenoh or zenoh-bridge cell needs them
# (linklab.probes.zenoh_choice runs this script; make test runs it before its integration
# pass); scripts/setup.sh does not, so setup stays as fast.
#   build/probe-zenoh/linklab-probe-zenoh    what the cells run (this checkout's sources)
#   build/probe-zenoh/linklab-bridge-zenoh   the bridge beside them
#   ~/.cache/linklab/probe-zenoh             cargo's target and the binaries per source
#                                            hash, shared by every checkout on this machine
# A second run finds the binary of the same sources (a hash of probes/zenoh and the type
# table, kept in build/probe-zenoh/sources) and returns at once; a fresh checkout of
# sources built before copies the cached binary. Cold, cargo builds zenoh: minutes
# (README, "Setup time").
# One line on stderr while it builds ("[zenoh-probe] building ..."), one when it cannot
# ("[zenoh-probe] error: ..."; cargo's output is in the cache's build.log).
set -euo pipefail
cd "$(dirname "$0")/.."

OUT=build/probe-zenoh
BIN=$OUT/linklab-probe-zenoh
BINARIES="linklab-probe-zenoh linklab-bridge-zenoh"
CACHE=${LINKLAB_ZENOH_PROBE_CACHE:-$HOME/.cache/linklab/probe-zenoh}
RUST_MIN=1.78   # probes/zenoh/Cargo.toml's rust-version (setup.sh's RUST_MIN too)
KEEP=3          # cached binaries kept (the newest)
fail() { printf '[zenoh-probe] error: %s\n' "$*" >&2; exit 1; }

want=$(cat probes/zenoh/Cargo.toml probes/zenoh/Cargo.lock probes/zenoh/build.rs \
           probes/zenoh/src/*.rs probes/zenoh/src/bridge/*.rs probes/common/message_types.inc \
           probes/cyclonedds/bridge_dds.c probes/cyclonedds/bridge_dds.h \
           probes/idl/linklab_types.idl | sha256sum | cut -d' ' -f1)
current() {
  [ "$(cat "$OUT/sources" 2>/dev/null)" = "$want" ] || return 1
  for b in $BINARIES; do [ -x "$OUT/$b" ] || return 1; done
}
CACHED=$CACHE/bin/$want
install_cached() {  # the cache's binaries of these sources into build/, when there are
  for b in $BINARIES; do [ -x "$CACHED/$b" ] || return 1; done
  mkdir -p "$OUT"
  for b in $BINARIES; do cp "$CACHED/$b" "$OUT/$b.tmp" && mv "$OUT/$b.tmp" "$OUT/$b"; done
  echo "$want" > "$OUT/sources"
}
if current || install_cached; then exit 0; fi

mkdir -p "$CACHE"
exec 9>"$CACHE/lock"
flock 9   # one build at a time (two workers, two checkouts): the next finds it cached
if install_cached; then exit 0; fi

cargo_ok() {  # $1: a cargo binary; true when it is at least RUST_MIN
  local v
  v=$("$1" --version 2>/dev/null | awk '{print $2}') || return 1
  [ -n "$v" ] && [ "$(printf '%s\n%s\n' "$RUST_MIN" "$v" | sort -V | head -1)" = "$RUST_MIN" ]
}
CARGO=""
for candidate in "$(command -v cargo || true)" "$HOME/.cargo/bin/cargo"; do
  if [ -n "$candidate" ] && [ -x "$candidate" ] && cargo_ok "$candidate"; then
    CARGO=$candidate
    break
  fi
done
[ -n "$CARGO" ] || fail "no cargo >= $RUST_MIN to build linklab-probe-zenoh (scripts/setup.sh installs one; or set LINKLAB_ZENOH_PROBE=python)"

if [ -d "$CACHE/target/release" ]; then
  printf '[zenoh-probe] building linklab-probe-zenoh (probes/zenoh changed; cargo build --release)\n' >&2
else
  printf '[zenoh-probe] building linklab-probe-zenoh (first use: cargo build --release of zenoh 1.10.2, about 15 min on 2 cores, once per machine)\n' >&2
fi
if ! nice -n 10 "$CARGO" build --release --locked --manifest-path probes/zenoh/Cargo.toml \
     --target-dir "$CACHE/target" >"$CACHE/build.log" 2>&1; then
  fail "cargo build failed: $(grep -m1 '^error' "$CACHE/build.log" || tail -1 "$CACHE/build.log") (full output: $CACHE/build.log)"
fi
mkdir -p "$CACHED"
for b in $BINARIES; do
  cp "$CACHE/target/release/$b" "$CACHED/$b.tmp" && mv "$CACHED/$b.tmp" "$CACHED/$b"
done
# the newest KEEP binaries stay (other checkouts' sources), older ones go
ls -1dt "$CACHE"/bin/*/ | tail -n +$((KEEP + 1)) | xargs -r rm -rf
install_cached
