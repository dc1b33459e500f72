#!/usr/bin/env bash
# A reproducible sweep of generated scenarios through the fleetplan command line (docs/sweep.md).
#
#   scripts/sweep.sh [COUNT] [SEED] [TIME_LIMIT_MS] [DIR]
#
# Generates COUNT scenarios (default 40) from SEED (default 1) into DIR/scenarios (default
# target/sweep), plans each with greedy and with `--solver exact --time-limit-ms TIME_LIMIT_MS`
# (default 5000), verifies both plans with `fleetplan verify` and with the example's independent
# checker, and writes DIR/results/results.tsv. Exit 1 if any problem was found.
set -euo pipefail
count=${1:-40}
seed=${2:-1}
limit=${3:-5000}
dir=${4:-target/sweep}
cd "$(dirname "$0")/.."
cargo build --release --features cli,examples --bin fleetplan --example scenario_sweep
rm -rf "$dir/scenarios" "$dir/results"
target/release/examples/scenario_sweep generate "$dir/scenarios" --count "$count" --seed "$seed"
target/release/examples/scenario_sweep run "$dir/scenarios" --bin target/release/fleetplan \
  --time-limit-ms "$limit" --out "$dir/results"
