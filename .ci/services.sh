#!/usr/bin/env bash
# Starts the services the tests use, idempotently, on a Debian machine where
# we are root:
#   - PostgreSQL on 127.0.0.1:5432 (trust auth, database "test");
#   - Redis on 127.0.0.1:6379 and etcd on 127.0.0.1:2379;
#   - a Docker engine of our own on unix:///tmp/sokovan-docker/docker.sock,
#     for internal/agent/runtime/docker's tests;
#   - chromium, which internal/web's browser tests drive (nothing to start);
#   - a one-node SLURM cluster (munge, slurmd, slurmctld, partition "debug")
#     for internal/agent/runtime/slurm's tests;
#   - promtool (Debian's prometheus package), which checks the /metrics
#     exposition in internal/api's tests (nothing to start);
#   - iproute2 and curl for internal/cluster/multihost, whose hosts are
#     network namespaces on a bridge (nothing to start);
#   - systemd-analyze (Debian's systemd package), which checks the units in
#     deploy/systemd (nothing to start).
# Installs the packages when they are missing.
set -euo pipefail

wait_for() {
  for _ in $(seq 150); do eval "$1" >/dev/null 2>&1 && return 0; sleep 0.2; done
  echo "timed out waiting for: $1" >&2; return 1
}

start_postgres() {
  if pg_isready -h 127.0.0.1 -p 5432 >/dev/null 2>&1; then return; fi
  if ! command -v pg_ctlcluster >/dev/null 2>&1; then
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq -o DPkg::Lock::Timeout=300 postgresql
  fi
  ver=$(ls /etc/postgresql | sort -V | tail -1)
  pg_ctlcluster --skip-systemctl-redirect "$ver" main start || true
  wait_for "pg_isready -h 127.0.0.1 -p 5432"
  # Trust auth on loopback, as the tests connect without a password.
  if ! psql -h 127.0.0.1 -U postgres -d postgres -tAc 'select 1' >/dev/null 2>&1; then
    hba=/etc/postgresql/$ver/main/pg_hba.conf
    sed -i -E 's/^(host\s+all\s+all\s+127\.0\.0\.1\/32\s+)\S+/\1trust/' "$hba"
    pg_ctlcluster --skip-systemctl-redirect "$ver" main reload
  fi
  psql -h 127.0.0.1 -U postgres -d postgres -tAc "select 1 from pg_database where datname='test'" | grep -q 1 ||
    psql -h 127.0.0.1 -U postgres -d postgres -c 'create database test'
}

start_redis() {
  if redis-cli -h 127.0.0.1 -p 6379 ping 2>/dev/null | grep -q PONG; then return; fi
  if ! command -v redis-server >/dev/null 2>&1; then
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq -o DPkg::Lock::Timeout=300 redis-server
  fi
  mkdir -p /tmp/sokovan-redis
  redis-server --daemonize yes --bind 127.0.0.1 --port 6379 --save '' --appendonly no \
    --dir /tmp/sokovan-redis --logfile /tmp/sokovan-redis/redis.log
  wait_for "redis-cli -h 127.0.0.1 -p 6379 ping | grep -q PONG"
}

start_etcd() {
  if etcdctl --endpoints=http://127.0.0.1:2379 endpoint health >/dev/null 2>&1; then return; fi
  if ! command -v etcd >/dev/null 2>&1; then
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq -o DPkg::Lock::Timeout=300 etcd-server etcd-client
  fi
  mkdir -p /tmp/sokovan-etcd
  nohup etcd --name ci --data-dir /tmp/sokovan-etcd/data --listen-client-urls http://127.0.0.1:2379 \
    --advertise-client-urls http://127.0.0.1:2379 --listen-peer-urls http://127.0.0.1:2380 \
    --initial-advertise-peer-urls http://127.0.0.1:2380 --initial-cluster ci=http://127.0.0.1:2380 \
    >/tmp/sokovan-etcd/etcd.log 2>&1 &
  wait_for "etcdctl --endpoints=http://127.0.0.1:2379 endpoint health"
}

# The engine is private to the tests: its own data root, exec root, pid file
# and socket, so it never meets a system dockerd. The machines have no
# iptables rules to spare and no overlay support, hence no bridge, no NAT and
# the vfs storage driver; kernels run with network "none" anyway.
DOCKER_BASE=/tmp/sokovan-docker
DOCKER_SOCK=unix://$DOCKER_BASE/docker.sock

docker_up() { DOCKER_HOST=$DOCKER_SOCK docker info >/dev/null 2>&1; }

# alive PID: the process exists and is not a zombie. A killed engine can
# linger as one where PID 1 does not reap orphans, and kill -0 counts it.
alive() {
  local stat
  stat=$(ps -o stat= -p "$1" 2>/dev/null) && [ -n "$stat" ] && [ "${stat:0:1}" != Z ]
}

start_docker() {
  if docker_up; then return; fi
  # docker.io brings dockerd, containerd, runc and the docker client. The
  # machine image may ship a client alone, so test for the daemon.
  if ! command -v dockerd >/dev/null 2>&1; then
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq -o DPkg::Lock::Timeout=300 docker.io
  fi
  mkdir -p "$DOCKER_BASE/root" "$DOCKER_BASE/exec"
  # A dead engine's pid file would make dockerd refuse to start.
  if [ -f "$DOCKER_BASE/docker.pid" ] && ! alive "$(cat "$DOCKER_BASE/docker.pid")"; then
    rm -f "$DOCKER_BASE/docker.pid"
  fi
  if [ ! -f "$DOCKER_BASE/docker.pid" ]; then
    # setsid: the engine outlives this script and is not in its process group.
    setsid dockerd --iptables=false --ip-masq=false --bridge=none --storage-driver=vfs \
      --data-root "$DOCKER_BASE/root" --exec-root "$DOCKER_BASE/exec" \
      -H "$DOCKER_SOCK" --pidfile "$DOCKER_BASE/docker.pid" \
      >>"$DOCKER_BASE/dockerd.log" 2>&1 </dev/null &
  fi
  if ! wait_for docker_up; then
    echo "dockerd did not come up; the end of $DOCKER_BASE/dockerd.log:" >&2
    tail -n 30 "$DOCKER_BASE/dockerd.log" >&2 || true
    return 1
  fi
}

install_chromium() {
  if command -v chromium >/dev/null 2>&1; then return; fi
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq -o DPkg::Lock::Timeout=300 chromium
}

# One node, this host, as root without systemd; the configuration is
# .ci/slurm/slurm.conf.in with this machine's name, CPUs and memory from
# `slurmd -C`. There is no accounting (no slurmdbd), so sacct answers
# nothing here.
slurm_up() { scontrol ping 2>/dev/null | grep -q 'is UP'; }

start_slurm() {
  # sbatch --export=NONE has slurmd load the job user's login environment
  # (su - root), and on these machines root's .bashrc runs pyenv, whose
  # rehash waits 60 s on a lock a killed rehash left behind: every job
  # launch then stalls past the tests' bounds. A lock older than a minute
  # is such a leftover.
  find "${HOME:-/root}/.pyenv/shims" -maxdepth 1 -name .pyenv-shim -mmin +1 -delete 2>/dev/null || true
  if slurm_up && sinfo -h -o %t 2>/dev/null | grep -qE '^(idle|mix|alloc)'; then return; fi
  if ! command -v slurmctld >/dev/null 2>&1 || ! command -v slurmd >/dev/null 2>&1 || ! command -v munged >/dev/null 2>&1; then
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq -o DPkg::Lock::Timeout=300 \
      slurm-wlm slurmctld slurmd slurm-client munge
  fi
  local here host cpus mem
  here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
  host=$(hostname -s)
  cpus=$(slurmd -C | sed -n 's/.*CPUs=\([0-9]*\).*/\1/p' | head -1)
  mem=$(slurmd -C | sed -n 's/.*RealMemory=\([0-9]*\).*/\1/p' | head -1)
  mkdir -p /etc/slurm /var/spool/slurmctld /var/spool/slurmd /var/log/slurm /run/munge
  sed -e "s/@HOST@/$host/g" -e "s/@CPUS@/$cpus/g" -e "s/@MEM@/$mem/g" "$here/slurm/slurm.conf.in" >/etc/slurm/slurm.conf
  if ! pgrep -x munged >/dev/null; then
    [ -s /etc/munge/munge.key ] || mungekey --create --keyfile=/etc/munge/munge.key 2>/dev/null ||
      dd if=/dev/urandom of=/etc/munge/munge.key bs=1024 count=1 2>/dev/null
    chown -R munge:munge /etc/munge /run/munge /var/lib/munge /var/log/munge 2>/dev/null || true
    chmod 0400 /etc/munge/munge.key
    # As the munge user, which munged insists on unless --force.
    su -s /bin/sh munge -c 'munged' 2>/dev/null || munged --force
  fi
  wait_for "munge -n | unmunge"
  if ! pgrep -x slurmd >/dev/null; then setsid slurmd </dev/null >/dev/null 2>&1; fi
  if ! pgrep -x slurmctld >/dev/null; then setsid slurmctld </dev/null >/dev/null 2>&1; fi
  if ! wait_for slurm_up; then
    echo "slurmctld did not come up; the end of its log:" >&2
    tail -n 30 /var/log/slurm/slurmctld.log >&2 || true
    return 1
  fi
  # A node left DOWN by an earlier run (or unknown after a restart) takes
  # no jobs until it is resumed.
  scontrol update nodename="$host" state=resume >/dev/null 2>&1 || true
  wait_for "sinfo -h -o %t | grep -qE '^(idle|mix|alloc)'"
}

# Debian ships promtool only inside the prometheus package; the server it
# also brings is not started (no systemd here, and nothing needs it).
install_promtool() {
  if command -v promtool >/dev/null 2>&1; then return; fi
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends -o DPkg::Lock::Timeout=300 prometheus
}

install_systemd_analyze() {
  if command -v systemd-analyze >/dev/null 2>&1; then return; fi
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends -o DPkg::Lock::Timeout=300 systemd
}

install_netns_tools() {
  if command -v ip >/dev/null 2>&1 && command -v curl >/dev/null 2>&1; then return; fi
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends -o DPkg::Lock::Timeout=300 iproute2 curl
}

case "${1:-start}" in
  start)
    start_postgres
    start_redis
    start_etcd
    start_docker
    install_chromium
    start_slurm
    install_promtool
    install_netns_tools
    install_systemd_analyze
    ;;
  slurm) start_slurm ;;
  *) echo "usage: $0 [start|slurm]" >&2; exit 2 ;;
esac
