# Two commands from a fresh clone: `make demo` and `make test`.
SHELL := /bin/bash
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed-stamp
JARS := $(VENV)/jars/.resolved
CDS := $(VENV)/cds/.dumped
SRC := plugin operators state_store

.PHONY: setup bytecode test test-bench unit integration lint docs demo bench bench-quick bench-scale clean check-java \
	check-chromium compat-setup test-compat install-setup

setup: $(STAMP) $(JARS) $(CDS) check-chromium bytecode

# The project's bytecode, written as pip writes an installed package's: where the shell sets
# PYTHONDONTWRITEBYTECODE (this machine's does), an editable install has none, and every
# Python process (Spark's workers, the driver process Spark starts per one-query keyed
# stage, each subprocess job) compiled the package again: importing the API and the runtime
# took 0.9-1.0 s instead of 0.5-0.6 s. Incremental: a changed file is compiled again, and
# Python checks each file's source against its bytecode either way.
bytecode: $(STAMP)
	@$(PY) -m compileall -q $(SRC) tests integration_tests benchmarks examples >/dev/null

# The docs render test (tests/plugin/test_site_render.py) loads the built site in headless
# Chromium. Installed from the distribution's packages when missing and apt-get is usable
# (as root or with passwordless sudo); otherwise it says how.
check-chromium:
	@command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1 || { \
	  if command -v apt-get >/dev/null 2>&1 && [ "$$(id -u)" = 0 ]; then sudo=; \
	  elif command -v apt-get >/dev/null 2>&1 && sudo -n true 2>/dev/null; then sudo='sudo -n'; \
	  else \
	    echo "ERROR: 'chromium' is not on PATH (the site render test loads the docs in it)."; \
	    echo "  Debian/Ubuntu: sudo apt-get install -y --no-install-recommends chromium"; \
	    echo "  macOS:         brew install --cask chromium"; exit 1; fi; \
	  echo "Installing chromium (headless browser for the site render test) with apt-get"; \
	  $$sudo apt-get update -qq && \
	  DEBIAN_FRONTEND=noninteractive $$sudo apt-get install -y -qq --no-install-recommends chromium \
	    >/dev/null || { echo "ERROR: apt-get could not install chromium"; exit 1; }; }

check-java:
	@command -v java >/dev/null 2>&1 || { \
	  echo "ERROR: 'java' is not on PATH. Spark needs Java 17 or newer:"; \
	  echo "  Debian/Ubuntu: sudo apt-get install -y openjdk-17-jre-headless"; \
	  echo "  macOS:         brew install openjdk@17"; exit 1; }
	@v=$$(java -version 2>&1 | sed -n 's/.*version "\([0-9]*\).*/\1/p' | head -1); \
	  if [ -z "$$v" ] || [ "$$v" -lt 17 ]; then \
	    echo "ERROR: Java 17+ is required by Spark 4, found: $$(java -version 2>&1 | head -1)"; exit 1; fi

# pyspark is not a dependency of the package (runtimes bring their own); the `spark` extra
# brings pip's, pinned here to the line the whole suite runs on.
SPARK_VERSION ?= 4.2.1

$(STAMP): setup.cfg pyproject.toml Makefile | check-java
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip setuptools wheel
	$(PY) -m pip install -q -e '.[spark,test,docs]' 'pyspark==$(SPARK_VERSION)'
	@touch $(STAMP)

# Spark's Delta Lake, s3a and Kafka connector jars matching the installed pyspark, and a Kafka
# broker for the Kafka tests (<venv>/kafka-broker, never on Spark's class path), resolved from
# Maven Central into the venv once (needs `mvn`); nothing downloads later.
$(JARS): $(STAMP) integration_tests/jars.py
	$(PY) integration_tests/jars.py install

# The suite's Spark drivers map a class-data archive of the classes a driver loads instead of
# reading them from the jars: a JVM start and first job 4-5 s shorter, for every session and
# subprocess driver of the suite (integration_tests/jvm_options.py). Dumped once per install
# of pyspark or the jars (about two minutes); a driver runs without it where it does not match.
$(CDS): $(STAMP) $(JARS) integration_tests/jvm_options.py
	$(PY) integration_tests/jvm_options.py archive
	@touch $(CDS)

# mypy checks the package as it is installed, pyspark_datastream with its three folders in
# it, so that types cross from plugin/ into operators/ and state_store/ (checked as three
# top-level packages, each import between them would be a missing module, of type Any).
# The editable install's import hook is invisible to mypy: a tree of links under build/
# lays the package out; errors name its paths (pyspark_datastream/... = plugin/..., with
# operators/ and state_store/ under it).
TYPECHECK := build/typecheck
lint: setup
	$(PY) -m ruff check $(SRC) tests integration_tests benchmarks examples notebooks docs
	rm -rf $(TYPECHECK)/pyspark_datastream && mkdir -p $(TYPECHECK)/pyspark_datastream
	ln -s $(addprefix $(CURDIR)/,$(wildcard plugin/*) operators state_store) $(TYPECHECK)/pyspark_datastream/
	cd $(TYPECHECK) && $(CURDIR)/$(PY) -m mypy --config-file $(CURDIR)/pyproject.toml -p pyspark_datastream

# The suite runs in TEST_WORKERS pytest-xdist processes, a test file per process at a time
# (each has its own local[2] session and servers at ephemeral ports): on 2 cores a Spark test
# leaves a core idle much of the time (JVM and Python worker start-up, micro-batch triggers,
# subprocess jobs). TEST_WORKERS=0 runs it in one process.
TEST_WORKERS ?= 2

# The documentation site (mkdocs.yml, docs/): the configuration reference regenerated from
# OPTIONS and the porting reference from docs/pyflink_api.json (docs/pyflink_snapshot.py
# writes that snapshot from a throw-away PyFlink install), then a strict build (a broken link,
# nav entry or docstring fails it) into site/.
docs: setup
	$(PY) docs/gen_config.py
	$(PY) docs/gen_porting.py
	NO_MKDOCS_2_WARNING=1 $(PY) -m mkdocs build --strict --quiet

test: setup lint docs
	$(PY) -m pytest -q -n $(TEST_WORKERS) --dist loadfile --durations=25 tests integration_tests

# The benchmarks' --quick runs end to end, their results checked (integration_tests/
# test_benchmarks.py, marker `bench`): what keeps `make bench` working; .ci/run runs it.
test-bench: setup
	$(PY) -m pytest -q -m bench -p no:cacheprovider integration_tests/test_benchmarks.py

unit: setup
	$(PY) -m pytest -q tests

integration: setup
	$(PY) -m pytest -q integration_tests

# The core of the integration suite (tests marked `compat`: BATCH and STREAMING jobs, a
# savepoint handoff, Spark's Delta sink and source where the line has its jars, the S3 job,
# Spark Connect) on every other supported Spark line, each in its own venv
# (.venv-compat-<line>) with pyspark pinned and that line's jars (integration_tests/jars.py
# installs into the venv that runs it, skipping an artifact Maven Central lacks for the
# line). `make test` covers 4.2 in .venv. Per line, the pip pins below:
# * 3.5: the oldest numpy, pandas and pyarrow setup.cfg admits (what Databricks 15.4 LTS
#   ships), so the floors are tested, not just declared;
# * 4.0.0-4.0.4 and 4.1.0-4.1.3 cannot run applyInPandasWithState with pyarrow >= 26
#   (plugin/spark_io/versions.py refuses the pair): pyarrow<26.
COMPAT_SPARK ?= 3.5.0 4.0.5 4.1.4 4.3.0

# The install tests (integration_tests/test_install.py, marker `install`) install the built
# wheel as users do (pyspark on PYTHONPATH as on Databricks Runtime, databricks-connect, the
# [spark] extra) from a local wheelhouse, with no index: integration_tests/wheelhouse.py fills
# .venv-compat-wheelhouse once per set of requirements (pip's cache makes a refill quick).
install-setup: $(STAMP) | check-java
	$(PY) integration_tests/wheelhouse.py fill --spark-extra $(SPARK_VERSION)

compat-setup: check-java install-setup
	@set -e; for v in $(COMPAT_SPARK); do \
	  venv=.venv-compat-$${v%.*}; stamp=$$venv/.installed-stamp; \
	  if [ -f $$stamp ] && [ "$$(cat $$stamp)" = "$$v" ] && [ $$stamp -nt setup.cfg ] \
	      && [ $$stamp -nt pyproject.toml ] && [ $$stamp -nt Makefile ] \
	      && [ $$stamp -nt integration_tests/jars.py ]; then continue; fi; \
	  echo "== $$venv: pyspark $$v"; \
	  test -x $$venv/bin/python || $(PYTHON) -m venv $$venv; \
	  $$venv/bin/python -m pip install -q --upgrade pip setuptools wheel; \
	  case $$v in \
	    3.5.*) pins='numpy==1.23.5 pandas==1.5.3 pyarrow==14.0.1';; \
	    4.0.[0-4]|4.1.[0-3]) pins='pyarrow<26';; \
	    *) pins='';; \
	  esac; \
	  $$venv/bin/python -m pip install -q -e '.[spark,test]' "pyspark==$$v" $$pins; \
	  $$venv/bin/python integration_tests/jars.py install; \
	  echo "$$v" > $$stamp; \
	done

test-compat: compat-setup
	@set -e; for v in $(COMPAT_SPARK); do \
	  venv=.venv-compat-$${v%.*}; \
	  echo "== pyspark $$v ($$venv)"; start=$$(date +%s); \
	  $$venv/bin/python -m pytest -q -n $(TEST_WORKERS) --dist loadfile -m compat -p no:cacheprovider integration_tests; \
	  echo "== pyspark $$v: passed in $$(( $$(date +%s) - start )) s"; \
	done
	@echo "== install tests (.venv)"; start=$$(date +%s); \
	  $(PY) -m pytest -q -n 0 -m install -p no:cacheprovider integration_tests/test_install.py && \
	  echo "== install tests: passed in $$(( $$(date +%s) - start )) s"

demo: setup
	$(PY) -m pyspark_datastream demo

# The sizes the README's Benchmarks table quotes (long: run it on an otherwise idle machine).
bench: setup
	$(PY) -m benchmarks.state_ops --quick
	$(PY) -m benchmarks.sorted_state
	$(PY) -m benchmarks.savepoint_io
	$(PY) -m benchmarks.sessionize
	$(PY) -m benchmarks.wordcount --floor
	$(PY) -m benchmarks.wordcount_s3
	$(PY) -m benchmarks.async_io
	$(PY) -m benchmarks.latency
	$(PY) -m benchmarks.memory
	$(PY) -m benchmarks.routes
	$(PY) -m benchmarks.routes --files-per-batch 8 --variants batch,streaming_one_query,streaming

# Every benchmark at a small size, correctness checks included (its figures mean nothing).
bench-quick: setup
	$(PY) -m benchmarks.state_ops --quick
	$(PY) -m benchmarks.sorted_state --quick
	$(PY) -m benchmarks.savepoint_io --quick
	$(PY) -m benchmarks.sessionize --quick
	$(PY) -m benchmarks.wordcount --quick
	$(PY) -m benchmarks.wordcount_s3 --quick
	$(PY) -m benchmarks.async_io --quick
	$(PY) -m benchmarks.memory --quick
	$(PY) -m benchmarks.latency --quick
	$(PY) -m benchmarks.routes --quick
	$(PY) -m benchmarks.routes --quick --files-per-batch 4 --variants streaming_one_query,streaming --no-restart-check

# FLIP-140's WordCount at full scale: 40M records, 4M keys; one untimed run of every variant,
# then three timed rounds of every variant in turn (25 minutes on 2 cores at load 2.2-2.4,
# the data already generated; generating it adds about a minute). STREAMING runs on Spark's
# RocksDB state store provider: with Spark's default (HDFS-backed, state on the JVM heap) and
# the default 1 GiB heap, the first micro-batch (all 40M records, 4M keys' state, 10M records
# sorted per task) failed one run of four with UNABLE_TO_ACQUIRE_MEMORY; with a 2 GiB heap
# instead, native Spark ran faster too (`--driver-memory 2g`: native 24.8 s, against 29.5 s
# with 1 GiB in the RocksDB run), so the ratios would not compare with the 1 GiB runs.
bench-scale: setup
	$(PY) -m benchmarks.wordcount --records 40000000 --keys 4000000 --state-store rocksdb

clean:
	rm -rf $(VENV) .venv-compat-* build dist site *.egg-info .pytest_cache .ruff_cache .mypy_cache .demo-output
