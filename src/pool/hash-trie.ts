/**
 * A persistent string-keyed map (a hash array mapped trie) for the pool statechart's context.
 *
 * Why: the context must stay immutable (xstate/graph replays paths from shared snapshots), yet each
 * acquire and release changes one entry of tables with an entry per instance or caller. Here `set` and
 * `delete` copy only the nodes on the path to the key — O(log32 N) arrays of at most 32 — and share
 * everything else with the map they came from, so every earlier snapshot stays as it was.
 *
 * Layout: 5 bits of the key's 32-bit hash per level; a branch keeps a bitmap of the slots it uses and a
 * dense array of children. Keys whose whole hashes collide share a collision node.
 */
const BITS = 5;
const MASK = (1 << BITS) - 1;

/** FNV-1a over the key: cheap, and spreads `i1`, `i2`, … and `call:1`, `call:2`, … evenly. @internal exported for tests. */
export function hashOf(key: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < key.length; i++) {
    h ^= key.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return h >>> 0;
}

function popcount(x: number): number {
  x -= (x >>> 1) & 0x55555555;
  x = (x & 0x33333333) + ((x >>> 2) & 0x33333333);
  x = (x + (x >>> 4)) & 0x0f0f0f0f;
  return Math.imul(x, 0x01010101) >>> 24;
}

class Leaf<V> {
  constructor(
    readonly hash: number,
    readonly key: string,
    readonly value: V,
  ) {}
}

class Collision<V> {
  constructor(
    readonly hash: number,
    readonly leaves: readonly Leaf<V>[],
  ) {}
}

class Branch<V> {
  constructor(
    readonly bitmap: number,
    readonly children: readonly Node<V>[],
  ) {}
}

type Node<V> = Leaf<V> | Collision<V> | Branch<V>;

/** What a `set` did below a node: the node to put in its place, and whether the map grew. */
interface Put<V> {
  node: Node<V>;
  added: boolean;
}

function lookup<V>(node: Node<V>, hash: number, key: string): V | undefined {
  for (let shift = 0; ; shift += BITS) {
    if (node instanceof Branch) {
      const bit = 1 << ((hash >>> shift) & MASK);
      if ((node.bitmap & bit) === 0) return undefined;
      node = node.children[popcount(node.bitmap & (bit - 1))]!;
    } else if (node instanceof Leaf) {
      return node.key === key ? node.value : undefined;
    } else {
      if (node.hash !== hash) return undefined;
      for (const l of node.leaves) if (l.key === key) return l.value;
      return undefined;
    }
  }
}

/**
 * A branch (or, with equal hashes, a collision node) holding both. Hashes that differ do so in some bit
 * below 32, so the recursion ends by shift 30 (whose slot reads the top 2 bits).
 */
function pair<V>(a: Leaf<V> | Collision<V>, b: Leaf<V>, shift: number): Node<V> {
  if (a.hash === b.hash) return new Collision(a.hash, a instanceof Leaf ? [a, b] : [...a.leaves, b]);
  const ia = (a.hash >>> shift) & MASK;
  const ib = (b.hash >>> shift) & MASK;
  if (ia === ib) return new Branch(1 << ia, [pair(a, b, shift + BITS)]);
  return new Branch((1 << ia) | (1 << ib), ia < ib ? [a, b] : [b, a]);
}

function insert<V>(node: Node<V>, leaf: Leaf<V>, shift: number): Put<V> | null {
  if (node instanceof Branch) {
    const bit = 1 << ((leaf.hash >>> shift) & MASK);
    const i = popcount(node.bitmap & (bit - 1));
    if ((node.bitmap & bit) === 0) {
      const children = node.children.slice();
      children.splice(i, 0, leaf);
      return { node: new Branch(node.bitmap | bit, children), added: true };
    }
    const below = insert(node.children[i]!, leaf, shift + BITS);
    if (below === null) return null;
    const children = node.children.slice();
    children[i] = below.node;
    return { node: new Branch(node.bitmap, children), added: below.added };
  }
  if (node instanceof Leaf) {
    if (node.key === leaf.key) return Object.is(node.value, leaf.value) ? null : { node: leaf, added: false };
    return { node: pair(node, leaf, shift), added: true };
  }
  if (node.hash !== leaf.hash) return { node: pair(node, leaf, shift), added: true };
  const i = node.leaves.findIndex((l) => l.key === leaf.key);
  if (i < 0) return { node: new Collision(node.hash, [...node.leaves, leaf]), added: true };
  if (Object.is(node.leaves[i]!.value, leaf.value)) return null;
  const leaves = node.leaves.slice();
  leaves[i] = leaf;
  return { node: new Collision(node.hash, leaves), added: false };
}

/** The node without the key: `node` itself when the key is absent, undefined when nothing is left. */
function remove<V>(node: Node<V>, hash: number, key: string, shift: number): Node<V> | undefined {
  if (node instanceof Leaf) return node.key === key ? undefined : node;
  if (node instanceof Collision) {
    if (node.hash !== hash) return node;
    const leaves = node.leaves.filter((l) => l.key !== key);
    if (leaves.length === node.leaves.length) return node;
    return leaves.length === 1 ? leaves[0] : new Collision(hash, leaves);
  }
  const bit = 1 << ((hash >>> shift) & MASK);
  if ((node.bitmap & bit) === 0) return node;
  const i = popcount(node.bitmap & (bit - 1));
  const child = node.children[i]!;
  const below = remove(child, hash, key, shift + BITS);
  if (below === child) return node;
  if (below === undefined) {
    if (node.children.length === 1) return undefined;
    const children = node.children.slice();
    children.splice(i, 1);
    // A branch left with one leaf is that leaf: the trie keeps one shape per content.
    if (children.length === 1 && !(children[0] instanceof Branch)) return children[0];
    return new Branch(node.bitmap & ~bit, children);
  }
  // A lone leaf moves up in place of a branch that held nothing else.
  if (node.children.length === 1 && !(below instanceof Branch)) return below;
  const children = node.children.slice();
  children[i] = below;
  return new Branch(node.bitmap, children);
}

function* leavesOf<V>(node: Node<V> | undefined): IterableIterator<Leaf<V>> {
  if (node === undefined) return;
  if (node instanceof Leaf) yield node;
  else if (node instanceof Collision) yield* node.leaves;
  else for (const c of node.children) yield* leavesOf(c);
}

/** An immutable string-keyed map whose `set`/`delete` copy O(log N) small arrays. Unordered; values are never undefined. */
export class HashTrie<V> {
  private static readonly EMPTY = new HashTrie<never>(undefined, 0);

  static empty<V>(): HashTrie<V> {
    return HashTrie.EMPTY;
  }

  private constructor(
    private readonly root: Node<V> | undefined,
    readonly size: number,
  ) {}

  get(key: string): V | undefined {
    return this.root === undefined ? undefined : lookup(this.root, hashOf(key), key);
  }

  has(key: string): boolean {
    return this.get(key) !== undefined;
  }

  /** The map with `key` set; the map itself when it already held that very value. */
  set(key: string, value: V): HashTrie<V> {
    const leaf = new Leaf(hashOf(key), key, value);
    if (this.root === undefined) return new HashTrie(leaf, 1);
    const put = insert(this.root, leaf, 0);
    if (put === null) return this;
    return new HashTrie(put.node, put.added ? this.size + 1 : this.size);
  }

  /** The map without `key`; the map itself when it had no such key. */
  delete(key: string): HashTrie<V> {
    if (this.root === undefined) return this;
    const root = remove(this.root, hashOf(key), key, 0);
    if (root === this.root) return this;
    return root === undefined ? HashTrie.empty() : new HashTrie(root, this.size - 1);
  }

  *entries(): IterableIterator<[string, V]> {
    for (const l of leavesOf(this.root)) yield [l.key, l.value];
  }

  *values(): IterableIterator<V> {
    for (const l of leavesOf(this.root)) yield l.value;
  }
}
