#!/usr/bin/env bash
# make citus-cluster: relay's own Citus cluster on this machine, for the
# tests that run relay on distributed tables: a coordinator and two worker
# nodes, each a PostgreSQL 15 cluster of Debian's postgresql-common
# (pg_createcluster, so pg_lsclusters lists them and their logs are in
# /var/log/postgresql) on a loopback port, never the machine's main one.
#
#   internal/citus/cluster.sh start    create what is missing, start what is stopped,
#                                      register the workers (the default; idempotent)
#   internal/citus/cluster.sh stop     stop the three nodes (data kept)
#   internal/citus/cluster.sh remove   stop them and delete their data
#   internal/citus/cluster.sh status   each node's state, and the database URL
#
# CITUS_PORT      the coordinator's port (default 5440); worker n is CITUS_PORT+n
# CITUS_DATABASE  the database relay uses, on every node (default relay)
#
# Every node: shared_preload_libraries = 'citus', trust authentication on
# loopback and the local socket (a test cluster: no passwords), a superuser
# role root, start.conf manual (the machine's boot does not start it), and
# the citus extension in CITUS_DATABASE. Needs root (pg_createcluster) and
# Citus installed (make citus).
set -euo pipefail

port=${CITUS_PORT:-5440}
db=${CITUS_DATABASE:-relay}
[[ $db =~ ^[a-z_][a-z0-9_]*$ ]] || { echo "citus-cluster: CITUS_DATABASE=$db: want a plain lower-case name" >&2; exit 2; }
version=15
names=(relay_citus_coordinator relay_citus_worker1 relay_citus_worker2)
ports=("$port" $((port + 1)) $((port + 2)))

# state NAME: online, down or absent.
state() {
  local line
  line=$(pg_lsclusters --no-header 2>/dev/null | awk -v v="$version" -v n="$1" '$1 == v && $2 == n { print $4 }')
  echo "${line:-absent}"
}

psql_node() { # PORT DB SQL...
  local p=$1 d=$2
  shift 2
  PGOPTIONS="-c client_min_messages=warning" psql -X -q -v ON_ERROR_STOP=1 -h 127.0.0.1 -p "$p" -U root -d "$d" -At "$@"
}

start() {
  local libdir
  libdir=$(/usr/lib/postgresql/$version/bin/pg_config --pkglibdir)
  [ -f "$libdir/citus.so" ] || { echo "citus-cluster: Citus is not installed in $libdir: run make citus" >&2; exit 1; }
  for i in 0 1 2; do
    local name=${names[$i]} p=${ports[$i]}
    case $(state "$name") in
    absent)
      if pg_lsclusters --no-header | awk '{ print $3 }' | grep -qx "$p"; then
        echo "citus-cluster: port $p is another cluster's (pg_lsclusters); set CITUS_PORT" >&2
        exit 1
      fi
      pg_createcluster --quiet --port "$p" --start-conf manual "$version" "$name" -- --auth=trust >/dev/null
      printf "%s\n" "# relay's Citus cluster (internal/citus/cluster.sh)" "shared_preload_libraries = 'citus'" \
        "listen_addresses = '127.0.0.1'" >"/etc/postgresql/$version/$name/conf.d/relay_citus.conf"
      echo "citus-cluster: created $name on port $p"
      ;&
    down)
      pg_ctlcluster --skip-systemctl-redirect "$version" "$name" start
      echo "citus-cluster: started $name on port $p"
      ;;
    online) ;;
    esac
    for _ in $(seq 1 30); do
      pg_isready -q -h 127.0.0.1 -p "$p" && break
      sleep 1
    done
    pg_isready -q -h 127.0.0.1 -p "$p" || { echo "citus-cluster: $name does not answer on port $p" >&2; exit 1; }
    # The role and database, as the cluster's owner over the local socket.
    if [ "$(su postgres -c "psql -X -At -p $p -d postgres -c \"SELECT count(*) FROM pg_roles WHERE rolname = 'root'\"")" = 0 ]; then
      su postgres -c "psql -X -q -p $p -d postgres -c 'CREATE ROLE root SUPERUSER LOGIN'"
    fi
    if [ "$(psql_node "$p" postgres -c "SELECT count(*) FROM pg_database WHERE datname = '$db'")" = 0 ]; then
      psql_node "$p" postgres -c "CREATE DATABASE \"$db\""
    fi
    psql_node "$p" "$db" -c "CREATE EXTENSION IF NOT EXISTS citus"
  done
  # The coordinator knows itself and its two workers.
  psql_node "$port" "$db" -c "SELECT citus_set_coordinator_host('127.0.0.1', $port)" >/dev/null
  for i in 1 2; do
    if [ "$(psql_node "$port" "$db" -c "SELECT count(*) FROM pg_dist_node WHERE nodename = '127.0.0.1' AND nodeport = ${ports[$i]}")" = 0 ]; then
      psql_node "$port" "$db" -c "SELECT citus_add_node('127.0.0.1', ${ports[$i]})" >/dev/null
      echo "citus-cluster: added worker 127.0.0.1:${ports[$i]}"
    fi
  done
  status
}

stop() {
  for name in "${names[@]}"; do
    if [ "$(state "$name")" = online ]; then
      pg_ctlcluster --skip-systemctl-redirect "$version" "$name" stop
      echo "citus-cluster: stopped $name"
    fi
  done
}

remove() {
  for name in "${names[@]}"; do
    if [ "$(state "$name")" != absent ]; then
      pg_dropcluster --stop "$version" "$name"
      echo "citus-cluster: removed $name"
    fi
  done
}

status() {
  for i in 0 1 2; do
    echo "${names[$i]} 127.0.0.1:${ports[$i]} $(state "${names[$i]}")"
  done
  if [ "$(state "${names[0]}")" = online ]; then
    psql_node "$port" "$db" -c "SELECT citus_version()"
    psql_node "$port" "$db" -F ' ' -c "SELECT 'node', nodename || ':' || nodeport, noderole, CASE WHEN groupid = 0 THEN 'coordinator' ELSE 'worker' END FROM pg_dist_node ORDER BY nodeport"
    echo "CITUS_DATABASE_URL=postgres://root@127.0.0.1:$port/$db?sslmode=disable"
  fi
}

case ${1:-start} in
start) start ;;
stop) stop ;;
remove) remove ;;
status) status ;;
*) echo "usage: $0 [start|stop|remove|status]" >&2; exit 2 ;;
esac
