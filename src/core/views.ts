/**
 * The daemon's views: the /v1 response bodies, derived from the response schemas in ../api/schemas.ts (the one
 * statement of the contract; the API tests hold every real answer to them). Types only: the CLI, the page
 * and the config view name them without loading the controller.
 */
import type { z } from 'zod';
import type { LoadedConfig } from '../config/config-file.js';
import type {
  callResultSchema,
  configViewSchema,
  instanceSchema,
  protocolSchema,
  reloadSchema,
  rejectedEditSchema,
  serverViewSchema,
  settingChangeSchema,
  statusSchema,
  toolsSchema,
} from '../api/schemas.js';

export type ServerView = z.output<typeof serverViewSchema>;
export type ServerStatusView = z.output<typeof statusSchema>['servers'][number];
export type LaneView = ServerStatusView['lanes'][number];
export type InstanceView = z.output<typeof instanceSchema>;
export type ProtocolRow = z.output<typeof protocolSchema>['servers'][number];
export type ToolsView = z.output<typeof toolsSchema>;
export type CallOutcome = z.output<typeof callResultSchema>;
export type SettingChangeView = z.output<typeof settingChangeSchema>;
export type ConfigView = z.output<typeof configViewSchema>;
export type ReloadOutcome = z.output<typeof reloadSchema>;
export type RejectedEdit = z.output<typeof rejectedEditSchema>;

/** A loaded config plus whether it is the bundled demo (no config file found). */
export type DaemonConfig = LoadedConfig & { demo?: boolean };
