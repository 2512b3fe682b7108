#!/usr/bin/env bash
# Preemption and requeue on a real Slurm. Starts munged, slurmctld and 8 slurmd (nodes halo1-8, 2
# CPUs each, JobRequeue) on 127.0.0.1 with a throw-away key, configuration, ports and state under
# a temporary directory, submits generated sbatch scripts that train with a checkpoint directory
# (Cora GCN mini-batches and heco_acm R-GCN over 2-part partitions with 2 ranks; CollegeMsg
# EvolveGCN-O link prediction in one process), sends each batch shell SIGUSR1 once a checkpoint
# exists (as Slurm does before the time limit), and checks that the job checkpointed, exited 75,
# was requeued, resumed and ended with the results of an uninterrupted run (Cora: the model bytes
# and final loss; R-GCN: the final loss, test Macro-F1, Micro-F1, accuracy and kept epoch;
# EvolveGCN-O: the final loss, test MRR, MAP and kept epoch). Then elastic jobs: an 8-part
# partition of Cora (GCN full graph; GraphSAGE mini-batches, preempted mid-epoch) on 4 nodes,
# preempted, requeued on 2, preempted, requeued on 1, ending with the one-process run's results.
# The scripts are what `halo plan --emit slurm` writes for the runs. Every daemon is stopped on
# exit (also on failure); every wait is bounded. Installs nothing; exit 77 (skipped) when Slurm
# or munge is missing.
#
#   bash tests/slurm/run.sh HALO MPIEXEC CORA_DIR ACM_DIR COLLEGEMSG_DIR
set -euo pipefail
halo=$(realpath "$1") mpiexec=$2 cora=$(realpath "$3") acm=$(realpath "$4") college=$(realpath "$5")

for p in munged slurmctld slurmd sbatch scontrol scancel; do
  command -v "$p" >/dev/null 2>&1 || [ -x "/usr/sbin/$p" ] || { echo "skip: $p not installed"; exit 77; }
done
export PATH="$PATH:/usr/sbin"
# The job inherits this environment (sbatch --export=ALL): one thread per rank; MPICH leaves
# an allocation LeakSanitizer cannot attribute (tests/runtime/CMakeLists.txt).
export OMP_NUM_THREADS=1 ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=0}

# Every client call is bounded: a controller that died must not hang the test.
for c in scontrol scancel sinfo sbatch; do
  eval "$c() { timeout 10 $(type -P $c) \"\$@\"; }"
done

tmp=$(mktemp -d /tmp/halo-slurm.XXXXXX)
pids=()
cleanup() {
  local status=$?
  set +e
  if [ -n "${SLURM_CONF:-}" ] && [ -n "${job:-}" ]; then
    [ "$status" -ne 0 ] && scontrol show job "$job"
    scancel "$job" >/dev/null 2>&1
  fi
  for pid in "${pids[@]}"; do kill -TERM "$pid" 2>/dev/null; done
  for pid in "${pids[@]}"; do
    for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$pid" 2>/dev/null
    wait "$pid" 2>/dev/null
  done
  # A job step left behind (its ranks) would outlive the daemons: end what runs from $tmp.
  for pid in $(pgrep -f "$tmp" || true); do [ "$pid" != $$ ] && kill -KILL "$pid" 2>/dev/null; done
  if [ "$status" -ne 0 ] && [ "$status" -ne 77 ]; then
    echo "---- failed (status $status); logs:"
    for f in "$tmp"/*.log "$tmp"/*/*.out; do [ -f "$f" ] && { echo "== $f"; tail -n 40 "$f"; }; done
  fi
  rm -rf "$tmp"
  exit "$status"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

# Bounded wait: wait_for SECONDS DESCRIPTION COMMAND...
wait_for() {
  local limit=$1 what=$2
  shift 2
  for _ in $(seq $((limit * 10))); do "$@" >/dev/null 2>&1 && return 0; sleep 0.1; done
  echo "timed out after ${limit}s waiting for $what"
  return 1
}

fail() {
  echo "FAIL: $*"
  exit 1
}

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# ---- munge -------------------------------------------------------------------------------
mkdir -p "$tmp/munge" "$tmp/state" "$tmp/spool" "$tmp/job"
chmod 700 "$tmp/munge"
dd if=/dev/urandom of="$tmp/munge/munge.key" bs=1024 count=1 status=none
chmod 400 "$tmp/munge/munge.key"
socket="$tmp/munge/munge.socket"
munged --foreground --force --key-file="$tmp/munge/munge.key" --socket="$socket" \
  --pid-file="$tmp/munge/munged.pid" --seed-file="$tmp/munge/munged.seed" \
  --log-file="$tmp/munged.log" >/dev/null 2>&1 &
pids+=($!)
wait_for 10 "munged" test -S "$socket"

# ---- slurm -------------------------------------------------------------------------------
# Eight nodes of 2 CPUs, each its own slurmd on 127.0.0.1 (distinct ports, pid files and spool
# directories by node name): the elastic job runs on 4, 2 and 1 of them.
nodes=8
ports=()
while [ "${#ports[@]}" -le "$nodes" ]; do
  p=$(free_port)
  case " ${ports[*]} " in *" $p "*) ;; *) ports+=("$p") ;; esac
done
ctld_port=${ports[0]}
node_lines=""
for n in $(seq "$nodes"); do
  mkdir -p "$tmp/spool-halo$n"
  node_lines+="NodeName=halo$n NodeAddr=127.0.0.1 NodeHostname=$(hostname) Port=${ports[$n]} CPUs=2 RealMemory=4096 State=UNKNOWN"$'\n'
done
export SLURM_CONF="$tmp/slurm.conf"
cat >"$SLURM_CONF" <<EOF
ClusterName=halotest
SlurmctldHost=localhost(127.0.0.1)
SlurmctldPort=$ctld_port
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=$socket
CredType=cred/munge
StateSaveLocation=$tmp/state
SlurmdSpoolDir=$tmp/spool-%n
SlurmctldPidFile=$tmp/slurmctld.pid
SlurmdPidFile=$tmp/slurmd-%n.pid
SlurmctldLogFile=$tmp/slurmctld.log
SlurmdLogFile=$tmp/slurmd-%n.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SchedulerType=sched/builtin
SchedulerParameters=sched_interval=1
MpiDefault=none
SwitchType=switch/none
JobRequeue=1
ReturnToService=2
SlurmdParameters=config_overrides
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
JobCompType=jobcomp/none
MailProg=/bin/true
KillWait=5
MinJobAge=300
${node_lines}PartitionName=debug Nodes=halo[1-$nodes] Default=YES MaxTime=INFINITE State=UP
EOF
slurmctld -D -i -f "$SLURM_CONF" >/dev/null 2>&1 &
pids+=($!)
for n in $(seq "$nodes"); do
  slurmd -D -N "halo$n" -f "$SLURM_CONF" >/dev/null 2>&1 &
  pids+=($!)
done
nodes_idle() { [ "$(sinfo -h -N -o '%T' | grep -c '^idle')" -eq "$nodes" ]; }
wait_for 60 "the $nodes nodes to be idle" nodes_idle

# ---- one job: run_job NAME KEYS -- TRAIN_FLAGS... -------------------------------------------
# The reference (an uninterrupted run of the same flags with RANKS ranks, default 2), then the
# job the plan writes (a checkpoint every EVERY epochs, default 2), signalled once its first
# checkpoint is committed; it must checkpoint, exit 75, be requeued, resume and end with the
# reference's --json values of KEYS (comma-separated) and, when the flags save a model (SAVE=1),
# its model bytes. PLAN_EXTRA: more `halo plan` flags.
run_job() {
  local name=$1 keys=$2
  shift 3
  local train=("$@") dir="$tmp/$name"
  mkdir -p "$dir"
  local save_ref=() save_job=()
  if [ "${SAVE:-0}" = 1 ]; then save_ref=(--save-model "$dir/ref.halo"); save_job=(--save-model "$dir/job.halo"); fi
  local ranks=${RANKS:-2}
  "$mpiexec" -n "$ranks" "$halo" "${train[@]}" "${save_ref[@]}" --json "$dir/ref.json" \
    >/dev/null 2>"$dir/ref.log" || fail "$name: the reference run failed: $(tail -n 3 "$dir/ref.log")"
  ckpt="$dir/ckpt"
  # shellcheck disable=SC2086
  "$halo" plan "${train[@]:1}" --emit slurm --job-name "halo-$name" --tasks-per-node "$ranks" \
    --slurm-output "$dir/job.out" --launcher "$mpiexec" --checkpoint-dir "$ckpt" \
    --output "$dir/job.sh" ${PLAN_EXTRA:-} -- --checkpoint-every "${EVERY:-2}" "${save_job[@]}" \
    --json "$dir/job.json"
  grep -q -- "--resume auto" "$dir/job.sh" || fail "$name: the plan's script does not resume"
  job=$(sbatch --parsable --chdir="$dir" "$dir/job.sh")
  echo "$name: submitted job $job"
  wait_for 90 "the first checkpoint" checkpoint_or_ended
  has_checkpoint >/dev/null || fail "$name: job $job ended before its first checkpoint"
  scancel --signal=USR1 --batch "$job"
  echo "$name: sent SIGUSR1 to the batch shell of job $job"
  wait_for 60 "the job to requeue itself" requeued
  # Slurm makes a requeued job eligible again only after about two minutes; an operator's
  # `scontrol update StartTime=...` lets it start sooner (the requeue itself was the script's).
  # slurmd refuses a launch in the second the previous run's credential was revoked: 3 s later.
  scontrol update JobId="$job" StartTime=now+3
  wait_for 120 "the requeued job to end" finished
  [ "$(job_field JobState)" = COMPLETED ] || fail "$name: job $job ended $(job_field JobState)"
  local restarts
  restarts=$(job_field Restarts)
  echo "$name: job $job COMPLETED after $restarts requeue(s)"
  [ "$restarts" -ge 1 ] || fail "$name: the job was not requeued (Restarts=$restarts)"
  grep -q "preempted after" "$dir/job.out" || fail "$name: no preemption in the job's output"
  grep -q "preempted, checkpoint committed: requeue" "$dir/job.out" ||
    fail "$name: the batch shell did not requeue on exit 75"
  grep -q "SLURM_RESTART_COUNT=1" "$dir/job.out" || fail "$name: the requeued run did not log its restart"
  grep -q "resuming from" "$dir/job.out" || fail "$name: the requeued run did not resume"
  if [ "${SAVE:-0}" = 1 ]; then
    cmp "$dir/ref.halo" "$dir/job.halo" || fail "$name: the resumed model differs from the uninterrupted one"
  fi
  local key ref got
  for key in ${keys//,/ }; do
    ref=$(value "$dir/ref.json" "$key")
    got=$(value "$dir/job.json" "$key")
    [ "$ref" = "$got" ] || fail "$name: $key $got differs from the uninterrupted run's $ref"
  done
  echo "slurm: $name preempted, requeued, resumed: $keys equal the uninterrupted run's ($(value "$dir/ref.json" final_train_loss) final loss)"
}
job_field() { scontrol -o show job "$job" | tr ' ' '\n' | sed -n "s/^$1=//p"; }
has_checkpoint() { compgen -G "$ckpt/epoch-*/manifest.json"; }
running() { case "$(job_field JobState)" in PENDING | CONFIGURING | RUNNING) return 0 ;; esac; return 1; }
checkpoint_or_ended() { has_checkpoint || ! running; }
requeued() { [ "$(job_field Restarts)" -ge 1 ] && [ "$(job_field JobState)" = PENDING ]; }
finished() { ! running; }
value() { python3 -c 'import json,sys; print(repr(json.load(open(sys.argv[1]))[sys.argv[2]]))' "$1" "$2"; }

# Cora, GCN mini-batches over a 2-part partition: the model bytes and the final loss.
"$halo" partition --dataset "$cora" --parts 2 --out "$tmp/cora-parts" >/dev/null 2>&1
SAVE=1 run_job cora final_train_loss -- train --partitions "$tmp/cora-parts" --mode mini-batch \
  --batch-size 16 --fanouts 5,5 --epochs 8 --seed 3 --threads 1
# heco_acm, R-GCN over a 2-part heterogeneous partition, learnable embeddings of the featureless
# types (each rank its rows; the job asks the memory and time halo plan predicts): the model
# bytes, the final loss, the test Macro-F1 and accuracy.
"$halo" partition --dataset "$acm" --parts 2 --out "$tmp/acm-parts" >/dev/null 2>&1
SAVE=1 run_job acm-rgcn \
  final_train_loss,test_macro_f1,test_micro_f1,test_accuracy,best_epoch -- \
  train --partitions "$tmp/acm-parts" --model rgcn --hidden 16 --epochs 30 --seed 3 --threads 1 \
  --featureless embedding
# CollegeMsg, EvolveGCN-O link prediction in one process (12 snapshots, a 3-snapshot window; a
# checkpoint every epoch, the signal then stops it between two training snapshots; the job asks
# the memory and time halo plan predicts): the final loss, the test MRR and MAP, and the kept
# epoch.
RANKS=1 EVERY=1 run_job collegemsg-evolvegcn \
  final_train_loss,test_mrr,test_map,best_epoch -- \
  train --task link --dataset "$college" --model evolvegcn-o --snapshots 12 --window 3 \
  --negatives 5 --hidden 8 --epochs 3 --seed 3 --threads 1

# ---- an elastic job: run_elastic NAME MID_EPOCH -- TRAIN_FLAGS (no data flag)... ---------------
# The reference: one process on Cora itself. The job: the sbatch script `halo plan --partitions`
# writes for an 8-part partition of Cora with one rank per node (a node range, --nodes=1-8,
# launching on the nodes it is given). Slurm would start it on the fewest nodes; the test pins
# each start's allocation as a shrinking cluster would give it (scontrol update of the pending
# job's node count): 4 nodes, then, preempted after its first checkpoint (scancel
# --signal=USR1), requeued on 2, preempted again after the next checkpoint, requeued on 1, where
# it finishes. Its final loss must be the one-process run's within 1e-4 relative, its kept epoch
# the same and its test accuracy within 1e-3; MID_EPOCH=1: both preemptions mid-epoch.
give_nodes() {
  scontrol update JobId="$job" NumNodes="$1-$1"
  scontrol update JobId="$job" NumTasks="$1"
  scontrol update JobId="$job" NumCPUs="$1"
}
newest_checkpoint() { { compgen -G "$ckpt/epoch-*/manifest.json" || true; } | sort | tail -n 1; }
new_checkpoint_or_ended() { [ "$(newest_checkpoint)" != "$1" ] || ! running; }
requeued_times() { [ "$(job_field Restarts)" -ge "$1" ] && [ "$(job_field JobState)" = PENDING ]; }
run_elastic() {
  local name=$1 mid=$2
  shift 3
  local train=("$@") dir="$tmp/$name"
  mkdir -p "$dir"
  "$halo" train --dataset "$cora" "${train[@]}" --json "$dir/ref.json" >/dev/null 2>"$dir/ref.log" ||
    fail "$name: the one-process reference failed: $(tail -n 3 "$dir/ref.log")"
  ckpt="$dir/ckpt"
  "$halo" plan --partitions "$tmp/cora-8" "${train[@]}" --emit slurm --job-name "halo-$name" \
    --tasks-per-node 1 --slurm-output "$dir/job.out" --launcher "$mpiexec" --checkpoint-dir "$ckpt" \
    --output "$dir/job.sh" -- --checkpoint-every 1 --json "$dir/job.json"
  grep -q -- "--nodes=1-8" "$dir/job.sh" || fail "$name: the plan's script asks no node range"
  job=$(sbatch --hold --parsable --chdir="$dir" "$dir/job.sh")
  give_nodes 4
  scontrol release "$job"
  echo "$name: submitted job $job, given 4 nodes"
  local round=0 nodes before
  for nodes in 2 1; do
    round=$((round + 1))
    before=$(newest_checkpoint)
    wait_for 180 "a new checkpoint" new_checkpoint_or_ended "$before"
    running || fail "$name: job $job ended before preemption $round"
    scancel --signal=USR1 --batch "$job"
    wait_for 90 "requeue $round" requeued_times "$round"
    give_nodes "$nodes"
    scontrol update JobId="$job" StartTime=now+3
    echo "$name: preempted and requeued, given $nodes node(s)"
  done
  wait_for 240 "the job to end" finished
  [ "$(job_field JobState)" = COMPLETED ] || fail "$name: job $job ended $(job_field JobState)"
  for ranks in 4 2 1; do
    grep -q ": $ranks ranks on $ranks node(s)" "$dir/job.out" ||
      fail "$name: no start on $ranks ranks in the job's output"
  done
  [ "$(grep -c "preempted after" "$dir/job.out")" -eq 2 ] || fail "$name: not preempted twice"
  [ "$(grep -c "resuming from" "$dir/job.out")" -eq 2 ] || fail "$name: did not resume twice"
  if [ "$mid" = 1 ]; then
    grep "preempted after" "$dir/job.out" | grep -q "step-000000" &&
      fail "$name: a preemption at an epoch boundary, not mid-epoch: $(grep "preempted after" "$dir/job.out")"
  fi
  grep "preempted after" "$dir/job.out" | sed "s/^/$name: /"
  python3 - "$dir/ref.json" "$dir/job.json" "$name" <<'PY' || fail "$name: the elastic job's results differ from one process's"
import json, sys
ref, job, name = json.load(open(sys.argv[1])), json.load(open(sys.argv[2])), sys.argv[3]
ok = abs(job["final_train_loss"] - ref["final_train_loss"]) <= 1e-4 * abs(ref["final_train_loss"])
ok &= job["best_epoch"] == ref["best_epoch"]
ok &= abs(job["test_accuracy"] - ref["test_accuracy"]) <= 1e-3
ok &= job["world_size"] == 1
print(f"slurm: {name} on 4 -> 2 -> 1 ranks: final loss {job['final_train_loss']!r} "
      f"(one process {ref['final_train_loss']!r}), kept epoch {job['best_epoch']} "
      f"({ref['best_epoch']}), test accuracy {job['test_accuracy']} ({ref['test_accuracy']}), "
      f"first step {job['first_step_after_start_s']:.2f} s after the last start")
sys.exit(0 if ok else 1)
PY
}

# Cora in 8 parts, on 4, 2 and 1 ranks: GCN full graph (preempted between epochs) and GraphSAGE
# mini-batches (preempted mid-epoch).
"$halo" partition --dataset "$cora" --parts 8 --out "$tmp/cora-8" >/dev/null 2>&1
run_elastic elastic-gcn 0 -- --model gcn --epochs 30 --seed 3 --threads 1
run_elastic elastic-sage 1 -- --model sage --mode mini-batch --batch-size 16 --fanouts 5,5 \
  --epochs 6 --seed 3 --threads 1
