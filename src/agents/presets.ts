/** The agent CLIs a pipeline can `use:`, by name. */
import { claudeCode } from './claude-code.js';
import { codex } from './codex.js';
import { opencode } from './opencode.js';
import type { AgentPreset } from './preset.js';

export const PRESETS: Record<string, AgentPreset> = {
  [claudeCode.name]: claudeCode,
  [codex.name]: codex,
  [opencode.name]: opencode,
};

export const PRESET_NAMES = Object.keys(PRESETS);
