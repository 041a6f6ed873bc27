#!/usr/bin/env node
// A long-lived ONNX Runtime (CPU) timing worker. rlflow's C++ code starts it once and talks
// to it over pipes: it prices single ops (one-node models) for a cost backend, and times
// whole models interleaved for an end-to-end guard. Starting ORT and Node costs far more
// than timing a small op, hence one process for many requests.
//
//   node worker.js          serve requests on stdin (the C++ client does this)
//   node worker.js --help   print a usage summary and exit 0
//
// Protocol, version 1 (the contract the C++ client follows):
//
// Transport. Requests arrive on stdin, one JSON object per line; responses go to stdout,
// one JSON object per line, each written whole and flushed. Nothing else is ever written
// to stdout (console.log and friends are sent to stderr); diagnostics go to stderr.
// Requests are handled strictly one at a time, in order; lines that arrive meanwhile are
// queued. Blank lines are ignored. On EOF the queued requests are answered, then the
// worker exits 0.
//
// Hello. At start, before reading anything, one line:
//   {"ready":true,"protocol":1,"ort_version":"1.30.0"}
// If onnxruntime-node cannot be loaded, instead:
//   {"ready":false,"protocol":1,"error":"onnxruntime-node is not installed in <dir>; run: cd <dir> && ONNXRUNTIME_NODE_INSTALL=skip npm ci"}
// (the cause goes to stderr) and the worker exits with status 3.
//
// Requests. Every request has "id" (an integer, echoed in the response) and "cmd".
// Fields not listed for a command are rejected, so a misspelt optional field is an error
// rather than a silent default.
//   {"id":N,"cmd":"ping"}  ->  {"id":N,"ok":true}
//   {"id":N,"cmd":"quit"}  ->  {"id":N,"ok":true}, then exit 0 (queued lines are dropped)
//   {"id":N,"cmd":"time","models":["/abs/a.onnx",...],"level":"disabled|basic|extended|all",
//    "threads":T,"warmup":W,"runs":R,"interleave":B,"seed":S,
//    "data_input":"input","min_run_ms":0,"profile":false,"spinning":false}
//     models      non-empty array of paths (relative ones resolve against the worker's
//                 working directory)
//     level       ORT graphOptimizationLevel
//     threads     integer >= 1: intraOpNumThreads (interOpNumThreads is 1, execution
//                 sequential, execution provider cpu)
//     warmup      integer >= 0: untimed runs of each model before its timed ones
//     runs        integer >= 1: timed samples per model
//     interleave  true: warm-up, then R rounds; each round runs every model once in request
//                 order, starting one model later each round when there are three or more
//                 (none is always first, none runs twice in a row), two models alternating
//                 (for comparing whole models under the same machine state).
//                 false: each model in turn is loaded, warmed up, timed R times back to
//                 back and released (warm caches; what pricing one op wants)
//     seed        integer: seeds every graph input by inputs.js's rules (shared with
//                 compare.js); the same for all models, so models with the same input names
//                 and shapes get identical inputs. Symbolic dimensions are taken as 1 (a
//                 note on stderr); integer inputs get values in {0, 1}
//     data_input  optional, default "input": the input that gets data-like values
//     profile     optional, default false; needs interleave false: ORT's profiler is on
//                 (the trace is written next to the model and removed), and each result
//                 also holds "kernel_ms", the median over the timed runs of the sum of
//                 the nodes' kernel times (what the model's ops cost inside ORT, without
//                 the cost of calling ORT and copying inputs and outputs across), and
//                 "kernel_op_ms", the same by op type. min_run_ms is ignored (one run a
//                 sample, so runs and trace agree)
//     spinning    optional, default false: intra-op threads spin while idle (ORT's own
//                 default). Off, sessions timed turn by turn do not steal each other's
//                 cores; at threads 1 there is no pool and it changes nothing
//     min_run_ms  optional number >= 0, default 0: when > 0, one sample repeats
//                 session.run until it has lasted at least this long (at most
//                 MAX_REPEATS_PER_SAMPLE runs) and records the mean per run, for ops
//                 shorter than the clock's useful granularity
//   ->  {"id":N,"ok":true,"results":[{"median_ms":x,"runs_ms":[x,...]}, ...]}
//       (with profile: {"median_ms":x,"runs_ms":[...],"kernel_ms":k,"kernel_op_ms":{"Conv":c,...}})
//     one entry per model, in request order; times in milliseconds at full precision,
//     measured with process.hrtime.bigint() around `await session.run(feeds)`. median_ms
//     is the median of runs_ms (the mean of the middle two for an even count). A model
//     that fails to load, to get inputs or to run gets {"error":"<path>: <first line of
//     the message>"} in its slot instead (partial timings are dropped), and the others
//     are still timed. Sessions are released before the response is written, so the
//     client may delete the model files as soon as it has the response.
//
// Errors. A line that is not a JSON object, an unknown cmd, a missing or mistyped field
// or an out-of-range value gets {"id":<id if it is an integer, else null>,"ok":false,
// "error":"<what is wrong>"} and the worker keeps serving. So does an unexpected failure
// while handling a request ("internal error: ...", with the stack on stderr).
//
// Exit status: 0 after quit, on EOF, or when stdout's reader has gone (EPIPE); 1 an
// unexpected failure outside a request (stack on stderr); 2 bad command-line arguments;
// 3 onnxruntime-node cannot be loaded.
'use strict';

const fs = require('fs');
const path = require('path');
const readline = require('readline');
const inputs = require('./inputs');

const PROTOCOL_VERSION = 1;
const EXIT_BAD_USAGE = 2;
const EXIT_NO_ORT = 3;
// Caps one min_run_ms sample, so a slow op with a large min_run_ms cannot hang the worker.
const MAX_REPEATS_PER_SAMPLE = 1000;
const LEVELS = ['disabled', 'basic', 'extended', 'all'];

const USAGE = `usage: node worker.js [--help]
A long-lived ONNX Runtime (CPU) timing worker for rlflow, protocol version ${PROTOCOL_VERSION}.
Reads JSON requests on stdin, one per line, and answers on stdout, one JSON line each:
  {"id":1,"cmd":"ping"}
  {"id":2,"cmd":"time","models":["/abs/a.onnx"],"level":"disabled","threads":1,
   "warmup":1,"runs":10,"interleave":false,"seed":0[,"data_input":"input"][,"min_run_ms":0]}
  {"id":3,"cmd":"quit"}
Writes a hello line first: {"ready":true,"protocol":${PROTOCOL_VERSION},"ort_version":"..."}.
The full protocol is documented at the top of ${__filename}.
`;

// --- output ------------------------------------------------------------------------

// stdout carries the protocol only; anything a library logs through console goes to stderr.
for (const method of ['log', 'info', 'debug']) {
  console[method] = (...args) => console.error(...args);
}

// The reader has gone away: nobody is left to answer, so stop quietly.
process.stdout.on('error', (e) => {
  if (e.code === 'EPIPE') process.exit(0);
  throw e;
});

/// Writes one protocol line; resolves once it has been handed to the OS.
function send(message) {
  return new Promise((resolve) => process.stdout.write(JSON.stringify(message) + '\n', resolve));
}

const note = (msg) => process.stderr.write(`worker.js: ${msg}\n`);
const firstLine = (e) => String((e && e.message) || e).split('\n')[0];

// --- start-up ----------------------------------------------------------------------

function parseCommandLine(argv) {
  for (const a of argv) {
    if (a === '-h' || a === '--help') {
      process.stdout.write(USAGE);
      process.exit(0);
    }
  }
  if (argv.length > 0) {
    process.stderr.write(`worker.js: unexpected argument ${argv[0]}\n${USAGE}`);
    process.exit(EXIT_BAD_USAGE);
  }
}

// Loads onnxruntime-node, or says on stdout why not and exits EXIT_NO_ORT.
async function loadOrt() {
  try {
    return require('onnxruntime-node');
  } catch (e) {
    note(`cannot load onnxruntime-node: ${firstLine(e)}`);
    await send({ ready: false, protocol: PROTOCOL_VERSION,
      error: `onnxruntime-node is not installed in ${__dirname}; ` +
        `run: cd ${__dirname} && ONNXRUNTIME_NODE_INSTALL=skip npm ci` });
    process.exit(EXIT_NO_ORT);
  }
}

function ortVersion(ort) {
  const fromEnv = ort.env && ort.env.versions && ort.env.versions.node;
  return fromEnv || require('onnxruntime-node/package.json').version;
}

// --- request validation ------------------------------------------------------------

/// A request the worker cannot act on; its message is sent back as the error.
class RequestError extends Error {}

const ALLOWED_FIELDS = {
  ping: ['id', 'cmd'],
  quit: ['id', 'cmd'],
  time: ['id', 'cmd', 'models', 'level', 'threads', 'warmup', 'runs', 'interleave', 'seed',
    'data_input', 'min_run_ms', 'profile', 'spinning'],
};

function integerField(request, name, min) {
  const v = request[name];
  if (v === undefined) throw new RequestError(`missing field "${name}"`);
  if (!Number.isSafeInteger(v)) throw new RequestError(`"${name}" must be an integer, not ${JSON.stringify(v)}`);
  if (min !== undefined && v < min) throw new RequestError(`"${name}" must be >= ${min}, not ${v}`);
  return v;
}

// The options of a time request, checked; throws RequestError naming the first bad field.
function parseTimeRequest(request) {
  const { models, level, interleave } = request;
  if (models === undefined) throw new RequestError('missing field "models"');
  if (!Array.isArray(models) || models.length === 0) throw new RequestError('"models" must be a non-empty array of paths');
  for (const m of models) {
    if (typeof m !== 'string' || m === '') throw new RequestError(`"models" entries must be non-empty strings, not ${JSON.stringify(m)}`);
  }
  if (level === undefined) throw new RequestError('missing field "level"');
  if (!LEVELS.includes(level)) throw new RequestError(`"level" must be one of ${LEVELS.join(', ')}, not ${JSON.stringify(level)}`);
  if (interleave === undefined) throw new RequestError('missing field "interleave"');
  if (typeof interleave !== 'boolean') throw new RequestError(`"interleave" must be true or false, not ${JSON.stringify(interleave)}`);
  const dataInput = request.data_input === undefined ? 'input' : request.data_input;
  if (typeof dataInput !== 'string') throw new RequestError(`"data_input" must be a string, not ${JSON.stringify(dataInput)}`);
  const minRunMs = request.min_run_ms === undefined ? 0 : request.min_run_ms;
  if (typeof minRunMs !== 'number' || !Number.isFinite(minRunMs) || minRunMs < 0) {
    throw new RequestError(`"min_run_ms" must be a number >= 0, not ${JSON.stringify(minRunMs)}`);
  }
  const profile = request.profile === undefined ? false : request.profile;
  if (typeof profile !== 'boolean') throw new RequestError(`"profile" must be true or false, not ${JSON.stringify(profile)}`);
  if (profile && interleave) throw new RequestError('"profile" needs "interleave": false (one session profiled at a time)');
  const spinning = request.spinning === undefined ? false : request.spinning;
  if (typeof spinning !== 'boolean') throw new RequestError(`"spinning" must be true or false, not ${JSON.stringify(spinning)}`);
  return {
    models, level, interleave, dataInput, minRunMs, profile, spinning,
    threads: integerField(request, 'threads', 1),
    warmup: integerField(request, 'warmup', 0),
    runs: integerField(request, 'runs', 1),
    seed: integerField(request, 'seed'),
  };
}

// The request on one line: {id, cmd, request}; throws RequestError with the id it could read.
function parseLine(line) {
  let request;
  try {
    request = JSON.parse(line);
  } catch (e) {
    throw Object.assign(new RequestError(`not JSON: ${firstLine(e)}`), { id: null });
  }
  if (request === null || typeof request !== 'object' || Array.isArray(request)) {
    throw Object.assign(new RequestError('a request must be a JSON object'), { id: null });
  }
  const id = Number.isSafeInteger(request.id) ? request.id : null;
  const fail = (msg) => Object.assign(new RequestError(msg), { id });
  if (request.id === undefined) throw fail('missing field "id"');
  if (id === null) throw fail(`"id" must be an integer, not ${JSON.stringify(request.id)}`);
  if (request.cmd === undefined) throw fail('missing field "cmd"');
  const allowed = Object.prototype.hasOwnProperty.call(ALLOWED_FIELDS, request.cmd) ? ALLOWED_FIELDS[request.cmd] : null;
  if (!allowed) throw fail(`unknown cmd ${JSON.stringify(request.cmd)} (expected ping, time or quit)`);
  const unknown = Object.keys(request).filter((k) => !allowed.includes(k));
  if (unknown.length) throw fail(`unknown field${unknown.length > 1 ? 's' : ''} ${unknown.map((k) => JSON.stringify(k)).join(', ')} for cmd "${request.cmd}"`);
  return { id, cmd: request.cmd, request };
}

// --- timing ------------------------------------------------------------------------

function median(xs) {
  const s = [...xs].sort((p, q) => p - q);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
}

/// One timed sample in milliseconds: a single run, or with minRunMs > 0 the mean of as
/// many back-to-back runs as fill minRunMs (at most MAX_REPEATS_PER_SAMPLE).
async function timeSample(session, feeds, minRunMs) {
  const minNs = BigInt(Math.ceil(minRunMs * 1e6));
  const start = process.hrtime.bigint();
  let repeats = 0;
  let elapsed;
  do {
    await session.run(feeds);
    repeats++;
    elapsed = process.hrtime.bigint() - start;
  } while (elapsed < minNs && repeats < MAX_REPEATS_PER_SAMPLE);
  return Number(elapsed) / 1e6 / repeats;
}

// One model of a time request: its path, its slot in the response, and while alive its
// session and feeds. A failure at any stage turns the slot into an error and ends it.
class ModelTimer {
  constructor(file) {
    this.file = file;
    this.session = null;
    this.feeds = null;
    this.runsMs = [];
    this.error = null;
    this.profilePrefix = null;
    this.kernel = null;
  }

  get alive() { return this.error === null; }

  async stage(work) {
    if (!this.alive) return;
    try {
      await work();
    } catch (e) {
      this.error = `${this.file}: ${firstLine(e)}`;
    }
  }

  load(ort, options) {
    return this.stage(async () => {
      const sessionOptions = inputs.sessionOptions(options.level, options.threads, options.spinning);
      if (options.profile) {
        this.profilePrefix = `${this.file}.profile`;
        Object.assign(sessionOptions, { enableProfiling: true, profileFilePrefix: this.profilePrefix });
      }
      this.session = await ort.InferenceSession.create(this.file, sessionOptions);
      this.feeds = inputs.makeFeeds(ort, this.session.inputMetadata, {
        seed: options.seed, dataInput: options.dataInput, shapes: {},
        onSymbolicDim: (name, axis, dim) => note(`note: ${this.file}: input ${name} ` +
          `dimension ${axis} (${dim}) is symbolic; using 1`),
      });
    });
  }

  warmUp(count) {
    return this.stage(async () => {
      for (let i = 0; i < count; i++) await this.session.run(this.feeds);
    });
  }

  sample(minRunMs) {
    return this.stage(async () => { this.runsMs.push(await timeSample(this.session, this.feeds, minRunMs)); });
  }

  // Ends profiling and reads ORT's trace: the per-run sums of the nodes' kernel times,
  // for the runs after the first `skip` (the warm-up), as {total: [ms...], byOp: {op: [ms...]}}.
  readProfile(skip) {
    return this.stage(async () => {
      this.session.endProfiling();
      const dir = path.dirname(this.profilePrefix);
      const stem = path.basename(this.profilePrefix) + '_';
      const files = fs.readdirSync(dir).filter((f) => f.startsWith(stem) && f.endsWith('.json'));
      if (files.length === 0) throw new Error('ONNX Runtime wrote no profile');
      const events = [];
      for (const f of files) {
        const full = path.join(dir, f);
        events.push(...JSON.parse(fs.readFileSync(full, 'utf8')));
        fs.unlinkSync(full);
      }
      this.kernel = kernelTimes(events, skip);
    });
  }

  // Releases the session; a failure here is reported on stderr but keeps the timings.
  async release() {
    const session = this.session;
    this.session = null;
    this.feeds = null;
    if (!session) return;
    try {
      await session.release();
    } catch (e) {
      note(`releasing the session of ${this.file} failed: ${firstLine(e)}`);
    }
  }

  result() {
    if (!this.alive) return { error: this.error };
    const r = { median_ms: median(this.runsMs), runs_ms: this.runsMs };
    if (this.kernel) {
      r.kernel_ms = median(this.kernel.total);
      r.kernel_op_ms = {};
      for (const [op, ms] of Object.entries(this.kernel.byOp)) r.kernel_op_ms[op] = median(ms);
    }
    return r;
  }
}

// ORT's trace events -> per-run kernel-time sums (ms) for the runs after the first
// `skip`, in total and by op type. A run is a Session "model_run" event; a node's time is
// its "<node>_kernel_time" event (cat "Node"), which lies within its run.
function kernelTimes(events, skip) {
  const runs = events.filter((e) => e.cat === 'Session' && e.name === 'model_run').sort((a, b) => a.ts - b.ts).slice(skip);
  const total = runs.map(() => 0);
  const byOp = {};
  const nodes = events.filter((e) => e.cat === 'Node' && typeof e.name === 'string' && e.name.endsWith('_kernel_time'));
  for (const e of nodes) {
    const k = runs.findIndex((r) => e.ts >= r.ts && e.ts <= r.ts + r.dur);
    if (k < 0) continue;
    const op = (e.args && e.args.op_name) || 'unknown';
    const ms = e.dur / 1000;
    total[k] += ms;
    if (!byOp[op]) byOp[op] = runs.map(() => 0);
    byOp[op][k] += ms;
  }
  if (runs.length === 0) throw new Error('the profile holds no timed run');
  return { total, byOp };
}

// Each model in turn: load, warm up, time `runs` samples back to back, release. With
// profiling, ORT's kernel times of those runs are read too.
async function timeSequentially(ort, timers, options) {
  for (const t of timers) {
    try {
      await t.load(ort, options);
      await t.warmUp(options.warmup);
      for (let r = 0; r < options.runs && t.alive; r++) await t.sample(options.profile ? 0 : options.minRunMs);
      if (options.profile) await t.readProfile(options.warmup);
    } finally {
      await t.release();
    }
  }
}

// All models loaded and warmed up, then `runs` rounds of one sample each, the starting
// model rotating by one per round when there are three or more, so that none is always
// first and no model ever runs twice in a row (round r ends with model r-1 and round r+1
// starts with model r+1). Two models simply alternate, A B A B: rotating two would run
// each twice in a row at every other round boundary, and the second of two runs of one
// session is the warmer, so the paired ratios split into two clusters (one model timed
// against a copy of itself read 0.94 in the median at 2 threads). A model that fails
// leaves the rotation.
async function timeInterleaved(ort, timers, options) {
  try {
    for (const t of timers) await t.load(ort, options);
    for (const t of timers) await t.warmUp(options.warmup);
    for (let r = 0; r < options.runs; r++) {
      const live = timers.filter((t) => t.alive);
      if (live.length === 0) break;
      const first = live.length > 2 ? r : 0;
      for (let k = 0; k < live.length; k++) await live[(first + k) % live.length].sample(options.minRunMs);
    }
  } finally {
    for (const t of timers) await t.release();
  }
}

async function handleTime(ort, request) {
  const options = parseTimeRequest(request);
  const timers = options.models.map((file) => new ModelTimer(file));
  if (options.interleave) await timeInterleaved(ort, timers, options);
  else await timeSequentially(ort, timers, options);
  return { results: timers.map((t) => t.result()) };
}

// --- serving -----------------------------------------------------------------------

// Answers one line; returns true when the worker should exit (quit).
async function handleLine(ort, line) {
  let id = null;
  try {
    const parsed = parseLine(line);
    id = parsed.id;
    const body = parsed.cmd === 'time' ? await handleTime(ort, parsed.request) : {};
    await send({ id, ok: true, ...body });
    return parsed.cmd === 'quit';
  } catch (e) {
    if (e instanceof RequestError) {
      await send({ id: e.id === undefined ? id : e.id, ok: false, error: e.message });
    } else {
      note(`internal error: ${(e && e.stack) || e}`);
      await send({ id, ok: false, error: `internal error: ${firstLine(e)}` });
    }
    return false;
  }
}

// Reads stdin line by line and answers the lines strictly one at a time, in order.
function serve(ort) {
  const queue = [];
  let busy = false;
  let inputClosed = false;
  const rl = readline.createInterface({ input: process.stdin, crlfDelay: Infinity, terminal: false });

  const drain = async () => {
    if (busy) return;
    busy = true;
    while (queue.length > 0) {
      if (await handleLine(ort, queue.shift())) process.exit(0);
    }
    busy = false;
    if (inputClosed) process.exit(0);
  };
  rl.on('line', (line) => {
    if (line.trim() === '') return;
    queue.push(line);
    drain();
  });
  rl.on('close', () => {
    inputClosed = true;
    drain();
  });
}

async function main() {
  parseCommandLine(process.argv.slice(2));
  const ort = await loadOrt();
  await send({ ready: true, protocol: PROTOCOL_VERSION, ort_version: ortVersion(ort) });
  serve(ort);
}

main().catch((e) => {
  process.stderr.write(`worker.js: ${(e && e.stack) || e}\n`);
  process.exit(1);
});
