// A node --test reporter: the seconds each test file's tests took (one after another within a file), slowest first,
// so a CI log says where the suite's time goes. Used by scripts/test-suite.sh beside the spec reporter.
import path from 'node:path';

export default async function* testTimes(source) {
  const perFile = new Map();
  for await (const event of source) {
    const d = event.data;
    if ((event.type === 'test:pass' || event.type === 'test:fail') && d.nesting === 0 && d.file) {
      perFile.set(d.file, (perFile.get(d.file) ?? 0) + (d.details?.duration_ms ?? 0));
    }
  }
  for (const [file, ms] of [...perFile].sort((a, b) => b[1] - a[1])) {
    yield `${(ms / 1000).toFixed(1).padStart(7)} s  ${path.relative(process.cwd(), file)}\n`;
  }
}
