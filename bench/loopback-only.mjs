// Preload for peers the benchmark runs that listen on every interface by default (supergateway's
// `app.listen(port)`): a listen without a host binds 127.0.0.1 instead, so nothing the benchmark
// starts is reachable from outside this machine. Usage: node --import ./bench/loopback-only.mjs …
import net from 'node:net';

const listen = net.Server.prototype.listen;
net.Server.prototype.listen = function patchedListen(...args) {
  const first = args[0];
  if (typeof first === 'number' || (typeof first === 'string' && /^\d+$/.test(first))) {
    if (typeof args[1] !== 'string') args.splice(1, 0, '127.0.0.1');
  } else if (first && typeof first === 'object' && first.path === undefined && first.host === undefined) {
    args[0] = { ...first, host: '127.0.0.1' };
  }
  return listen.apply(this, args);
};
