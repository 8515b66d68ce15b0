/** `runner validate FILE` */
import { loadPipeline } from '../pipeline/load.js';
import { parseFlags } from './args.js';

export async function validateCommand(args: string[]): Promise<number> {
  const { positionals } = parseFlags('validate', args, {}, ['FILE']);
  const file = positionals[0]!;
  const { pipeline } = await loadPipeline(file);
  process.stdout.write(`${file}: ok (pipeline ${pipeline.name}, ${pipeline.steps.length} step${pipeline.steps.length === 1 ? '' : 's'})\n`);
  return 0;
}
