/** Shared by the CLI (`--inspect[=PORT]`) and the inspector itself, without loading the inspector. */

/** The relay's port when `--inspect` names none. */
export const DEFAULT_INSPECT_PORT = 8099;
/** Stately's inspector viewer: a web page, framed by the relay's page. */
export const STATELY_VIEWER_URL = 'https://stately.ai/inspect';
