/** Between a server's name and its tool's (or prompt's) in aggregate mode: `<server>__<tool>` (./names.ts). Its own module: `mcpx serve` reads names with it and loads nothing else of the naming. */
export const SEPARATOR = '__';
