#!/usr/bin/env node
// Runs two ONNX models in ONNX Runtime (CPU) on the same seeded random inputs and prints
// one JSON line comparing their outputs and latency. rlflow's independent oracle.
//
//   node compare.js A.onnx B.onnx [--seed S] [--runs N] [--level disabled|basic|extended|all]
//                   [--shape NAME=D0,D1,...]... [--data-input NAME] [--threads N] [--rtol X] [--spinning]
//   node compare.js A.onnx --level basic --write-optimized PATH   (B optional here)
//   node compare.js A.onnx [B.onnx] --dump-dir DIR                 (B optional here)
//   node compare.js A.onnx [--runs N] [--warmup W] [--threads N]    (time A alone)
//
// Output, one line:
//   {"max_abs_diff":..,"max_rel_diff":..,"outputs":N,"median_ms_a":..,"median_ms_b":..,"runs":N,...}
// max_rel_diff = max over outputs of max|a-b| / max|a|. NaN/Inf are compared exactly
// (equal when both are the same non-finite value) and counted in nonfinite_mismatch.
//
// Inputs: the data input (named --data-input, default "input"; or the only input) gets
// uniform values in [-1, 1). Every other graph input is a parameter (rlflow's weight-free
// exports, written with export_params=False) and gets values scaled to its fan-in, so
// deep networks neither vanish nor overflow: rank >= 2 tensors uniform in
// +-sqrt(3 / prod(dims[1:])); rank 1 and scalars uniform in [0.5, 1.5) when the name looks
// like a scale or variance (norm..weight, gamma, scale, var) and in [-0.1, 0.1) otherwise.
// Integer inputs get values in [0, --int-max] (default 1); bool inputs random.
// Each input's values depend only on the seed, its name and its shape, never on input
// order, so A and B always see identical inputs. These rules live in inputs.js, shared
// with worker.js, so a model timed there gets the same inputs as here.
//
// Inputs shapes come from the session's input metadata; symbolic dimensions need
// --shape NAME=... (otherwise they are taken as 1, with a note on stderr).
//
// The graph optimisation level defaults to 'disabled', so that ORT's own rewrites do not
// blur the comparison. --write-optimized PATH saves model A as optimised by ORT at
// --level (use basic: ORT's rule-based rewrites, a fair peer for rlflow).
//
// --dump-dir DIR writes model A's inputs and ORT's outputs for A as serialised ONNX
// TensorProto files in the ONNX test-data layout: DIR/input_0.pb, input_1.pb, ... in the
// order of A's graph inputs, and DIR/output_0.pb, ... in the order of A's outputs (each
// with its name, dims, data_type and little-endian raw_data). Files named input_N.pb or
// output_N.pb already in DIR are removed first, so no stale ones remain. Without B, A
// is run (warm-up plus --runs timed runs), dumped, and a line with its timing is printed.
//
// A alone, without --write-optimized or --dump-dir, is timed: --warmup untimed runs
// (default 1), then --runs timed ones; the line gives median_ms_a and every run in
// runs_ms_a. With --threads 1 and the default --level disabled it is single-threaded
// and unrewritten, the latency a per-op cost model is compared with.
//
// --threads N sets the intra-op threads (default 0: ORT's own choice, one per physical
// core, as an InferenceSession with default options runs). Intra-op spinning is off in
// both sessions unless --spinning is given: with it on, the idle threads of one session
// spin while the other runs, and at more than one thread the two steal each other's cores
// (a model timed against itself read several percent apart). median_ratio is the median
// over rounds of B's time over A's; A and B strictly alternate.
//
// Exit status: 0 done; 1 --rtol given and exceeded (or a NaN/Inf mismatch); 2 bad
// usage, unreadable model, inputs or outputs of A and B that differ, or a run failure.
'use strict';

const fs = require('fs');
const path = require('path');
const inputs = require('./inputs');

const USAGE = 'usage: node compare.js A.onnx [B.onnx] [--seed S] [--runs N] ' +
  '[--level disabled|basic|extended|all] [--shape NAME=D0,D1,...] [--data-input NAME] ' +
  '[--threads N] [--spinning] [--warmup W] [--int-max K] [--rtol X] [--write-optimized PATH] [--dump-dir DIR]';

function fail(msg, code = 2) {
  process.stderr.write(`compare.js: ${msg}\n`);
  process.exit(code);
}

function parseArgs(argv) {
  const o = {
    files: [], seed: 0, runs: 10, level: 'disabled', shapes: {}, dataInput: 'input',
    threads: 0, warmup: 1, intMax: 1, rtol: null, writeOptimized: null, dumpDir: null, spinning: false,
  };
  const num = (flag, v, int) => {
    if (v === undefined) fail(`${flag} needs a value\n${USAGE}`);
    const n = Number(v);
    if (!Number.isFinite(n) || (int && !Number.isInteger(n))) fail(`${flag}: not a number: ${v}`);
    return n;
  };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    const next = () => argv[++i];
    switch (a) {
      case '--seed': o.seed = num(a, next(), true); break;
      case '--runs': o.runs = num(a, next(), true); if (o.runs < 1) fail('--runs must be >= 1'); break;
      case '--warmup': o.warmup = num(a, next(), true); if (o.warmup < 0) fail('--warmup must be >= 0'); break;
      case '--threads': o.threads = num(a, next(), true); if (o.threads < 0) fail('--threads must be >= 0'); break;
      case '--int-max': o.intMax = num(a, next(), true); if (o.intMax < 0) fail('--int-max must be >= 0'); break;
      case '--rtol': o.rtol = num(a, next(), false); break;
      case '--spinning': o.spinning = true; break;
      case '--level': {
        o.level = next();
        if (!['disabled', 'basic', 'extended', 'all'].includes(o.level)) {
          fail(`--level must be disabled, basic, extended or all, not ${o.level}`);
        }
        break;
      }
      case '--data-input': o.dataInput = next(); if (o.dataInput === undefined) fail('--data-input needs a name'); break;
      case '--write-optimized': o.writeOptimized = next(); if (o.writeOptimized === undefined) fail('--write-optimized needs a path'); break;
      case '--dump-dir': o.dumpDir = next(); if (o.dumpDir === undefined) fail('--dump-dir needs a folder'); break;
      case '--shape': {
        const v = next();
        const m = /^(.+)=(\d+(?:,\d+)*)?$/.exec(v || '');
        if (!m) fail(`--shape wants NAME=D0,D1,... (empty for a scalar), not ${v}`);
        o.shapes[m[1]] = m[2] === undefined ? [] : m[2].split(',').map(Number);
        break;
      }
      case '-h': case '--help': process.stdout.write(USAGE + '\n'); process.exit(0); break;
      default:
        if (a.startsWith('--')) fail(`unknown option ${a}\n${USAGE}`);
        o.files.push(a);
    }
  }
  if (o.files.length < 1 || o.files.length > 2) fail(`need one or two models\n${USAGE}`);
  for (const f of o.files) {
    let st;
    try { st = fs.statSync(f); } catch (e) { fail(`no such model file: ${f}`); }
    if (!st.isFile()) fail(`not a file: ${f}`);
  }
  return o;
}

// --- inputs (generated by inputs.js) -----------------------------------------------

// Symbolic dimensions are taken as 1 by inputs.js; say so, and how to choose another size.
function symbolicDimNote(name, axis, dim) {
  process.stderr.write(`compare.js: note: input ${name} dimension ${axis} (${dim}) is symbolic; ` +
    `using 1 (pass --shape ${name}=...)\n`);
}

// --- ONNX TensorProto files (--dump-dir) --------------------------------------------

// TensorProto.DataType codes, by ORT tensor type; raw_data holds the elements
// little-endian (bool as one byte each).
const ONNX_TYPES = {
  float32: 1, uint8: 2, int8: 3, uint16: 4, int16: 5, int32: 6, int64: 7, bool: 9,
  float16: 10, float64: 11, uint32: 12, uint64: 13,
};

// Base-128 varint of a non-negative integer below 2^64 (a Number or a BigInt). Negative
// values are written as their 64-bit two's complement, as protobuf does for int64.
function varint(value) {
  let v = BigInt.asUintN(64, BigInt(value));
  const bytes = [];
  while (v >= 0x80n) {
    bytes.push(Number(v & 0x7fn) | 0x80);
    v >>= 7n;
  }
  bytes.push(Number(v));
  return Buffer.from(bytes);
}

const tag = (field, wireType) => varint((field << 3) | wireType);
const lengthDelimited = (field, bytes) => Buffer.concat([tag(field, 2), varint(bytes.length), bytes]);

// The tensor's elements as little-endian bytes (a copy).
function rawBytes(tensor) {
  const d = tensor.data;
  if (!ArrayBuffer.isView(d)) fail(`cannot dump tensor of type ${tensor.type}: its data is not a typed array`);
  const buf = Buffer.from(new Uint8Array(d.buffer, d.byteOffset, d.byteLength));  // copies
  const width = d.BYTES_PER_ELEMENT;
  if (require('os').endianness() === 'BE' && width > 1) {
    for (let i = 0; i < buf.length; i += width) buf.subarray(i, i + width).reverse();
  }
  return buf;
}

// A serialised onnx.TensorProto: dims (field 1, one varint each), data_type (2),
// name (8), raw_data (9).
function encodeTensorProto(name, tensor) {
  const dataType = ONNX_TYPES[tensor.type];
  if (dataType === undefined) fail(`cannot dump ${name}: unsupported tensor type ${tensor.type}`);
  const parts = [];
  for (const d of tensor.dims) parts.push(tag(1, 0), varint(d));
  parts.push(tag(2, 0), varint(dataType));
  parts.push(lengthDelimited(8, Buffer.from(name, 'utf8')));
  parts.push(lengthDelimited(9, rawBytes(tensor)));
  return Buffer.concat(parts);
}

function dumpTensors(dir, inputNames, feeds, outputNames, outputs) {
  try {
    fs.mkdirSync(dir, { recursive: true });
    for (const f of fs.readdirSync(dir)) {
      if (/^(input|output)_\d+\.pb$/.test(f)) fs.unlinkSync(path.join(dir, f));
    }
    const write = (file, name, tensor) => {
      const tmp = path.join(dir, `.${file}.tmp`);
      fs.writeFileSync(tmp, encodeTensorProto(name, tensor));
      fs.renameSync(tmp, path.join(dir, file));
    };
    inputNames.forEach((n, i) => write(`input_${i}.pb`, n, feeds[n]));
    outputNames.forEach((n, i) => write(`output_${i}.pb`, n, outputs[n]));
  } catch (e) {
    fail(`cannot write --dump-dir ${dir}: ${String(e.message || e).split('\n')[0]}`);
  }
}

// --- comparison --------------------------------------------------------------------

function toNumber(x) { return typeof x === 'bigint' ? Number(x) : x; }

function compareTensors(name, ta, tb) {
  const same = ta.dims.length === tb.dims.length && ta.dims.every((d, i) => d === tb.dims[i]);
  if (!same || ta.type !== tb.type) {
    return { error: `output ${name}: A is ${ta.type}[${ta.dims}] but B is ${tb.type}[${tb.dims}]` };
  }
  const a = ta.data, b = tb.data;
  let maxAbs = 0, maxA = 0, nonA = 0, nonB = 0, mismatch = 0;
  for (let i = 0; i < a.length; i++) {
    const x = toNumber(a[i]), y = toNumber(b[i]);
    const fx = Number.isFinite(x), fy = Number.isFinite(y);
    if (!fx) nonA++;
    if (!fy) nonB++;
    if (fx && fy) {
      const d = Math.abs(x - y);
      if (d > maxAbs) maxAbs = d;
      if (Math.abs(x) > maxA) maxA = Math.abs(x);
    } else if (!(Object.is(x, y) || (Number.isNaN(x) && Number.isNaN(y)))) {
      mismatch++;
    }
  }
  const rel = maxA > 0 ? maxAbs / maxA : (maxAbs === 0 ? 0 : Infinity);
  return { maxAbs, rel, nonA, nonB, mismatch, maxA };
}

function median(xs) {
  const s = [...xs].sort((p, q) => p - q);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
}

const round = (x, digits = 4) => Number(x.toFixed(digits));
// JSON has no Infinity/NaN; write them as strings so the line stays parseable.
const jnum = (x) => (Number.isFinite(x) ? x : String(x));

async function load(ort, file, opts, optimizedPath) {
  const so = inputs.sessionOptions(opts.level, opts.threads, opts.spinning);
  if (optimizedPath) so.optimizedModelFilePath = optimizedPath;
  try {
    return await ort.InferenceSession.create(file, so);
  } catch (e) {
    fail(`cannot load ${file}: ${String(e.message || e).split('\n')[0]}`);
  }
}

async function timedRun(session, feeds, file) {
  const t0 = process.hrtime.bigint();
  let out;
  try {
    out = await session.run(feeds);
  } catch (e) {
    fail(`running ${file} failed: ${String(e.message || e).split('\n')[0]}`);
  }
  return [out, Number(process.hrtime.bigint() - t0) / 1e6];
}

async function main() {
  const opts = parseArgs(process.argv.slice(2));
  let ort;
  try {
    ort = require('onnxruntime-node');
  } catch (e) {
    fail('onnxruntime-node is not installed; run: ' +
      `cd ${path.relative(process.cwd(), __dirname) || '.'} && ONNXRUNTIME_NODE_INSTALL=skip npm ci`);
  }
  const [fileA, fileB] = opts.files;
  let optimizedPath = null;
  if (opts.writeOptimized) {
    optimizedPath = path.resolve(opts.writeOptimized);
    fs.mkdirSync(path.dirname(optimizedPath), { recursive: true });
  }
  const sa = await load(ort, fileA, opts, optimizedPath);
  const makeFeeds = (metas) => {
    try {
      return inputs.makeFeeds(ort, metas, { ...opts, onSymbolicDim: symbolicDimNote });
    } catch (e) {
      if (e instanceof inputs.InputError) fail(e.message);
      throw e;
    }
  };
  if (!fileB) {
    const result = {};
    if (optimizedPath) {
      if (!fs.existsSync(optimizedPath)) fail(`ORT did not write ${optimizedPath}`);
      Object.assign(result, { written: optimizedPath, bytes: fs.statSync(optimizedPath).size });
    }
    if (opts.dumpDir || !optimizedPath) {
      const feeds = makeFeeds(sa.inputMetadata);
      const [outA] = await timedRun(sa, feeds, fileA);
      for (let w = 1; w < opts.warmup; w++) await timedRun(sa, feeds, fileA);
      const msA = [];
      for (let r = 0; r < opts.runs; r++) msA.push((await timedRun(sa, feeds, fileA))[1]);
      if (opts.dumpDir) {
        dumpTensors(opts.dumpDir, sa.inputNames, feeds, sa.outputNames, outA);
        result.dump_dir = opts.dumpDir;
      }
      Object.assign(result, { inputs: sa.inputNames.length, outputs: sa.outputNames.length,
        median_ms_a: round(median(msA)), runs: opts.runs, runs_ms_a: msA.map((x) => round(x)),
        threads: opts.threads, seed: opts.seed });
    }
    Object.assign(result, { level: opts.level, ort_version: ort.env.versions.node });
    process.stdout.write(JSON.stringify(result) + '\n');
    await sa.release();
    return;
  }
  const sb = await load(ort, fileB, opts, null);

  // Inputs and outputs must agree by name (order may differ), type and shape.
  const describe = (m) => `${m.name}: ${m.isTensor ? `${m.type}[${m.shape}]` : 'non-tensor'}`;
  const key = (m) => (m.isTensor ? `${m.type}|${m.shape.join(',')}` : 'nt');
  const checkSame = (what, la, lb) => {
    const ma = new Map(la.map((m) => [m.name, m])), mb = new Map(lb.map((m) => [m.name, m]));
    const onlyA = la.filter((m) => !mb.has(m.name)).map((m) => m.name);
    const onlyB = lb.filter((m) => !ma.has(m.name)).map((m) => m.name);
    const list = (xs) => (xs.length > 8 ? `${xs.slice(0, 8).join(', ')}, ... (${xs.length} in all)` : xs.join(', '));
    if (onlyA.length || onlyB.length) {
      fail(`${what} names differ: only in ${fileA}: [${list(onlyA)}]; only in ${fileB}: [${list(onlyB)}]`);
    }
    // A symbolic dimension agrees with any size: ONNX Runtime reports an output's dimension
    // by its name where it cannot infer it, and by its size where the graph is static.
    const compatible = (a, b) =>
      key(a) === key(b) ||
      (a.isTensor && b.isTensor && a.type === b.type && a.shape.length === b.shape.length &&
       a.shape.every((d, i) => typeof d !== 'number' || typeof b.shape[i] !== 'number' || d === b.shape[i]));
    for (const m of la) {
      if (!compatible(m, mb.get(m.name))) {
        fail(`${what} ${m.name} differs: ${fileA} has ${describe(m)}, ${fileB} has ${describe(mb.get(m.name))}`);
      }
    }
  };
  checkSame('input', sa.inputMetadata, sb.inputMetadata);
  checkSame('output', sa.outputMetadata, sb.outputMetadata);

  const metas = sa.inputMetadata;
  const feeds = makeFeeds(metas);

  // Warm-up runs (the first gives the outputs); then timed rounds, A and B strictly
  // alternating (A B A B ...), so every run follows a run of the other model. Swapping the
  // order each round would run each model twice in a row at every other round boundary,
  // and the warmer second run splits the paired ratios into two clusters.
  const [outA] = await timedRun(sa, feeds, fileA);
  const [outB] = await timedRun(sb, feeds, fileB);
  for (let w = 1; w < opts.warmup; w++) {
    await timedRun(sa, feeds, fileA);
    await timedRun(sb, feeds, fileB);
  }
  const msA = [], msB = [];
  for (let r = 0; r < opts.runs; r++) {
    msA.push((await timedRun(sa, feeds, fileA))[1]);
    msB.push((await timedRun(sb, feeds, fileB))[1]);
  }

  let maxAbs = 0, maxRel = 0, worst = null, nonA = 0, nonB = 0, mismatch = 0, maxOut = 0;
  const errors = [];
  for (const name of sa.outputNames) {
    const c = compareTensors(name, outA[name], outB[name]);
    if (c.error) { errors.push(c.error); continue; }
    nonA += c.nonA; nonB += c.nonB; mismatch += c.mismatch;
    if (c.maxAbs > maxAbs) maxAbs = c.maxAbs;
    if (c.maxA > maxOut) maxOut = c.maxA;
    if (worst === null || c.rel > maxRel) { maxRel = c.rel; worst = name; }
  }
  const result = {
    max_abs_diff: jnum(maxAbs),
    max_rel_diff: jnum(maxRel),
    outputs: sa.outputNames.length,
    median_ms_a: round(median(msA)),
    median_ms_b: round(median(msB)),
    // Median over rounds of B / A: the ratio of two models timed side by side.
    median_ratio: round(median(msB.map((b, r) => b / msA[r])), 5),
    runs: opts.runs,
    threads: opts.threads,
    spinning: opts.spinning,
    worst_output: worst,
    max_abs_output_a: maxOut,
    inputs: metas.length,
    nonfinite_a: nonA,
    nonfinite_b: nonB,
    nonfinite_mismatch: mismatch,
    seed: opts.seed,
    level: opts.level,
    ort_version: ort.env.versions.node,
  };
  if (errors.length) result.errors = errors;
  if (opts.dumpDir) {
    dumpTensors(opts.dumpDir, sa.inputNames, feeds, sa.outputNames, outA);
    result.dump_dir = opts.dumpDir;
  }
  process.stdout.write(JSON.stringify(result) + '\n');
  await sa.release();
  await sb.release();
  if (errors.length) process.exit(2);
  if (opts.rtol !== null && (!(maxRel <= opts.rtol) || mismatch > 0)) {
    process.stderr.write(`compare.js: max_rel_diff ${maxRel} exceeds --rtol ${opts.rtol}` +
      (mismatch ? ` (or ${mismatch} NaN/Inf mismatches)` : '') + '\n');
    process.exit(1);
  }
}

main().catch((e) => fail(String((e && e.stack) || e)));
