#!/usr/bin/env bash
# Builds a bundle for measuring relay on a machine with many cores and no package registry:
# Debian's PostgreSQL 15 server and client binaries with the shared libraries they load, the relay
# binary built from the current checkout, and a corpus generator, packed into DIR/bundle.tar.xz next to
# scale.sh. Run from the project root: bash internal/bench/scale/bundle.sh .scale
# Then keep DIR out of git (echo /.scale/ >> .git/info/exclude), copy it to the machine and run there:
#   bash .scale/scale.sh 55432 4000 "1 2 4 8 12"   (internal/bench/scale/README.md)
set -euo pipefail
DIR=${1:?usage: bundle.sh DIR}
HERE=$(cd "$(dirname "$0")" && pwd)
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
mkdir -p "$T/root/usr/lib/postgresql/15/bin" "$T/root/usr/share/postgresql" "$T/libs" "$T/bin"
for b in postgres initdb pg_ctl psql pg_isready createdb dropdb; do cp -a /usr/lib/postgresql/15/bin/$b "$T/root/usr/lib/postgresql/15/bin/"; done
cp -a /usr/lib/postgresql/15/lib "$T/root/usr/lib/postgresql/15/"
rm -rf "$T/root/usr/lib/postgresql/15/lib/bitcode" "$T/root/usr/lib/postgresql/15/lib/"llvmjit*
cp -a /usr/share/postgresql/15 "$T/root/usr/share/postgresql/"
{ for f in "$T"/root/usr/lib/postgresql/15/bin/* "$T"/root/usr/lib/postgresql/15/lib/*.so; do ldd "$f" 2>/dev/null; done; } |
  awk '/=>/{print $3}' | sort -u | grep -v -E 'libc\.so|libm\.so|ld-linux|libpthread|libdl\.so|librt\.so' |
  while read -r l; do cp -L "$l" "$T/libs/"; done
CGO_ENABLED=0 go build -ldflags='-s -w' -o "$T/bin/relay" ./cmd/relay
cp "$HERE/corpus.py" "$T/bin/"
mkdir -p "$DIR"
tar -C "$T" -cf - root libs bin | xz -T2 -6 >"$DIR/bundle.tar.xz"
cp "$HERE/scale.sh" "$DIR/"
du -sh "$DIR"
