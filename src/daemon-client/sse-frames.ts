/**
 * The daemon's event streams (`/v1/events`, a streamed `/v1/ask`) as the CLI reads them: text in, whole
 * frames out. One reader for both, so a frame split across chunks or a frame with several `data:` lines
 * is read the same way everywhere.
 */

/** Feeds text chunks; calls `onFrame(type, value)` for each whole frame whose data is JSON (others are skipped). */
export function sseFrameReader(onFrame: (type: string, value: unknown) => void): (chunk: string) => void {
  let buf = '';
  return (chunk) => {
    buf += chunk;
    let at: number;
    while ((at = buf.indexOf('\n\n')) !== -1) {
      const frame = buf.slice(0, at);
      buf = buf.slice(at + 2);
      let type = 'message';
      const data: string[] = [];
      for (const line of frame.split('\n')) {
        if (line.startsWith('event:')) type = line.slice(6).trim();
        else if (line.startsWith('data:')) data.push(line.slice(5).trimStart());
      }
      if (data.length === 0) continue;
      let value: unknown;
      try {
        value = JSON.parse(data.join('\n'));
      } catch {
        continue; // a frame we cannot read: skip it
      }
      onFrame(type, value);
    }
  };
}
