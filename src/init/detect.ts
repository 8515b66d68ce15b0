/**
 * What a project is, from its manifests and lockfiles: its ecosystem, package
 * manager, and the commands that install, test and lint it. Pure: given the
 * names of the files at its top and the text of the manifests it reads.
 */

export interface Detected {
  ecosystem: 'node' | 'python' | 'make' | 'unknown';
  /** how it was told, for the starter's comment */
  evidence: string;
  packageManager?: 'npm' | 'pnpm' | 'yarn';
  install?: string;
  test?: string;
  lint?: string;
}

export interface ProjectFiles {
  names: string[];
  packageJson?: string;
  pyproject?: string;
  makefile?: string;
}

export function detect(p: ProjectFiles): Detected {
  const has = (n: string) => p.names.includes(n);
  if (p.packageJson !== undefined) {
    let scripts: Record<string, string> = {};
    try {
      scripts = ((JSON.parse(p.packageJson) as { scripts?: Record<string, string> }).scripts ?? {}) as Record<string, string>;
    } catch {
      // an unreadable package.json: a node project all the same
    }
    const pm = has('pnpm-lock.yaml') ? 'pnpm' : has('yarn.lock') ? 'yarn' : 'npm';
    const install = pm === 'pnpm' ? 'corepack pnpm install --frozen-lockfile' : pm === 'yarn' ? 'corepack yarn install --frozen-lockfile' : has('package-lock.json') ? 'npm ci' : 'npm install';
    const run = (script: string) => (pm === 'npm' ? (script === 'test' ? 'npm test' : `npm run ${script}`) : `corepack ${pm} run ${script}`);
    return {
      ecosystem: 'node',
      evidence: `package.json${pm !== 'npm' || has('package-lock.json') ? ` and ${pm === 'pnpm' ? 'pnpm-lock.yaml' : pm === 'yarn' ? 'yarn.lock' : 'package-lock.json'}` : ''}`,
      packageManager: pm,
      install,
      ...(scripts.test && !/no test specified/.test(scripts.test) ? { test: run('test') } : {}),
      ...(scripts.lint ? { lint: run('lint') } : {}),
    };
  }
  if (p.pyproject !== undefined || has('requirements.txt') || has('setup.py')) {
    const usesPytest = /pytest/.test(p.pyproject ?? '') || has('pytest.ini') || has('conftest.py') || has('tests');
    // pytest and ruff usually sit in optional or dev dependencies: installed with the project when used
    const ruff = /ruff/.test(p.pyproject ?? '');
    const extra = `${usesPytest ? ' pytest' : ''}${ruff ? ' ruff' : ''}`;
    const install = has('requirements.txt') ? `python3 -m venv .venv && .venv/bin/pip install -r requirements.txt${extra}` : `python3 -m venv .venv && .venv/bin/pip install -e .${extra}`;
    return {
      ecosystem: 'python',
      evidence: p.pyproject !== undefined ? 'pyproject.toml' : has('requirements.txt') ? 'requirements.txt' : 'setup.py',
      install,
      test: usesPytest ? '.venv/bin/python -m pytest' : '.venv/bin/python -m unittest discover',
      ...(ruff ? { lint: '.venv/bin/ruff check .' } : {}),
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
