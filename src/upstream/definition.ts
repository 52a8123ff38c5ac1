/** How a configured upstream is reached: a process to spawn, or a URL. */
export interface StdioDefinition {
  command: string;
  args?: string[];
  env?: Record<string, string>;
  cwd?: string;
}

export interface HttpDefinition {
  url: string;
  headers?: Record<string, string>;
  /** Absent: Streamable HTTP (with the HTTP+SSE fallback). `sse`: the deprecated HTTP+SSE transport only. */
  transport?: 'streamable-http' | 'sse';
}

export type ServerDefinition = StdioDefinition | HttpDefinition;

export function isStdioDefinition(def: ServerDefinition): def is StdioDefinition {
  return typeof (def as StdioDefinition).command === 'string';
}
