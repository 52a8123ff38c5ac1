/** A JSON object: not null, not an array. The one test every boundary uses before reading a message's fields. */
export const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
