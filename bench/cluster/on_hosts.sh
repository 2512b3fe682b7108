#!/usr/bin/env bash
# One MPI job with one rank per emulated host (bench/cluster/hosts.sh up N ... first): MPICH's
# Hydra, with launcher.sh as its "ssh", runs rank k in host k's namespace; UCX talks TCP on the
# namespace's eth0 only, so ranks of different hosts never share memory.
#
#   bash bench/cluster/on_hosts.sh N LOG CHECK COMMAND...
#
# COMMAND's output goes to LOG. CHECK is a shell condition that holds once the job has written
# its results (`test -s result.json`). UCX's TCP transport (Debian 12's UCX 1.13, the only
# transport of Debian's MPICH between hosts) can hang in MPI_Finalize after every rank is done
# (openucx/ucx#8738: progress stops before the endpoints are flushed); once CHECK holds, a job
# still running 10 s later is stopped. A job without a result after 15 minutes is stopped too.
# Exit status: 0 the job ended by itself, 3 it was stopped in MPI_Finalize, 1 no result (CHECK
# does not hold).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
n=${1:?on_hosts.sh: N LOG CHECK COMMAND...} log=${2:?} check=${3:?}; shift 3
mpiexec=$(command -v mpiexec.hydra || command -v mpiexec.mpich) ||
  { echo "on_hosts.sh: MPICH's mpiexec.hydra not found" >&2; exit 1; }
"$mpiexec" -launcher ssh -launcher-exec "$here/launcher.sh" -localhost 10.77.0.254 \
  -hosts "$(seq -s, -f "10.77.0.%g" 1 "$n")" -n "$n" -genv UCX_TLS tcp,self \
  -genv UCX_NET_DEVICES eth0 -genv OMP_NUM_THREADS 1 -genv GOMP_SPINCOUNT 100 \
  "$@" > "$log" 2>&1 &
pid=$! waited=0 status=0
while kill -0 "$pid" 2>/dev/null; do
  if bash -c "$check"; then
    for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.2; done
    if kill -0 "$pid" 2>/dev/null; then
      status=3
      kill "$pid" 2>/dev/null || true
      pkill -f "^$1 $2 " 2>/dev/null || true
    fi
    break
  fi
  sleep 0.2
  waited=$((waited + 1))
  if [ $waited -gt 4500 ]; then
    kill "$pid" 2>/dev/null || true
    pkill -f "^$1 $2 " 2>/dev/null || true
    break
  fi
done
wait "$pid" 2>/dev/null || true
bash -c "$check" || exit 1
exit $status
