#!/usr/bin/env bash
# Test accuracy of GCN and GraphSAGE on Planetoid Cora over 10 seeds (Kipf & Welling set-up:
# 2 layers, 16 hidden, dropout 0.5, lr 0.01, weight decay 5e-4, 200 epochs, best-validation
# epoch). Prints a markdown table with the mean, the standard deviation and the epoch time.
#   bash bench/nn/cora_accuracy.sh [HALO_BINARY] [DATASET_DIR]
set -euo pipefail
halo=${1:-build/cpu-release/tools/halo/halo}
data=${2:-$(dirname "$halo")/../../data/planetoid/cora}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
echo "| model | seeds | mean test accuracy | std | min | max | median epoch (ms) |"
echo "| --- | --- | --- | --- | --- | --- | --- |"
for model in gcn sage; do
  for seed in 0 1 2 3 4 5 6 7 8 9; do
    "$halo" train --dataset "$data" --model "$model" --seed "$seed" --json "$out/$model-$seed.json" \
      >/dev/null 2>&1
  done
  cat "$out/$model"-*.json | awk -v model="$model" '
    /"test_accuracy"/ { gsub(/[",]/, "", $2); acc[n++] = $2 }
    /"epoch_time_median_s"/ { gsub(/[",]/, "", $2); t += $2 }
    END {
      for (i = 0; i < n; i++) { s += acc[i]; if (i == 0 || acc[i] < lo) lo = acc[i]; if (acc[i] > hi) hi = acc[i] }
      m = s / n; for (i = 0; i < n; i++) v += (acc[i] - m) ^ 2
      printf "| %s | %d | %.4f | %.4f | %.4f | %.4f | %.3f |\n", model, n, m, sqrt(v / (n - 1)), lo, hi, 1000 * t / n
    }'
done
