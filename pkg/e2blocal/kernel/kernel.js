// sessionbox code-interpreter kernel for JavaScript and TypeScript contexts:
// one Node process per context, speaking kernel.py's frame protocol (read the
// top of kernel.py). The server starts it as
//
//   node --expose-internals - <max_output> <javascript|typescript> [typescript.js]
//
// with this source on stdin, the command pipe on fd 3, the event pipe on fd 4,
// the probe pipe on fd 5, and the read ends of its own fd 1 and 2 (pipes the
// server made) on fds 6 and 7.
//
// Output: console and process.stdout/stderr go straight to frames. What a
// child process (execSync, spawn with stdio 'inherit') or fs.writeSync(1)
// writes to fd 1 or 2 comes back through fds 6 and 7 and is the running
// cell's output too, as kernel.py's fd capture has it. Those pipes are read
// as the event loop turns and, while a child may have written there,
// synchronously before each console write and at the cell's end, so a
// command's output comes before what the cell prints after it.
//
// Cells run in the process's own global context with vm.Script, so top-level
// declarations persist across cells (scripts of one context share their
// global scope, as <script> tags do); top-level let/const/class become var
// ones first, so a cell can run again (see rewriteDeclarations). A cell using
// top-level await is rewritten by Node's own REPL transform
// (internal/repl/await, hence --expose-internals): its declarations are
// hoisted so they persist too, and its last expression is still the result.
// Static imports become dynamic ones bound with var, so a cell that imports
// can run again. TypeScript is stripped of its types by the typescript
// package's transpileModule; its syntax errors are the cell's error.
//
// Interrupts: the synchronous part of a cell runs with breakOnSigint, so
// SIGINT stops even a busy loop and the context keeps its state; a cell
// waiting on a promise is rejected at once. A busy loop that runs after the
// cell's first await cannot be stopped by a signal (Node runs no handler while
// JavaScript runs): the server kills that kernel after its grace period.
'use strict';
(function main() {
  const fs = require('fs');
  const net = require('net');
  const path = require('path');
  const util = require('util');
  const vm = require('vm');
  const { Console } = require('console');
  const { EventEmitter } = require('events');
  const { createRequire } = require('module');
  const { StringDecoder } = require('string_decoder');
  const { receiveMessageOnPort } = require('worker_threads');

  const CMD_FD = 3, EVT_FD = 4, PROBE_FD = 5, OUT_FD = 6, ERR_FD = 7;
  const cap = Number(process.argv[2] || 1 << 20);
  const lang = process.argv[3] || 'javascript';
  const kernelFile = process.argv[1];

  let processTopLevelAwait = null;
  try {
    ({ processTopLevelAwait } = require('internal/repl/await'));
  } catch {
    // Without Node's transform a cell with await runs as an async function:
    // its declarations stay local to that cell.
  }
  // Node's own parser (its REPL's), for rewriting a cell's declarations.
  let acorn = null, walk = null;
  try {
    acorn = require('internal/deps/acorn/acorn/dist/acorn');
    walk = require('internal/deps/acorn/acorn-walk/dist/walk');
  } catch {
    // without it a re-declared let/const is a SyntaxError, as in Node's REPL
  }

  // ---- frames ------------------------------------------------------------

  function frame(tag, payload) {
    const body = Buffer.isBuffer(payload) ? payload : Buffer.from(payload, 'utf8');
    const head = Buffer.alloc(5);
    head.write(tag, 0, 'latin1');
    head.writeUInt32LE(body.length, 1);
    return Buffer.concat([head, body]);
  }

  function writeAll(buf) {
    let off = 0;
    while (off < buf.length) {
      try {
        off += fs.writeSync(EVT_FD, buf, off);
      } catch (e) {
        if (e.code === 'EAGAIN') continue;
        process.exit(0); // the server is gone
      }
    }
  }

  // A cell's result and error wait for its end, so they go out with its F
  // frame in one write; anything else written meanwhile goes after them.
  let queued = [];

  function send(tag, payload) {
    let f = frame(tag, payload);
    if (queued.length) {
      queued.push(f);
      f = Buffer.concat(queued);
      queued = [];
    }
    writeAll(f);
  }

  function queue(tag, payload) {
    queued.push(frame(tag, payload));
  }

  // ---- output --------------------------------------------------------------

  // Output is written as it comes (a busy loop's prints stream live); what
  // timers print between cells is kept for the next cell.
  const streams = {
    O: { count: 0, dropped: false },
    R: { count: 0, dropped: false },
  };
  let inCell = false;
  let held = [];
  let heldChars = 0; // held is kept to the cap, as a cell's output is
  let ready = false; // before the ready frame, output is the kernel's own

  function output(tag, chunk) {
    let text = typeof chunk === 'string' ? chunk : Buffer.from(chunk).toString('utf8');
    if (!text) return;
    if (!ready) {
      fs.writeSync(2, text);
      return;
    }
    if (!inCell) {
      if (heldChars < cap) {
        held.push([tag, text]);
        heldChars += text.length;
      }
      return;
    }
    const s = streams[tag];
    if (s.dropped) return;
    const room = cap - s.count;
    const cut = text.length > room;
    if (cut) text = text.slice(0, room);
    s.count += text.length;
    if (text) send(tag, text);
    if (cut) {
      s.dropped = true;
      send('W', tag);
    }
  }

  // ---- fd 1 and 2 (what child processes write) ----------------------------

  const raw = [
    { fd: OUT_FD, tag: 'O', dec: new StringDecoder('utf8'), open: true },
    { fd: ERR_FD, tag: 'R', dec: new StringDecoder('utf8'), open: true },
  ];
  const rawBuf = Buffer.alloc(64 << 10);

  function rawText(r, chunk) {
    const text = r.dec.write(chunk);
    if (text && ready) output(r.tag, text);
  }

  // A read of an empty pipe costs tens of µs (Node throws EAGAIN), too much
  // before every console write: the pipes are read synchronously only while
  // something may have written there that the event loop has yet to read (a
  // child process ran, or the cell wrote to fd 1 or 2 itself).
  let rawPending = false;
  let liveChildren = 0;

  function mayDrainRaw() {
    if (rawPending) drainRaw();
  }

  // drainRaw takes in, without waiting, what fds 1 and 2 hold now.
  function drainRaw() {
    rawPending = liveChildren > 0;
    for (const r of raw) {
      while (r.open) {
        let n;
        try {
          n = fs.readSync(r.fd, rawBuf);
        } catch (e) {
          if (e.code !== 'EAGAIN') r.open = false;
          break;
        }
        if (n === 0) {
          r.open = false;
          break;
        }
        rawText(r, rawBuf.subarray(0, n));
      }
    }
  }

  // The pipes are read as data comes, too (a command still running after
  // its cell prints into the next one). Before the kernel is ready they hold
  // only node's own words, which are the server's business: dropped.
  function watchRaw() {
    for (const r of raw) {
      let sock;
      try {
        fs.fstatSync(r.fd);
        sock = new net.Socket({ fd: r.fd, readable: true, writable: false });
      } catch {
        r.open = false; // started without the pipes
        continue;
      }
      sock.on('data', (chunk) => rawText(r, chunk));
      sock.on('end', () => { r.open = false; });
      sock.on('error', () => { r.open = false; });
      sock.unref();
    }
    drainRaw();
    for (const r of raw) r.dec = new StringDecoder('utf8');
  }

  // While a synchronous child_process call (execSync, spawnSync...) blocks
  // this thread, a worker thread reads the pipes so a command writing more
  // than a pipe holds does not wait forever; what it read is taken in when
  // the call returns. The worker starts at the first such call (a context
  // that never makes one pays nothing). One word says who may read:
  // IDLE this thread, CALL the worker may start, READING the worker is.
  const IDLE = 0, CALL = 1, READING = 2;
  let reader = null;

  const READER_SRC = `
    const { workerData: { state, fds, port } } = require('worker_threads');
    const fs = require('fs');
    const buf = Buffer.alloc(64 << 10);
    function readAll() {
      let got = false;
      fds.forEach((fd, i) => {
        for (;;) {
          let n = 0;
          try { n = fs.readSync(fd, buf); } catch { break; }
          if (n <= 0) break;
          port.postMessage([i, Buffer.from(buf.subarray(0, n))]);
          got = true;
        }
      });
      return got;
    }
    for (;;) {
      Atomics.wait(state, 0, ${IDLE});
      if (Atomics.compareExchange(state, 0, ${CALL}, ${READING}) !== ${CALL}) continue;
      const got = readAll();
      Atomics.store(state, 0, ${CALL});
      Atomics.notify(state, 0);
      if (!got) Atomics.wait(state, 0, ${CALL}, 2);
    }`;

  function startReader() {
    if (reader) return reader;
    const { Worker, MessageChannel } = require('worker_threads');
    const state = new Int32Array(new SharedArrayBuffer(4));
    const { port1, port2 } = new MessageChannel();
    const workerData = { state, fds: raw.map((r) => r.fd), port: port2 };
    const worker = new Worker(READER_SRC, { eval: true, workerData, transferList: [port2] });
    worker.on('error', () => {});
    worker.unref();
    port1.on('message', ([i, chunk]) => rawText(raw[i], chunk));
    port1.unref();
    reader = { port: port1, state };
    return reader;
  }

  function syncCall(fn) {
    return function (...args) {
      if (!ready || !raw.some((r) => r.open)) return fn.apply(this, args);
      const { port, state } = startReader();
      Atomics.store(state, 0, CALL);
      Atomics.notify(state, 0);
      try {
        return fn.apply(this, args);
      } finally {
        // Wait out a read in progress; then only this thread reads.
        while (Atomics.compareExchange(state, 0, CALL, IDLE) === READING) Atomics.wait(state, 0, READING, 50);
        let m;
        while ((m = receiveMessageOnPort(port))) rawText(raw[m.message[0]], m.message[1]);
        drainRaw();
      }
    };
  }

  function patchChildProcess() {
    const cp = require('child_process');
    for (const name of ['execSync', 'execFileSync', 'spawnSync']) cp[name] = syncCall(cp[name]);
    require('module').syncBuiltinESMExports(); // for `import { execSync } from 'child_process'`
    // Every asynchronous child (spawn, exec, execFile, fork) starts here.
    const spawn = cp.ChildProcess.prototype.spawn;
    cp.ChildProcess.prototype.spawn = function (...args) {
      const r = spawn.apply(this, args);
      if (this.pid === undefined) return r; // it did not start ('error' says why)
      liveChildren++;
      rawPending = true;
      this.once('exit', () => {
        liveChildren--;
        rawPending = true; // what it wrote before it exited is still to read
      });
      return r;
    };
    const writeSync = fs.writeSync;
    fs.writeSync = function (fd, ...rest) {
      if (fd === 1 || fd === 2) rawPending = true;
      return writeSync.call(this, fd, ...rest);
    };
  }

  function sink(tag) {
    const w = new EventEmitter();
    w.write = (chunk, enc, cb) => {
      mayDrainRaw();
      output(tag, chunk);
      if (typeof enc === 'function') enc();
      else if (typeof cb === 'function') cb();
      return true;
    };
    w.isTTY = false;
    return w;
  }

  const out = sink('O'), err = sink('R');
  globalThis.console = new Console({ stdout: out, stderr: err, colorMode: false });
  for (const [stream, s] of [[process.stdout, out], [process.stderr, err]]) {
    stream.write = s.write;
  }

  // ---- cells ---------------------------------------------------------------

  const state = { count: 0, interrupt: null, sigint: false };
  let stripper = null;

  function loadStripper() {
    // A configured package is the one; else npm's global directories (under
    // /usr, which sandboxes see) and Debian's node-typescript.
    const candidates = process.argv[4] ? [process.argv[4]] : [
      '/usr/lib/node_modules/typescript',
      '/usr/local/lib/node_modules/typescript',
      '/usr/share/nodejs/typescript',
    ];
    for (const c of candidates) {
      try {
        return require(c);
      } catch {
        // the next place
      }
    }
    throw new Error('TypeScript contexts need the typescript npm package (scripts/setup.sh installs it); looked in ' + candidates.join(', '));
  }

  function stripTypes(code) {
    const ts = stripper;
    const r = ts.transpileModule(code, {
      fileName: 'cell.ts',
      reportDiagnostics: true,
      compilerOptions: {
        target: ts.ScriptTarget.ES2022,
        module: ts.ModuleKind.ESNext,
        // Imports stay as written: a binding unused in this cell is used by the next.
        verbatimModuleSyntax: true,
        removeComments: false,
      },
    });
    const diags = (r.diagnostics || []).filter((d) => d.category === ts.DiagnosticCategory.Error);
    if (diags.length) {
      const msg = diags.map((d) => {
        const text = ts.flattenDiagnosticMessageText(d.messageText, '\n');
        if (d.file && d.start !== undefined) {
          const { line, character } = d.file.getLineAndCharacterOfPosition(d.start);
          return `(${line + 1},${character + 1}): TS${d.code}: ${text}`;
        }
        return `TS${d.code}: ${text}`;
      });
      const e = new SyntaxError(msg[0].replace(/^\(\d+,\d+\): /, ''));
      e.stack = 'SyntaxError: ' + msg.join('\n');
      throw e;
    }
    return r.outputText.replace(/\n?export \{\};\s*$/, '\n');
  }

  // Static imports, which a script cannot hold, become dynamic imports bound
  // with var (so the cell can run again).
  const IMPORT = /(?<=^|;)([ \t]*)import\s+(?:([\w$*{][^;'"]*?)\s+from\s+)?(['"][^'"\n]+['"])[ \t]*;?/gm;

  function rewriteImports(code) {
    let n = 0;
    return code.replace(IMPORT, (all, indent, clause, spec) => {
      if (!clause) return `${indent}await import(${spec});`;
      clause = clause.trim();
      if (/^type\s/.test(clause)) return indent;
      const tmp = `__sbk_import${n++}`;
      const parts = [];
      let rest = clause;
      const def = /^([\w$]+)\s*(?:,\s*|$)/.exec(rest);
      if (def) {
        parts.push(`${def[1]} = ${tmp}.default`);
        rest = rest.slice(def[0].length);
      }
      const ns = /^\*\s*as\s+([\w$]+)/.exec(rest);
      if (ns) parts.push(`${ns[1]} = ${tmp}`);
      const named = /^\{([\s\S]*)\}/.exec(rest);
      if (named) {
        const fields = named[1].split(',').map((s) => s.trim()).filter((s) => s && !/^type\s/.test(s))
          .map((s) => s.replace(/\s+as\s+/, ': '));
        parts.push(`{ ${fields.join(', ')} } = ${tmp}`);
      }
      return `${indent}var ${tmp} = await import(${spec}); var ${parts.join(', ')};`;
    });
  }

  // ---- re-runnable declarations ---------------------------------------------

  // A notebook cell may be run again, so its top-level let, const and class
  // declarations become var ones (global properties a later cell can declare
  // anew) before Node's await transform sees them: `let x;` is `var x =
  // undefined` (a re-run resets it), `class A {}` is `var A = class A {}`.
  // const keeps its meaning within its cell: assigning to one there throws
  // the TypeError V8 would; a later cell may assign to it, as to a var.
  const DECL_HINT = /\b(?:let|const|class)\b/;

  function patternNames(p, out) {
    if (!p) return out;
    switch (p.type) {
      case 'Identifier': out.push(p.name); break;
      case 'ObjectPattern': for (const q of p.properties) patternNames(q.type === 'RestElement' ? q.argument : q.value, out); break;
      case 'ArrayPattern': for (const q of p.elements) patternNames(q, out); break;
      case 'RestElement': patternNames(p.argument, out); break;
      case 'AssignmentPattern': patternNames(p.left, out); break;
    }
    return out;
  }

  function rewriteDeclarations(code) {
    if (!acorn || !DECL_HINT.test(code)) return code;
    let ast;
    try {
      ast = acorn.parse(code, { ecmaVersion: 'latest', sourceType: 'script', allowAwaitOutsideFunction: true, allowHashBang: true });
    } catch {
      return code; // V8 reports the syntax error
    }
    const edits = []; // [start, end, text], applied from the end
    const consts = new Set();
    for (const node of ast.body) {
      if (node.type === 'VariableDeclaration' && node.kind !== 'var') {
        edits.push([node.start, node.start + node.kind.length, 'var']);
        for (const d of node.declarations) {
          if (!d.init) edits.push([d.id.end, d.id.end, ' = void 0']);
          if (node.kind === 'const') patternNames(d.id, []).forEach((name) => consts.add(name));
        }
      } else if (node.type === 'ClassDeclaration') {
        edits.push([node.start, node.start, `var ${node.id.name} = `], [node.end, node.end, ';']);
      }
    }
    if (consts.size) edits.push(...constAssignments(ast, consts, code));
    edits.sort((a, b) => b[0] - a[0] || b[1] - a[1]);
    for (const [start, end, text] of edits) code = code.slice(0, start) + text + code.slice(end);
    return code;
  }

  // Names a scope node declares itself (a function's params and body, a
  // block's lexical declarations, a catch's parameter); over-counting a
  // function's only lets an assignment through, as a var would.
  function scopeNames(node) {
    const names = [];
    const lexical = (body) => {
      for (const s of body) {
        if (s.type === 'VariableDeclaration') s.declarations.forEach((d) => patternNames(d.id, names));
        else if ((s.type === 'ClassDeclaration' || s.type === 'FunctionDeclaration') && s.id) names.push(s.id.name);
      }
    };
    if (/Function/.test(node.type)) {
      node.params.forEach((p) => patternNames(p, names));
      if (node.id) names.push(node.id.name);
      walk.full(node.body, (n) => {
        if (n.type === 'VariableDeclarator') patternNames(n.id, names);
        else if (n.type === 'FunctionDeclaration' || n.type === 'ClassDeclaration') names.push(n.id.name);
      });
    } else if (node.type === 'BlockStatement' || node.type === 'StaticBlock') {
      lexical(node.body);
    } else if (node.type === 'ForStatement' || node.type === 'ForInStatement' || node.type === 'ForOfStatement') {
      const d = node.init || node.left;
      if (d && d.type === 'VariableDeclaration') d.declarations.forEach((x) => patternNames(x.id, names));
    } else if (node.type === 'CatchClause' && node.param) {
      patternNames(node.param, names);
    }
    return names;
  }

  function constAssignments(ast, consts, code) {
    const edits = [];
    const check = (name, node, ancestors, value) => {
      if (!consts.has(name)) return;
      for (const a of ancestors) if (a !== ast && a !== node && scopeNames(a).includes(name)) return;
      const thrown = `globalThis[Symbol.for('sessionbox.constAssign')](${JSON.stringify(name)})`;
      edits.push([node.start, node.end, value ? `(${code.slice(value.start, value.end)}, ${thrown})` : `(${thrown})`]);
    };
    walk.ancestor(ast, {
      AssignmentExpression(node, ancestors) {
        if (node.left.type === 'Identifier') check(node.left.name, node, ancestors, node.right);
      },
      UpdateExpression(node, ancestors) {
        if (node.argument.type === 'Identifier') check(node.argument.name, node, ancestors, null);
      },
    });
    // An assignment inside another one's value is replaced with it.
    return edits.filter((e) => !edits.some((o) => o !== e && o[0] <= e[0] && e[1] <= o[1]));
  }

  Object.defineProperty(globalThis, Symbol.for('sessionbox.constAssign'), {
    value: () => { throw new TypeError('Assignment to constant variable.'); },
  });

  function compile(code, n) {
    const filename = path.join(process.cwd(), `<cell-${n}>`);
    if (lang === 'typescript') code = stripTypes(code);
    code = rewriteDeclarations(rewriteImports(code));
    let awaited = false;
    if (processTopLevelAwait && code.includes('await')) {
      const wrapped = processTopLevelAwait(code);
      if (wrapped !== null) {
        code = wrapped;
        awaited = true;
      }
    } else if (!processTopLevelAwait && /\bawait\b/.test(code)) {
      code = `(async () => {\n${code}\n})()`;
      awaited = 'plain';
    }
    const opts = { filename, importModuleDynamically: vm.constants.USE_MAIN_CONTEXT_DEFAULT_LOADER };
    // `{ a: 1 }` alone is an object, not a block (as in Node's REPL).
    if (/^\s*\{/.test(code) && !/;\s*$/.test(code)) {
      try {
        return { script: new vm.Script(`(${code.trim()})\n`, opts), awaited };
      } catch {
        // a block after all
      }
    }
    return { script: new vm.Script(code, opts), awaited };
  }

  function interrupted() {
    const e = new Error('Script execution was interrupted by `SIGINT`');
    e.code = 'ERR_SCRIPT_EXECUTION_INTERRUPTED';
    e.stack = 'Error: ' + e.message;
    return e;
  }

  // takeSigint throws for an interrupt that came while the kernel itself ran
  // (compiling the cell, say): the server sends one SIGINT per interrupt.
  function takeSigint() {
    if (state.sigint) {
      state.sigint = false;
      throw interrupted();
    }
  }

  async function runCell(code, n) {
    const { script, awaited } = compile(code, n);
    takeSigint();
    let value = script.runInThisContext({ breakOnSigint: true, displayErrors: false });
    if (awaited) {
      // A cell waiting on a promise ends at an interrupt.
      const stop = new Promise((_, reject) => {
        state.interrupt = () => reject(interrupted());
        if (state.sigint) state.interrupt();
      });
      try {
        value = await Promise.race([value, stop]);
      } finally {
        state.interrupt = null;
      }
      if (awaited === true) value = value === undefined ? undefined : value.value;
    }
    return value;
  }

  const MIME_METHODS = [
    ['text/html', '_toHtml'],
    ['image/svg+xml', '_toSvg'],
    ['image/png', '_toPng'],
    ['image/jpeg', '_toJpeg'],
  ];

  function inspect(value) {
    const text = typeof value === 'string' ? `'${value}'` : util.inspect(value, { colors: false });
    return text.length > cap ? text.slice(0, cap) : text;
  }

  // The result: text/plain as Node's REPL shows it (a string as itself), with
  // the formats of ijavascript's display protocol when the value offers them.
  function sendResult(value) {
    if (value === null || (typeof value !== 'object' && typeof value !== 'function')) {
      queue('T', inspect(value));
      return;
    }
    const bundle = { 'text/plain': inspect(value) };
    for (const [mime, method] of MIME_METHODS) {
      if (typeof value[method] === 'function') bundle[mime] = String(value[method]());
    }
    if (typeof value._toMime === 'function') Object.assign(bundle, value._toMime());
    queue('M', JSON.stringify(bundle));
  }

  // Kernel frames say nothing to users: a traceback keeps the cell's own.
  function traceback(e) {
    const stack = String(e.stack || '');
    return stack
      .split('\n')
      .filter((l) => !/^\s+at /.test(l) || !(l.includes('node:') || l.includes(`(${kernelFile}`) || l.includes('[stdin]') || /at (runCell|main|execute)\b/.test(l)))
      .join('\n');
  }

  function errorJSON(e) {
    if (e instanceof Error || (e && typeof e === 'object' && 'stack' in e && 'message' in e)) {
      return JSON.stringify({ name: String(e.name || 'Error'), value: String(e.message), traceback: traceback(e) });
    }
    const value = util.inspect(e, { colors: false });
    return JSON.stringify({ name: 'Error', value: `Uncaught ${value}`, traceback: `Uncaught ${value}` });
  }

  function applyEnv(block, saved) {
    const parts = block.toString('utf8').split('\0');
    for (let i = 0; i + 1 < parts.length; i += 2) {
      const k = parts[i];
      if (saved) saved.push([k, Object.prototype.hasOwnProperty.call(process.env, k) ? process.env[k] : undefined]);
      process.env[k] = parts[i + 1];
    }
  }

  function restoreEnv(saved) {
    for (const [k, old] of saved.reverse()) {
      if (old === undefined) delete process.env[k];
      else process.env[k] = old;
    }
  }

  async function execute(payload) {
    const envLen = payload.readUInt32LE(0);
    const env = payload.subarray(4, 4 + envLen);
    const code = payload.subarray(4 + envLen).toString('utf8');
    const n = ++state.count;
    for (const s of Object.values(streams)) {
      s.count = 0;
      s.dropped = false;
    }
    // Sent at once: there is no thread to answer a probe while a cell runs.
    send('C', String(n));
    inCell = true;
    const early = held;
    held = [];
    heldChars = 0;
    for (const [tag, text] of early) output(tag, text);
    const saved = [];
    if (envLen) applyEnv(env, saved);
    try {
      const value = await runCell(code, n);
      mayDrainRaw(); // the cell's commands' output goes before its result
      if (value !== undefined) sendResult(value);
    } catch (e) {
      mayDrainRaw();
      queue('X', errorJSON(e));
    } finally {
      restoreEnv(saved);
      inCell = false;
      state.sigint = false;
    }
    send('F', '');
  }

  // ---- the command pipe ----------------------------------------------------

  let pending = Buffer.alloc(0);
  let busy = Promise.resolve();

  function onCommand(tag, payload) {
    switch (tag) {
      case 'E':
      case 'G': // the server watches the directory; this kernel never scans
        busy = busy.then(() => execute(payload));
        break;
      case 'V':
        busy = busy.then(() => applyEnv(payload, null));
        break;
    }
  }

  function onData(chunk) {
    pending = pending.length ? Buffer.concat([pending, chunk]) : chunk;
    while (pending.length >= 5) {
      const len = pending.readUInt32LE(1);
      if (pending.length < 5 + len) break;
      const tag = String.fromCharCode(pending[0]);
      const payload = pending.subarray(5, 5 + len);
      pending = pending.subarray(5 + len);
      onCommand(tag, payload);
    }
  }

  // Between cells SIGINT does nothing; during a cell's synchronous part
  // breakOnSigint takes it; while a cell awaits, it rejects the wait.
  process.on('SIGINT', () => {
    if (state.interrupt) state.interrupt();
    else if (inCell) state.sigint = true;
  });
  // What a timer or a forgotten promise throws is reported, not fatal.
  process.on('uncaughtException', (e) => output('R', `Uncaught ${util.inspect(e)}\n`));
  process.on('unhandledRejection', (e) => output('R', `Uncaught (in promise) ${util.inspect(e)}\n`));

  globalThis.require = createRequire(path.join(process.cwd(), '<cell>'));

  function start() {
    if (lang === 'typescript') {
      try {
        stripper = loadStripper();
      } catch (e) {
        fs.writeSync(2, e.message + '\n');
        process.exit(1);
      }
    }
    const cmd = new net.Socket({ fd: CMD_FD, readable: true, writable: false });
    cmd.on('data', onData);
    cmd.on('end', () => process.exit(0));
    cmd.on('error', () => process.exit(0));
    // Probes ask for queued frames; this kernel queues none.
    const probe = new net.Socket({ fd: PROBE_FD, readable: true, writable: false });
    probe.on('data', () => {});
    probe.on('error', () => {});
    probe.unref();
    watchRaw();
    patchChildProcess();
    ready = true;
    send('K', `${lang} node ${process.version}`);
  }

  // The loader cells import with is marked experimental; its warning is the
  // kernel's business, not the cell's output.
  const emitWarning = process.emitWarning;
  process.emitWarning = function (warning, ...rest) {
    if (String(warning && warning.message || warning).includes('USE_MAIN_CONTEXT_DEFAULT_LOADER')) return;
    return emitWarning.call(this, warning, ...rest);
  };
  setImmediate(start);
})();
