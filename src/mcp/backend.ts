/**
 * What the MCP tools run on: a door that starts runs (runs/door.ts: the home,
 * the projects it serves, its pipelines and project folders, its start and
 * cancel) and who it records as starting and delivering them. `runner mcp`
 * starts runs through its own run holder; runner serve's /mcp through its
 * queue, whose start is the same holder's (runs/holder.ts).
 */
import type { Caller, StartDoor } from '../runs/door.js';

export type McpBackend = StartDoor & Caller;
