#!/usr/bin/env bash
# Fuzzes every dataset reader for 60 s each (libFuzzer, clang, ASan + UBSan).
#   bash bench/fuzz.sh [SECONDS]
set -euo pipefail
cd "$(dirname "$0")/.."
exec bash tests/fuzz/run.sh fuzz "${1:-60}"
