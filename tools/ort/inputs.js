// Seeded model inputs for ONNX Runtime, shared by compare.js (the oracle) and worker.js
// (the timing worker), so that a model timed by one and checked by the other sees the
// same values.
//
// Rules (also documented in compare.js, which is the user-facing description):
// - The data input (opts.dataInput, or the only graph input) gets uniform values in [-1, 1).
// - Every other input is a parameter of a weight-free export and gets values scaled to its
//   fan-in: rank >= 2 uniform in +-sqrt(3 / prod(dims[1:])); rank 1 and scalars uniform in
//   [0.5, 1.5) when the name looks like a scale or variance, else in [-0.1, 0.1).
// - Integer inputs get values in [0, opts.intMax]; bool inputs are random.
// - An input's values depend only on the seed, its name and its resolved shape, never on the
//   order of the graph inputs, so two models with the same input names and shapes get
//   identical inputs.
//
// Errors a user can cause (a non-tensor or unsupported input) throw InputError; the caller
// decides whether that ends the process (compare.js) or one request (worker.js).
'use strict';

/// An input that cannot be generated: not a tensor, or an element type without a rule.
class InputError extends Error {
  constructor(message) {
    super(message);
    this.name = 'InputError';
  }
}

// Integer inputs default to {0, 1}: valid as indices into any non-empty axis and as
// boolean-like flags, which is what integer inputs of exported models usually are.
const DEFAULT_INT_MAX = 1;

// --- deterministic random numbers -------------------------------------------------

/// 32-bit FNV-1a hash of a string's UTF-8 bytes.
function fnv1a(str) {
  let h = 0x811c9dc5;
  for (const byte of Buffer.from(str, 'utf8')) {
    h ^= byte;
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return h;
}

/// Mulberry32: a small, fast 32-bit PRNG; returns a function giving floats in [0, 1).
function mulberry32(seed) {
  let a = seed >>> 0;
  return function () {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

// --- inputs ------------------------------------------------------------------------

function defaultSymbolicNote(name, axis, dim) {
  process.stderr.write(`inputs.js: note: input ${name} dimension ${axis} (${dim}) is symbolic; using 1\n`);
}

/// The concrete shape of an input: opts.shapes[name] if given, else the metadata shape
/// with every symbolic (or unknown) dimension taken as 1. Each such dimension is reported
/// through opts.onSymbolicDim(name, axis, dim), by default a note on stderr.
function resolveShape(meta, opts) {
  if (opts.shapes && opts.shapes[meta.name]) return opts.shapes[meta.name];
  const note = opts.onSymbolicDim || defaultSymbolicNote;
  return meta.shape.map((d, k) => {
    if (typeof d === 'number' && d >= 0) return d;
    note(meta.name, k, d);
    return 1;
  });
}

/// [lo, hi) for a floating-point input; see the rules at the top of this file.
function floatRange(meta, dims, isData) {
  if (isData) return [-1, 1];
  if (dims.length >= 2) {
    const fanIn = dims.slice(1).reduce((p, d) => p * d, 1) || 1;
    const b = Math.sqrt(3 / fanIn);
    return [-b, b];
  }
  const n = meta.name.toLowerCase();
  const scaleLike = /gamma|scale|var|norm.*weight|ln.*weight|layernorm.*weight/.test(n);
  return scaleLike ? [0.5, 1.5] : [-0.1, 0.1];
}

const INTEGER_ARRAYS = new Map([
  ['int32', Int32Array], ['int16', Int16Array], ['int8', Int8Array],
  ['uint32', Uint32Array], ['uint16', Uint16Array], ['uint8', Uint8Array],
]);

/// One seeded input tensor. opts: { seed, shapes?, intMax?, onSymbolicDim? }.
/// Throws InputError for a non-tensor input or an element type without a rule.
function makeInput(ort, meta, opts, isData) {
  if (!meta.isTensor) throw new InputError(`input ${meta.name} is not a tensor; only tensor inputs are supported`);
  const intMax = opts.intMax === undefined ? DEFAULT_INT_MAX : opts.intMax;
  const dims = resolveShape(meta, opts);
  const size = dims.reduce((p, d) => p * d, 1);
  const rand = mulberry32((fnv1a(meta.name) ^ Math.imul(opts.seed, 0x9e3779b1) ^ fnv1a(dims.join('x'))) >>> 0);
  const t = meta.type;
  let data;
  if (t === 'float32' || t === 'float64') {
    const [lo, hi] = floatRange(meta, dims, isData);
    data = t === 'float32' ? new Float32Array(size) : new Float64Array(size);
    for (let i = 0; i < size; i++) data[i] = lo + (hi - lo) * rand();
  } else if (t === 'int64' || t === 'uint64') {
    data = t === 'int64' ? new BigInt64Array(size) : new BigUint64Array(size);
    for (let i = 0; i < size; i++) data[i] = BigInt(Math.floor(rand() * (intMax + 1)));
  } else if (INTEGER_ARRAYS.has(t)) {
    data = new (INTEGER_ARRAYS.get(t))(size);
    for (let i = 0; i < size; i++) data[i] = Math.floor(rand() * (intMax + 1));
  } else if (t === 'bool') {
    data = new Uint8Array(size);
    for (let i = 0; i < size; i++) data[i] = rand() < 0.5 ? 1 : 0;
  } else {
    throw new InputError(`input ${meta.name} has unsupported type ${t}`);
  }
  return new ort.Tensor(t, data, dims);
}

/// Feeds for every graph input in metas (a session's inputMetadata), keyed by name.
/// opts as for makeInput, plus dataInput: the name of the data input (default "input");
/// a graph with a single input treats that input as the data input whatever its name.
function makeFeeds(ort, metas, opts) {
  const dataInput = opts.dataInput === undefined ? 'input' : opts.dataInput;
  const feeds = {};
  for (const m of metas) {
    const isData = metas.length === 1 || m.name === dataInput;
    feeds[m.name] = makeInput(ort, m, opts, isData);
  }
  return feeds;
}

// Session options for timing a model on the CPU execution provider. Intra-op spinning is
// off unless asked for: with it on, a session's idle pool threads spin waiting for work,
// and two sessions timed turn by turn steal each other's cores. On 2 cores at 2 threads a
// model timed against itself then read up to 9% apart; with spinning off, within 1.3%.
// threads 0 leaves ORT's own default (one intra-op thread per physical core).
function sessionOptions(level, threads, spinning) {
  const so = {
    executionProviders: ['cpu'], graphOptimizationLevel: level, interOpNumThreads: 1, executionMode: 'sequential',
  };
  if (threads > 0) so.intraOpNumThreads = threads;
  if (!spinning) so.extra = { session: { intra_op: { allow_spinning: '0' }, inter_op: { allow_spinning: '0' } } };
  return so;
}

module.exports = {
  InputError, sessionOptions, DEFAULT_INT_MAX, fnv1a, mulberry32, resolveShape, floatRange, makeInput, makeFeeds,
};
