#!/usr/bin/env bash
# The main job, in about three minutes: 256 KiB at 30 Hz across an emulated Wi-Fi link
# with 20 % packet error (seed 000 Table IIc), Fast DDS with the default ROS 2 profile
# against the profile `linklab tune` makes for this link. Prints the table; the run
# directory (records, profiles, run.json) stays under build/demo-runs/.
set -euo pipefail
cd "$(dirname "$0")/.."
echo "linklab demo: 256 KiB at 30 Hz over wifi-severe (PER 20 %), default vs optimized"
.venv/bin/linklab bench scenarios/demo.yaml --out build/demo-runs "$@"
