#!/usr/bin/env bash
# Emulated cluster hosts on one machine: network namespaces joined by veth pairs to a bridge,
# each link shaped with tc (rate and latency), so that MPI ranks in different namespaces talk
# over TCP as on a cluster.
#
#   bash bench/cluster/hosts.sh up N PROFILE    # N hosts halo-h0 .. halo-h<N-1>, PROFILE below
#   bash bench/cluster/hosts.sh shape PROFILE   # re-shape the existing hosts' links
#   bash bench/cluster/hosts.sh down            # remove every namespace, veth and the bridge
#   bash bench/cluster/hosts.sh exec HOST CMD.. # what Hydra's launcher runs (launcher.sh)
#
# Addresses: 10.77.0.(k+1)/24 for host k, 10.77.0.254 for the bridge (where mpiexec runs); only
# these, which the script creates and removes. PROFILE is RATE[:DELAY], e.g. 10gbit or
# 10gbit:20us, or "none" (unshaped veth). Each host's egress (its veth end, device eth0 in its
# namespace) gets a token bucket at RATE (tbf), under a netem delay of DELAY when one is given,
# so a message between two hosts sees the rate once per direction and DELAY once each way
# (RTT = 2 x DELAY). netem needs the kernel's sch_netem: where it is missing (this project's
# 6.18 firecracker kernels answer "Specified qdisc kind is unknown") a DELAY is refused with that
# reason, and links keep the veth's own latency (measured by run.sh with ping).
set -euo pipefail
prefix=halo-h bridge=halo-br net=10.77.0

hosts() { ip netns list | awk '{print $1}' | grep "^$prefix[0-9]*$" | sort -V || true; }

shape_one() {  # namespace, profile
  local ns=$1 profile=$2
  ip netns exec "$ns" tc qdisc del dev eth0 root 2>/dev/null || true
  [ "$profile" = none ] && return 0
  local rate=${profile%%:*} delay=""
  [ "$rate" != "$profile" ] && delay=${profile#*:}
  # netem's delay, then a token bucket at the link rate (burst: 1 ms at the rate, >= 64 KiB so
  # TSO segments pass; the queue holds 50 ms at the rate).
  local bits
  bits=$(python3 -c "import re,sys; m=re.fullmatch(r'([0-9.]+)([kmg]?)bit', sys.argv[1]); print(int(float(m.group(1))*{'':1,'k':1e3,'m':1e6,'g':1e9}[m.group(2)])) if m else sys.exit(2)" "$rate") ||
    { echo "hosts.sh: rate '$rate': expected e.g. 1gbit, 100mbit" >&2; exit 2; }
  local burst=$((bits / 8 / 1000)) limit=$((bits / 8 / 20))
  [ $burst -ge 65536 ] || burst=65536
  [ $limit -ge $((4 * burst)) ] || limit=$((4 * burst))
  if [ -n "$delay" ]; then
    ip netns exec "$ns" tc qdisc add dev eth0 root handle 1: netem delay "$delay" 2>/dev/null ||
      { echo "hosts.sh: cannot add a netem delay ($delay): this kernel has no sch_netem; use a profile without :DELAY" >&2; exit 1; }
    ip netns exec "$ns" tc qdisc add dev eth0 parent 1: handle 2: tbf rate "$rate" burst "$burst" limit "$limit"
  else
    ip netns exec "$ns" tc qdisc add dev eth0 root handle 1: tbf rate "$rate" burst "$burst" limit "$limit"
  fi
}

case "${1:-}" in
  up)
    n=${2:?usage: hosts.sh up N PROFILE} profile=${3:?usage: hosts.sh up N PROFILE}
    "$0" down
    ip link add "$bridge" type bridge
    ip addr add "$net.254/24" dev "$bridge"
    ip link set "$bridge" up
    for ((k = 0; k < n; k++)); do
      ns=$prefix$k
      ip netns add "$ns"
      ip link add "hv$k" type veth peer name eth0 netns "$ns"
      ip link set "hv$k" master "$bridge" up
      ip netns exec "$ns" ip addr add "$net.$((k + 1))/24" dev eth0
      ip netns exec "$ns" ip link set eth0 up
      ip netns exec "$ns" ip link set lo up
      ip netns exec "$ns" ip route add default via "$net.254"
      shape_one "$ns" "$profile"
    done
    ;;
  shape)
    profile=${2:?usage: hosts.sh shape PROFILE}
    for ns in $(hosts); do shape_one "$ns" "$profile"; done
    ;;
  down)
    for ns in $(hosts); do ip netns del "$ns"; done
    ip link del "$bridge" 2>/dev/null || true
    ;;
  exec)
    host=${2:?usage: hosts.sh exec HOST CMD...}; shift 2
    k=${host##*.}
    exec ip netns exec "$prefix$((k - 1))" "$@"
    ;;
  *) sed -n 2,19p "$0"; exit 2 ;;
esac
