"""Where the reference engine lives: Iceberg-Java 1.10.2 on Spark 3.5.9, in its own
virtual environment `.venv-java` (`make java-venv`; Spark 3.5 and the main venv's
PySpark 4.x cannot share one).

Code in the main venv never imports pyspark 3.5: it starts `python()` (the java venv's
interpreter) on a script, with `environment()`, and talks to it (the Java engine's
worker, conformance/engines/java_worker.py, speaks JSON lines). `spark_conf()` is the
Spark configuration for an Iceberg catalog of type rest, hadoop or jdbc; the worker and
any test that checks what Iceberg-Java reads use it, so there is one recipe.

The venv is found at $ICEFLOE_JAVA_VENV, else `.venv-java` in the source tree this
module belongs to (an editable install), else in the current directory.
"""
from __future__ import annotations

import atexit
import itertools
import json
import os
import select
import shutil
import subprocess
import tempfile
import threading
import time
from pathlib import Path

ICEBERG_VERSION = "1.10.2"
SPARK_VERSION = "3.5.9"
RUNTIME_JAR_NAME = f"iceberg-spark-runtime-3.5_2.12-{ICEBERG_VERSION}.jar"
VENV_ENV_VAR = "ICEFLOE_JAVA_VENV"
VENV_DIR_NAME = ".venv-java"
CATALOG_TYPES = ("rest", "hadoop", "jdbc")
EXTENSIONS = "org.apache.iceberg.spark.extensions.IcebergSparkSessionExtensions"
SPARK_CATALOG_CLASS = "org.apache.iceberg.spark.SparkCatalog"
LOCAL_IP = "127.0.0.1"
SCRIPT_TIMEOUT_S_DEFAULT = 300


class JavaEnvMissing(RuntimeError):
    """`.venv-java` (or java itself) is not there: run `make java-venv`."""


def venv() -> Path:
    """The java venv's directory (it may not exist yet; see `available()`)."""
    configured = os.environ.get(VENV_ENV_VAR)
    if configured:
        return Path(configured)
    source_tree = Path(__file__).resolve().parents[2]
    for root in (source_tree, Path.cwd()):
        if (root / VENV_DIR_NAME).is_dir():
            return root / VENV_DIR_NAME
    return source_tree / VENV_DIR_NAME


def python() -> Path:
    return venv() / "bin" / "python"


def runtime_jar() -> Path:
    return venv() / "jars" / RUNTIME_JAR_NAME


def missing() -> str | None:
    """Why the Java engine cannot run here, or None when it can."""
    if not python().exists():
        return f"no {python()} (run `make java-venv`)"
    if not runtime_jar().exists():
        return f"no {runtime_jar()} (run `make java-venv`)"
    if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
        return "no java on PATH (Java 17: `make system-deps`)"
    return None


def available() -> bool:
    return missing() is None


def require() -> None:
    why = missing()
    if why is not None:
        raise JavaEnvMissing(why)


def environment(base: dict | None = None) -> dict:
    """The environment for a process of the java venv: Spark binds loopback only, its Python
    workers are the venv's interpreter, and nothing of the main venv leaks in (PYTHONPATH,
    a PySpark 4 SPARK_HOME)."""
    env = dict(os.environ if base is None else base)
    for name in ("PYTHONPATH", "SPARK_HOME", "PYSPARK_DRIVER_PYTHON", "VIRTUAL_ENV"):
        env.pop(name, None)
    env.update({"SPARK_LOCAL_IP": LOCAL_IP, "PYSPARK_PYTHON": str(python()),
                "PYTHONUNBUFFERED": "1", "PYTHONDONTWRITEBYTECODE": "1"})
    return env


def spark_conf(catalog: str, catalog_type: str, *, uri: str | None = None, warehouse: str | None = None,
               properties: dict | None = None, cores: int = 2) -> dict:
    """Spark conf (key -> value) for a local Spark with Iceberg-Java's runtime and one
    Iceberg catalog named `catalog` of type rest (`uri` http://127.0.0.1:PORT), hadoop
    (`warehouse` a directory) or jdbc (`uri` jdbc:...). `properties` are further catalog
    properties (e.g. {"header.X-Writer": "1"}, {"token": "..."}); add more catalogs by
    merging two confs."""
    if catalog_type not in CATALOG_TYPES:
        raise ValueError(f"catalog_type must be one of {CATALOG_TYPES}, not {catalog_type!r}")
    if catalog_type in ("rest", "jdbc") and not uri:
        raise ValueError(f"a {catalog_type} catalog needs a uri")
    if catalog_type == "hadoop" and not warehouse:
        raise ValueError("a hadoop catalog needs a warehouse")
    prefix = f"spark.sql.catalog.{catalog}"
    conf = {
        "spark.master": f"local[{cores}]",
        "spark.jars": str(runtime_jar()),
        "spark.sql.extensions": EXTENSIONS,
        "spark.driver.host": LOCAL_IP,
        "spark.driver.bindAddress": LOCAL_IP,
        "spark.ui.enabled": "false",
        "spark.sql.shuffle.partitions": str(cores),
        "spark.sql.session.timeZone": "UTC",
        prefix: SPARK_CATALOG_CLASS,
        f"{prefix}.type": catalog_type,
    }
    if uri:
        conf[f"{prefix}.uri"] = uri
    if warehouse:
        conf[f"{prefix}.warehouse"] = warehouse
    for key, value in (properties or {}).items():
        conf[f"{prefix}.{key}"] = str(value)
    return conf


def run_script(script: str | Path, *args: str, timeout_s: float = SCRIPT_TIMEOUT_S_DEFAULT,
               cwd: str | Path | None = None) -> subprocess.CompletedProcess:
    """Run a Python script under the java venv (pyspark 3.5.9 importable), output captured.
    For one-off checks ("does Iceberg-Java read this table?"); a long-lived engine uses the
    worker instead, since each Spark start costs 10-17 s."""
    require()
    return subprocess.run([str(python()), str(script), *map(str, args)], env=environment(), cwd=cwd,
                          capture_output=True, text=True, timeout=timeout_s, check=False)


# -- the worker: one long-lived Spark, driven by JSON lines ------------------------------------

WORKER_SCRIPT = Path(__file__).resolve().parents[1] / "engines" / "java_worker.py"
WORKER_START_S_MAX = 180
WORKER_CALL_S_DEFAULT = 300
LOG_TAIL_CHARS = 4000


class JavaError(Exception):
    """What the worker answered for a failed request: the Java exception classes, outermost
    first down the cause chain (`classes`), and the message."""

    def __init__(self, classes: list, message: str, messages: list | None = None):
        super().__init__(f"{classes[0] if classes else '?'}: {message}")
        self.classes, self.message, self.messages = list(classes), message, list(messages or [message])

    def caused_by(self, simple_name: str) -> bool:
        """Whether an exception of this simple class name is in the chain."""
        return any(c.rsplit(".", 1)[-1] == simple_name for c in self.classes)


class WorkerDied(RuntimeError):
    """The worker process ended or did not answer in time (its log's tail is in the message)."""


class JavaWorker:
    """A PySpark 3.5.9 + Iceberg-Java process of the java venv (engines/java_worker.py), with
    the Spark conf given. `call(op, **fields)` sends one request and waits for its answer;
    calls from several threads run concurrently in the worker. Start costs 10-17 s of
    Spark: share one per test session. `close()` stops it (and the JVM)."""

    def __init__(self, conf: dict, log_path: str | Path | None = None):
        require()
        self._ids = itertools.count(1)
        self._pending: dict = {}
        self._lock = threading.Lock()
        self.log_path = Path(log_path) if log_path else Path(tempfile.mkstemp(prefix="icefloe-java-", suffix=".log")[1])
        self._log = open(self.log_path, "ab")
        self.proc = subprocess.Popen([str(python()), str(WORKER_SCRIPT), json.dumps(conf)], env=environment(),
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._log,
                                     text=True, bufsize=1)
        self.versions = self._read_ready()
        self._reader = threading.Thread(target=self._read_answers, name="java-worker-answers", daemon=True)
        self._reader.start()

    def _read_ready(self) -> dict:
        deadline = time.monotonic() + WORKER_START_S_MAX
        while time.monotonic() < deadline:
            ready, _, _ = select.select([self.proc.stdout], [], [], 1.0)
            if ready:
                line = self.proc.stdout.readline()
                if not line:
                    break
                message = json.loads(line)
                if message.get("ready"):
                    return message
            elif self.proc.poll() is not None:
                break
        self.close()
        raise WorkerDied(f"the Java worker did not start: {self.log_tail()}")

    def _read_answers(self) -> None:
        for line in self.proc.stdout:
            try:
                message = json.loads(line)
            except ValueError:
                continue
            with self._lock:
                slot = self._pending.get(message.get("id"))
            if slot is not None:
                slot["answer"] = message
                slot["event"].set()
        with self._lock:                       # the worker is gone: wake every caller
            for slot in self._pending.values():
                slot["event"].set()

    def log_tail(self) -> str:
        try:
            if not self._log.closed:           # close() (a failed start) has flushed it already
                self._log.flush()
            return self.log_path.read_text(errors="replace")[-LOG_TAIL_CHARS:]
        except OSError:
            return "(no log)"

    def call(self, op: str, timeout_s: float = WORKER_CALL_S_DEFAULT, **fields) -> list:
        rid = next(self._ids)
        slot = {"event": threading.Event()}
        with self._lock:
            self._pending[rid] = slot
        try:
            line = json.dumps({"id": rid, "op": op, **fields})
            try:
                with self._lock:
                    self.proc.stdin.write(line + "\n")
                    self.proc.stdin.flush()
            except (BrokenPipeError, ValueError) as e:
                raise WorkerDied(f"the Java worker is gone ({e}): {self.log_tail()}") from e
            if not slot["event"].wait(timeout_s) or "answer" not in slot:
                raise WorkerDied(f"no answer to {op} in {timeout_s:.0f} s (worker "
                                 f"{'running' if self.proc.poll() is None else 'ended'}): {self.log_tail()}")
        finally:
            with self._lock:
                self._pending.pop(rid, None)
        answer = slot["answer"]
        if not answer.get("ok"):
            error = answer.get("error") or {}
            raise JavaError(error.get("classes", []), error.get("message", ""), error.get("messages"))
        return answer.get("rows", [])

    def sql(self, statement: str, properties: dict | None = None, **kw) -> list:
        return self.call("sql", sql=statement, **({"properties": properties} if properties else {}), **kw)

    @property
    def alive(self) -> bool:
        return self.proc.poll() is None

    def close(self) -> None:
        if self.proc.poll() is None:
            try:
                with self._lock:
                    self.proc.stdin.write(json.dumps({"id": 0, "op": "stop"}) + "\n")
                    self.proc.stdin.flush()
                self.proc.wait(30)
            except (BrokenPipeError, ValueError, subprocess.TimeoutExpired):
                self.proc.kill()
                self.proc.wait(10)
        self._log.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


_shared = None
_shared_lock = threading.Lock()
# The shared worker's JVM: the C1 compiler only and the serial collector. A verdict's JVM runs
# thousands of small Spark jobs and Table API calls on 2 shared cores, where C2's compile
# threads and the parallel collector's threads cost more CPU than their code saves: on ci
# --shard 1/10 (54 programs, load 4.6) 94 -> 71 s wall and 63 -> 40 s of the JVM's CPU, the
# same verdict.json (docs/verdicts.md, "A Java verdict's time").
WORKER_JAVA_OPTIONS = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"


def shared_worker() -> JavaWorker:
    """The process's one worker (started on first use, 10-17 s; stopped at exit), with no
    catalog: add yours with `add_catalog`. The Java engine and the tests share it."""
    global _shared
    with _shared_lock:
        if _shared is None or not _shared.alive:
            require()
            base = {k: v for k, v in spark_conf("_", "hadoop", warehouse="file:///").items()
                    if not k.startswith("spark.sql.catalog._")}
            base["spark.driver.extraJavaOptions"] = WORKER_JAVA_OPTIONS
            _shared = JavaWorker(base)
            atexit.register(_shared.close)
        return _shared


def add_catalog(worker: JavaWorker, catalog: str, catalog_type: str, **kw) -> str:
    """Configure one more Iceberg catalog on a running worker (spark_conf's arguments)."""
    conf = spark_conf(catalog, catalog_type, **kw)
    worker.call("conf", values={k: v for k, v in conf.items() if k.startswith(f"spark.sql.catalog.{catalog}")})
    return catalog
