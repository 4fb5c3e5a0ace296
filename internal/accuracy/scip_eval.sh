#!/usr/bin/env bash
# make eval-scip: relay analyze --scip against the indexers' own call edges
# and against lexical references, on real packages nobody here wrote
# (docs/accuracy.md): Debian's python3-oauthlib and python3-pyparsing, and
# npm's commander 14.0.3 and zod 4.6.7 (src/v3). Indexes with the pinned
# scip-python and scip-typescript (make scip-indexers). Work directory:
# $SCIP_EVAL_DIR (default /tmp/relay-scip-eval); nothing is written in the
# repository.
set -euo pipefail
cd "$(dirname "$0")/../.."
repo=$PWD
bin=$repo/internal/scipindex/testdata/indexers/node_modules/.bin
work=${SCIP_EVAL_DIR:-/tmp/relay-scip-eval}
mkdir -p "$work"
cd "$work"

for pkg in python3-oauthlib python3-pyparsing; do
  dpkg -s "$pkg" >/dev/null 2>&1 || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$pkg" >/dev/null; }
done

prepare_py() { # name
  rm -rf "py-$1" && mkdir -p "py-$1" && cp -r "/usr/lib/python3/dist-packages/$1" "py-$1/"
  find "py-$1" -name __pycache__ -prune -exec rm -rf {} +
}
prepare_py oauthlib
prepare_py pyparsing

[ -f commander-14.0.3.tgz ] || npm pack commander@14.0.3 --silent >/dev/null
[ -f zod-4.6.7.tgz ] || npm pack zod@4.6.7 --silent >/dev/null
rm -rf js-commander ts-zod pkg && mkdir -p js-commander ts-zod/src pkg
tar xzf commander-14.0.3.tgz -C pkg && cp -r pkg/package/index.js pkg/package/lib pkg/package/package.json js-commander/
rm -rf pkg && mkdir pkg && tar xzf zod-4.6.7.tgz -C pkg && cp -r pkg/package/src/v3 ts-zod/src/ && rm -rf pkg
rm -rf ts-zod/src/v3/tests ts-zod/src/v3/benchmarks
echo '{"name":"zod","version":"4.6.7"}' > ts-zod/package.json
echo '{"compilerOptions":{"target":"es2020","module":"commonjs","strict":true,"noEmit":true,"skipLibCheck":true},"include":["src"]}' > ts-zod/tsconfig.json

timed() { # label command...
  local label=$1; shift
  /usr/bin/time -f "$label: %e s, peak RSS %M KB" "$@" >/dev/null
}
# scip-python reads the environment of the python3 and pip3 on PATH: Debian's,
# where the packages' dependencies (python3-jwt, python3-cryptography, ...)
# are installed, so that calls into them are typed (`alg.sign(…)` on PyJWT's
# RSAAlgorithm), as a user indexes a project in its own environment.
pypath=/usr/bin:$PATH
(cd py-oauthlib && PATH=$pypath timed "scip-python oauthlib" "$bin/scip-python" index --project-name oauthlib --project-version 3.2.2 --output ../oauthlib.scip)
(cd py-pyparsing && PATH=$pypath timed "scip-python pyparsing" "$bin/scip-python" index --project-name pyparsing --project-version 3.0.9 --output ../pyparsing.scip)
(cd js-commander && timed "scip-typescript commander" "$bin/scip-typescript" index --infer-tsconfig --output ../commander.scip)
(cd ts-zod && timed "scip-typescript zod" "$bin/scip-typescript" index --output ../zod.scip)

cd "$repo"
go run ./cmd/relay-eval --scip --verdicts internal/accuracy/testdata/scip/verdicts.tsv "$@" "$work/oauthlib.scip=$work/py-oauthlib" "$work/pyparsing.scip=$work/py-pyparsing" \
  "$work/commander.scip=$work/js-commander" "$work/zod.scip=$work/ts-zod"
