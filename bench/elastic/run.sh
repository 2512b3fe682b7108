#!/usr/bin/env bash
# Elastic jobs at the ogbn-arxiv shape (bench/results/elastic.md): an 8-part partition of the
# synthetic arxiv-shape graph (169,343 nodes, ~2.3M edges, 128 features, 40 classes) trained on
# R ranks of this machine, GCN full graph (hidden 256) and GraphSAGE mini-batches (batch 1024,
# fan-outs 10,5, hidden 256):
#   elastic_memory.csv  per R in 1 2 4 8: halo plan's predicted peak per rank (its rank menu)
#                       against the largest rank's measured peak (3 epochs);
#   elastic_grace.csv   per R in 2 4, REPEATS times: the run signalled (SIGUSR1 to mpiexec,
#                       which forwards it) once its first checkpoint is committed; the time from
#                       the signal to the committed checkpoint that halo train reports, the
#                       checkpoint's step (mid-epoch for mini-batches) and size; then the run
#                       resumed on the other count (2 -> 4, 4 -> 2) and the time from that
#                       process's start to its first training step (--json
#                       first_step_after_start_s: MPI start-up, the parts' merge, the
#                       checkpoint read and one step).
#
#   bash bench/elastic/run.sh BUILD_DIR [OUT_DIR] [REPEATS]
#
# BUILD_DIR holds tools/halo/halo (a Release build with MPI). HALO_ELASTIC_NODES overrides the
# node count (the CI smoke run uses a small graph); HALO_CALIBRATION, a calibration file (else
# this script runs halo calibrate first).
set -euo pipefail
build=${1:?usage: bench/elastic/run.sh BUILD_DIR [OUT_DIR] [REPEATS]}
out=${2:-bench/results}
repeats=${3:-3}
nodes=${HALO_ELASTIC_NODES:-169343}
halo="$build/tools/halo/halo"
cores=$(nproc)
work=$(mktemp -d)
pid=
trap '[ -n "$pid" ] && kill -KILL "$pid" 2>/dev/null; rm -rf "$work"' EXIT
mkdir -p "$out"
fail() { tail -n 20 "$work"/*.log >&2 || true; echo "elastic: $1 failed" >&2; exit 1; }

# halo plan's costs: this machine's (compute, and the link at 2 ranks), unless HALO_CALIBRATION
# names a file (the smoke run names none that exists: the built-in defaults).
if [ -z "${HALO_CALIBRATION:-}" ]; then
  export HALO_CALIBRATION="$work/calibration.json"
  "$halo" calibrate --output "$HALO_CALIBRATION" > "$work/calibrate.log" 2>&1 || fail "calibrate"
  mpiexec -n 2 "$halo" calibrate --output "$HALO_CALIBRATION" >> "$work/calibrate.log" 2>&1 ||
    fail "calibrate at 2 ranks"
fi

data=(--dataset synthetic --synthetic-nodes "$nodes" --synthetic-classes 40
      --synthetic-features 128 --synthetic-degree 13.7 --synthetic-seed 1)
"$halo" partition "${data[@]}" --parts 8 --out "$work/p8" > "$work/partition.log" 2>&1 ||
  fail "partition"
gcn=(--model gcn --layers 2 --hidden 256 --seed 1)
sage=(--model sage --layers 2 --hidden 256 --mode mini-batch --batch-size 1024 --fanouts 10,5
      --seed 1)
threads() { echo $(( cores / $1 > 0 ? cores / $1 : 1 )); }
value() { python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))[sys.argv[2]])' "$1" "$2"; }

# ---- memory: predicted against measured ------------------------------------------------------
echo "model,ranks,predicted_peak_bytes,measured_peak_bytes,predicted_over_measured" > "$work/memory.csv"
for model in gcn sage; do
  declare -n flags=$model
  for r in 1 2 4 8; do
    t=$(threads "$r")
    "$halo" plan --partitions "$work/p8" "${flags[@]}" --epochs 3 --threads "$t" \
      --output "$work/plan.json" 2>> "$work/plan.log" || fail "plan"
    predicted=$(python3 -c 'import json,sys; p=json.load(open(sys.argv[1])); print(p["rank_menu"][int(sys.argv[2])-1]["peak_host_bytes_per_rank"])' "$work/plan.json" "$r")
    OMP_WAIT_POLICY=passive mpiexec -n "$r" "$halo" train --partitions "$work/p8" "${flags[@]}" \
      --epochs 3 --threads "$t" --json "$work/m.json" > /dev/null 2>> "$work/train.log" ||
      fail "$model on $r ranks"
    measured=$(value "$work/m.json" peak_host_memory_bytes_max)
    echo "$model,$r,$predicted,$measured,$(python3 -c "print(round($predicted/$measured, 3))")" >> "$work/memory.csv"
  done
  unset -n flags
done

# ---- grace: signal to committed checkpoint; a resume on the other count -----------------------
echo "model,ranks,repeat,checkpoint,signal_to_commit_s,checkpoint_bytes,resumed_on,first_step_after_start_s" > "$work/grace.csv"
for rep in $(seq "$repeats"); do
  for model in gcn sage; do
    declare -n flags=$model
    for r in 2 4; do
      ck="$work/ck-$model-$r"
      rm -rf "$ck"
      OMP_WAIT_POLICY=passive mpiexec -n "$r" "$halo" train --partitions "$work/p8" "${flags[@]}" \
        --epochs 1000 --threads "$(threads "$r")" --checkpoint-dir "$ck" --checkpoint-every 1 \
        > /dev/null 2> "$work/grace.log" &
      pid=$!
      for _ in $(seq 3000); do
        compgen -G "$ck/epoch-*/manifest.json" > /dev/null && break
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.1
      done
      kill -USR1 "$pid"
      status=0
      wait "$pid" || status=$?
      pid=
      # Hydra was seen to exit 0 instead of the ranks' 75 after forwarding a signal
      # (docs/checkpoints.md): rank 0's line says whether the run was preempted.
      line=$(grep "preempted after" "$work/grace.log") ||
        fail "$model on $r ranks: exit $status and not preempted"
      name=$(sed -n 's/.*checkpoint \(.*\), committed.*/\1/p' <<< "$line")
      seconds=$(sed -n 's/.*committed \([0-9.]*\) s after.*/\1/p' <<< "$line")
      bytes=$(du -sb "$name" | cut -f1)
      epoch=$(sed -n 's/.*epoch-0*\([0-9][0-9]*\)-step.*/\1/p' <<< "$name")
      other=$(( r == 2 ? 4 : 2 ))
      OMP_WAIT_POLICY=passive mpiexec -n "$other" "$halo" train --partitions "$work/p8" \
        "${flags[@]}" --epochs "$((epoch + 1))" --threads "$(threads "$other")" \
        --checkpoint-dir "$ck" --resume auto --json "$work/r.json" > /dev/null \
        2>> "$work/resume.log" || fail "$model resumed on $other ranks"
      echo "$model,$r,$rep,$(basename "$name"),$seconds,$bytes,$other,$(value "$work/r.json" first_step_after_start_s)" >> "$work/grace.csv"
    done
    unset -n flags
  done
done
cp "$work/memory.csv" "$out/elastic_memory.csv"
cp "$work/grace.csv" "$out/elastic_grace.csv"
cat "$out/elastic_memory.csv" "$out/elastic_grace.csv"
