// The client scenarios' mock servers call listen(0), which binds every interface. Preloaded into the
// conformance CLI by scripts/conformance.ts (`--import`), this binds a listen without a host to 127.0.0.1.
//
// Binding must stay synchronous: some scenarios read server.address().port right after listen(0). Node
// binds a listen with a host only after dns.lookup(host) calls back, so for the duration of the call the
// lookup of the loopback literal answers at once.
import dns from 'node:dns';
import net from 'node:net';

const LOOPBACK = '127.0.0.1';
const listen = net.Server.prototype.listen;
const lookup = dns.lookup;

function lookupLoopbackAtOnce(host, ...rest) {
  const callback = rest[rest.length - 1];
  const all = typeof rest[0] === 'object' && rest[0] !== null && rest[0].all === true;
  if (host !== LOOPBACK || typeof callback !== 'function') return lookup.call(this, host, ...rest);
  if (all) callback(null, [{ address: LOOPBACK, family: 4 }]);
  else callback(null, LOOPBACK, 4);
  return {};
}

net.Server.prototype.listen = function (...args) {
  const [first] = args;
  // listen(), listen(cb), listen(port[, backlog][, cb]), listen({ port }): no host given, so loopback.
  if (first === undefined || typeof first === 'function') args.unshift(0, LOOPBACK);
  else if (typeof first === 'number' || (typeof first === 'string' && /^\d+$/.test(first))) {
    if (typeof args[1] !== 'string') args.splice(1, 0, LOOPBACK);
  } else if (
    first !== null &&
    Object.getPrototypeOf(first) === Object.prototype &&
    first.path === undefined &&
    first.fd === undefined &&
    first.handle === undefined &&
    first.host === undefined
  ) {
    args[0] = { ...first, host: LOOPBACK };
  }
  dns.lookup = lookupLoopbackAtOnce;
  try {
    return listen.apply(this, args);
  } finally {
    dns.lookup = lookup;
  }
};
