/** `mcpx serve`'s tool options (`--tools`, `--allow-tools`, `--deny-tools`), as the front reads them from serve's stream. */
export { isToolStrategy, TOOL_STRATEGIES, type EntryTools, type ToolStrategy } from '../front/tool-strategy.js';
