#!/usr/bin/env bash
# A one-node SLURM cluster on this machine, so the SLURM profile can be tested
# for real (tests/test_slurm.py). Debian/Ubuntu, run as root; meant for CI
# machines and containers, not for hosts that already belong to a cluster.
#
#   local_cluster.sh install   apt-get slurm, munge and mariadb (no-op when present)
#   local_cluster.sh start     install if needed, write the config, start the
#                              daemons, wait until the node is idle
#   local_cluster.sh stop      cancel jobs, stop what `start` started, remove
#                              the config it wrote and its state directory
#   local_cluster.sh status    exit 0 when the controller answers and the node is up
# Exit code 3: SLURM cannot be installed here (not root, no apt-get, or no
# package mirror reachable); tests skip on it. Any other failure: 1.
#
# Layout: one node named "localhost" with the machine's CPUs (at least 2), a
# fake memory size and FUD_SLURM_GPUS fake GPUs (gres entries whose device
# files are links to /dev/null), cgroup-free plugins (proctrack/linuxproc,
# task/none: containers rarely delegate cgroups), accounting through slurmdbd
# and a private mariadb so that `sacct` lists jobs with their TRES (the
# executor plugin polls job states with sacct).
# Config goes to /etc/slurm, SLURM's compiled-in location (the executor plugin
# strips SLURM_* variables, SLURM_CONF included, before its nested srun), and
# munge runs with the system key and socket (sacctmgr ignores a socket given
# by AuthInfo). Everything else lives in $FUD_SLURM_STATE.
set -euo pipefail

STATE="${FUD_SLURM_STATE:-/tmp/fud-slurm}"
N_GPUS="${FUD_SLURM_GPUS:-2}"
PORT_BASE="${FUD_SLURM_PORT_BASE:-6817}"   # ctld, slurmd, dbd, mariadb = base .. base+3
CLUSTER=fudlocal
NODE=localhost
ETC=/etc/slurm
MARKER="# written by fud-repro tools/slurm/local_cluster.sh"
PACKAGES=(slurmctld slurmd slurm-client slurmdbd munge mariadb-server-core mariadb-client-core)
COMMANDS=(slurmctld slurmd slurmdbd sbatch sacct sacctmgr munged mariadbd mariadb-install-db my_print_defaults)

log() { echo "local_cluster: $*" >&2; }
die() { log "error: $*"; exit 1; }

have_commands() {
  local c
  for c in "${COMMANDS[@]}"; do command -v "$c" >/dev/null || return 1; done
}

cannot_install() { log "cannot install SLURM here: $*"; exit 3; }

install() {
  if have_commands; then return 0; fi
  [ "$(id -u)" = 0 ] || cannot_install "installing ${PACKAGES[*]} needs root (apt-get)"
  command -v apt-get >/dev/null || cannot_install "no apt-get: install ${PACKAGES[*]} by hand"
  log "installing ${PACKAGES[*]}"
  # Keep package scripts from starting system services (no init system here,
  # and our daemons run with their own config); only if no policy exists yet.
  local policy=/usr/sbin/policy-rc.d made_policy=0
  if [ ! -e "$policy" ]; then
    printf '#!/bin/sh\nexit 101\n' >"$policy"; chmod +x "$policy"; made_policy=1
  fi
  local rc=0 apt_log="${TMPDIR:-/tmp}/fud-slurm-apt.log"
  local get=(env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${PACKAGES[@]}")
  # A fresh image has no (or stale) package lists: update when the install fails.
  "${get[@]}" >"$apt_log" 2>&1 || { apt-get update -q >>"$apt_log" 2>&1 && "${get[@]}" >>"$apt_log" 2>&1; } || rc=$?
  if [ "$made_policy" = 1 ]; then rm -f "$policy"; fi
  if [ "$rc" != 0 ]; then
    tail -20 "$apt_log" >&2
    if grep -qE "Failed to fetch|Temporary failure resolving|Could not resolve|Unable to connect|Unable to locate package" "$apt_log"; then
      cannot_install "apt-get cannot fetch the packages (no package mirror reachable?); log: $apt_log"
    fi
    die "apt-get install failed (log: $apt_log)"
  fi
  have_commands || die "installed ${PACKAGES[*]} but some of ${COMMANDS[*]} are still missing"
}

# wait_for SECONDS WHAT COMMAND...: poll until COMMAND succeeds.
wait_for() {
  local limit=$1 what=$2; shift 2
  local t=0
  until "$@" >/dev/null 2>&1; do
    t=$((t + 1))
    [ "$t" -le "$((limit * 2))" ] || { log "timed out waiting for $what"; return 1; }
    sleep 0.5
  done
}

munge_ok() { munge -n </dev/null | unmunge >/dev/null; }

node_up() {
  local s
  s="$(sinfo -h -N -n "$NODE" -o %T 2>/dev/null)" || return 1
  case "$s" in idle | mixed | allocated) return 0 ;; *) return 1 ;; esac
}

db() { mariadb --protocol=tcp -h 127.0.0.1 -P "$((PORT_BASE + 3))" -u root "$@"; }

write_config() {
  local cpus mem_mb
  cpus="$(nproc)"; [ "$cpus" -ge 2 ] || cpus=2
  # Memory is not a consumable here (CR_Core), so this only bounds what a job
  # may ask for; larger than most hosts so retried jobs (mem_mb * attempt) fit.
  mem_mb=65536
  mkdir -p "$STATE"/{ctld,slurmd,log,run,dev,db}
  local i
  for ((i = 0; i < N_GPUS; i++)); do ln -sfn /dev/null "$STATE/dev/fakegpu$i"; done
  mkdir -p "$ETC"
  cat >"$ETC/slurm.conf" <<EOF
$MARKER (state: $STATE)
ClusterName=$CLUSTER
SlurmctldHost=$(hostname -s)(127.0.0.1)
SlurmUser=root
SlurmdUser=root
SlurmctldPort=$PORT_BASE
SlurmdPort=$((PORT_BASE + 1))
AuthType=auth/munge
StateSaveLocation=$STATE/ctld
SlurmdSpoolDir=$STATE/slurmd
SlurmctldPidFile=$STATE/run/slurmctld.pid
SlurmdPidFile=$STATE/run/slurmd.pid
SlurmctldLogFile=$STATE/log/slurmctld.log
SlurmdLogFile=$STATE/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
MpiDefault=none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SlurmdParameters=config_overrides
GresTypes=gpu
AccountingStorageType=accounting_storage/slurmdbd
AccountingStorageHost=127.0.0.1
AccountingStoragePort=$((PORT_BASE + 2))
AccountingStorageTRES=gres/gpu
AccountingStoreFlags=job_comment
JobCompType=jobcomp/none
SchedulerType=sched/backfill
ReturnToService=2
MinJobAge=300
NodeName=$NODE NodeAddr=127.0.0.1 CPUs=$cpus RealMemory=$mem_mb Gres=gpu:$N_GPUS State=UNKNOWN
PartitionName=debug Nodes=$NODE Default=YES MaxTime=INFINITE State=UP
EOF
  cat >"$ETC/gres.conf" <<EOF
$MARKER
NodeName=$NODE Name=gpu File=$STATE/dev/fakegpu[0-$((N_GPUS - 1))]
EOF
  cat >"$ETC/slurmdbd.conf" <<EOF
$MARKER
AuthType=auth/munge
DbdHost=localhost
DbdAddr=127.0.0.1
DbdPort=$((PORT_BASE + 2))
SlurmUser=root
PidFile=$STATE/run/slurmdbd.pid
LogFile=$STATE/log/slurmdbd.log
StorageType=accounting_storage/mysql
StorageHost=127.0.0.1
StoragePort=$((PORT_BASE + 3))
StorageUser=root
StorageLoc=slurm_acct_db
EOF
  chmod 600 "$ETC/slurmdbd.conf"   # slurmdbd refuses a readable one
}

ours() { [ -f "$1" ] && head -1 "$1" | grep -qF "$MARKER"; }

start() {
  [ "$(id -u)" = 0 ] || die "start needs root (daemons run as root, config goes to $ETC)"
  install
  if ours "$ETC/slurm.conf"; then
    local other
    other="$(head -1 "$ETC/slurm.conf" | sed -n 's/.*(state: \(.*\))$/\1/p')"
    if [ "$other" != "$STATE" ] && [ -f "$other/started" ]; then
      die "a cluster of this script runs with state $other: FUD_SLURM_STATE=$other $0 stop"
    fi
    if [ -f "$STATE/started" ]; then
      if status 2>/dev/null; then log "already running (state: $STATE)"; return 0; fi
      log "stale cluster found: stopping it first"; stop
    fi
  fi
  local f
  for f in slurm.conf gres.conf slurmdbd.conf; do
    [ ! -e "$ETC/$f" ] || ours "$ETC/$f" \
      || die "$ETC/$f exists and was not written by this script: refusing to replace a real SLURM config"
  done
  rm -rf "$STATE"; mkdir -p "$STATE"; : >"$STATE/started"
  write_config

  # munge: reuse a running daemon on the system socket, else start one.
  if ! munge_ok 2>/dev/null; then
    [ -s /etc/munge/munge.key ] || { mkdir -p /etc/munge; mungekey --create --keyfile=/etc/munge/munge.key --force; chown munge:munge /etc/munge/munge.key 2>/dev/null || true; }
    command install -d -o munge -g munge -m 755 /run/munge  # coreutils, not this script's install()
    runuser -u munge -- munged --pid-file=/run/munge/munged.pid
    echo "munged /run/munge/munged.pid" >>"$STATE/started"
    wait_for 20 munged munge_ok || die "munged did not start (see /var/log/munge/munged.log)"
  fi

  # mariadb for slurmdbd: private data directory, TCP on localhost only,
  # passwordless root (nothing but this test cluster can reach it).
  mariadb-install-db --no-defaults --datadir="$STATE/db" --user=root \
    --auth-root-authentication-method=normal --skip-test-db >"$STATE/log/mariadb-install.log" 2>&1 \
    || die "mariadb-install-db failed (see $STATE/log/mariadb-install.log)"
  setsid mariadbd --no-defaults --datadir="$STATE/db" --user=root --bind-address=127.0.0.1 \
    --port=$((PORT_BASE + 3)) --socket="$STATE/run/mariadb.sock" --pid-file="$STATE/run/mariadb.pid" \
    --log-error="$STATE/log/mariadb.log" --innodb-buffer-pool-size=64M \
    --innodb-lock-wait-timeout=900 </dev/null >/dev/null 2>&1 &
  echo "mariadbd $STATE/run/mariadb.pid" >>"$STATE/started"
  wait_for 60 mariadb db -e 'select 1' || die "mariadbd did not start (see $STATE/log/mariadb.log)"

  slurmdbd
  echo "slurmdbd $STATE/run/slurmdbd.pid" >>"$STATE/started"
  wait_for 60 slurmdbd sacctmgr -n list cluster || die "slurmdbd did not start (see $STATE/log/slurmdbd.log)"
  sacctmgr -n -P list cluster format=cluster | grep -qx "$CLUSTER" || sacctmgr -i add cluster "$CLUSTER" >/dev/null

  slurmctld
  echo "slurmctld $STATE/run/slurmctld.pid" >>"$STATE/started"
  wait_for 60 slurmctld scontrol ping || die "slurmctld did not start (see $STATE/log/slurmctld.log)"
  slurmd -N "$NODE"
  echo "slurmd $STATE/run/slurmd.pid" >>"$STATE/started"
  wait_for 90 "node $NODE to be idle" node_up \
    || die "node $NODE is not up: $(sinfo -h -N -o '%T %E' 2>&1) (see $STATE/log/slurmd.log)"
  log "cluster $CLUSTER up: node $NODE, $(sinfo -h -N -o '%c CPUs, %G' 2>/dev/null) (state: $STATE)"
}

# Stop one daemon by the pid it wrote: TERM, wait, then KILL.
stop_pid() {
  local name=$1 pidfile=$2 pid t
  [ -s "$pidfile" ] || return 0
  pid="$(cat "$pidfile")"
  kill -0 "$pid" 2>/dev/null || return 0
  kill "$pid" 2>/dev/null || true
  for ((t = 0; t < 40; t++)); do kill -0 "$pid" 2>/dev/null || return 0; sleep 0.5; done
  log "$name (pid $pid) ignored SIGTERM: killing it"
  kill -9 "$pid" 2>/dev/null || true
}

stop() {
  if [ -f "$STATE/started" ]; then
    # Running jobs would outlive slurmd (slurmstepd is its own process).
    if grep -q '^slurmctld ' "$STATE/started" && scontrol ping >/dev/null 2>&1; then
      scancel --cluster="$CLUSTER" --user="$(id -un)" 2>/dev/null || true
      wait_for 30 "jobs to end" bash -c '[ -z "$(squeue -h -o %i 2>/dev/null)" ]' || true
    fi
    local name pidfile
    # Reverse start order.
    while read -r name pidfile; do
      if [ -n "${pidfile:-}" ]; then stop_pid "$name" "$pidfile"; fi
    done < <(tac "$STATE/started")
  fi
  local f
  for f in slurm.conf gres.conf slurmdbd.conf; do
    if ours "$ETC/$f"; then rm -f "$ETC/$f"; fi
  done
  rm -rf "$STATE"
  log "stopped"
}

status() {
  ours "$ETC/slurm.conf" || { log "not running (no config of ours in $ETC)"; return 1; }
  scontrol ping >/dev/null 2>&1 || { log "slurmctld does not answer"; return 1; }
  node_up || { log "node $NODE is not up"; return 1; }
  sacct -n -X --starttime now-1minutes >/dev/null 2>&1 || { log "sacct does not answer"; return 1; }
  log "running (state: $STATE)"
}

case "${1:-}" in
  install) install ;;
  start) start ;;
  stop) stop ;;
  status) status ;;
  *) echo "usage: $0 {install|start|stop|status}" >&2; exit 2 ;;
esac
