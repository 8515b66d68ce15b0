/** The help text. Kept apart so `runner --help` loads nothing else. */

export const HELP = `runner: run a pipeline of steps, each in its own container, on its own git worktree.

Usage:
  runner exec FILE [--json] [--home DIR] [--keep-workspace] [--secrets-file F]
                   [--input NAME=VALUE]... [--task ID [--title TEXT]] [--no-wait]
                   [--no-wait-at-gate] [--warm N]
                   [--egress-network NET] [--egress-private CIDR[,CIDR]]
                   [--egress-proxy URL] [--ca-file F] [--npm-registry URL]
                   [--pip-index URL] [--isolation runc|gvisor]
                   [--engine local|swarm|podman] [--registry HOST:PORT]
                   [--registry-auth F]
      Run the pipeline in FILE. Each run gets branch run/<runId> in the project,
      one commit per step, pushed to the project's remote at the end.
      (A persistent_directory project is worked on in place: no git.)
        --json             print one JSON summary on stdout at the end
                           (step output goes to stderr)
        --home DIR         the runner home (default: $RUNNER_HOME, else
                           /var/lib/runner for root, else $XDG_STATE_HOME/runner,
                           else ~/.local/state/runner)
        --keep-workspace   keep the run's worktree and print its path
        --secrets-file F   read the pipeline's secrets from F (KEY=value lines,
                           dotenv format) rather than the environment
        --input NAME=VALUE a value for one of the pipeline's inputs: (repeat
                           for more); the others take their defaults
        --task ID          work in the task's worktree (branch feat/ID-<slug>),
                           created on first use and kept for the next runs
        --title TEXT       the task's title, for its branch name
        --no-wait          fail rather than wait when the workspace is in use
        --no-wait-at-gate  at an approval gate, leave the run waiting (it holds
                           nothing) and exit 0, rather than wait for a decision
        --warm N           make N step gateways ahead, from the start, for the
                           run's steps behind one (agents), and on the local
                           engine the step's container beside each: each is
                           given to one step alone (docs/gateway.md#warm-gateways)
        --egress-network NET  the docker network steps' gateways reach out on
                           (default: $RUNNER_EGRESS_NETWORK, else bridge);
                           see docs/gateway.md
        --egress-private CIDR[,CIDR]  private ranges an allowed host may
                           resolve to (a company mirror); default
                           $RUNNER_EGRESS_PRIVATE, else none. This machine's
                           own addresses are refused whatever it says
        --egress-proxy URL the company's proxy (http://host:port) gateways
                           reach out through (default: $RUNNER_EGRESS_PROXY,
                           else $HTTPS_PROXY; none: no proxy)
        --ca-file F        a PEM bundle every step, agent and gateway trusts:
                           the whole set of roots (default: $RUNNER_CA_FILE,
                           else this machine's own bundle, like
                           /etc/ssl/certs/ca-certificates.crt; none: the
                           images' own roots)
        --npm-registry URL, --pip-index URL  package mirrors every step uses
                           and every gateway allows (default:
                           $RUNNER_NPM_REGISTRY, $RUNNER_PIP_INDEX); see
                           docs/company-networks.md
        --isolation gvisor the sandbox of every step whose file names none:
                           runc (the host's kernel) or gvisor (gVisor's
                           runsc, a kernel of its own; default:
                           $RUNNER_ISOLATION, else runc); see docs/gvisor.md
        --engine swarm     run the steps as jobs on the Docker Swarm that
                           DOCKER_HOST manages (default: $RUNNER_ENGINE, else
                           local); see docs/scale-out.md
        --engine podman    run the steps on Podman's Docker-compatible API
                           (DOCKER_HOST, else /run/podman/podman.sock as
                           root); rootless Podman is refused where it cannot
                           cap memory and processes; see docs/podman.md
        --registry HOST:PORT  with --engine swarm: the registry the nodes pull
                           the runner's own images from, each named by the
                           digest of exactly this engine's image (default:
                           $RUNNER_REGISTRY); one not pushed there refuses the
                           run with the command that pushes it
        --registry-auth F  a docker config.json (auths, credHelpers,
                           credsStore) images are pulled with, instead of the
                           docker client's own ($DOCKER_CONFIG/config.json,
                           else ~/.docker/config.json; default:
                           $RUNNER_REGISTRY_AUTH). Never given to a step; see
                           docs/private-images.md
  runner task ls [--json] [--home DIR]
      List task worktrees.
  runner task rm TASK_ID [--force] [--home DIR]
      Remove a task's worktree (its branch is kept); refused when the worktree
      holds uncommitted changes, unless --force.
  runner init [DIR] [--agent claude-code|codex] [--file runner.yaml] [--no-try] [--home DIR]
      Write a starter pipeline for the project in DIR (default .): an agent
      step, and a verify step with the install and test commands found in its
      manifests (package.json, pyproject.toml, requirements.txt, Makefile).
      In a git repository the checks are first tried once on the current
      commit, in the runner's sandbox (a run, with the run settings' flags:
      --ca-file, --npm-registry, ...); one that already fails there (a lint)
      is left out, with a comment saying why. --no-try: write it untried
      (offline). A project with a .devcontainer/devcontainer.json gets
      image: devcontainer, its checks tried in it. Never overwrites a file.
  runner validate FILE [--isolation runc|gvisor]
      Check FILE and print every problem with its line and column; warn of
      what this machine lacks (images, a gVisor runtime its steps ask for).
  runner runs ls [--pipeline P] [--status S] [--json]
  runner runs show RUN_ID [--json]
  runner runs prune --older-than 30d [--branches] [--yes]
      List, show, or remove run records (and with --branches the run branches
      never delivered). Every command that touches runs first recovers runs a
      crashed runner left: marked interrupted, leftovers committed, containers gone.
  runner logs RUN_ID [--step ID] [--follow] [--raw]
  runner logs RUN_ID --step ID --transcript [--json]
      An agent step's events: as its CLI wrote them, or with --json in one
      shape whichever CLI ran, a JSON object a line (docs/agents.md).
  runner diff RUN_ID [--raw]  the run's whole change against its base
      Step-made text is shown with its control characters made visible
      (\\x1b, \\r); --raw prints the bytes as kept (runner diff ID --raw | git apply).
  runner gc [RUN_ID...] [--yes]  remove the worktrees ended runs kept (branches stay)
  runner gc --pool [--yes]      remove the prepared worktrees of the pool (RUNNER_WORKTREE_POOL)
  runner cache ls [--project DIR] [--cache NAME] [--json]
  runner cache prune [--project DIR] [--cache NAME] [--unused-for 30d] [--all]
      List or remove the projects' dependency caches (cache: in a pipeline,
      docs/pipeline-format.md). Prune removes whole caches (a step fetches
      again what it needs); one a live run uses is kept, said, exit 1.
  runner push RUN_ID       push a run's branch again
  runner apply RUN_ID      the run's change into the project's checkout, uncommitted
  runner merge RUN_ID [--into BRANCH] [--squash] [--allow-empty] [--push]
  runner merge --all RUN_ID... [--into BRANCH] [--squash] [--allow-empty] [--push]
      Merge run branches in a temporary worktree and move the target branch
      (and the checkout, when it is the target). A refusal (target_dirty,
      verification_failed, patch_invalid, scope_violation, conflict,
      work_not_recorded, not_deliverable: a change the target holds already
      unless --allow-empty) changes nothing and exits 1.
  runner approve RUN_ID [--comment TEXT]
  runner reject RUN_ID [--comment TEXT]
      Decide a run waiting at an approval gate (status awaiting_approval).
      The comment reaches the next steps ($RUNNER_APPROVAL_COMMENT). An
      approved run goes on in the runner exec waiting for it, else here;
      a rejected one ends rejected, its work kept on its branch.
  runner resume RUN_ID [--pipeline FILE] [--json]
      Go on with a failed, interrupted, canceled or approved run from its
      first step that did not complete, on its own branch; the steps it
      completed are not run again and its budget counts what it spent. A
      pipeline file that changed since is refused with the difference,
      unless --pipeline names the file to take.
  runner fork RUN_ID --from STEP [--pipeline FILE] [--input NAME=VALUE]... [--json]
      A new run whose branch begins where RUN_ID was just before STEP, with
      the outputs of the steps before it; it runs STEP and what follows.
  runner serve --pipelines DIR [--home DIR] [--max-concurrent N] [--grace 30s]
               [--listen 127.0.0.1:7700] [--secrets-file F] [--egress-network NET]
               [--egress-private CIDR[,CIDR]] [--egress-proxy URL] [--ca-file F]
               [--npm-registry URL] [--pip-index URL] [--isolation runc|gvisor]
               [--engine local|swarm|podman] [--registry HOST:PORT] [--registry-auth F] [--max-log-streams 256] [--max-log-streams-per-client 32]
               [--log-stall 60s] [--project DIR]... [--warm N]
      Run the pipelines in DIR on their schedule: entries (cron, timezone,
      overlap, catchup), reloading DIR when it changes, with a JSON API on
      --listen (a non-loopback address needs RUNNER_TOKEN). SIGTERM: no new
      runs, running ones get --grace to finish, then are canceled. Live logs
      streamed at once: at most --max-log-streams in all (503 past it) and
      --max-log-streams-per-client to one address (429); a follower that
      has not taken what waits for it within --log-stall is cut. --warm N
      keeps N step gateways made ahead, and on the local engine the step's
      container beside each (given back after 10 minutes without a run;
      GET /metrics says how many are warm).
  runner mcp [--home DIR] [--pipelines DIR]... [--project DIR]... [--secrets-file F]
             [--agent-base-url URL] [--egress-network NET] [--egress-private CIDR[,CIDR]]
             [--egress-proxy URL] [--ca-file F] [--npm-registry URL] [--pip-index URL]
             [--isolation runc|gvisor] [--engine local|swarm|podman] [--registry HOST:PORT]
             [--registry-auth F] [--warm N]
      The runner as MCP tools over stdio, for an interactive agent (Claude
      Code, Codex): list and start the pipelines under --pipelines, start an
      agent task on a git project under --project, follow runs, read their
      diff, merge or apply them (marked destructive), cancel them. Runs run
      in this process and are recorded in the home like any other, with the
      settings exec's runs get (the same flags and variables: isolation,
      egress, proxy, CA, mirrors, engine, registry auth). Secrets come from
      --secrets-file only, never from the environment. --warm N keeps N step
      gateways made ahead for its runs' steps, as serve's. Claude Code:
        claude mcp add runner -- runner mcp --home H --pipelines DIR --project DIR
      runner serve offers the same tools at /mcp (its --project DIR... for agent tasks).
  runner images push --registry HOST:PORT [IMAGE...] [--json]
      Push the runner's own images (default: every runner/* image this engine
      has) to the registry a swarm's nodes pull from, under their tags and
      versions, and print each one's digest. The engine does the talking,
      with the docker client's credentials for the registry
      (docs/private-images.md): it must trust the registry
      (/etc/docker/certs.d/HOST:PORT/ca.crt, or insecure-registries for
      plain HTTP); see docs/scale-out.md
  runner --help | -h       this text
  runner --version | -v    the version

Exit codes:
  0 success   1 a step failed (or tampered with its worktree)   2 bad input (file, flags)
  3 infrastructure (docker unreachable, git missing, push failed with push: always)
  130 interrupted (Ctrl-C)
  141 its output was closed early (runner runs ls | head -1): it stops quietly, as
      git does; a run is canceled then (its work committed), serve stops
  A step's statuses: completed, failed, timed_out, oom, budget_exhausted (its
  gateway refused a model call: a budget: is spent), node_lost (swarm: its node
  went down), canceled, skipped, interrupted, not_recorded (some of its work
  is on no commit nor patch: a name git refuses, what git cannot read; named,
  kept in the workspace, the run fails).

Docs: README.md; the pipeline format: docs/pipeline-format.md; agents' gateway: docs/gateway.md; swarm: docs/scale-out.md
`;

/** The part of HELP about one command (its usage lines and what follows them), or all of it when none matches. Pure. */
export function helpFor(command: string): string {
  const lines = HELP.split('\n');
  const out: string[] = [];
  let inside = false;
  for (const l of lines) {
    if (/^ {2}runner /.test(l)) inside = l.startsWith(`  runner ${command} `) || l === `  runner ${command}`;
    else if (!/^ {3,}/.test(l)) inside = false;
    if (inside) out.push(l);
  }
  return out.length ? `${out.join('\n')}\n` : HELP;
}
