#!/usr/bin/env bash
# Hydra's launcher for emulated hosts: mpiexec -launcher ssh -launcher-exec THIS calls it as an
# ssh client, `launcher.sh [ssh options] HOST COMMAND...`; it runs COMMAND (the Hydra proxy) in
# the namespace whose address is HOST (bench/cluster/hosts.sh).
set -euo pipefail
while [ $# -gt 0 ] && [ "${1#-}" != "$1" ]; do
  case "$1" in -x | -q | -T | -n) shift ;; -o | -p | -l) shift 2 ;; *) shift ;; esac
done
host=${1:?launcher.sh: no host}; shift
exec bash "$(dirname "$0")/hosts.sh" exec "$host" sh -c "$*"
