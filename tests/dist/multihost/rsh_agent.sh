#!/usr/bin/env bash
# rsh_agent.sh — Open MPI's rsh launcher agent for the simulated hosts (--mca plm_rsh_agent).
# mpirun calls it as `rsh_agent.sh HOST COMMAND...` to start its daemon (orted) on HOST, as it
# would call ssh. HOST is a veth address from the hostfile; FARTHING_MULTIHOST_NETNS maps each
# address to the network namespace that plays that host ("10.213.47.2=fth34-b ..."). No sshd:
# the command runs here, in that namespace, through a shell, as ssh's remote side would run it.
set -euo pipefail
host="$1"; shift
for pair in ${FARTHING_MULTIHOST_NETNS:?rsh_agent.sh: FARTHING_MULTIHOST_NETNS is not set}; do
  if [[ ${pair%%=*} == "$host" ]]; then
    # Its own UTS namespace too: a host of its own name (Open MPI tells nodes apart by hostname).
    exec ip netns exec "${pair#*=}" unshare --uts /bin/sh -c "hostname ${pair#*=} && $*"
  fi
done
echo "rsh_agent.sh: no namespace for host '$host' in FARTHING_MULTIHOST_NETNS='$FARTHING_MULTIHOST_NETNS'" >&2
exit 1
