/**
 * What a project is, from its manifests and lockfiles: its ecosystem, package
 * manager, the commands that install, test and lint it, and the package
 * registries those reach. Pure: given the names of the files at its top (and
 * of the test requirement files found) and the text of the manifests it reads.
 */

export interface Detected {
  ecosystem: 'node' | 'python' | 'make' | 'unknown';
  /** how it was told, for the starter's comment */
  evidence: string;
  packageManager?: 'npm' | 'pnpm' | 'yarn';
  install?: string;
  test?: string;
  lint?: string;
  /** the hosts the install reaches (the step's egress:) */
  registries?: string[];
  /** the package cache its install fills (the steps' cache:) */
  cache?: 'npm' | 'pnpm' | 'yarn' | 'pip';
  /** the project's dev container configuration (.devcontainer/devcontainer.json or .devcontainer.json), when it has one */
  devcontainer?: string;
}

export interface ProjectFiles {
  names: string[];
  packageJson?: string;
  pyproject?: string;
  makefile?: string;
  /** requirement files for tests or development that exist, from the project's top (tests/requirements.txt …) */
  testRequirements?: string[];
  /** which of DEVCONTAINER_FILES exist */
  devcontainerFiles?: string[];
}

/** Where the Dev Containers spec looks for a project's configuration, in its order. */
export const DEVCONTAINER_FILES = ['.devcontainer/devcontainer.json', '.devcontainer.json'];

/** Where a Python project's test requirements usually are, in the order they are preferred. */
export const TEST_REQUIREMENT_FILES = [
  'requirements-test.txt',
  'requirements-tests.txt',
  'test-requirements.txt',
  'requirements-dev.txt',
  'dev-requirements.txt',
  'requirements/test.txt',
  'requirements/dev.txt',
  'tests/requirements.txt',
  'test/requirements.txt',
];

const NPM = ['registry.npmjs.org'];
const PYPI = ['pypi.org', 'files.pythonhosted.org'];
/** the virtualenv lives outside the worktree: it is never committed, whatever the project ignores */
export const VENV = '/tmp/venv';

/** The extras a pyproject declares under [project.optional-dependencies] (a table's keys, read line by line). Pure. */
export function optionalDependencyGroups(pyproject: string): string[] {
  const out: string[] = [];
  let inTable = false;
  for (const raw of pyproject.split('\n')) {
    const line = raw.trim();
    if (line.startsWith('[')) {
      inTable = /^\[\s*project\.optional-dependencies\s*\]$/.test(line);
      continue;
    }
    const m = inTable ? /^["']?([A-Za-z0-9][A-Za-z0-9._-]*)["']?\s*=/.exec(line) : null;
    if (m) out.push(m[1]!);
  }
  return out;
}

export function detect(p: ProjectFiles): Detected {
  const found = detectEcosystem(p);
  const devcontainer = DEVCONTAINER_FILES.find((f) => p.devcontainerFiles?.includes(f));
  return devcontainer ? { ...found, devcontainer } : found;
}

function detectEcosystem(p: ProjectFiles): Detected {
  const has = (n: string) => p.names.includes(n);
  if (p.packageJson !== undefined) {
    let scripts: Record<string, string> = {};
    try {
      scripts = ((JSON.parse(p.packageJson) as { scripts?: Record<string, string> }).scripts ?? {}) as Record<string, string>;
    } catch {
      // an unreadable package.json: a node project all the same
    }
    const pm = has('pnpm-lock.yaml') ? 'pnpm' : has('yarn.lock') ? 'yarn' : 'npm';
    const install =
      pm === 'pnpm'
        ? 'corepack pnpm install --frozen-lockfile'
        : pm === 'yarn'
          ? 'corepack yarn install --frozen-lockfile'
          : has('package-lock.json') || has('npm-shrinkwrap.json')
            ? 'npm ci --no-audit --no-fund'
            : // no lockfile: none is written either (the step would commit one)
              'npm install --no-audit --no-fund --no-package-lock';
    const run = (script: string) => (pm === 'npm' ? (script === 'test' ? 'npm test' : `npm run ${script}`) : `corepack ${pm} run ${script}`);
    return {
      ecosystem: 'node',
      evidence: `package.json${pm !== 'npm' || has('package-lock.json') ? ` and ${pm === 'pnpm' ? 'pnpm-lock.yaml' : pm === 'yarn' ? 'yarn.lock' : 'package-lock.json'}` : ''}`,
      packageManager: pm,
      install,
      ...(scripts.test && !/no test specified/.test(scripts.test) ? { test: run('test') } : {}),
      ...(scripts.lint ? { lint: run('lint') } : {}),
      // corepack fetches pnpm and yarn themselves from the npm registry too
      registries: NPM,
      cache: pm,
    };
  }
  if (p.pyproject !== undefined || has('requirements.txt') || has('setup.py')) {
    const pyproject = p.pyproject ?? '';
    const requirementFiles = p.testRequirements ?? [];
    const usesPytest = /pytest/.test(pyproject) || has('pytest.ini') || has('.pytest.ini') || has('conftest.py') || has('tests') || requirementFiles.length > 0;
    const ruff = /ruff/.test(pyproject);
    // the project's own test needs (pytest-cov for a --cov in its pytest settings): an extra, else a requirement file
    const extras = optionalDependencyGroups(pyproject).filter((g) => ['test', 'tests', 'testing', 'dev'].includes(g));
    const extra = extras[0];
    const testFile = extra ? undefined : requirementFiles[0];
    const self = p.pyproject !== undefined || has('setup.py') ? (extra ? `-e '.[${extra}]'` : '-e .') : undefined;
    const parts = [
      ...(has('requirements.txt') ? ['-r requirements.txt'] : []),
      ...(self ? [self] : []),
      ...(testFile ? [`-r ${testFile}`] : []),
      // pytest and ruff when the project's own lists may not name them
      ...(usesPytest && !extra && !testFile ? ['pytest'] : []),
      ...(ruff && !extra && !testFile ? ['ruff'] : []),
    ];
    return {
      ecosystem: 'python',
      evidence: [p.pyproject !== undefined ? 'pyproject.toml' : has('requirements.txt') ? 'requirements.txt' : 'setup.py', ...(testFile ? [testFile] : [])].join(' and '),
      install: `python3 -m venv ${VENV} && ${VENV}/bin/pip install --quiet ${parts.join(' ')}`,
      test: usesPytest ? `${VENV}/bin/python -m pytest` : `${VENV}/bin/python -m unittest discover`,
      ...(ruff ? { lint: `${VENV}/bin/ruff check .` } : {}),
      registries: PYPI,
      cache: 'pip',
    };
  }
  if (p.makefile !== undefined) {
    const targets = new Set([...p.makefile.matchAll(/^([A-Za-z0-9_.-]+)\s*:(?!=)/gm)].map((m) => m[1]!));
    return {
      ecosystem: 'make',
      evidence: 'Makefile',
      ...(targets.has('test') ? { test: 'make test' } : targets.has('check') ? { test: 'make check' } : {}),
      ...(targets.has('lint') ? { lint: 'make lint' } : {}),
    };
  }
  return { ecosystem: 'unknown', evidence: 'no manifest this runner knows (package.json, pyproject.toml, requirements.txt, Makefile)' };
}
