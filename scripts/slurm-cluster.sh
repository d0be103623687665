#!/usr/bin/env bash
# slurm-cluster.sh -- a real, single-node SLURM cluster on this machine, for tests and small studies.
#
# Usage (as root, Debian 12 / bookworm; no systemd needed):
#   scripts/slurm-cluster.sh [start]   install what is missing, configure, start, wait until the node is idle
#   scripts/slurm-cluster.sh stop      cancel jobs, stop every daemon this script runs (configs and DB stay)
#   scripts/slurm-cluster.sh status    daemons, node and queue; exit 0 when everything is up, 3 otherwise
#   scripts/slurm-cluster.sh restart   stop, then start
#   scripts/slurm-cluster.sh clean     start if needed, cancel EVERY job, wait until the node is idle (test fixtures)
#
# What `start` gives you: munge, MariaDB + slurmdbd (so `sacct` works, which the Snakemake SLURM plugin
# uses for job states), slurmctld and slurmd; one node named after `hostname -s` with all CPUs (nproc) and
# 90 % of MemTotal; one partition (default "debug"); a fake GPU (gres `gpu`, File=/dev/null) so rules with
# `resources: gpu=1` schedule and their jobs see CUDA_VISIBLE_DEVICES=0.
# `start` is idempotent: with everything up it only checks (well under 2 s) and touches no job. When it has
# to (re)start slurmctld, jobs from the earlier start are dropped (slurmctld -c, then scancel of anything
# left), since their controller and usually their processes are gone; a node left DOWN/DRAINED/FAILED is
# resumed. (A restarted slurmd alone re-attaches to the job steps that are still running: they are kept.)
#
# Knobs (environment):
#   SLURM_PARTITION=debug    partition name (the default partition)
#   SLURM_FAKE_GPUS=1        number of fake GPUs on the node; 0: no GRES at all
#   SLURM_GPU_TYPE=          optional GPU type name (e.g. "fake"): then `gpu_model: fake` requests work too
#   SLURM_WITH_DBD=1         0: no MariaDB/slurmdbd (lighter; profiles must then use slurm-status-command: squeue)
#   SLURM_READY_TIMEOUT=90   seconds to wait for each daemon and for the node
#   SLURM_CMD_TIMEOUT=10     timeout for every SLURM client call made here
#   SLURM_DB_PASS=slurmdbpw  password of the local MariaDB user `slurm` (socket-only, no network)
#
# Facts this script relies on (each cost hours to find): no usable cgroups here, so
# ProctrackType=proctrack/linuxproc and TaskPlugin=task/none; a daemon may stay a zombie for a while
# (PID 1 of a container reaps slowly), so zombies count as dead; an unclean stop can leave "ghost" jobs in
# slurmctld's state, hence `slurmctld -c`; every client call can hang when a daemon is half-up, hence
# `timeout` on each.
set -euo pipefail

ACTION="${1:-start}"
PARTITION="${SLURM_PARTITION:-debug}"
FAKE_GPUS="${SLURM_FAKE_GPUS:-1}"
GPU_TYPE="${SLURM_GPU_TYPE:-}"
WITH_DBD="${SLURM_WITH_DBD:-1}"
READY_TIMEOUT="${SLURM_READY_TIMEOUT:-90}"
CMD_TIMEOUT="${SLURM_CMD_TIMEOUT:-10}"
DB_PASS="${SLURM_DB_PASS:-slurmdbpw}"

CLUSTER=thinkprobe
ETC=/etc/slurm
LOGDIR=/var/log/slurm
SPOOL_CTLD=/var/spool/slurmctld
SPOOL_D=/var/spool/slurmd
MYSQL_SOCK=/run/mysqld/mysqld.sock
# daemon name (= /proc/PID/comm) -> pid file
declare -A PIDFILE=(
  [munged]=/run/munge/munged.pid
  [mariadbd]=/run/mysqld/mysqld.pid
  [slurmdbd]=/run/slurmdbd.pid
  [slurmctld]=/run/slurmctld.pid
  [slurmd]=/run/slurmd.pid
)

log() { printf '[slurm-cluster %(%H:%M:%S)T] %s\n' -1 "$*" >&2; }
die() { log "ERROR: $*"; exit 1; }
# every SLURM/munge/MariaDB client call goes through this: a half-started daemon must not hang us
t() { timeout "$CMD_TIMEOUT" "$@"; }
# daemon launches get a longer one (they fork into their own session at once; a hang before that is an error)
launch() { timeout "$READY_TIMEOUT" "$@" || die "$1 failed to start (exit $?; see $LOGDIR/)"; }

need_root() { [[ $(id -u) == 0 ]] || die "must run as root (it installs packages and runs daemons)"; }

# ---------------------------------------------------------------------------------------------------
# processes

# alive PID: the process exists and is not a zombie (Z) or dead (X)
alive() {
  local st
  st=$(sed -E 's/^[0-9]+ \(.*\) (.).*/\1/' "/proc/$1/stat" 2>/dev/null) || return 1
  [[ -n $st && $st != Z && $st != X ]]
}

# daemon_pids NAME: live pids of daemon NAME: the one in its pid file, else any process whose comm is
# exactly NAME (a daemon whose pid file was lost still holds its port; starting a second one would fail)
daemon_pids() {
  local name=$1 f=${PIDFILE[$1]} pid p
  if [[ -s $f ]]; then
    pid=$(tr -dc 0-9 <"$f" || true)
    if [[ -n $pid ]] && alive "$pid" && [[ $(cat "/proc/$pid/comm" 2>/dev/null) == "$name" ]]; then
      echo "$pid"; return 0
    fi
  fi
  local found=1 comm
  for p in /proc/[0-9]*; do
    comm=""
    { read -r comm <"$p/comm"; } 2>/dev/null || true
    [[ $comm == "$name" ]] || continue
    pid=${p#/proc/}
    alive "$pid" && { echo "$pid"; found=0; }
  done
  return $found
}
running() { daemon_pids "$1" >/dev/null; }

stop_daemon() { # NAME
  local name=$1 pids pid i
  pids=$(daemon_pids "$name" || true)
  if [[ -n $pids ]]; then
    log "stopping $name (pid ${pids//$'\n'/ })"
    # shellcheck disable=SC2086
    kill $pids 2>/dev/null || true
    for i in $(seq 1 75); do
      pids=$(for pid in $pids; do alive "$pid" && echo "$pid"; done || true)
      [[ -z $pids ]] && break
      sleep 0.2
    done
    if [[ -n $pids ]]; then
      log "  $name did not exit in 15 s: SIGKILL"
      # shellcheck disable=SC2086
      kill -9 $pids 2>/dev/null || true
    fi
  fi
  rm -f "${PIDFILE[$name]}"
}

# wait_until DESCRIPTION CMD...: retry CMD (with a timeout) until it succeeds or READY_TIMEOUT passes
wait_until() {
  local what=$1; shift
  local end=$((SECONDS + READY_TIMEOUT))
  while ((SECONDS < end)); do
    t "$@" >/dev/null 2>&1 && return 0
    sleep 0.3
  done
  die "timed out after ${READY_TIMEOUT}s waiting for $what (logs: $LOGDIR/)"
}

# ---------------------------------------------------------------------------------------------------
# installation

PKGS=(munge slurmctld slurmd slurm-client)
[[ $WITH_DBD == 1 ]] && PKGS+=(slurmdbd mariadb-server)

install_packages() {
  local missing=() p
  for p in "${PKGS[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  ((${#missing[@]} == 0)) && return 0
  command -v apt-get >/dev/null || die "apt-get not found: this script supports Debian 12 (bookworm) only"
  log "installing ${missing[*]} (apt)"
  export DEBIAN_FRONTEND=noninteractive
  # Debian's maintainer scripts would try to start the services; there is no init system to do that.
  # policy-rc.d exiting 101 tells invoke-rc.d "not allowed": packages install, nothing starts.
  local own_policy=0
  if [[ ! -e /usr/sbin/policy-rc.d ]]; then
    printf '#!/bin/sh\nexit 101\n' >/usr/sbin/policy-rc.d
    chmod 0755 /usr/sbin/policy-rc.d
    own_policy=1
    trap 'rm -f /usr/sbin/policy-rc.d' EXIT
  fi
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  if ((own_policy)); then rm -f /usr/sbin/policy-rc.d; trap - EXIT; fi
}

# ---------------------------------------------------------------------------------------------------
# configuration

CONF_CHANGED=0
# write_file DEST MODE < content: replace DEST only when the content differs (keeps a rerun a no-op)
write_file() {
  local dest=$1 mode=$2 tmp
  tmp=$(mktemp)
  cat >"$tmp"
  if [[ -f $dest ]] && cmp -s "$tmp" "$dest"; then rm -f "$tmp"; return 0; fi
  install -D -m "$mode" "$tmp" "$dest"
  rm -f "$tmp"
  CONF_CHANGED=1
  log "wrote $dest"
}

node_name() { hostname -s 2>/dev/null || uname -n | cut -d. -f1; }

write_config() {
  NODE=$(node_name)
  CPUS=$(nproc)
  # 90 % of physical memory: leaves room for the daemons and the Snakemake controller
  MEM_MB=$(awk '/^MemTotal:/ { printf "%d", $2 / 1024 * 0.9 }' /proc/meminfo)
  # the node's name must resolve (slurmd looks itself up); NodeAddr pins traffic to loopback anyway
  getent hosts "$NODE" >/dev/null 2>&1 || echo "127.0.0.1 $NODE" >>/etc/hosts
  mkdir -p "$ETC" "$LOGDIR" "$SPOOL_CTLD" "$SPOOL_D"

  local accounting node_gres="" gres_types="" gres_name="gpu" i files=""
  if [[ $WITH_DBD == 1 ]]; then
    accounting="AccountingStorageType=accounting_storage/slurmdbd
AccountingStorageHost=127.0.0.1
AccountingStorageTRES=gres/gpu
JobAcctGatherType=jobacct_gather/linux
JobAcctGatherFrequency=30"
  else
    accounting="AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none"
  fi
  if ((FAKE_GPUS > 0)); then
    # Slurm only stat()s the device files (task/none: no device cgroup), one distinct file per GPU
    local devs=(/dev/null /dev/zero /dev/full /dev/random /dev/urandom /dev/tty)
    ((FAKE_GPUS <= ${#devs[@]})) || die "at most ${#devs[@]} fake GPUs"
    for ((i = 0; i < FAKE_GPUS; i++)); do files+="${files:+,}${devs[$i]}"; done
    gres_types="GresTypes=gpu"
    [[ -n $GPU_TYPE ]] && gres_name="gpu:$GPU_TYPE"
    node_gres="Gres=$gres_name:$FAKE_GPUS"
  fi

  write_file "$ETC/slurm.conf" 0644 <<EOF
# generated by scripts/slurm-cluster.sh -- edits are overwritten by the next start
ClusterName=$CLUSTER
SlurmctldHost=$NODE(127.0.0.1)
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
MpiDefault=none
MailProg=/bin/true
# no usable cgroups without systemd/in containers: track processes by parent pid, no task binding
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
# a node that was DOWN comes back by itself as soon as its slurmd registers
ReturnToService=2
SlurmctldPidFile=${PIDFILE[slurmctld]}
SlurmdPidFile=${PIDFILE[slurmd]}
SlurmdSpoolDir=$SPOOL_D
StateSaveLocation=$SPOOL_CTLD
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
# do not drain the node when the configured CPUs/memory differ from what slurmd detects
SlurmdParameters=config_overrides
# jobs that do not ask for memory get a per-CPU share instead of the whole node
DefMemPerCPU=$((MEM_MB / CPUS))
# finished jobs stay visible to squeue for 10 min (the plugin's squeue status mode needs >= 3 x its init wait)
MinJobAge=600
# reject, instead of leaving pending forever, jobs that can never fit (more CPUs/memory/GPUs than exist)
EnforcePartLimits=ALL
KillWait=5
$accounting
JobCompType=jobcomp/none
SlurmctldDebug=info
SlurmctldLogFile=$LOGDIR/slurmctld.log
SlurmdDebug=info
SlurmdLogFile=$LOGDIR/slurmd.log
$gres_types
# FirstJobId lives in its own file, rewritten at each clean start (see start_slurmctld)
Include $ETC/jobid.conf
NodeName=$NODE NodeAddr=127.0.0.1 CPUs=$CPUS RealMemory=$MEM_MB $node_gres State=UNKNOWN
PartitionName=$PARTITION Nodes=ALL Default=YES MaxTime=INFINITE State=UP
EOF

  [[ -s $ETC/jobid.conf ]] || echo "FirstJobId=1" >"$ETC/jobid.conf"

  if ((FAKE_GPUS > 0)); then
    write_file "$ETC/gres.conf" 0644 <<EOF
# generated by scripts/slurm-cluster.sh: fake GPU(s), no NVML autodetection
AutoDetect=off
NodeName=$NODE Name=gpu${GPU_TYPE:+ Type=$GPU_TYPE} File=$files
EOF
  elif [[ -e $ETC/gres.conf ]]; then
    rm -f "$ETC/gres.conf"; CONF_CHANGED=1
  fi

  if [[ $WITH_DBD == 1 ]]; then
    write_file "$ETC/slurmdbd.conf" 0600 <<EOF
# generated by scripts/slurm-cluster.sh
AuthType=auth/munge
DbdHost=localhost
DbdAddr=127.0.0.1
SlurmUser=root
DebugLevel=info
LogFile=$LOGDIR/slurmdbd.log
PidFile=${PIDFILE[slurmdbd]}
StorageType=accounting_storage/mysql
StorageHost=localhost
StorageLoc=slurm_acct_db
StorageUser=slurm
StoragePass=$DB_PASS
EOF
  fi
}

# ---------------------------------------------------------------------------------------------------
# daemons

start_munge() {
  if running munged && t bash -c 'munge -n | unmunge' >/dev/null 2>&1; then return 0; fi
  stop_daemon munged
  if [[ ! -s /etc/munge/munge.key ]]; then
    log "creating munge key"
    mkdir -p /etc/munge
    dd if=/dev/urandom of=/etc/munge/munge.key bs=1024 count=1 status=none
  fi
  mkdir -p /var/lib/munge /var/log/munge
  chown -R munge:munge /etc/munge /var/lib/munge /var/log/munge
  chmod 0700 /etc/munge
  chmod 0400 /etc/munge/munge.key
  install -d -o munge -g munge -m 0755 /run/munge
  rm -f /run/munge/munge.socket.2 /run/munge/munge.socket.2.lock
  log "starting munged"
  launch runuser -u munge -- /usr/sbin/munged
  wait_until munge bash -c 'munge -n | unmunge'
}

start_mariadb() {
  if running mariadbd && t mariadb --socket="$MYSQL_SOCK" -e 'select 1' >/dev/null 2>&1; then return 0; fi
  stop_daemon mariadbd
  install -d -o mysql -g mysql -m 0755 /run/mysqld
  if [[ ! -d /var/lib/mysql/mysql ]]; then
    log "initialising MariaDB data directory"
    mariadb-install-db --user=mysql --datadir=/var/lib/mysql >/dev/null
  fi
  log "starting mariadbd"
  # mariadbd does not daemonize itself: own session, no terminal, output to a log
  setsid /usr/sbin/mariadbd --user=mysql --pid-file="${PIDFILE[mariadbd]}" --socket="$MYSQL_SOCK" \
    --skip-networking --innodb-buffer-pool-size=128M --innodb-lock-wait-timeout=900 \
    </dev/null >>"$LOGDIR/mariadbd.log" 2>&1 &
  wait_until mariadb mariadb --socket="$MYSQL_SOCK" -e 'select 1'
  t mariadb --socket="$MYSQL_SOCK" -e "
    CREATE DATABASE IF NOT EXISTS slurm_acct_db;
    CREATE USER IF NOT EXISTS 'slurm'@'localhost' IDENTIFIED BY '$DB_PASS';
    ALTER USER 'slurm'@'localhost' IDENTIFIED BY '$DB_PASS';
    GRANT ALL ON slurm_acct_db.* TO 'slurm'@'localhost';
    FLUSH PRIVILEGES;"
}

start_slurmdbd() {
  running slurmdbd && return 0
  log "starting slurmdbd"
  launch slurmdbd
  # the first start creates the accounting tables (several seconds)
  wait_until slurmdbd sacctmgr -n list cluster
}

CTLD_RESTARTED=0
start_slurmctld() {
  if running slurmctld && t scontrol ping >/dev/null 2>&1; then return 0; fi
  stop_daemon slurmctld
  # -c: forget saved jobs. After an unclean stop slurmctld would otherwise bring back finished or killed
  # jobs as RUNNING "ghosts" that hold the node's CPUs/GPU.
  # A clean start would also restart job ids at 1, and `sacct -j N` would then mix old and new jobs:
  # continue after the highest id the accounting database knows.
  local last=""
  if [[ $WITH_DBD == 1 ]]; then
    last=$(t mariadb --socket="$MYSQL_SOCK" -N -e \
      "SELECT IFNULL(MAX(id_job), 0) FROM slurm_acct_db.${CLUSTER}_job_table" 2>/dev/null || true)
  fi
  [[ $last =~ ^[0-9]+$ ]] && echo "FirstJobId=$((last + 1))" >"$ETC/jobid.conf"
  log "starting slurmctld (clean state, $(cat "$ETC/jobid.conf"))"
  launch slurmctld -c
  CTLD_RESTARTED=1
  wait_until slurmctld scontrol ping
}

start_slurmd() {
  running slurmd && return 0
  log "starting slurmd"
  launch slurmd -N "$NODE"
}

node_state() { t sinfo -h -N -n "$NODE" -o '%T' 2>/dev/null | head -n1 || true; }

# cancel_jobs WHY: cancel every job in the queue
cancel_jobs() {
  local ids
  ids=$(t squeue -h -o '%i' 2>/dev/null || true)
  [[ -z $ids ]] && return 0
  log "cancelling $1: ${ids//$'\n'/ }"
  # shellcheck disable=SC2086
  t scancel $ids >/dev/null 2>&1 || true
}

wait_node_ready() {
  local st end=$((SECONDS + READY_TIMEOUT)) resumed=0
  while ((SECONDS < end)); do
    st=$(node_state)
    case $st in
      idle | mixed | allocated) return 0 ;;
      down* | drain* | fail*)
        # left DOWN/DRAINED by an earlier unclean stop (or a killed job step): put it back in service
        ((resumed)) || log "node $NODE is '$st': resuming it"
        resumed=1
        t scontrol update NodeName="$NODE" State=RESUME >/dev/null 2>&1 || true
        ;;
    esac
    running slurmd || die "slurmd died (see $LOGDIR/slurmd.log)"
    running slurmctld || die "slurmctld died (see $LOGDIR/slurmctld.log)"
    sleep 0.3
  done
  t sinfo -N -l >&2 || true
  tail -n 20 "$LOGDIR/slurmctld.log" "$LOGDIR/slurmd.log" >&2 || true
  die "node $NODE not ready after ${READY_TIMEOUT}s (last state: '${st:-?}')"
}

do_start() {
  need_root
  local t0=$SECONDS
  install_packages
  write_config
  if ((CONF_CHANGED)) && { running slurmctld || running slurmd || running slurmdbd; }; then
    log "configuration changed: restarting the SLURM daemons"
    stop_daemon slurmd
    stop_daemon slurmctld
    stop_daemon slurmdbd
  fi
  start_munge
  if [[ $WITH_DBD == 1 ]]; then
    start_mariadb
    start_slurmdbd
  fi
  start_slurmctld
  start_slurmd
  if ((CTLD_RESTARTED)); then cancel_jobs "jobs left from an earlier start"; fi
  wait_node_ready
  local gres
  gres=$(t sinfo -h -N -n "$NODE" -o '%G' 2>/dev/null | head -n1 || true)
  echo "slurm-cluster: ready in $((SECONDS - t0))s: node=$NODE state=$(node_state) cpus=$CPUS" \
    "mem=${MEM_MB}MB gres=${gres:-none} partition=$PARTITION accounting=$([[ $WITH_DBD == 1 ]] && echo slurmdbd || echo none)"
}

# clean: a running cluster with an empty queue and an idle node (what a test session wants to start from)
do_clean() {
  do_start >/dev/null
  cancel_jobs "all jobs (clean)"
  local end=$((SECONDS + READY_TIMEOUT))
  while ((SECONDS < end)); do
    [[ -z $(t squeue -h -o '%i' 2>/dev/null || echo busy) && $(node_state) == idle ]] && break
    sleep 0.3
  done
  [[ $(node_state) == idle ]] || die "node $NODE not idle after cancelling all jobs (state '$(node_state)')"
  echo "slurm-cluster: clean: queue empty, node $NODE idle"
}

do_stop() {
  need_root
  if running slurmctld; then
    # jobs would otherwise outlive their slurmd as orphaned slurmstepd processes
    t scancel --quiet --full -u root >/dev/null 2>&1 || true
    t scancel --quiet >/dev/null 2>&1 || true
  fi
  stop_daemon slurmd
  # job steps whose slurmd is gone (a stop means: no cluster, no jobs)
  local p
  for p in $(daemon_pids slurmstepd 2>/dev/null || true); do kill "$p" 2>/dev/null || true; done
  stop_daemon slurmctld
  stop_daemon slurmdbd
  stop_daemon mariadbd
  stop_daemon munged
  echo "slurm-cluster: stopped"
}

do_status() {
  local name rc=0 pids
  local names=(munged)
  [[ $WITH_DBD == 1 ]] && names+=(mariadbd slurmdbd)
  names+=(slurmctld slurmd)
  for name in "${names[@]}"; do
    if pids=$(daemon_pids "$name"); then
      printf '%-10s running (pid %s)\n' "$name" "${pids//$'\n'/ }"
    else
      printf '%-10s not running\n' "$name"; rc=3
    fi
  done
  if command -v sinfo >/dev/null && running slurmctld; then
    t sinfo -N -o '%N %P %T %c %m %G' 2>&1 || rc=3
    t squeue 2>&1 || true
  fi
  return $rc
}

# PIDFILE has no entry for slurmstepd: give it one so daemon_pids can be used on it
PIDFILE[slurmstepd]=/nonexistent

case $ACTION in
  start) do_start ;;
  stop) do_stop ;;
  status) do_status ;;
  restart) do_stop; do_start ;;
  clean) do_clean ;;
  -h | --help | help) sed -n '2,10p' "$0" | sed 's/^# \{0,1\}//' ;;
  *) die "usage: $0 [start|stop|status|restart|clean]" ;;
esac
