/**
 * The MCP Apps example servers (the `@modelcontextprotocol/server-*` packages) as mcpx upstreams, for the
 * MCP Apps tests: their entry files, a config for them, and a small local PDF for server-pdf (offline).
 */
import { writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { FIXTURE_DIR } from '../fixtures/index.js';

export const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
/** A package's `bin` script (they export no package.json to resolve). */
const entry = (pkg: string) => join(ROOT, 'node_modules', pkg, 'dist', 'index.js');

export const BASIC_SERVER = entry('@modelcontextprotocol/server-basic-vanillajs');
export const PDF_SERVER = entry('@modelcontextprotocol/server-pdf');
/** Registers its UI tool only for clients declaring the MCP Apps extension; offers extensions of its own. */
export const GATED_SERVER = join(FIXTURE_DIR, 'apps-gated.mjs');

export const UI_EXTENSION = 'io.modelcontextprotocol/ui';
export const UI_MIME = 'text/html;profile=mcp-app';
export const UI_CAPS = { extensions: { [UI_EXTENSION]: { mimeTypes: [UI_MIME] } } };

/** A one-page PDF saying `text`, written by hand (objects, xref offsets, trailer). */
export function writePdf(file: string, text = 'mcpx'): string {
  const stream = `BT /F1 24 Tf 20 100 Td (${text}) Tj ET`;
  const objects = [
    '<< /Type /Catalog /Pages 2 0 R >>',
    '<< /Type /Pages /Kids [3 0 R] /Count 1 >>',
    '<< /Type /Page /Parent 2 0 R /MediaBox [0 0 200 200] /Contents 4 0 R /Resources << /Font << /F1 5 0 R >> >> >>',
    `<< /Length ${stream.length} >>\nstream\n${stream}\nendstream`,
    '<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>',
  ];
  let out = '%PDF-1.4\n';
  const offsets: number[] = [];
  objects.forEach((o, i) => {
    offsets.push(out.length);
    out += `${i + 1} 0 obj\n${o}\nendobj\n`;
  });
  const xref = out.length;
  out += `xref\n0 ${objects.length + 1}\n0000000000 65535 f \n`;
  for (const o of offsets) out += `${String(o).padStart(10, '0')} 00000 n \n`;
  out += `trailer\n<< /Size ${objects.length + 1} /Root 1 0 R >>\nstartxref\n${xref}\n%%EOF\n`;
  writeFileSync(file, out, 'latin1');
  return file;
}

const generous = { mcpx: { probeTimeout: '20s', startTimeout: '30s' } };

/** A config entry running an example server (or fixture) on stdio. */
export function nodeServer(script: string, args: string[] = [], extra: Record<string, unknown> = {}): Record<string, unknown> {
  return { command: process.execPath, args: [script, ...args], ...generous, ...extra };
}

/** basic-vanillajs twice (a real `ui://` collision) and server-pdf on a local PDF. */
export function exampleServers(pdf: string): Record<string, Record<string, unknown>> {
  return {
    basic: nodeServer(BASIC_SERVER, ['--stdio']),
    basic2: nodeServer(BASIC_SERVER, ['--stdio']),
    pdf: nodeServer(PDF_SERVER, ['--stdio', pdf]),
  };
}
