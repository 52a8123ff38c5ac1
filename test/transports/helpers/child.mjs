// A tiny NDJSON upstream for the stdio transport tests: `node child.mjs <mode>`.
//
//   echo          answers requests (see `answer` below); exits on stdin EOF
//   garbage       writes non-JSON-RPC lines and stderr noise between valid notifications; exits on EOF
//   big <bytes>   sends one notification of about <bytes> bytes (multi-byte UTF-8 text); exits on EOF
//   ignore-eof    ignores stdin EOF; dies on SIGTERM (default disposition)
//   ignore-term   ignores stdin EOF and SIGTERM; only SIGKILL stops it
//   grandchild    spawns a grandchild (same process group, inherits stdout), reports both pids, ignores EOF
//   grandchild-eof  like grandchild, but the child itself exits on stdin EOF, orphaning the grandchild
//
// Every mode first sends {"method":"ready","params":{"pid":…}} once its signal handlers are installed.
import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';

const mode = process.argv[2] ?? 'echo';
const send = (msg) => process.stdout.write(JSON.stringify({ jsonrpc: '2.0', ...msg }) + '\n');
const keepAlive = () => setInterval(() => {}, 1 << 30);

function answer(req) {
  const p = req.params ?? {};
  switch (req.method) {
    case 'env':
      return send({ id: req.id, result: { value: process.env[p.name] ?? null, hasPath: typeof process.env.PATH === 'string', cwd: process.cwd() } });
    case 'slow':
      return setTimeout(() => send({ id: req.id, result: { tag: p.tag } }), p.ms);
    case 'fail':
      return send({ id: req.id, error: { code: -32602, message: 'bad params', data: { why: 'test' } } });
    case 'exit':
      for (const line of p.stderr ?? []) process.stderr.write(line + '\n');
      return process.exit(p.code);
    default:
      return send({ id: req.id, result: { method: req.method, params: p } });
  }
}

function readRequests(onEof) {
  const rl = createInterface({ input: process.stdin });
  rl.on('line', (line) => {
    if (!line.trim()) return;
    const msg = JSON.parse(line);
    if (msg.method !== undefined && msg.id !== undefined) answer(msg);
  });
  rl.on('close', onEof);
}

switch (mode) {
  case 'echo':
    send({ method: 'ready', params: { pid: process.pid } });
    readRequests(() => process.exit(0));
    break;
  case 'garbage':
    send({ method: 'ready', params: { pid: process.pid } });
    process.stdout.write('this is not json\n');
    process.stderr.write('some warning on stderr\n');
    process.stdout.write('{"hello":"world"}\n');
    process.stdout.write('x'.repeat(5000) + '\n');
    send({ method: 'valid/one', params: { n: 1 } });
    process.stdout.write('[{"jsonrpc":"2.0","method":"batched"}]\n');
    process.stdout.write('{"jsonrpc":"1.0","method":"old"}\n');
    process.stderr.write('Debugger listening... more noise\n');
    process.stdout.write('\n   \n{"jsonrpc":"2.0","method":\n');
    send({ method: 'valid/two', params: { n: 2 } });
    readRequests(() => process.exit(0));
    break;
  case 'big': {
    const unit = 'aé€😀'; // 1 + 2 + 3 + 4 = 10 bytes
    const repeat = Math.ceil(Number(process.argv[3]) / 10);
    send({ method: 'ready', params: { pid: process.pid } });
    send({ method: 'big', params: { unit, repeat, text: unit.repeat(repeat) } });
    send({ method: 'after-big', params: {} });
    readRequests(() => process.exit(0));
    break;
  }
  case 'ignore-eof':
    keepAlive();
    send({ method: 'ready', params: { pid: process.pid } });
    process.stdin.resume();
    break;
  case 'ignore-term':
    process.on('SIGTERM', () => process.stderr.write('ignoring SIGTERM\n'));
    keepAlive();
    send({ method: 'ready', params: { pid: process.pid } });
    process.stdin.resume();
    break;
  case 'grandchild':
  case 'grandchild-eof': {
    const gc = spawn(process.execPath, ['-e', 'setInterval(() => {}, 1 << 30)'], { stdio: ['ignore', 'inherit', 'inherit'] });
    gc.on('spawn', () => send({ method: 'ready', params: { pid: process.pid, grandchild: gc.pid } }));
    if (mode === 'grandchild') {
      keepAlive();
      process.stdin.resume();
    } else {
      process.stdin.on('end', () => process.exit(0));
      process.stdin.resume();
    }
    break;
  }
  default:
    process.stderr.write(`unknown mode ${mode}\n`);
    process.exit(2);
}
