#!/usr/bin/env bash
# Sample the kernel's state of every TCP socket in linklab's namespaces, for diagnosis.
#   scripts/ss_sample.sh OUT [INTERVAL_S]     (root; stop it with kill)
# Every INTERVAL_S (default 0.5) it appends, per namespace named linklab-*, a line
# "### YYYY-MM-DDTHH:MM:SS.mmm NAMESPACE" (UTC) and that namespace's `ss -tinmH` (retransmission timer,
# backoff, bytes acknowledged, queues). Read-only: it changes nothing it samples.
# scripts/tcp_stalls.py turns OUT and a bench run into a per-trial table.
set -u
if [ $# -lt 1 ] || [ $# -gt 2 ]; then
  echo "usage: scripts/ss_sample.sh OUT [INTERVAL_S]" >&2; exit 2
fi
out=$1; interval=${2:-0.5}
if ! [[ $interval =~ ^[0-9]+(\.[0-9]+)?$ ]]; then
  echo "ss_sample.sh: INTERVAL_S must be a number of seconds, got '$interval'" >&2; exit 2
fi
: >> "$out" || exit 1
while true; do
  ts=$(date -u +%FT%T.%3N)
  for ns in $(ip netns list | awk '/^linklab-/{print $1}'); do
    echo "### $ts $ns"
    ip netns exec "$ns" ss -tinmH 2>/dev/null
  done >> "$out"
  sleep "$interval"
done
