/**
 * Every `mcpx` command, in the order `mcpx --help` lists them. A command lives in its own file here and
 * exports `register(program, cli)`; it imports what it needs to run inside its action (dynamic
 * imports), so loading a command for registration costs next to nothing and `mcpx --version` or
 * `mcpx call` never load the daemon. A new command: its file, and one line below.
 */
import type { CliCommand } from '../common.js';
import * as call from './call.js';
import * as config from './config.js';
import * as daemon from './daemon.js';
import * as protocol from './protocol.js';
import * as reload from './reload.js';
import * as serve from './serve.js';
import * as servers from './servers.js';
import * as settings from './settings.js';
import * as status from './status.js';
import * as stop from './stop.js';
import * as tools from './tools.js';
import * as ui from './ui.js';

export const COMMANDS: readonly CliCommand[] = [daemon, serve, ui, status, stop, reload, servers, tools, call, protocol, settings, config];
