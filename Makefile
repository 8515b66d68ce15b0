# The two commands a new user needs:
#   make demo   set everything up and run pipelines/hello.yaml on a demo project
#   make test   set everything up and run the whole test suite (unit + integration)
# Both install what they need on a fresh Debian machine (root, Node 20).

SHELL := /bin/bash
RUNNER := node dist/runner/main.js
DEMO_HOME := .demo/home

.PHONY: pip-wheel all deps build docker images runner-image compose browser podman demo demo-agent test test-unit bench clean

all: build

node_modules/.installed: package.json package-lock.json
	npm ci --no-audit --no-fund --loglevel=error
	@touch $@

deps: node_modules/.installed

build: deps
	npm run --silent build

# Starts a Docker engine when none answers (installs Debian's docker.io if needed), with
# gVisor's runsc registered when this started it (ensure-gvisor.sh; a user's own engine is left alone).
docker:
	@bash scripts/ensure-docker.sh
	@bash scripts/ensure-gvisor.sh

# runner/base:latest, built without any registry (debootstrap + docker import), then
# runner/toolchain, runner/gateway and the agent images on it (images/build.sh): each only when missing or out of date.
images: build docker
	@bash images/base/build.sh
	@bash images/build.sh

# runner/runner:latest, the runner's own image for docker compose (runner serve).
runner-image: build images
	@bash images/runner/build.sh

# Debian's docker-compose (Compose v1), for the compose deployment's test.
compose: docker
	@bash scripts/ensure-compose.sh

# Debian's podman with its root API service at /run/podman/podman.sock, and the runner's images copied into its
# store (docs/podman.md); Docker's engine is left alone. For test/integration/podman.test.ts and --engine podman.
# PODMAN_IMAGES: which of the runner's images to copy (make test copies the three its Podman lane uses).
PODMAN_IMAGES ?= base toolchain gateway claude-code codex opencode runner
podman: images
	@IMAGES="$(PODMAN_IMAGES)" bash scripts/ensure-podman.sh

# pip 25 from Debian's trixie package, for the pip cache poisoning test (Debian 12's pip is older than the attack).
pip-wheel:
	@bash scripts/ensure-pip-wheel.sh

# Debian's Chromium, for the dashboard tests (driven by playwright-core).
browser:
	@bash scripts/ensure-chromium.sh

demo: build images
	@bash scripts/demo-repo.sh
	$(RUNNER) exec pipelines/hello.yaml --home $(DEMO_HOME)
	@echo
	@echo "The run's branch in the demo project, one commit per step:"
	@git -C .demo/project log --format='  %h %s' --max-count=4 "$$(git -C .demo/project for-each-ref --sort=-refname --format='%(refname:short)' refs/heads/run/ | head -n1)"
	@echo "Pushed to the demo remote:"; git -C .demo/remote.git branch --list 'run/*' | sed 's/^/ /'
	@echo "Worktrees left in $(DEMO_HOME)/worktrees: $$(ls $(DEMO_HOME)/worktrees | wc -l)"

# A rehearsal of pipelines/implement-review.yaml: the real Claude Code in its container, a scripted model, no key.
demo-agent: build images
	@bash scripts/demo-agent-repo.sh
	node scripts/demo-agent.mjs
	@echo
	@echo "The run's branch in .demo/agent-project, one commit per step:"
	@git -C .demo/agent-project log --format='  %h %s' --max-count=4 "$$(git -C .demo/agent-project for-each-ref --sort=-refname --format='%(refname:short)' refs/heads/run/ | head -n1)"

# Every test file, several at a time, test/safety's hostile steps again under gVisor, and test/safety with the
# core integration files again on root Podman (scripts/test-suite.sh says what runs side by side and why). The gVisor pass has no skip: with no working runsc the runner refuses
# every step (no_gvisor) and the tests fail; test/safety/container.test.ts checks the step saw gVisor's kernel,
# and the fixture that each run's record says gvisor. TEST_JOBS=1 runs one file at a time in each lane.
test: build images runner-image compose browser pip-wheel
	@$(MAKE) --no-print-directory podman PODMAN_IMAGES="base toolchain gateway"
	bash scripts/test-suite.sh

test-unit: build
	node --test --test-reporter=spec $$(find dist/test -name '*.test.js' -not -path '*/integration/*')

# Every bench (bench/README.md): each against the plain tools in the same run, then a table.
bench: build images
	node dist/bench/all.js

clean:
	rm -rf dist .demo
