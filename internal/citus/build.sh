#!/usr/bin/env bash
# make citus: builds Citus from the source in internal/citus/source
# (README.md there: the tarball of tag v13.2.2 and a patch for PostgreSQL
# 15.20) once
# into a cache, and installs it into PostgreSQL 15's lib and extension
# folders. A second run, with the same source and the same PostgreSQL,
# compiles nothing and installs nothing: it says the build is cached and
# the installed citus.so is the cached one.
#
# CITUS_SRC    the folder holding citus-13.2.2.tar.gz and the patch
#              (default internal/citus/source)
# CITUS_CACHE  where the build is kept (default $HOME/.cache/relay/citus)
# PG_CONFIG    PostgreSQL 15's pg_config (default /usr/lib/postgresql/15/bin/pg_config)
#
# Installs Debian's build dependencies when missing (root). The compile
# runs under nice -n 19: it takes about 4 minutes on 2 cores.
set -euo pipefail
cd "$(dirname "$0")/../.."

version=13.2.2
src=${CITUS_SRC:-$PWD/internal/citus/source}
cache=${CITUS_CACHE:-$HOME/.cache/relay/citus}
pg_config=${PG_CONFIG:-/usr/lib/postgresql/15/bin/pg_config}
tarball=$src/citus-$version.tar.gz
patchfile=$src/pg15.20-have_createdb_privilege.patch

[ -f "$tarball" ] || { echo "citus: $tarball not found (set CITUS_SRC)" >&2; exit 1; }
[ -f "$patchfile" ] || { echo "citus: $patchfile not found (set CITUS_SRC)" >&2; exit 1; }

missing=()
for pkg in postgresql-server-dev-15 libkrb5-dev liblz4-dev libzstd-dev libcurl4-openssl-dev; do
  dpkg -s "$pkg" >/dev/null 2>&1 || missing+=("$pkg")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "citus: installing ${missing[*]}"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
fi

# The build is keyed by what goes into it: the source, the patch and the
# PostgreSQL it compiles against.
pgversion=$("$pg_config" --version)
key=$(cat "$tarball" "$patchfile" | sha256sum | cut -c1-12)-$(echo "$pgversion" | tr -c 'A-Za-z0-9.\n' '_')
build=$cache/$version-$key
dir=$build/citus-$version

if [ -f "$build/.built" ]; then
  echo "citus: build cached in $build"
else
  start=$(date +%s)
  rm -rf "$build" && mkdir -p "$build"
  tar xzf "$tarball" -C "$build"
  (cd "$dir" && patch -s -p1 < "$patchfile")
  echo "citus: building Citus $version against $pgversion in $build"
  (cd "$dir" && nice -n 19 ./configure PG_CONFIG="$pg_config" >"$build/configure.log" 2>&1) ||
    { tail -n 30 "$build/configure.log" >&2; exit 1; }
  (cd "$dir" && nice -n 19 make -j2 with_llvm=no >"$build/make.log" 2>&1) ||
    { tail -n 30 "$build/make.log" >&2; exit 1; }
  touch "$build/.built"
  echo "citus: built in $(( $(date +%s) - start ))s"
fi

libdir=$("$pg_config" --pkglibdir)
extdir=$("$pg_config" --sharedir)/extension
if cmp -s "$dir/src/backend/distributed/citus.so" "$libdir/citus.so" && [ -f "$extdir/citus.control" ]; then
  echo "citus: installed in $libdir and $extdir"
else
  (cd "$dir" && make install with_llvm=no >"$build/install.log" 2>&1) || { tail -n 30 "$build/install.log" >&2; exit 1; }
  echo "citus: installed Citus $version into $libdir and $extdir"
fi
