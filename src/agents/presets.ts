/** The agent CLIs a pipeline can `use:`, by name. */
import { claudeCode } from './claude-code.js';
import type { AgentPreset } from './preset.js';

export const PRESETS: Record<string, AgentPreset> = {
  [claudeCode.name]: claudeCode,
};

export const PRESET_NAMES = Object.keys(PRESETS);
