// A node --test reporter: the seconds each test file's tests took (one after another within a file), slowest first,
// so a CI log says where the suite's time goes. Used by scripts/test-suite.sh beside the spec reporter.
// The table is written whole to $TEST_TIMES_FILE after each file's test, synchronously: the suite runs with
// --test-force-exit, which ends the process before a reporter's last output would be written.
import { writeFileSync } from 'node:fs';
import path from 'node:path';

export default async function* testTimes(source) {
  const perFile = new Map();
  const out = process.env.TEST_TIMES_FILE;
  for await (const event of source) {
    const d = event.data;
    if ((event.type === 'test:pass' || event.type === 'test:fail') && d.nesting === 0 && d.file) {
      perFile.set(d.file, (perFile.get(d.file) ?? 0) + (d.details?.duration_ms ?? 0));
      if (out) writeFileSync(out, table(perFile));
    }
  }
  if (!out) yield table(perFile);
}

function table(perFile) {
  return [...perFile]
    .sort((a, b) => b[1] - a[1])
    .map(([file, ms]) => `${(ms / 1000).toFixed(1).padStart(7)} s  ${path.relative(process.cwd(), file)}\n`)
    .join('');
}
