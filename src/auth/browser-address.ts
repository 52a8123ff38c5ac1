/**
 * Which addresses mcpx hands to a browser, or shows as one to open: `https:` anywhere, `http:` only on loopback
 * (127.0.0.0/8, [::1], localhost: a local authorization server or mcpx's own page). Everything else — `file:`,
 * `javascript:`, `data:`, a custom scheme an opener turns into a program, plain `http:` across a network — is
 * refused: an authorization server's metadata (or `oauth.authServerMetadataUrl`, or an upstream's URL
 * elicitation) chooses the address, and the platform opener runs whatever its scheme is bound to.
 */

/** Why `raw` may not be opened (naming its scheme and host), or undefined when it may. */
export function browserAddressProblem(raw: string): string | undefined {
  let u: URL;
  try {
    u = new URL(raw);
  } catch {
    return 'it is not a URL';
  }
  const where = `scheme ${JSON.stringify(u.protocol)}, host ${u.host === '' ? 'none' : JSON.stringify(u.host)}`;
  if (u.protocol === 'https:' && u.host !== '') return undefined;
  if (u.protocol === 'http:' && isLoopbackHost(u.hostname)) return undefined;
  if (u.protocol === 'http:') return `plain http is allowed only on loopback (${where})`;
  return `only https (or http on loopback) is opened (${where})`;
}

/** 127.0.0.0/8, ::1 and localhost: a name or address that cannot leave this machine. */
export function isLoopbackHost(hostname: string): boolean {
  const h = hostname.toLowerCase();
  if (h === 'localhost' || h === '[::1]') return true;
  return /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(h);
}
