# sessionbox code-interpreter kernel: one process per context, stdlib only.
#
# The Go server starts this program as `python3 - <max_output>` with the source on
# stdin, the command pipe on fd 3, the event pipe on fd 4 and the probe pipe on
# fd 5. Every frame on the first two is: 1 type byte, a 4-byte little-endian
# payload length, the payload. Any byte on the probe pipe asks for the frames
# queued so far (a running cell's C) to be written now.
#
# Commands (fd 3):  E  execute: u32 env length, env block ("k\0v\0"...), code (UTF-8)
#                   G  execute as E, without the scans for the A frame (the
#                      server watches the directory itself)
#                   V  set env vars for good: env block (a standby kernel taking
#                      on its sandbox's environment)
# Events (fd 4):    K ready, C execution count, O stdout, R stderr, T main result
#                   as text/plain only, M main result bundle (JSON), D display data
#                   bundle (JSON), X error (JSON), W stream truncated, A files the
#                   cell created or changed (JSON {"root", "files"}), F cell done.
import builtins
import os
import select
import sys
import time
import types

try:
    # The C modules signal and ast wrap: the kernel needs only their functions,
    # numbers, flags and node types, and the Python layers (signal's enum
    # classes, ast's visitors) cost a kernel's start some milliseconds. User
    # code that imports signal or ast gets the whole module.
    import _signal as signal
    import _ast as _pyast
except ImportError:
    import signal
    import ast as _pyast
# The kernel's threads are plain ones for the same reason (threading's module
# is a millisecond of start); they stay out of threading.enumerate() in cells.
import _thread

_CMD_FD, _EVT_FD, _PROBE_FD = 3, 4, 5
# Signal states of the main thread: between cells SIGINT is ignored; in kernel
# code during a cell (or while writing a frame) it is deferred until user code
# runs; in user code it raises KeyboardInterrupt.
_IDLE, _CELL, _USER, _CRIT = 0, 1, 2, 3
_KERNEL_FILE = sys._getframe().f_code.co_filename
_FLUSH_DELAY = 0.002
# The flusher holds back an unterminated line this long, so a print's text and
# its newline (two writes) arrive as one chunk even on a busy machine.
_PARTIAL_HOLD = 0.1
_PLAIN_FAST = (int, float, complex, bool, str)
# The working directory scan around a cell gives up past this many entries:
# the caller then lists the directory itself rather than wait on a big tree.
_SCAN_MAX = 2000
_MIME_METHODS = (
    ("text/html", "_repr_html_"),
    ("text/markdown", "_repr_markdown_"),
    ("image/svg+xml", "_repr_svg_"),
    ("image/png", "_repr_png_"),
    ("image/jpeg", "_repr_jpeg_"),
    ("text/latex", "_repr_latex_"),
    ("application/json", "_repr_json_"),
    ("application/javascript", "_repr_javascript_"),
    ("application/pdf", "_repr_pdf_"),
)
_BINARY_MIMES = ("image/png", "image/jpeg", "application/pdf")


def _frame(tag, payload):
    return tag + len(payload).to_bytes(4, "little") + payload


class _Stream:
    """sys.stdout / sys.stderr: buffers text and lets the flusher thread send it live."""

    encoding = "utf-8"
    errors = "strict"
    newlines = None
    line_buffering = True
    closed = False

    def __init__(self, kernel, tag, fd, name):
        self._k = kernel
        self.tag = tag
        self._fd = fd
        self.name = name
        self.buf = []
        self.count = 0
        self.dropped = False
        self.partial_since = None

    def write(self, s):
        if not isinstance(s, str):
            raise TypeError("write() argument must be str, not " + type(s).__name__)
        n = len(s)
        if n:
            self._k.stream_write(self, s)
        return n

    def writelines(self, lines):
        for line in lines:
            self.write(line)

    def flush(self):
        self._k.flush_streams()

    def fileno(self):
        return self._fd

    def isatty(self):
        return False

    def readable(self):
        return False

    def writable(self):
        return True

    def seekable(self):
        return False

    @property
    def buffer(self):
        return _BinaryStream(self)


class _BinaryStream:
    def __init__(self, text):
        self._text = text

    def write(self, b):
        self._text.write(bytes(b).decode("utf-8", "replace"))
        return len(b)

    def flush(self):
        self._text.flush()


class Kernel:
    def __init__(self, cap, lang="python"):
        self.cap = cap
        self.lang = lang
        self.bash = None
        self.lock = _thread.RLock()
        self.rawlock = _thread.allocate_lock()
        # The flusher's wake-up: released (under self.lock) when a stream write
        # schedules a flush, taken by the flusher. self.scheduled keeps it to
        # one release per take.
        self.wake = _thread.allocate_lock()
        self.wake.acquire()
        self.scheduled = False
        self.out = []
        self.state = _IDLE
        self.intr_pending = False
        self.main_id = _thread.get_ident()
        self.count = 0
        self.loop = None
        self.raw = {}
        self.last = None
        self.stdout = _Stream(self, b"O", 1, "<stdout>")
        self.stderr = _Stream(self, b"R", 2, "<stderr>")
        self.ns = None
        self.root = os.getcwd()
        self.before = None
        # Chart data on figures can be turned off (benchmarks compare).
        self.charts = os.environ.get("SESSIONBOX_CHARTS", "1") != "0"

    # ---- frame output -------------------------------------------------

    def _emit_locked(self):
        """Writes every queued frame in one syscall; caller holds self.lock."""
        if not self.out:
            return
        main = _thread.get_ident() == self.main_id
        prev = self.state
        if main:
            self.state = _CRIT
        try:
            data = b"".join(self.out)
            self.out.clear()
            mv = memoryview(data)
            while mv:
                mv = mv[os.write(_EVT_FD, mv):]
        except OSError:
            os._exit(0)
        finally:
            if main:
                self.state = prev
        if main and prev == _USER and self.intr_pending:
            self.intr_pending = False
            raise KeyboardInterrupt

    def _queue_streams_locked(self, hold_partial=False):
        """Queues buffered text; reports whether a young partial line was held back."""
        held = False
        for s in (self.stdout, self.stderr):
            if not s.buf:
                continue
            text = "".join(s.buf)
            s.buf.clear()
            keep = False
            if hold_partial and not text.endswith("\n"):
                now = time.monotonic()
                if s.partial_since is None:
                    s.partial_since = now
                keep = now - s.partial_since < _PARTIAL_HOLD
            if keep:
                cut = text.rfind("\n") + 1
                s.buf.append(text[cut:])
                text = text[:cut]
                held = True
            else:
                s.partial_since = None
            if text:
                self.out.append(_frame(s.tag, text.encode("utf-8", "replace")))
        return held

    def stream_write(self, stream, s):
        with self.lock:
            if stream.dropped:
                return
            if self.last is not stream:
                # Only the last stream written holds text, so stdout and stderr
                # keep the order they were written in.
                self._queue_streams_locked()
                self.last = stream
            room = self.cap - stream.count
            cut = len(s) > room
            if cut:
                s = s[:room]
                stream.dropped = True
            stream.count += len(s)
            if s:
                stream.buf.append(s)
            if cut:
                self._queue_streams_locked()
                self.out.append(_frame(b"W", stream.tag))
            if not self.scheduled:
                self.scheduled = True
                self.wake.release()

    def flush_streams(self):
        with self.lock:
            self._queue_streams_locked()
            self._emit_locked()

    def send(self, tag, payload, now=True):
        with self.lock:
            self._queue_streams_locked()
            self.out.append(_frame(tag, payload))
            if now:
                self._emit_locked()

    def _flusher(self):
        _block_sigint()
        while True:
            self.wake.acquire()
            time.sleep(_FLUSH_DELAY)
            with self.lock:
                self.scheduled = False
                if self._queue_streams_locked(hold_partial=True):
                    self.scheduled = True
                    self.wake.release()
                self._emit_locked()

    # ---- raw fd 1/2 capture (subprocesses, C extensions) ---------------

    def capture_fds(self):
        import codecs

        for fd, stream in ((1, self.stdout), (2, self.stderr)):
            r, w = os.pipe()
            os.dup2(w, fd)
            os.close(w)
            os.set_blocking(r, False)
            self.raw[r] = (stream, codecs.getincrementaldecoder("utf-8")("replace"))
        _thread.start_new_thread(self._raw_reader, ())

    def _drain_raw_locked(self, r):
        """Reads what fd r holds; reports whether its writers are all gone."""
        stream, dec = self.raw[r]
        while True:
            try:
                data = os.read(r, 65536)
            except BlockingIOError:
                return False
            if not data:
                return True
            text = dec.decode(data)
            if text:
                self.stream_write(stream, text)

    def _raw_reader(self):
        _block_sigint()
        fds = list(self.raw)
        while fds:
            ready, _, _ = select.select(fds, [], [])
            with self.rawlock:
                for r in ready:
                    # User code closed fd 1 or 2 (and no child holds it):
                    # stop watching instead of spinning on EOF.
                    if self._drain_raw_locked(r):
                        fds.remove(r)

    def drain_raw(self):
        with self.rawlock:
            for r in self.raw:
                self._drain_raw_locked(r)

    # ---- signals --------------------------------------------------------

    def on_sigint(self, signum, frame):
        if self.state == _USER:
            raise KeyboardInterrupt
        if self.state != _IDLE:
            self.intr_pending = True

    def enter_user(self):
        self.state = _USER
        if self.intr_pending:
            self.intr_pending = False
            raise KeyboardInterrupt

    # ---- cells ------------------------------------------------------------

    def run_cell(self, payload, scan=True):
        envlen = int.from_bytes(payload[:4], "little")
        env = payload[4 : 4 + envlen]
        code = payload[4 + envlen :].decode("utf-8", "replace")
        self.before = _scan(self.root) if scan else None
        self.state = _CELL
        self.count += 1
        n = self.count
        with self.lock:
            for s in (self.stdout, self.stderr):
                s.count = 0
                s.dropped = False
            # Queued, not written: a quick cell sends it with its results
            # and F in one write. The server probes a cell it has not heard
            # from after a few ms (or wants to interrupt), and the watcher
            # thread then writes it, so the server learns the cell started.
            self.out.append(_frame(b"C", str(n).encode()))
        saved = []
        try:
            if self.lang == "bash":
                self._run_bash(code, env)
            else:
                if envlen:
                    _apply_env(env, saved)
                self._run(code, n)
        except BaseException as e:  # an interrupt that landed in kernel code
            self.state = _CELL
            self.send(b"X", _error_json(e), now=False)
        finally:
            self.state = _CELL
            if saved:
                _restore_env(saved)
        self._finish()
        self.state = _IDLE
        self.intr_pending = False

    def _run(self, code, n):
        fn = "<cell-%d>" % n
        try:
            src, body, last = _compile_cell(code, fn)
        except SyntaxError as e:
            self.send(b"X", _error_json(e, syntax=True), now=False)
            return
        _cache_lines(fn, src)
        ns = self.ns
        try:
            self.enter_user()
            if body is not None:
                r = eval(body, ns)
                if r is not None and body.co_flags & 0x80:
                    self._await(r)
            if last is None:
                return
            value = eval(last, ns)
            if last.co_flags & 0x80:
                value = self._await(value)
            if value is None:
                return
            ns["_"] = value
            self._send_result(value)
        except BaseException as e:
            self.state = _CELL
            self.send(b"X", _error_json(e), now=False)
        finally:
            self.state = _CELL

    def _run_bash(self, code, env):
        # The cell runs in the shell's process, which gets the interrupt
        # too (same process group) and ends the cell; the kernel stays in
        # cell state, so the interrupt only marks it (no exception here
        # could drop the status the shell already wrote).
        b = self.bash
        if b is None or b.p.poll() is not None:
            if b is not None:
                b.close()
            b = self.bash = _Bash()
        status = b.run(code, _env_pairs(env), self)
        if self.intr_pending:
            self.intr_pending = False
            if status is None:
                b.close()
                self.bash = None
            self.send(b"X", _error_json(KeyboardInterrupt()), now=False)
            return
        if status is None:
            # The cell ended the shell (exit): its variables are gone.
            status = b.close()
            self.bash = None
        if status != 0:
            # As bash_kernel reports a failed cell: no name, the status as value.
            err = {"name": "", "value": str(status), "traceback": ""}
            self.send(b"X", _dumps(err), now=False)

    def _await(self, coro):
        import asyncio

        if self.loop is None:
            self.loop = asyncio.new_event_loop()
        return self.loop.run_until_complete(coro)

    def _send_result(self, value):
        if type(value) in _PLAIN_FAST:
            self.send(b"T", _clip(repr(value), self.cap).encode("utf-8", "replace"), now=False)
            return
        bundle = self.bundle(value)
        self.send(b"M", _dumps(bundle), now=False)

    def _finish(self):
        self.drain_raw()
        if "matplotlib.pyplot" in sys.modules:
            try:
                self.show_figures()
            except BaseException as e:
                self.stderr.write("sessionbox: could not render figures: %r\n" % (e,))
        changed = None
        if self.before is not None:
            changed = _changed_files(self.root, self.before, _scan(self.root))
        self.before = None
        with self.lock:
            self._queue_streams_locked()
            if changed is not None:
                self.out.append(_frame(b"A", changed))
            self.out.append(_frame(b"F", b""))
            self._emit_locked()

    # ---- rich display ---------------------------------------------------

    def bundle(self, obj):
        d = {}
        if not isinstance(obj, type):
            _mimebundle(obj, d, self.stderr)
            fig = sys.modules.get("matplotlib.figure")
            pd = sys.modules.get("pandas")
            if pd is not None and isinstance(obj, pd.DataFrame) and "e2b/data" not in d:
                d["e2b/data"] = _frame_data(obj)
            if fig is not None and isinstance(obj, fig.Figure) and "image/png" not in d:
                d["image/png"] = _figure_png(obj)
                if self.charts:
                    d["e2b/chart"] = _chart_or_empty(obj)
                _close_figure(obj)
        if "text/plain" not in d:
            d["text/plain"] = _clip(_plain(obj), self.cap)
        for mime in _BINARY_MIMES:
            v = d.get(mime)
            if isinstance(v, (bytes, bytearray)):
                import base64

                d[mime] = base64.b64encode(v).decode("ascii")
        return d

    def display(self, *objs, raw=False, **kwargs):
        for obj in objs:
            if raw and isinstance(obj, dict):
                bundle = dict(obj)
            else:
                bundle = self.bundle(obj)
            self.send(b"D", _dumps(bundle))

    def show_figures(self, *args, **kwargs):
        helpers = sys.modules.get("matplotlib._pylab_helpers")
        if helpers is None:
            return
        for mgr in helpers.Gcf.get_all_fig_managers():
            fig = mgr.canvas.figure
            if fig.axes or fig.artists or fig.images or fig.texts or fig.patches or fig.lines:
                bundle = {"image/png": _figure_png(fig), "text/plain": repr(fig)}
                if self.charts:
                    bundle["e2b/chart"] = _chart_or_empty(fig)
                self.send(b"D", _dumps(bundle))
        plt = sys.modules.get("matplotlib.pyplot")
        if plt is not None:
            plt.close("all")

    # ---- magics (only tried when the cell is not valid Python) ------------

    def system(self, cmd):
        import subprocess

        self.flush_streams()
        shell = "/bin/bash" if os.path.exists("/bin/bash") else "/bin/sh"
        subprocess.run(cmd, shell=True, executable=shell)
        self.drain_raw()

    def pip(self, args):
        import shlex
        import subprocess

        self.flush_streams()
        subprocess.run([sys.executable, "-m", "pip"] + shlex.split(args))
        self.drain_raw()

    def cd(self, path):
        os.chdir(os.path.expanduser(path.strip() or "~"))
        print(os.getcwd())

    def env(self, arg):
        if "=" in arg:
            k, v = arg.split("=", 1)
            os.environ[k.strip()] = v.strip()
        elif arg.strip():
            return os.environ.get(arg.strip())
        else:
            return dict(os.environ)

    # ---- main loop ----------------------------------------------------------

    def serve(self):
        rf = os.fdopen(_CMD_FD, "rb", buffering=1 << 16)
        while True:
            hdr = rf.read(5)
            if len(hdr) < 5:
                os._exit(0)
            n = int.from_bytes(hdr[1:5], "little")
            payload = rf.read(n) if n else b""
            if len(payload) < n:
                os._exit(0)
            if hdr[0] == 0x45:  # 'E'
                self.run_cell(payload)
            elif hdr[0] == 0x47:  # 'G'
                self.run_cell(payload, scan=False)
            elif hdr[0] == 0x56:  # 'V'
                _apply_env(payload, [])


class _Bash:
    """A persistent bash for a bash context. Each cell is written to a file
    and sourced (so a syntax error ends only the cell, and variables,
    functions and cwd persist); its status comes back on a pipe of its own.
    An interrupt (SIGINT to the process group) returns from the sourced
    cell, leaving the shell alive."""

    def __init__(self):
        import subprocess
        import tempfile

        self.dir = tempfile.mkdtemp(prefix="sbk-bash-")
        self.cell = os.path.join(self.dir, "cell.sh")
        self.r, w = os.pipe()
        shell = "/bin/bash" if os.path.exists("/bin/bash") else "bash"
        self.p = subprocess.Popen([shell, "--norc", "--noprofile", "-s"], stdin=subprocess.PIPE, pass_fds=(w,))
        self.w = w
        os.close(w)
        self.buf = b""
        self._send("trap 'return 130 2>/dev/null' INT\n")

    def close(self):
        """Reaps the exited shell and drops its pipe and cell file; returns its status."""
        import shutil

        status = self.p.wait()
        for f in (self.p.stdin.close, lambda: os.close(self.r)):
            try:
                f()
            except OSError:
                pass
        shutil.rmtree(self.dir, ignore_errors=True)
        return status

    def _send(self, text):
        self.p.stdin.write(text.encode("utf-8", "surrogateescape"))
        self.p.stdin.flush()

    def run(self, code, env, k):
        """Runs one cell; returns its status, or None when the shell exited."""
        import shlex

        with open(self.cell, "w", encoding="utf-8", errors="surrogateescape") as f:
            f.write(code)
            if not code.endswith("\n"):
                f.write("\n")
        assigns = "".join("%s=%s " % (k, shlex.quote(v)) for k, v in env if _is_name(k))
        try:
            self._send("%ssource %s </dev/null; printf '%%d\\n' \"$?\" >&%d\n" % (assigns, shlex.quote(self.cell), self.w))
        except (BrokenPipeError, OSError):
            return None
        return self._status(k)

    def _status(self, k):
        noticed = None
        while b"\n" not in self.buf:
            ready, _, _ = select.select([self.r], [], [], 0.25)
            if not ready:
                # An interrupt that reached the shell while it was still
                # reading the cell's command line did not stop the cell:
                # it is repeated until the cell ends.
                if k.intr_pending:
                    now = time.monotonic()
                    if noticed is None:
                        noticed = now
                    elif now - noticed >= 0.5:
                        noticed = now
                        os.killpg(os.getpgrp(), signal.SIGINT)
                continue
            data = os.read(self.r, 64)
            if not data:
                return None
            self.buf += data
        line, _, self.buf = self.buf.partition(b"\n")
        try:
            return int(line)
        except ValueError:
            return 1


def _is_name(k):
    return k.isidentifier() and k.isascii()


def _env_pairs(block):
    parts = block.decode("utf-8", "surrogateescape").split("\0") if block else []
    return [(parts[i], parts[i + 1]) for i in range(0, len(parts) - 1, 2)]


def _scan(root):
    """Maps each regular file in root and its subdirectories (depth 2, the
    service's artifact depth) to (mtime_ns, size, inode), skipping dot names as
    the service does. None when the tree is too big or unreadable."""
    files = {}
    seen = 0
    dirs = [root]
    try:
        for _ in range(2):
            below = []
            for d in dirs:
                with os.scandir(d) as it:
                    for e in it:
                        seen += 1
                        if seen > _SCAN_MAX:
                            return None
                        if e.name.startswith("."):
                            continue
                        if e.is_dir(follow_symlinks=False):
                            below.append(e.path)
                        elif e.is_file(follow_symlinks=False):
                            st = e.stat(follow_symlinks=False)
                            files[e.path] = (st.st_mtime_ns, st.st_size, st.st_ino)
            dirs = below
    except OSError:
        return None
    return files


def _changed_files(root, before, after):
    """The JSON report of files new or different in after, or None when
    either scan was incomplete (nothing is reported then, so the caller lists)."""
    if before is None or after is None:
        return None
    items = []
    for path, st in after.items():
        if before.get(path) == st:
            continue
        sec, ns = divmod(st[0], 1_000_000_000)
        modified = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(sec)) + ".%09dZ" % ns
        items.append({"path": path, "size": st[1], "modified": modified})
    if items:
        return _dumps({"root": root, "files": items})
    # Most cells change nothing: the same bytes each time, which the server
    # recognises without decoding them.
    empty = _NO_CHANGES.get(root)
    if empty is None:
        empty = _NO_CHANGES[root] = _dumps({"root": root, "files": []})
    return empty


_NO_CHANGES = {}


def _block_sigint():
    try:
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    except (AttributeError, OSError):
        pass


def _apply_env(block, saved):
    parts = block.decode("utf-8", "surrogateescape").split("\0")
    for i in range(0, len(parts) - 1, 2):
        k, v = parts[i], parts[i + 1]
        saved.append((k, os.environ.get(k)))
        os.environ[k] = v


def _restore_env(saved):
    for k, old in reversed(saved):
        if old is None:
            os.environ.pop(k, None)
        else:
            os.environ[k] = old


_FLAGS = getattr(_pyast, "PyCF_ALLOW_TOP_LEVEL_AWAIT", 0)

# Cell sources waiting for linecache, which the kernel does not import at
# start (it pulls in tokenize and re: milliseconds of every kernel's start):
# a traceback or warning imports it, and the import hook hands it these.
_PENDING_LINES = {}


def _cache_lines(fn, src):
    """Makes a cell's source what tracebacks and warnings show for fn."""
    entry = (len(src), None, src.splitlines(True), fn)
    lc = sys.modules.get("linecache")
    if lc is None:
        _PENDING_LINES[fn] = entry
    else:
        lc.cache[fn] = entry


def _dedent(code):
    """Drops leading blank lines and the indentation every line shares, as
    IPython does before compiling: cells sent from template literals and
    triple-quoted strings are indented as a whole."""
    if not code or code[0] not in " \t\r\n":
        return code
    import textwrap

    lines = code.splitlines(True)
    while lines and not lines[0].strip():
        del lines[0]
    return textwrap.dedent("".join(lines))


def _compile_cell(code, fn):
    """Splits the cell into its body and a trailing expression (REPL semantics)."""
    code = _dedent(code)
    try:
        tree = compile(code, fn, "exec", _pyast.PyCF_ONLY_AST)
    except SyntaxError:
        alt = _transform_magics(code)
        if alt is None:
            raise
        code = alt
        tree = compile(code, fn, "exec", _pyast.PyCF_ONLY_AST)
    last = None
    if tree.body and isinstance(tree.body[-1], _pyast.Expr) and not code.rstrip().endswith(";"):
        last = _pyast.Expression(tree.body.pop().value)
    body = compile(tree, fn, "exec", _FLAGS) if tree.body else None
    expr = compile(last, fn, "eval", _FLAGS) if last is not None else None
    return code, body, expr


_LINE_MAGICS = {"pip": "pip", "cd": "cd", "env": "env"}
_NOOP_MAGICS = ("matplotlib", "load_ext", "config", "reload_ext", "autoreload")


def _transform_magics(code):
    lines = code.split("\n")
    first = lines[0].strip()
    if first.startswith("%%bash") or first.startswith("%%sh"):
        return "__sbk__.system(%r)" % "\n".join(lines[1:])
    changed = False
    out = []
    for line in lines:
        stripped = line.lstrip()
        indent = line[: len(line) - len(stripped)]
        if stripped.startswith("!"):
            out.append(indent + "__sbk__.system(%r)" % stripped[1:])
            changed = True
            continue
        if stripped.startswith("%") and not stripped.startswith("%%"):
            name, _, arg = stripped[1:].partition(" ")
            if name in _LINE_MAGICS:
                out.append(indent + "__sbk__.%s(%r)" % (_LINE_MAGICS[name], arg))
                changed = True
                continue
            if name in _NOOP_MAGICS:
                out.append(indent + "pass")
                changed = True
                continue
        out.append(line)
    return "\n".join(out) if changed else None


def _real_method(obj, name):
    # Objects whose __getattr__ answers everything (mocks, proxies) are not asked.
    try:
        if getattr(obj, "_ipython_canary_method_should_not_exist_", None) is not None:
            return None
        m = getattr(obj, name, None)
    except Exception:
        return None
    return m if callable(m) else None


def _mimebundle(obj, d, err):
    m = _real_method(obj, "_repr_mimebundle_")
    if m is not None:
        try:
            r = m(include=None, exclude=None)
            if isinstance(r, tuple):
                r = r[0]
            if isinstance(r, dict):
                d.update(r)
        except Exception as e:
            err.write("sessionbox: _repr_mimebundle_ failed: %r\n" % (e,))
    for mime, name in _MIME_METHODS:
        if mime in d:
            continue
        m = _real_method(obj, name)
        if m is None:
            continue
        try:
            v = m()
        except Exception as e:
            err.write("sessionbox: %s failed: %r\n" % (name, e))
            continue
        if isinstance(v, tuple):
            v = v[0]
        if v is not None:
            d[mime] = v


def _clip(text, cap):
    # A huge repr would only flood the client; the output cap bounds it too.
    if len(text) > cap:
        return text[:cap] + "..."
    return text


def _plain(obj):
    # pprint is slow on big containers, where IPython truncates anyway.
    if type(obj) in (list, tuple, dict, set, frozenset) and len(obj) <= 1000:
        import pprint

        return pprint.pformat(obj, width=79, sort_dicts=False)
    return repr(obj)


def _dumps(bundle):
    import json

    try:
        text = json.dumps(bundle, default=_json_default, allow_nan=False)
    except ValueError:
        # NaN and infinities are not JSON: they go as null, as Jupyter sends them.
        text = json.dumps(_finite(bundle), default=_json_default, allow_nan=False)
    return text.encode("utf-8", "replace")


def _json_default(o):
    # Dates as ISO text and numpy scalars as numbers, as Jupyter's JSON
    # cleaning does; anything else as its repr.
    iso = getattr(o, "isoformat", None)
    if callable(iso):
        try:
            return iso()
        except Exception:
            pass
    item = getattr(o, "item", None)
    np = sys.modules.get("numpy")
    if np is not None and isinstance(o, np.generic) and callable(item):
        return item()
    return repr(o)


def _frame_data(df):
    """E2B's "e2b/data" of a DataFrame: each column's values as a list, keyed
    by the column's name, timestamps as ISO text."""
    try:
        cols = df.to_dict(orient="list")
    except Exception:
        return None
    return {str(k): [v.isoformat() if hasattr(v, "isoformat") else v for v in vals] for k, vals in cols.items()}


def _finite(v):
    if isinstance(v, float):
        return v if v - v == 0 else None
    if isinstance(v, dict):
        return {k: _finite(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_finite(x) for x in v]
    return v


def _figure_png(fig):
    import base64
    import io

    buf = io.BytesIO()
    fig.savefig(buf, format="png", bbox_inches="tight")
    return base64.b64encode(buf.getvalue()).decode("ascii")


def _close_figure(fig):
    plt = sys.modules.get("matplotlib.pyplot")
    if plt is not None:
        plt.close(fig)


def _user_tb(tb):
    while tb is not None and tb.tb_frame.f_code.co_filename == _KERNEL_FILE:
        tb = tb.tb_next
    return tb


def _error_json(e, syntax=False):
    import json
    import traceback

    try:
        if syntax:
            lines = traceback.format_exception_only(type(e), e)
        else:
            te = traceback.TracebackException(type(e), e, _user_tb(e.__traceback__))
            te.stack = traceback.StackSummary.from_list(
                [f for f in te.stack if f.filename != _KERNEL_FILE]
            )
            lines = list(te.format())
        tb = "".join(lines)
    except Exception:
        tb = ""
    try:
        value = str(e)
    except Exception:
        value = "<unprintable %s object>" % type(e).__name__
    return json.dumps({"name": type(e).__name__, "value": value, "traceback": tb}).encode(
        "utf-8", "replace"
    )


# ---- chart data (E2B's "e2b/chart" result field) ---------------------------
#
# A displayed matplotlib figure also carries its data as a chart, in the
# shape E2B's code-interpreter template gives: a type (line, scatter, bar,
# pie, box_and_whisker, superchart for several axes, unknown), title, and
# for 2-D charts axis labels and units, ticks, tick labels and scales, and
# the elements (series points, bars, wedges, boxes, or sub-charts). Only
# figure cells pay for it: the code below runs when a figure is displayed.

_UNIT = None  # compiled lazily: a label's unit, "Time (s)" or "Time [s]"


def _chart_or_empty(fig):
    try:
        return _chart_of_figure(fig)
    except Exception:
        return {}  # a figure we cannot read still shows, without data (as E2B)


def _chart_of_figure(fig):
    """The chart dict of a figure; {} when it has no data (as E2B)."""
    axes = fig.get_axes()
    if not axes or not any(ax.has_data() for ax in axes):
        return {}
    if len(axes) > 1:
        getter = getattr(fig, "get_suptitle", None)
        if getter is not None:
            title = getter()
        else:
            st = getattr(fig, "_suptitle", None)
            title = st.get_text() if st is not None else ""
        return {"type": "superchart", "title": title, "elements": [_chart_of_axes(ax) for ax in axes]}
    return _chart_of_axes(axes[0])


def _artists(ax):
    kids = getattr(ax, "_children", None)
    if kids is None:
        kids = list(ax.lines) + list(ax.collections) + list(ax.patches) + list(ax.images)
    return kids


def _is_grid_line(line):
    """Two-point horizontal or vertical lines (axhline, axvline, grids)."""
    x, y = line.get_xdata(), line.get_ydata()
    if len(x) != 2 or len(y) != 2:
        return False
    return bool(x[0] == x[1] or y[0] == y[1])


def _chart_kind(ax):
    from matplotlib.collections import PathCollection
    from matplotlib.lines import Line2D
    from matplotlib.patches import PathPatch, Rectangle, Wedge
    from matplotlib.text import Text

    objs = [o for o in _artists(ax) if not isinstance(o, Text)]
    if all(isinstance(o, Line2D) for o in objs):
        return "line"
    if all(isinstance(o, (PathPatch, Line2D)) for o in objs):
        return "box_and_whisker"
    objs = [o for o in objs if not (isinstance(o, Line2D) and _is_grid_line(o))]
    for kind, cls in (("scatter", PathCollection), ("pie", Wedge), ("bar", Rectangle)):
        if all(isinstance(o, cls) for o in objs):
            return kind
    return "unknown"


def _chart_of_axes(ax):
    kind = _chart_kind(ax)
    title = ax.get_title() or None
    if kind == "pie":
        return {"type": kind, "title": title, "elements": _pie_elements(ax)}
    if kind == "unknown":
        return {"type": kind, "title": title, "elements": []}
    c = {"type": kind, "title": title}
    _axis_labels(c, ax)
    if kind in ("line", "scatter"):
        _ticks(c, ax)
        c["elements"] = _line_elements(ax) if kind == "line" else _scatter_elements(ax)
    elif kind == "bar":
        c["elements"] = _bar_elements(c, ax)
    else:
        c["elements"] = _box_elements(c, ax)
    return c


def _axis_labels(c, ax):
    global _UNIT
    if _UNIT is None:
        import re

        _UNIT = re.compile(r"\s\((.*?)\)|\[(.*?)\]")
    for a, label in (("x", ax.get_xlabel()), ("y", ax.get_ylabel())):
        c[a + "_label"] = label or None
    for a in ("x", "y"):
        label, unit = c[a + "_label"], None
        if label:
            m = _UNIT.search(label)
            if m:
                unit = m.group(1) or m.group(2)
        c[a + "_unit"] = unit


def _swap_axes(c):
    for f in ("_label", "_unit"):
        c["x" + f], c["y" + f] = c["y" + f], c["x" + f]


def _converter(axis):
    get = getattr(axis, "get_converter", None)
    return get() if get is not None else getattr(axis, "converter", None)


def _is_date_converter(conv):
    if conv is None:
        return False
    import matplotlib.dates as mdates

    kinds = tuple(
        k for k in (getattr(mdates, n, None) for n in ("_SwitchableDateConverter", "DateConverter", "ConciseDateConverter"))
        if isinstance(k, type)
    )
    return isinstance(conv, kinds)


def _ticks(c, ax):
    for a, axis, labels, ticks, scale in (
        ("x", ax.xaxis, ax.get_xticklabels(), ax.get_xticks(), ax.get_xscale()),
        ("y", ax.yaxis, ax.get_yticklabels(), ax.get_yticks(), ax.get_yscale()),
    ):
        dates = _is_date_converter(_converter(axis))
        texts = [t.get_text() for t in labels]
        if dates:
            import matplotlib.dates as mdates

            values = [mdates.num2date(t).isoformat() for t in ticks]
        else:
            values = [_json_scalar(t) for t in ticks]
        c[a + "_ticks"] = values
        c[a + "_tick_labels"] = texts
        c[a + "_scale"] = _scale(dates, scale, values, texts)


def _scale(dates, scale, ticks, labels):
    if dates:
        return "datetime"
    if scale != "linear":
        return scale
    # Categorical axes put their categories at 0, 1, 2... labelled by name.
    for i, (tick, label) in enumerate(zip(ticks, labels)):
        if not (isinstance(tick, (int, float)) and tick == i and str(i) != label):
            return "linear"
    return "categorical"


def _json_scalar(v):
    """A JSON-able form of one data value: numbers as float, dates as ISO text."""
    import datetime

    if isinstance(v, (datetime.date, datetime.datetime)):
        return v.isoformat()
    np = sys.modules.get("numpy")
    if np is not None:
        if isinstance(v, np.datetime64):
            return str(v.astype("datetime64[s]"))
        if isinstance(v, np.generic):
            v = v.item()
    if isinstance(v, bool):
        return float(v)
    if isinstance(v, (int, float)):
        return float(v)
    return v if isinstance(v, str) else str(v)


def _points(xs, ys):
    return [[_json_scalar(x), _json_scalar(y)] for x, y in zip(xs, ys)]


def _line_elements(ax):
    out = []
    for line in ax.get_lines():
        if _is_grid_line(line):
            continue
        label = line.get_label()
        if label.startswith("_child"):
            label = "Line " + label[6:]
        out.append({"label": label, "points": _points(line.get_xdata(), line.get_ydata())})
    return out


def _scatter_elements(ax):
    out = []
    for coll in ax.collections:
        offs = coll.get_offsets()
        out.append({"label": coll.get_label(), "points": _points([p[0] for p in offs], [p[1] for p in offs])})
    return out


def _bar_elements(c, ax):
    out = []
    for cont in ax.containers:
        group = cont.get_label()
        if group.startswith("_container"):
            group = "Group " + group[10:]
        heights = [r.get_height() for r in cont]
        if all(h == heights[0] for h in heights):
            # Equal heights: horizontal bars (barh), whose values are widths.
            _swap_axes(c)
            labels = [t.get_text() for t in ax.get_yticklabels()]
            values = [r.get_width() for r in cont]
        else:
            labels = [t.get_text() for t in ax.get_xticklabels()]
            values = heights
        for label, value in zip(labels, values):
            out.append({"label": label, "group": group, "value": float(value)})
    return out


def _round_dec(v):
    """v rounded as E2B rounds chart values (8 digits less the magnitude), as
    a Decimal, so sums of rounded values stay exact (324, not 323.99999...)."""
    from decimal import Decimal, localcontext

    d = Decimal(str(v))
    with localcontext() as ctx:
        ctx.prec = max(1, 8 - d.adjusted())
        return +d


def _round_sig(v):
    return float(_round_dec(v))


def _pie_elements(ax):
    return [
        {"label": w.get_label(), "angle": abs(_round_sig(float(w.theta2) - float(w.theta1))), "radius": float(w.r)}
        for w in ax.patches
    ]


def _box_elements(c, ax):
    labels = [t.get_text() for t in ax.get_xticklabels()]
    boxes = []
    for label, patch in zip(labels, ax.patches):
        verts = patch.get_path().vertices
        xs = [_round_dec(v) for v in verts[:, 0]]
        ys = [_round_dec(v) for v in verts[:, 1]]
        x, y = min(xs), min(ys)
        boxes.append({"x": x, "y": y, "w": max(xs) - x, "h": max(ys) - y, "label": label, "outliers": []})
    if not boxes:
        return []
    # Boxes of one height are laid along y (vert=False): swap to read them alike.
    horizontal = all(b["h"] == boxes[0]["h"] for b in boxes)
    if horizontal:
        _swap_axes(c)
        for b in boxes:
            b["x"], b["y"], b["w"], b["h"] = b["y"], b["x"], b["h"], b["w"]
    for line in ax.lines:
        xs = [_round_dec(v) for v in line.get_xdata()]
        ys = [_round_dec(v) for v in line.get_ydata()]
        if horizontal:
            xs, ys = ys, xs
        if len(xs) == 1:
            b = next((b for b in boxes if b["x"] <= xs[0] <= b["x"] + b["w"]), None)
            if b is not None:
                b["outliers"].append(float(ys[0]))
            continue
        if len(ys) != 2:
            continue
        b = next((b for b in boxes if b["x"] <= xs[0] <= xs[1] <= b["x"] + b["w"]), None)
        if b is None:
            continue
        if ys[0] == ys[1] and b["y"] <= ys[0] <= b["y"] + b["h"]:
            b["median"] = ys[0]
        elif max(ys) == b["y"]:
            b["min"] = min(ys)
        elif min(ys) == b["y"] + b["h"]:
            b["max"] = max(ys)
    return [
        {
            "label": b["label"],
            "min": float(b["min"]),
            "first_quartile": float(b["y"]),
            "median": float(b["median"]),
            "third_quartile": float(b["y"] + b["h"]),
            "max": float(b["max"]),
            "outliers": b["outliers"],
        }
        for b in boxes
    ]


# Modules patched right after they are imported: pyplot.show renders figures,
# IPython's display() (which prints reprs outside an IPython shell) is ours,
# PIL images shown or saved to a path are displayed (as in E2B's template),
# a finished subprocess's output is taken in before the cell goes on, and
# linecache gets the sources of the cells run before it was imported.
_PATCHED = (
    "linecache",
    "matplotlib.pyplot",
    "PIL.Image",
    "PIL.ImageShow",
    "IPython.core.display_functions",
    "IPython.core.display",
    "IPython.display",
    "subprocess",
)


class _Finder:
    """Wraps the loaders of the _PATCHED modules so the kernel can patch them."""

    def __init__(self, kernel):
        self.k = kernel
        self.busy = False

    def find_spec(self, name, path, target=None):
        if name not in _PATCHED or self.busy:
            return None
        import importlib.util

        self.busy = True
        try:
            spec = importlib.util.find_spec(name)
        finally:
            self.busy = False
        if spec is None or spec.loader is None:
            return spec
        spec.loader = _PatchingLoader(spec.loader, self.k)
        return spec


def _patch_module(k, module):
    if module.__name__ == "linecache":
        module.cache.update(_PENDING_LINES)
        _PENDING_LINES.clear()
        return
    if module.__name__ == "subprocess":
        _order_popen_wait(k, module.Popen)
        return
    if module.__name__.startswith("PIL."):
        _patch_pil(k, module)
        return
    if module.__name__ != "matplotlib.pyplot":
        # Only a display the module defines itself: IPython >= 7.14 serves
        # IPython.core.display's through a module __getattr__ that warns
        # DeprecationWarning (onto the cell's stderr, our code being
        # __main__) and forwards to display_functions', patched already.
        if "display" in vars(module):
            module.display = k.display
        return

    # A plain function: pyplot sets __signature__ on its show when switching backends.
    def show(*args, **kwargs):
        k.show_figures()

    module.show = show


def _patch_pil(k, module):
    if module.__name__ == "PIL.ImageShow":
        # No viewer runs (xdg-open has no display here): the image is a result.
        def show(image, title=None, **options):
            k.display(image)
            return True

        module.show = show
        return
    inner = module.Image.save

    def save(self, fp, format=None, **params):
        # Saved to a named file: shown too, as E2B's template does, except
        # when matplotlib saves a figure through PIL (savefig to a path).
        caller = sys._getframe(1).f_globals.get("__name__", "")
        if isinstance(fp, str) and not caller.startswith("matplotlib"):
            try:
                k.display(self)
            except Exception as e:
                k.stderr.write("sessionbox: could not display the image: %r\n" % (e,))
        return inner(self, fp, format, **params)

    module.Image.save = save


class _PatchingLoader:
    def __init__(self, inner, kernel):
        self.inner = inner
        self.k = kernel

    def create_module(self, spec):
        return self.inner.create_module(spec)

    def exec_module(self, module):
        self.inner.exec_module(module)
        _patch_module(self.k, module)

    def __getattr__(self, name):
        return getattr(self.inner, name)


class _ShimFinder:
    """Serves a small IPython.display when IPython is not installed."""

    def __init__(self, kernel):
        self.k = kernel

    def find_spec(self, name, path, target=None):
        if name not in ("IPython", "IPython.display"):
            return None
        import importlib.machinery

        return importlib.machinery.ModuleSpec(name, self, is_package=(name == "IPython"))

    def create_module(self, spec):
        return None

    def exec_module(self, module):
        if module.__name__ == "IPython":
            module.__path__ = []
            module.__version__ = "0.0.0-sessionbox-shim"
            module.get_ipython = lambda: None
            return
        _fill_display_shim(module, self.k)


def _fill_display_shim(mod, k):
    class _Data:
        mime = "text/plain"

        def __init__(self, data=None, url=None, filename=None, **kwargs):
            if filename is not None:
                with open(filename, "rb" if self.binary else "r") as f:
                    data = f.read()
            self.data = data
            self.url = url

        binary = False

        def _repr_mimebundle_(self, include=None, exclude=None):
            return {self.mime: self.data}

        def __repr__(self):
            return "<IPython.core.display.%s object>" % type(self).__name__

    def mk(name, mime, binary=False):
        return type(name, (_Data,), {"mime": mime, "binary": binary})

    mod.HTML = mk("HTML", "text/html")
    mod.Markdown = mk("Markdown", "text/markdown")
    mod.SVG = mk("SVG", "image/svg+xml")
    mod.Latex = mk("Latex", "text/latex")
    mod.Math = mk("Math", "text/latex")
    mod.Javascript = mk("Javascript", "application/javascript")
    mod.JSON = mk("JSON", "application/json")
    mod.Pretty = mk("Pretty", "text/plain")

    class Image(_Data):
        binary = True

        def __init__(self, data=None, url=None, filename=None, format=None, **kwargs):
            super().__init__(data, url, filename)
            fmt = (format or (filename or "").rsplit(".", 1)[-1] or "png").lower()
            self.mime = "image/jpeg" if fmt in ("jpg", "jpeg") else "image/png"

    mod.Image = Image
    mod.display = k.display
    mod.clear_output = lambda wait=False: None
    for name, mime in (("html", "text/html"), ("markdown", "text/markdown"), ("svg", "image/svg+xml"),
                       ("png", "image/png"), ("jpeg", "image/jpeg"), ("latex", "text/latex"),
                       ("json", "application/json"), ("javascript", "application/javascript")):
        def show(*objs, raw=False, _mime=mime, **kw):
            for o in objs:
                k.display({_mime: o} if raw else o, raw=raw)

        setattr(mod, "display_" + name, show)


def _watch_server(k):
    # The server closing the command pipe (or dying) ends the kernel even while
    # a cell is busy and never reads it again. A probe has queued frames
    # written (the main thread may be busy in a cell for long).
    _block_sigint()
    p = select.poll()
    p.register(_CMD_FD, 0)
    try:
        os.set_blocking(_PROBE_FD, False)
        p.register(_PROBE_FD, select.POLLIN)
    except OSError:
        pass
    while True:
        for fd, ev in p.poll():
            if fd == _PROBE_FD:
                if _drain_probe():
                    with k.lock:
                        k._emit_locked()
                else:
                    p.unregister(_PROBE_FD)
            elif ev & (select.POLLHUP | select.POLLERR | select.POLLNVAL):
                os._exit(0)


def _drain_probe():
    """Reads every pending probe byte; False once the server closed the pipe."""
    while True:
        try:
            if not os.read(_PROBE_FD, 256):
                return False
        except BlockingIOError:
            return True
        except OSError:
            return False


def _order_popen_wait(k, popen):
    inner = popen.wait

    def wait(self, timeout=None):
        status = inner(self, timeout)
        k.drain_raw()
        return status

    popen.wait = wait


def _order_os_system(k):
    # The command's output reaches us through the fd 1/2 pipes; taking it in
    # before returning keeps it ahead of the cell's next print.
    inner = os.system

    def system(command):
        status = inner(command)
        k.drain_raw()
        return status

    os.system = system


def _user_site():
    """Puts the user's site-packages on sys.path even when it does not exist
    yet: site skips a missing one at start-up, so a `pip install --user` (the
    fallback where the system Python is externally managed) would otherwise
    be importable only after a restart."""
    try:
        import site

        usp = site.getusersitepackages()
        if site.ENABLE_USER_SITE and usp not in sys.path:
            os.makedirs(usp, exist_ok=True)
            site.addsitedir(usp)
    except Exception:
        pass


def main():
    cap = int(sys.argv[1]) if len(sys.argv) > 1 else 1 << 20
    lang = sys.argv[2] if len(sys.argv) > 2 else "python"
    k = Kernel(cap, lang)
    os.set_inheritable(_CMD_FD, False)
    os.set_inheritable(_EVT_FD, False)
    try:
        os.set_inheritable(_PROBE_FD, False)
    except OSError:
        pass
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.close(devnull)
    os.environ["MPLBACKEND"] = "Agg"
    k.capture_fds()
    sys.stdout = sys.__stdout__ = k.stdout
    sys.stderr = sys.__stderr__ = k.stderr
    if sys.argv[0] not in ("", "-") and sys.path and sys.path[0] == os.path.dirname(os.path.abspath(sys.argv[0])):
        # Run from a compiled file: its directory is ours, not the user's.
        del sys.path[0]
    sys.argv = [""]
    if "" not in sys.path:
        sys.path.insert(0, "")
    _user_site()
    user = types.ModuleType("__main__")
    user.__dict__["__builtins__"] = builtins
    sys.modules["__main__"] = user
    k.ns = user.__dict__
    builtins.display = k.display
    builtins.__sbk__ = k
    _order_os_system(k)
    # Imported already (the host's sitecustomize or a .pth file may import
    # IPython, say): patched now, so ours wins whatever the host loads.
    for name in _PATCHED:
        if name in sys.modules:
            _patch_module(k, sys.modules[name])
    sys.meta_path.insert(0, _Finder(k))
    sys.meta_path.append(_ShimFinder(k))
    signal.signal(signal.SIGINT, k.on_sigint)
    _thread.start_new_thread(k._flusher, ())
    _thread.start_new_thread(_watch_server, (k,))
    k.send(b"K", (lang if lang != "python" else "python %d.%d.%d" % sys.version_info[:3]).encode())
    k.serve()


main()
