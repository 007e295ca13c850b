# Every target bootstraps .venv from pyproject.toml's extras; re-running is a no-op
# until pyproject.toml or setup.py change (the stamp is keyed on their hash).
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed-$(shell cat pyproject.toml setup.py | sha1sum | cut -c1-12)
WORKERS ?= 2
HYPOTHESIS_PROFILE ?= ci

.PHONY: venv java-venv system-deps run test explore tlc bench mutants conform-seeds fuzz-deep campaign-deep interop clean

venv: $(STAMP)

# pip's output goes to $(VENV)/pip.log and is shown only if pip fails.
$(STAMP): pyproject.toml setup.py
	@echo "setup: installing icefloe and its extras into $(VENV) (a few minutes the first time; log: $(VENV)/pip.log)"
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	@($(BIN)/python -m pip install --upgrade pip && $(BIN)/python -m pip install -e '.[all]') > $(VENV)/pip.log 2>&1 \
		|| (cat $(VENV)/pip.log; echo "FAILED: setup: pip could not install icefloe (its output above)"; exit 1)
	@rm -f $(VENV)/.installed-*
	@touch $@

# A second venv for the reference engine, Iceberg-Java 1.10.2 through PySpark 3.5.9 (Spark
# 3.5 and the main venv's 4.x can't share one). Its runtime jar comes from PyPI inside a
# wheel (snowpark-connect-deps-iceberg 1.0.2; 1.0.3 lacks shaded Jackson); the stamp is
# keyed on the pins. icefloe.conformance.testing.java_env finds it.
JAVA_VENV   := .venv-java
JAVA_PINS   := pyspark==3.5.9 pandas<3 pyarrow snowpark-connect-deps-iceberg==1.0.2
JAVA_JAR    := iceberg-spark-runtime-3.5_2.12-1.10.2.jar
JAVA_STAMP  := $(JAVA_VENV)/.installed-$(shell echo '$(JAVA_PINS) $(JAVA_JAR)' | sha1sum | cut -c1-12)

java-venv: $(JAVA_STAMP)

$(JAVA_STAMP):
	@$(JAVA_VENV)/bin/python -m pip --version >/dev/null 2>&1 || $(PYTHON) -m venv --clear $(JAVA_VENV)
	$(JAVA_VENV)/bin/python -m pip install -q --upgrade pip
	$(JAVA_VENV)/bin/python -m pip install -q 'pyspark==3.5.9' 'pandas<3' pyarrow
	rm -rf $(JAVA_VENV)/download && mkdir -p $(JAVA_VENV)/jars
	$(JAVA_VENV)/bin/python -m pip download -q --no-deps -d $(JAVA_VENV)/download 'snowpark-connect-deps-iceberg==1.0.2'
	$(JAVA_VENV)/bin/python -c "import glob, sys, zipfile; \
	z = zipfile.ZipFile(glob.glob('$(JAVA_VENV)/download/*.whl')[0]); \
	open('$(JAVA_VENV)/jars/$(JAVA_JAR)', 'wb').write(z.read('snowpark_connect_deps_iceberg/jars/$(JAVA_JAR)'))"
	rm -rf $(JAVA_VENV)/download
	@rm -f $(JAVA_VENV)/.installed-*
	@touch $@

# The version matrix (docs/verdicts.md, issue 32): one venv per peer version under
# .venv-peers/NAME, holding icefloe (editable, with the conform and rest extras) and that
# version of the peer, never the 'peers' extra's pins; the stamp is keyed on the pins and on
# pyproject.toml. `make peer-venv-pyiceberg-0.10`, ... or `make peer-venvs` for all of them;
# then .venv-peers/NAME/bin/icefloe conform --engine ... runs the verdict on that version.
PEERS_DIR := .venv-peers
PEER_pyiceberg-0.10 := pyiceberg[sql-sqlite,pyarrow]==0.10.0
PEER_pyiceberg-0.11 := pyiceberg[sql-sqlite,pyarrow]==0.11.1
PEER_pyiceberg-0.12 := pyiceberg[sql-sqlite,pyarrow]==0.12.0
PEER_duckdb-1.4.4   := duckdb==1.4.4 duckdb-ext-iceberg==1.4.4.20260205 duckdb-ext-avro==1.4.4.20260205 duckdb-ext-httpfs==1.4.4.20260205
PEER_duckdb-1.5.5   := duckdb==1.5.5 duckdb-extension-iceberg==1.5.5 duckdb-extension-avro==1.5.5 duckdb-extension-httpfs==1.5.5
PEER_sail-0.7.2     := pysail==0.7.2 pyspark-client==4.2.0 pandas<3
PEER_chdb-4.4.0     := chdb==4.4.0
PEER_NAMES := pyiceberg-0.10 pyiceberg-0.11 pyiceberg-0.12 duckdb-1.4.4 duckdb-1.5.5 sail-0.7.2 chdb-4.4.0

define PEER_VENV
PEER_STAMP_$(1) := $(PEERS_DIR)/$(1)/.installed-$$(shell (echo '$$(PEER_$(1))'; cat pyproject.toml setup.py) | sha1sum | cut -c1-12)
.PHONY: peer-venv-$(1)
peer-venv-$(1): $$(PEER_STAMP_$(1))
$$(PEER_STAMP_$(1)): pyproject.toml setup.py
	@echo "setup: $(PEERS_DIR)/$(1): icefloe and $$(PEER_$(1)) (log: $(PEERS_DIR)/$(1)/pip.log)"
	@$(PEERS_DIR)/$(1)/bin/python -m pip --version >/dev/null 2>&1 || (mkdir -p $(PEERS_DIR) && $(PYTHON) -m venv --clear $(PEERS_DIR)/$(1))
	@($(PEERS_DIR)/$(1)/bin/python -m pip install --upgrade pip && $(PEERS_DIR)/$(1)/bin/python -m pip install -e '.[conform,rest]' $$(foreach pin,$$(PEER_$(1)),'$$(pin)')) > $(PEERS_DIR)/$(1)/pip.log 2>&1 \
		|| (cat $(PEERS_DIR)/$(1)/pip.log; echo "FAILED: setup: pip could not make $(PEERS_DIR)/$(1)"; exit 1)
	@rm -f $(PEERS_DIR)/$(1)/.installed-*
	@touch $$@
endef
$(foreach peer,$(PEER_NAMES),$(eval $(call PEER_VENV,$(peer))))

.PHONY: peer-venvs
peer-venvs: $(addprefix peer-venv-,$(PEER_NAMES))

# The version matrix of docs/verdicts.md: each cell's ci verdict, one command each, every peer
# version in its own venv (above), from / (ClickHouse writes local files only under its current
# directory); reports in reports/matrix/NAME (verdict.json, report.html). Slow: pyiceberg 3-8
# min a version, Sail 8 min, Java 28 min here; not in make test. The last line per cell
# is its verdict as verdict.json says it.
MATRIX_DIR := $(CURDIR)/reports/matrix
MATRIX_CELLS := pyiceberg-0.10=pyiceberg pyiceberg-0.11=pyiceberg pyiceberg-0.12=pyiceberg duckdb-1.4.4=duckdb \
	duckdb-1.5.5=duckdb sail-0.7.2=icefloe.conformance.engines.sail_engine:engine \
	chdb-4.4.0=icefloe.conformance.engines.chdb_engine:engine
.PHONY: verdict-matrix
verdict-matrix: peer-venvs java-venv
	@mkdir -p $(MATRIX_DIR)
	@for cell in $(MATRIX_CELLS) java=java java-mor=java-mor; do \
		name=$${cell%%=*}; engine=$${cell#*=}; \
		bin=$(CURDIR)/$(PEERS_DIR)/$$name/bin; [ -d $$bin ] || bin=$(CURDIR)/$(BIN); \
		rm -rf $(MATRIX_DIR)/$$name; echo "== $$name: icefloe conform --engine $$engine --profile ci --seed 0 --time-budget 0 (log: $(MATRIX_DIR)/$$name.log)"; \
		(cd / && nice -n 10 $$bin/icefloe conform --engine $$engine --profile ci --seed 0 --time-budget 0 \
			--report $(MATRIX_DIR)/$$name > $(MATRIX_DIR)/$$name.log 2>&1); \
		$(BIN)/python -c "import json, sys; v = json.load(open(sys.argv[1])); c = v['counts']; \
			print(sys.argv[2] + ':', v['verdict'], ', '.join(v['violated']) or '-', \
			'%s examples, %s steps, %s commits, %.0f s' % (c['examples'], c['steps'], c['commits'], v['elapsed_s']))" \
			$(MATRIX_DIR)/$$name/verdict.json $$name 2>/dev/null || tail -n 2 $(MATRIX_DIR)/$$name.log; \
	done

# System packages the tests need, installed only when missing (CI runs as root on a
# Debian machine): Java 17 for TLC, Debian's PostgreSQL server for the SQL catalog, Debian's
# headless-capable Chromium for the test that renders the conformance report (report.html).
system-deps:
	@command -v java >/dev/null 2>&1 || (apt-get update -qq && apt-get install -y -qq openjdk-17-jre-headless)
	@command -v chromium >/dev/null 2>&1 || (apt-get update -qq && apt-get install -y -qq --no-install-recommends chromium fonts-dejavu-core)
	@if [ -f scripts/ensure-postgres.sh ]; then bash scripts/ensure-postgres.sh; fi

# The main job: the conformance suite against icefloe on the embedded default (moto S3
# started on 127.0.0.1, SQLite and S3 catalogs, most examples on the in-memory store);
# the report goes to reports/conform/. Then the model's exhaustive explorer on its
# default bounds and every flawed model variant (each must fail).
# One line per phase, and one overall line at the end (OK: ... or FAILED: ...).
run: venv
	@echo "== [1/3] the conformance suite against icefloe (report: reports/conform/report.html)"
	@$(BIN)/icefloe conform --profile ci --report reports/conform \
		|| (echo "FAILED: make run: the conformance suite (reports/conform/report.html)"; exit 1)
	@echo "== [2/3] the model's exhaustive explorer (2 writers, 1 operation each)"
	@$(BIN)/python -m icefloe.model.explore --writers 2 --ops 1 \
		|| (echo "FAILED: make run: the model explorer"; exit 1)
	@echo "== [3/3] every flawed model variant (each must fail)"
	@$(BIN)/python -m icefloe.model.explore --all-variants \
		|| (echo "FAILED: make run: a flawed model variant was not caught"; exit 1)
	@echo "OK: make run: the conformance suite passed (reports/conform/report.html), the explorer found no violation, every flawed variant failed"

# The full suite on pytest-xdist; tests/conftest.py prints the time per suite against its budget.
test: venv system-deps java-venv peer-venv-sail-0.7.2
	HYPOTHESIS_PROFILE=$(HYPOTHESIS_PROFILE) $(BIN)/python -m pytest -n $(WORKERS) --dist loadgroup tests

# Benchmarks side by side with their peers; writes docs/benchmarks.md (bench/run.py NAME... runs some).
bench: venv system-deps
	$(BIN)/python bench/run.py $(BENCH)

# The mutation gate (mutants/): each curated bug planted in the reference implementation in
# turn, against `icefloe conform --profile ci` (SEEDS=0,1,...); survivors also against the
# unit tests of their area. Prints the kill table; fails if conform misses a mutant in an
# area the model covers. Not in `make test`: see docs/conformance.md for its figures.
SEEDS ?= 0
mutants: venv
	$(BIN)/python -m mutants.run --seeds $(SEEDS) $(MUTANTS_ARGS)

# The seed gate (mutants/seeds.py): `icefloe conform --profile ci` at every seed of
# CONFORM_SEEDS on icefloe (exit 0, every coverage family complete) and on every flawed
# variant (exit 1 naming a property); writes its table into docs/conformance.md.
CONFORM_SEEDS ?= 0..9
conform-seeds: venv
	$(BIN)/python -m mutants.seeds --seeds $(CONFORM_SEEDS) --docs

# The deep fuzz run (tests/fuzz/deep.py): 10,000 Hypothesis inputs per parser, then 100,000
# atheris runs per target; writes docs/fuzzing.md. Not in `make test` (it has a bounded share).
fuzz-deep: venv
	nice -n 10 $(BIN)/python tests/fuzz/deep.py

# The deep fault campaign (conformance/campaign/deep.py): 16 writer processes x 100 operations
# on one table under the deep fault plan (outcomes left unresolved), on moto S3 with the S3
# catalog and with PostgreSQL; writes docs/campaigns.md. Resumable part by part
# (reports/campaigns/; FORCE=--force reruns). Not in `make test` (it has a bounded share).
campaign-deep: venv system-deps
	nice -n 10 $(BIN)/python -m icefloe.conformance.campaign.deep $(FORCE)

# Interop under concurrency (issue 13 item 5; figures in docs/verdicts.md): icefloe, pyiceberg
# and Iceberg-Java writers on one table through icefloe serve with commit faults, then icefloe
# and pyiceberg on an S3 warehouse with S3 faults too; each judged by the history checker.
INTEROP_OPS ?= 20
interop: venv system-deps java-venv
	nice -n 10 $(BIN)/python -m icefloe.conformance.interop.run --icefloe 2 --pyiceberg 2 --java 2 --ops $(INTEROP_OPS) --rate 0.4 --seed 1
	nice -n 10 $(BIN)/python -m icefloe.conformance.interop.run --storage s3 --icefloe 3 --pyiceberg 3 --java 0 --ops $(INTEROP_OPS) --rate 0.4 --seed 2

explore: venv
	$(BIN)/python -m icefloe.model.explore --writers 3 --ops 2

tlc: venv
	$(BIN)/python tests/tla/tlc.py --all

clean:
	rm -rf $(VENV) build dist *.egg-info .pytest_cache .hypothesis
