# relay's everyday commands. `make test` is the test command README.md gives;
# .ci/run calls it too.

TEST_DATABASE_URL ?= postgres://root@127.0.0.1:5432/relay_test?sslmode=disable
export TEST_DATABASE_URL
GO ?= go

.PHONY: all build test test-race test-short lint vet fmt schema bench bench-relay chaos chaos-short chaos-short-pooler chaos-pg torture fuzz migrate demo testdb pgbouncer chromium clients scip-indexers eval-scip citus citus-cluster citus-cluster-stop citus-cluster-remove test-citus

all: lint test

build:
	$(GO) build -o bin/relay ./cmd/relay

# The README's test command: every package, race detector on, against the
# PostgreSQL in TEST_DATABASE_URL (its database is created if missing).
# SERVERLOCK makes a second run on the same server wait for the first: two
# runs side by side exceed PostgreSQL's default 100 connections.
SERVERLOCK = $(GO) run ./internal/testdb/cmd/serverlock --
test: testdb pgbouncer chromium clients scip-indexers
	$(SERVERLOCK) $(GO) test -race -count=1 -timeout 15m ./...

test-race: test

test-short: testdb
	$(GO) test -short -count=1 ./...

# Debian's PgBouncer, which the tests that run relay behind a transaction
# pooler start on a free loopback port (internal/pgbouncer); needs root to
# install it when it is missing.
pgbouncer:
	@command -v pgbouncer >/dev/null 2>&1 || [ -x /usr/sbin/pgbouncer ] || \
		{ apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq pgbouncer >/dev/null; }

# Debian's Chromium, which the web console's browser tests drive headless
# (internal/console, chromedp); needs root to install it when it is missing.
chromium:
	@command -v chromium >/dev/null 2>&1 || [ -x /usr/bin/chromium ] || \
		{ apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; }

# The SQL publish API's real clients (outbox/clients_test.go) and the
# runtimes of the documentation's program blocks (internal/docexamples):
# psql, Debian's python3-psycopg, Node with node-postgres, TypeScript and
# their types from npm (pinned in outbox/testdata/clients/package-lock.json),
# a JDK and Debian's PostgreSQL JDBC driver; needs root to install the
# Debian packages when they are missing.
clients:
	@command -v psql >/dev/null 2>&1 || \
		{ apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql-client >/dev/null; }
	@/usr/bin/python3 -c 'import psycopg' >/dev/null 2>&1 || \
		{ apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3-psycopg >/dev/null; }
	@command -v npm >/dev/null 2>&1 || \
		{ apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nodejs npm >/dev/null; }
	@command -v java >/dev/null 2>&1 || \
		{ apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq default-jdk-headless >/dev/null; }
	@[ -f /usr/share/java/postgresql.jar ] || \
		{ apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq libpostgresql-jdbc-java >/dev/null; }
	@{ [ -d outbox/testdata/clients/node_modules/pg ] && [ -d outbox/testdata/clients/node_modules/typescript ] && \
		[ -d outbox/testdata/clients/node_modules/@types/pg ]; } || \
		npm ci --prefix outbox/testdata/clients --no-audit --no-fund --loglevel=error

# scip-python and scip-typescript from npm, pinned in
# internal/scipindex/testdata/indexers/package-lock.json and installed
# there (not globally): relay analyze --scip's tests run them on the
# fixture projects beside them (internal/cli's TestAnalyzeSCIP_*). Needs
# Node (make clients installs it).
SCIP_INDEXERS := internal/scipindex/testdata/indexers
scip-indexers: clients
	@[ -x $(SCIP_INDEXERS)/node_modules/.bin/scip-python ] && [ -x $(SCIP_INDEXERS)/node_modules/.bin/scip-typescript ] || \
		npm ci --prefix $(SCIP_INDEXERS) --no-audit --no-fund --loglevel=error

# relay analyze --scip's accuracy on real packages (docs/accuracy.md): installs
# Debian's python3-oauthlib and python3-pyparsing when missing (root), packs
# commander and zod from npm, indexes them with the pinned indexers and runs
# relay-eval --scip. Minutes; not part of make test.
eval-scip: scip-indexers
	internal/accuracy/scip_eval.sh

# Creates the test database named in TEST_DATABASE_URL when it is missing.
testdb:
	@$(GO) run ./internal/testdb/cmd/createdb

vet:
	$(GO) vet ./...

fmt:
	gofmt -w $$(git ls-files '*.go')

lint: vet
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

# docs/schema.sql: the schema after every migration, rendered from a freshly
# migrated test database. The migrations package's
# TestSchemaFile_MatchesMigrations fails while it is stale.
schema: testdb
	UPDATE_DOCS=1 $(GO) test -count=1 -run '^TestSchemaFile_' ./migrations/

bench: testdb
	$(GO) test -run='^$$' -bench=. -benchmem ./...

# relay against PostgreSQL's ceiling and the one-job-per-POI design (BENCHMARKS.md).
bench-relay:
	$(GO) run ./cmd/relay-bench

# Fault injection (RELIABILITY.md): 100,000 POIs, 20 worker kills, three
# workers, SIGTERM, an unwritable failed_pois. chaos-pg restarts the whole
# PostgreSQL server: run it only on a machine of your own.
chaos:
	$(GO) run ./cmd/relay-chaos

chaos-short:
	$(SERVERLOCK) $(GO) run ./cmd/relay-chaos --short

# chaos-short with every relay process behind a stock transaction-pooling
# PgBouncer (docs/operations.md, "Behind a connection pooler").
chaos-short-pooler: pgbouncer
	$(GO) run ./cmd/relay-chaos --short --pgbouncer

chaos-pg:
	$(GO) run ./cmd/relay-chaos --allow-pg-restart --scenarios postgres-restart

# The differential torture test (RELIABILITY.md): HISTORIES random
# histories from SEED (default: from the clock), PARALLEL at a time, each
# compared with a fresh database given each file's last committed version.
# make torture HISTORIES=5000 ; a divergence prints its seed, which replays:
# make torture SEED=1234 HISTORIES=1
HISTORIES ?= 200
PARALLEL ?= 2
SEED ?= 0
torture: testdb
	$(GO) run ./cmd/relay-torture --database-url '$(TEST_DATABASE_URL)' --histories $(HISTORIES) --parallel $(PARALLEL) --seed $(SEED)

# Each fuzz target for FUZZTIME (15s by default; a count such as 100000x
# avoids Go 1.26's spurious "context deadline exceeded" at the deadline,
# golang/go#75804, which .ci/run does). Minimizing a new input is bounded
# by FUZZMINIMIZE, so that a large one cannot stall the run.
FUZZTIME ?= 15s
FUZZMINIMIZE ?= 10s
fuzz:
	$(GO) test -run '^$$' -fuzz '^FuzzDecodeAnalysis$$' -fuzztime $(FUZZTIME) -fuzzminimizetime $(FUZZMINIMIZE) ./outbox/
	$(GO) test -run '^$$' -fuzz '^FuzzExtract$$' -fuzztime $(FUZZTIME) -fuzzminimizetime $(FUZZMINIMIZE) ./resolver/
	$(GO) test -run '^$$' -fuzz '^FuzzDecodePOI$$' -fuzztime $(FUZZTIME) -fuzzminimizetime $(FUZZMINIMIZE) ./resolver/
	$(GO) test -run '^$$' -fuzz '^FuzzLookupNames$$' -fuzztime $(FUZZTIME) -fuzzminimizetime $(FUZZMINIMIZE) ./resolver/
	$(GO) test -run '^$$' -fuzz '^FuzzGoRef$$' -fuzztime $(FUZZTIME) -fuzzminimizetime $(FUZZMINIMIZE) ./resolver/
	$(GO) test -run '^$$' -fuzz '^FuzzRead$$' -fuzztime $(FUZZTIME) -fuzzminimizetime $(FUZZMINIMIZE) ./internal/scipindex/
	$(GO) test -run '^$$' -fuzz '^FuzzSignature$$' -fuzztime $(FUZZTIME) -fuzzminimizetime $(FUZZMINIMIZE) ./deadletter/
	$(GO) test -run '^$$' -fuzz '^FuzzRedact$$' -fuzztime $(FUZZTIME) -fuzzminimizetime $(FUZZMINIMIZE) ./config/
	$(GO) test -run '^$$' -fuzz '^FuzzString$$' -fuzztime $(FUZZTIME) -fuzzminimizetime $(FUZZMINIMIZE) ./internal/termout/

migrate:
	$(GO) run ./cmd/relay migrate up

# The main job end to end: migrate, publish a sample, resolve it, summarise.
demo:
	$(GO) run ./cmd/relay demo

# Citus 13.2.2 from internal/citus/source (its README.md), built once into
# $(HOME)/.cache/relay/citus and installed into PostgreSQL 15's folders;
# a second run is a no-op. Installs Debian's build dependencies (root).
citus:
	internal/citus/build.sh

# relay's own Citus cluster (internal/citus/cluster.sh): a coordinator on
# 127.0.0.1:$(CITUS_PORT) and workers on the next two ports, each a
# PostgreSQL 15 cluster of postgresql-common with the citus extension in
# the database relay. Re-running leaves a running cluster running;
# citus-cluster-stop stops it, citus-cluster-remove deletes its data.
CITUS_PORT ?= 5440
export CITUS_PORT
citus-cluster: citus
	internal/citus/cluster.sh start

citus-cluster-stop:
	internal/citus/cluster.sh stop

citus-cluster-remove:
	internal/citus/cluster.sh remove

# relay's guarantees on distributed tables, against relay's own cluster
# (make citus-cluster): the tests behind the build tag citus (Citus against
# plain PostgreSQL on the same corpus, and what only Citus has), then the
# end-to-end tests of CITUS_GUARANTEES as they run on plain PostgreSQL,
# each in a schema of its own on the coordinator, migrated and distributed
# (TEST_CITUS=1, internal/testdb).
CITUS_DATABASE_URL ?= postgres://root@127.0.0.1:$(CITUS_PORT)/relay?sslmode=disable
CITUS_GUARANTEES = TestEndToEnd_RelationshipsIndependentOfOrderAndConcurrency|TestEndToEnd_SuppliedReferencesIndependentOfOrderAndConcurrency|TestEndToEnd_RepositoriesResolveAsEachDoesAlone|TestSQLPublish_TheLastCommittedPublishWins|TestReprocess_CommandEndToEnd|TestRun_KillAndSIGTERMScenariosLoseNothing|TestTorture_FixedSeedsMatchTheOracle
CITUS_GUARANTEE_PACKAGES = ./worker/resolvefile/ ./outbox/ ./internal/cli/ ./internal/chaos/ ./internal/torture/
test-citus: citus-cluster testdb
	CITUS_DATABASE_URL='$(CITUS_DATABASE_URL)' $(GO) test -tags citus -count=1 -timeout 15m -run '^TestCitus' ./internal/cli/
	TEST_DATABASE_URL='$(CITUS_DATABASE_URL)' TEST_CITUS=1 $(GO) test -count=1 -timeout 15m \
		-run '^($(CITUS_GUARANTEES))$$' $(CITUS_GUARANTEE_PACKAGES)
