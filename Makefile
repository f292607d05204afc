# Tenure: the two commands a newcomer needs are `make run` and `make test`.
GO        ?= go
SIMRUN    := bin/simrun
# The ci suite runs against a private redis-server; `auto` would fall back to the embedded Redis.
CI_REDIS  ?= server
# A pinned seed keeps the gate reproducible; the soak suite explores other seeds.
CI_SEED   ?= 1

.PHONY: run test setup unit mutants suite campaign agree bench lint build clean

build:
	$(GO) build -o $(SIMRUN) ./cmd/simrun
	$(GO) build -o bin/tenure-instance ./cmd/tenure-instance

## run: a representative part of the ci suite (a minute of runs, plus compiling the first time:
##      1 min 8 s and 2 min 37 s measured) on the default backend
##      (a private redis-server when installed, else the embedded one)
run: build
	@bash .ci/setup run
	$(SIMRUN) run --suite quick --redis auto

## test: gofmt and vet, every package's tests, the mutants' tests, then the whole ci suite against a
##       real redis-server
# The three test stages run side by side (each prints its output whole when it ends) when the machine's
# CPUs are free: they spend nearly all their time waiting, and a fresh clone's `bash .ci/run` takes about
# 5 min instead of about 11 one after another. The load they put on each other is what the lag
# measurement is for (a timing verdict the machine was too late to judge is inconclusive, never a
# violation). On a machine something else keeps busy, that load comes on top and they run one after
# another: .ci/jobs samples the CPUs and says which (TEST_JOBS=3 or TEST_JOBS=1 chooses).
TEST_JOBS ?=
test: setup lint build
	@jobs="$(TEST_JOBS)"; [ -n "$$jobs" ] || jobs=$$(bash .ci/jobs); \
	  $(MAKE) --no-print-directory -j $$jobs --output-sync=target unit mutants suite

## setup: install what the tests need when it is missing (redis-server, chromium, the PostgreSQL client,
##        libfaketime, python3-redis, Node and the examples' packages; .ci/setup)
setup:
	@bash .ci/setup

# Most tests wait (on timers, on a Redis, on a fleet taking over), so they run in parallel: up to
# UNIT_PARALLEL at once within a package (go test's default is one per CPU).
# UNIT_PACKAGES test binaries run at once (go test's default is one per CPU).
UNIT_PARALLEL ?= 4
UNIT_PACKAGES ?= 4
# A package test whose timing premise failed while the machine ran too late to judge it is skipped as
# INCONCLUSIVE (internal/lagtest) and listed in UNIT_INCONCLUSIVE with its package. An inconclusive test is
# never a pass: after the package run, internal/unitrerun prints the list and runs each such test once
# more, alone in its package (go test -count=1 -run '^TestX$/^case$' ./pkg), as `make suite` re-runs an
# inconclusive scenario. One that passes on its re-run is reported, with its first attempt's lag line;
# one still inconclusive makes the target fail saying the machine was too loaded to judge it (exit 3, its
# lines in UNIT_INCONCLUSIVE's -rerun file), one that fails on its re-run fails it (exit 1). When the
# package run itself failed, its inconclusive tests are listed, not run again.
UNIT_INCONCLUSIVE := simrun-out/unit-inconclusive.txt
unit:
	@mkdir -p $(dir $(abspath $(UNIT_INCONCLUSIVE))) && rm -f $(UNIT_INCONCLUSIVE) $(basename $(UNIT_INCONCLUSIVE))-rerun.txt
	@echo "$(GO) test -count=1 -timeout 12m -p $(UNIT_PACKAGES) -parallel $(UNIT_PARALLEL) ./..."
	@TENURE_INCONCLUSIVE_LOG=$(abspath $(UNIT_INCONCLUSIVE)) \
	  $(GO) test -count=1 -timeout 12m -p $(UNIT_PACKAGES) -parallel $(UNIT_PARALLEL) ./...; code=$$?; \
	  $(GO) run ./internal/unitrerun -go "$(GO)" -first-exit $$code $(UNIT_INCONCLUSIVE)

## mutants: the checker-power tests (docs/mutants.md), built with the tag that adds the mutants; every
##          test of a tagged file is named TestMutant...
MUTANTS_TAG  := tenure_mutants
MUTANTS_PKGS := ./internal/mutation ./lease ./election ./systems/reference ./sim
# A mutant whose verdict rests on a run the harness could not judge (inconclusive: its own or the
# reference's it is set against) is neither caught nor missed: it is re-run as make unit re-runs its
# inconclusive tests, with the tag.
MUTANTS_INCONCLUSIVE := simrun-out/mutants-inconclusive.txt
mutants:
	@mkdir -p $(dir $(abspath $(MUTANTS_INCONCLUSIVE))) && rm -f $(MUTANTS_INCONCLUSIVE) $(basename $(MUTANTS_INCONCLUSIVE))-rerun.txt
	@echo "$(GO) test -count=1 -timeout 12m -tags $(MUTANTS_TAG) -run '^TestMutant' $(MUTANTS_PKGS)"
	@TENURE_INCONCLUSIVE_LOG=$(abspath $(MUTANTS_INCONCLUSIVE)) \
	  $(GO) test -count=1 -timeout 12m -tags $(MUTANTS_TAG) -run '^TestMutant' $(MUTANTS_PKGS); code=$$?; \
	  $(GO) run ./internal/unitrerun -go "$(GO)" -tags $(MUTANTS_TAG) -first-exit $$code $(MUTANTS_INCONCLUSIVE)

# An inconclusive scenario (nothing violated, but the harness itself ran too late to judge a timing
# verdict) is run once more with the same seed; still inconclusive, simrun exits 3 and the target fails
# saying the machine was too loaded, not that the system is broken.
CI_RERUNS ?= 1

suite: build
	rm -rf simrun-out/ci
	@$(SIMRUN) run --suite ci --seed $(CI_SEED) --redis $(CI_REDIS) --quiet --out simrun-out/ci \
	  --rerun-inconclusive $(CI_RERUNS); code=$$?; \
	  if [ $$code -eq 3 ]; then \
	    echo "make suite: INCONCLUSIVE: nothing was violated, but the machine was too loaded to judge every timing verdict"; \
	    echo "  (the harness's own lag exceeded the threshold, even on a re-run; see simrun-out/ci/index.html)."; \
	    echo "  Run it again on a quieter machine, or with CI_RERUNS=N."; \
	  fi; [ $$code -eq 0 ] || exit $$code
	@# The same seed in virtual time: every scenario virtual time accepts must pass there too (seconds).
	rm -rf simrun-out/ci-virtual
	$(SIMRUN) run --suite ci --seed $(CI_SEED) --virtual --quiet --out simrun-out/ci-virtual

## campaign: the campaign to run before resolving an issue: the ci suite for the reference on
##           CAMPAIGN_SEEDS random seeds per scenario, drawn from CAMPAIGN_SEED (printed; default the
##           clock), in CAMPAIGN_SHARDS shards run here one after another (each could run on a machine of
##           its own), then merged into $(CAMPAIGN_OUT)/merged; the merge's exit status is the target's.
##           CAMPAIGN_SCENARIOS picks other scenarios (names, or --suite NAME)
CAMPAIGN_SCENARIOS ?= --suite ci
CAMPAIGN_SEEDS     ?= 10
CAMPAIGN_SHARDS    ?= 2
CAMPAIGN_OUT       ?= simrun-out/campaign
ifndef CAMPAIGN_SEED
CAMPAIGN_SEED := $(shell date +%s)
endif
campaign: build
	rm -rf $(CAMPAIGN_OUT)
	for i in $$(seq 1 $(CAMPAIGN_SHARDS)); do \
	  $(SIMRUN) campaign $(CAMPAIGN_SCENARIOS) --seeds $(CAMPAIGN_SEEDS) --campaign-seed $(CAMPAIGN_SEED) --redis $(CI_REDIS) \
	    --shard $$i/$(CAMPAIGN_SHARDS) --out $(CAMPAIGN_OUT)/shard-$$i || [ $$? -ne 130 ] || exit 130; \
	done
	$(SIMRUN) campaign merge $(CAMPAIGN_OUT)/merged $(CAMPAIGN_OUT)/shard-*

## agree: virtual time against real time on every system that runs on one Redis (the reference, the
##        baselines, the peers): the ci suite's scenarios virtual time holds, AGREE_SEEDS seeds a cell,
##        as a matrix in virtual time (a minute; Redlock's row is refused there), then the same cells
##        in real time against a private redis-server (about an hour), compared cell by cell (simrun
##        matrix compare; its exit status is the target's). AGREE_RECORD=1 then keeps the real verdicts
##        as the record `make test` compares virtual time with
##        (internal/virtualcheck/testdata/real-verdicts.tsv)
AGREE_SEEDS ?= 2
AGREE_OUT   ?= simrun-out/agree
AGREE_RECORD ?=
agree: build
	rm -rf $(AGREE_OUT) && mkdir -p $(AGREE_OUT)
	@$(SIMRUN) matrix --virtual --suite ci --time-scale 0.1 --seeds $(AGREE_SEEDS) --out $(AGREE_OUT)/virtual >$(AGREE_OUT)/virtual.log 2>&1 \
	  || { cat $(AGREE_OUT)/virtual.log; exit 1; }
	@# The cells the virtual matrix held, in real time. Exit 1 (an unexpected cell) or 3 (inconclusive)
	@# still leaves verdicts to compare.
	@$(SIMRUN) matrix --cells-of $(AGREE_OUT)/virtual --suite ci --redis $(CI_REDIS) --seeds $(AGREE_SEEDS) \
	  --out $(AGREE_OUT)/real; code=$$?; [ $$code -le 1 ] || [ $$code -eq 3 ] || exit $$code
	$(SIMRUN) matrix compare $(AGREE_OUT)/real $(AGREE_OUT)/virtual
	@if [ -n "$(AGREE_RECORD)" ]; then \
	  { echo "# measured by make agree on $$(date -u +%F), commit $$(git rev-parse --short HEAD 2>/dev/null || echo unknown)"; \
	    cat $(AGREE_OUT)/real/verdicts.tsv; } > internal/virtualcheck/testdata/real-verdicts.tsv; \
	  echo "recorded internal/virtualcheck/testdata/real-verdicts.tsv"; fi

## bench: library and checker benchmarks, then the harness's figures (failover, handoff, commands per
##        renewal, peak memory) over seeds 1-5; docs/performance.md's first table comes from the second part;
##        then runs per CPU-second in virtual time (one core), docs/virtual.md's figures
BENCH_SCENARIOS := crash-failover restart-new-id scale-down-3-to-2 voluntary-release \
                   election-leader-crash-redis election-graceful-handoff-redis
bench: build
	$(GO) test -run '^$$' -bench . -benchtime 1x ./lease/ ./checker/ ./reports/
	$(SIMRUN) bench $(BENCH_SCENARIOS) --runs 5 --seed 1
	GOMAXPROCS=1 GOGC=400 $(SIMRUN) bench balance-3x9 crash-failover redis-restart-empty explore --virtual --runs 20 --seed 1

lint:
	@unformatted=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	  if [ -n "$$unformatted" ]; then echo "gofmt needed:"; echo "$$unformatted"; exit 1; fi
	$(GO) vet ./...
	$(GO) vet -tags $(MUTANTS_TAG) ./...

clean:
	rm -rf bin simrun-out
