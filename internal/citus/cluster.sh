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
# CITUS_WORKERS   the worker nodes start makes sure of (default 2): a larger
#                 number adds workers to a running cluster (their shards
#                 come with citus_rebalance_start, docs/citus.md); stop,
#                 remove and status act on every worker node there is
# CITUS_DATABASE  the database relay uses, on every node (default relay)
#
# A cluster on another port than 5440 is named after it
# (relay_citus_PORT_coordinator, ...), so two can run side by side.
#
# Every node: shared_preload_libraries = 'citus', wal_level logical (shards
# move online), trust authentication on
# loopback and the local socket (a test cluster: no passwords), a superuser
# role root, start.conf manual (the machine's boot does not start it), and
# the citus extension in CITUS_DATABASE. Needs root (pg_createcluster) and
# Citus installed (make citus).
set -euo pipefail

port=${CITUS_PORT:-5440}
db=${CITUS_DATABASE:-relay}
[[ $db =~ ^[a-z_][a-z0-9_]*$ ]] || { echo "citus-cluster: CITUS_DATABASE=$db: want a plain lower-case name" >&2; exit 2; }
version=15
workers=${CITUS_WORKERS:-2}
[[ $workers =~ ^[1-9]$ ]] || { echo "citus-cluster: CITUS_WORKERS=$workers: want 1 to 9" >&2; exit 2; }
base=relay_citus
[ "$port" = 5440 ] || base=relay_citus_$port
names=("${base}_coordinator")
ports=("$port")
for i in $(seq 1 "$workers"); do
  names+=("${base}_worker$i")
  ports+=($((port + i)))
done

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
  for i in "${!names[@]}"; do
    local name=${names[$i]} p=${ports[$i]}
    case $(state "$name") in
    absent)
      if pg_lsclusters --no-header | awk '{ print $3 }' | grep -qx "$p"; then
        echo "citus-cluster: port $p is another cluster's (pg_lsclusters); set CITUS_PORT" >&2
        exit 1
      fi
      pg_createcluster --quiet --port "$p" --start-conf manual "$version" "$name" -- --auth=trust >/dev/null
      # wal_level logical: Citus moves shards online (citus_rebalance_start,
      # isolate_tenant_to_new_shard) by logical replication, splitting
      # through its own output plugin, which PostgreSQL 15.20 must be told
      # it may load (output_plugin_libraries).
      printf "%s\n" "# relay's Citus cluster (internal/citus/cluster.sh)" "shared_preload_libraries = 'citus'" \
        "listen_addresses = '127.0.0.1'" "wal_level = logical" "output_plugin_libraries = 'pgoutput, test_decoding, citus'" \
        >"/etc/postgresql/$version/$name/conf.d/relay_citus.conf"
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
  # The coordinator knows itself and its workers.
  psql_node "$port" "$db" -c "SELECT citus_set_coordinator_host('127.0.0.1', $port)" >/dev/null
  for i in $(seq 1 "$workers"); do
    if [ "$(psql_node "$port" "$db" -c "SELECT count(*) FROM pg_dist_node WHERE nodename = '127.0.0.1' AND nodeport = ${ports[$i]}")" = 0 ]; then
      psql_node "$port" "$db" -c "SELECT citus_add_node('127.0.0.1', ${ports[$i]})" >/dev/null
      echo "citus-cluster: added worker 127.0.0.1:${ports[$i]}"
    fi
  done
  status
}

# every_node: the cluster's nodes there are, whatever CITUS_WORKERS says.
every_node() {
  pg_lsclusters --no-header 2>/dev/null | awk -v v="$version" -v b="$base" \
    '$1 == v && ($2 == b "_coordinator" || $2 ~ "^" b "_worker[1-9]$") { print $2 }'
}

stop() {
  for name in $(every_node); do
    if [ "$(state "$name")" = online ]; then
      pg_ctlcluster --skip-systemctl-redirect "$version" "$name" stop
      echo "citus-cluster: stopped $name"
    fi
  done
}

remove() {
  for name in $(every_node); do
    if [ "$(state "$name")" != absent ]; then
      pg_dropcluster --stop "$version" "$name"
      echo "citus-cluster: removed $name"
    fi
  done
}

status() {
  for name in $(every_node); do
    echo "$name 127.0.0.1:$(pg_lsclusters --no-header | awk -v v="$version" -v n="$name" '$1 == v && $2 == n { print $3 }') $(state "$name")"
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
