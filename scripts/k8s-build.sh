#!/usr/bin/env bash
# Build the Kubernetes control plane linklab's k8s tests run against, once, into a
# cache shared by every checkout on this machine:
#   kube-apiserver, kube-controller-manager, kube-scheduler, kubelet, kubectl
#   (k8s.io/kubernetes v1.33.13, from the Go module proxy), kwok v0.8.0, and
#   linklab-pause (k8s/pause: the test kubelet's pod sandbox; no image can be pulled here).
# k8s.io/kubernetes replaces its 31 staging modules (k8s.io/api, client-go, ...) by
# ./staging/... paths that a module download does not carry, so it cannot be built
# as a dependency as it is: a wrapper module requires it and replaces each staging
# module by its published v0.33.13 release. -mod=mod lets go add the missing sums;
# no `go mod tidy` (it would walk kubernetes' test dependencies too).
# A second run finds the binaries and returns at once. Cold: about 12-15 minutes on
# 2 cores (most of it compiling the apiserver).
set -euo pipefail
K8S_VERSION=1.33.13
KWOK_VERSION=0.8.0
CACHE=${LINKLAB_K8S_CACHE:-$HOME/.cache/linklab/k8s}
DIR=$CACHE/v$K8S_VERSION
BIN=$DIR/bin
WANT=(kube-apiserver kube-controller-manager kube-scheduler kubelet kubectl kwok)

log() { printf '[k8s-build] %s\n' "$*"; }

have_all() {
  local b
  for b in "${WANT[@]}"; do [ -x "$BIN/$b" ] || return 1; done
  [ -f "$DIR/.complete" ]
}

build_pause() {
  if [ ! -x "$BIN/linklab-pause" ]; then
    log "go build linklab-pause (k8s/pause)"
    (cd "$REPO/k8s/pause" && GOTOOLCHAIN=local CGO_ENABLED=0 GOFLAGS=-buildvcs=false \
      go build -trimpath -ldflags "-s -w" -o "$BIN/linklab-pause" .)
  fi
}
REPO=$(cd "$(dirname "$0")/.." && pwd)
if have_all; then build_pause; log "cached in $BIN"; exit 0; fi
if ! command -v go >/dev/null 2>&1; then
  log "go not found: install Go >= 1.24 to build the test control plane"; exit 1
fi
gominor=$(go env GOVERSION | sed -n 's/^go1\.\([0-9]*\).*/\1/p')
if [ -z "$gominor" ] || [ "$gominor" -lt 24 ]; then
  log "$(go env GOVERSION) is too old: Kubernetes v$K8S_VERSION needs Go >= 1.24"; exit 1
fi
mkdir -p "$DIR"
exec 9>"$DIR/.lock"
flock 9                        # another checkout may be building the same cache
if have_all; then build_pause; log "cached in $BIN (built by another run)"; exit 0; fi

export GOTOOLCHAIN=local GONOSUMDB=k8s.io GOFLAGS="-mod=mod -buildvcs=false" CGO_ENABLED=0
start=$(date +%s)
src=$DIR/src
mkdir -p "$src" "$BIN"
cd "$src"
go mod download k8s.io/kubernetes@v$K8S_VERSION
kmod=$(go env GOMODCACHE)/cache/download/k8s.io/kubernetes/@v/v$K8S_VERSION.mod
{
  echo "module linklab.local/k8sbuild"
  echo
  echo "go 1.24.0"
  echo
  echo "godebug default=go1.24"
  echo
  echo "require k8s.io/kubernetes v$K8S_VERSION"
  echo
  echo "replace ("
  sed -n 's#^\s*\(k8s\.io/[a-z0-9-]*\) => \./staging/src/.*#\t\1 => \1 v0.'"${K8S_VERSION#1.}"'#p' "$kmod"
  echo ")"
} > go.mod
n=$(grep -c ' => k8s.io/' go.mod)
log "wrapper go.mod replaces $n staging modules by v0.${K8S_VERSION#1.}"
cat > main.go <<'GO'
package main

func main() {}
GO
pkgs=()
for b in kube-apiserver kube-controller-manager kube-scheduler kubelet kubectl; do
  pkgs+=("k8s.io/kubernetes/cmd/$b")
done
log "go build ${WANT[*]:0:5} (cold: ~12-15 min on 2 cores)"
go build -trimpath -ldflags "-s -w -X k8s.io/component-base/version.gitVersion=v$K8S_VERSION -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=${K8S_VERSION#1.}" -o "$BIN/" "${pkgs[@]}"
log "go install sigs.k8s.io/kwok/cmd/kwok@v$KWOK_VERSION"
GOBIN=$BIN GOFLAGS=-buildvcs=false go install -trimpath -ldflags "-s -w" "sigs.k8s.io/kwok/cmd/kwok@v$KWOK_VERSION"
build_pause
touch "$DIR/.complete"
log "built in $(( $(date +%s) - start )) s into $BIN"
