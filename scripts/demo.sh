#!/usr/bin/env bash
# The main job. Until the bench lands: the model and the tuner on the paper's example
# (000: 256 KiB at 30 Hz over 433 Mbit/s Wi-Fi at PER 20 %).
set -euo pipefail
cd "$(dirname "$0")/.."
.venv/bin/linklab model --rate 30Hz --payload 256KiB --link 433Mbit/s --per 20%
.venv/bin/linklab tune --rate 30Hz --payload 256KiB --link 433Mbit/s --out build/demo-profiles
