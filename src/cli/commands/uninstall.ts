/** `mcpx uninstall`: registered from install.ts, which it shares its helpers with. */
export { registerUninstall as register } from './install.js';
