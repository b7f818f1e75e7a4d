"""A real PostgreSQL server for tests: the distribution's binaries, a private temp directory, a Unix socket.

The server listens on no TCP port at all (``listen_addresses=''``): clients reach it through a socket in the
server's own directory, which works inside the loopback-only network namespace the tests run in. ``initdb`` and
the server refuse to run as root, so as root they run as the ``postgres`` user the distribution's package
creates (``setpriv`` drops the privileges). The server is a child of the test process with a parent-death
signal: it cannot outlive the test run even when pytest itself is killed.

Durability is traded for speed (no fsync, no autovacuum): the data lives only as long as the test session.
"""

from __future__ import annotations

import contextlib
import os
import pwd
import re
import shutil
import signal
import subprocess
import tempfile
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from tests._support.processes import stop_process

__all__ = ["PostgresServer", "PostgresUnavailableError", "find_postgres_bin"]

SUPERUSER = "postgres"
PORT = 5432
"""Only names the socket file (``.s.PGSQL.5432``); each server has its own socket directory."""

_BIN_ENV = "CLAUDECODE_TEST_PG_BIN"
_DISTRIBUTION_ROOT = Path("/usr/lib/postgresql")
_START_TIMEOUT = 60.0
_STOP_TIMEOUT = 30.0


class PostgresUnavailableError(RuntimeError):
    """No PostgreSQL server binaries on this machine (``.ci/run`` installs them)."""


def find_postgres_bin() -> Path:
    """The directory holding ``initdb`` and ``postgres``: ``$CLAUDECODE_TEST_PG_BIN``, the newest version under
    ``/usr/lib/postgresql`` (Debian keeps them off ``PATH``), or ``pg_config --bindir``."""
    explicit = os.environ.get(_BIN_ENV)
    candidates: list[Path] = [Path(explicit)] if explicit else []
    if _DISTRIBUTION_ROOT.is_dir():
        versions = [path for path in _DISTRIBUTION_ROOT.iterdir() if re.fullmatch(r"\d+(\.\d+)?", path.name)]
        versions.sort(key=lambda path: tuple(int(part) for part in path.name.split(".")), reverse=True)
        candidates.extend(path / "bin" for path in versions)
    pg_config = shutil.which("pg_config")
    if pg_config is not None:
        bindir = subprocess.run([pg_config, "--bindir"], capture_output=True, text=True, check=False).stdout.strip()
        if bindir:
            candidates.append(Path(bindir))
    for candidate in candidates:
        if (candidate / "initdb").is_file() and (candidate / "postgres").is_file():
            return candidate
    raise PostgresUnavailableError(
        "PostgreSQL server binaries not found (looked in $CLAUDECODE_TEST_PG_BIN, /usr/lib/postgresql/*/bin and "
        "pg_config --bindir); install the distribution's package, e.g. `apt-get install postgresql`"
    )


@dataclass
class _Account:
    """Who the server runs as: the current user, or ``postgres`` when the tests run as root."""

    uid: int
    gid: int

    @classmethod
    def for_server(cls) -> _Account:
        if os.geteuid() != 0:
            return cls(os.getuid(), os.getgid())
        try:
            entry = pwd.getpwnam("postgres")
        except KeyError as error:
            raise PostgresUnavailableError(
                "running as root, but there is no `postgres` user to run the server as (the distribution's "
                "postgresql package creates it)"
            ) from error
        return cls(entry.pw_uid, entry.pw_gid)

    def command(self, argv: list[str]) -> list[str]:
        """``argv`` run as this account, killed when the process that started it dies."""
        prefix = ["setpriv", "--pdeathsig", "KILL"]
        if self.uid != os.getuid():
            prefix += [f"--reuid={self.uid}", f"--regid={self.gid}", "--clear-groups"]
        return [*prefix, *argv]

    def own(self, path: Path) -> None:
        if self.uid != os.getuid():
            os.chown(path, self.uid, self.gid)


@dataclass
class PostgresServer:
    """One PostgreSQL server in a temp directory; :meth:`start` it, then :meth:`stop` removes everything."""

    bin_dir: Path = field(default_factory=find_postgres_bin)
    root: Path | None = None
    _process: subprocess.Popen[bytes] | None = None

    @property
    def socket_dir(self) -> Path:
        assert self.root is not None, "the server is not started"
        return self.root / "socket"

    def dsn(self, dbname: str = "postgres") -> str:
        """A libpq connection URI for ``dbname`` (over the Unix socket, as the superuser, no password)."""
        return f"postgresql://{SUPERUSER}@/{dbname}?host={self.socket_dir}&port={PORT}"

    def sqlalchemy_url(self, dbname: str = "postgres") -> str:
        """The same database as a SQLAlchemy URL with the psycopg 3 driver (what DBOS takes)."""
        return f"postgresql+psycopg://{SUPERUSER}@/{dbname}?host={self.socket_dir}&port={PORT}"

    def start(self) -> None:
        account = _Account.for_server()
        self.root = Path(tempfile.mkdtemp(prefix="pg-"))
        os.chmod(self.root, 0o711)  # the server's account must traverse it; nobody may list it
        data = self.root / "data"
        for directory in (data, self.socket_dir):
            directory.mkdir(mode=0o700)
            account.own(directory)
        log = self.root / "server.log"
        try:
            subprocess.run(
                account.command(
                    [
                        str(self.bin_dir / "initdb"),
                        "-D",
                        str(data),
                        "-U",
                        SUPERUSER,
                        "--auth=trust",
                        "--encoding=UTF8",
                        "--no-locale",
                        "--no-sync",
                        "--no-instructions",
                    ]
                ),
                check=True,
                capture_output=True,
                cwd=self.root,
                timeout=_START_TIMEOUT,
            )
        except subprocess.CalledProcessError as error:
            self._remove_files()
            raise RuntimeError(f"initdb failed:\n{error.stdout.decode()}\n{error.stderr.decode()}") from error
        settings = {
            "listen_addresses": "",
            "unix_socket_directories": str(self.socket_dir),
            "port": str(PORT),
            "fsync": "off",
            "synchronous_commit": "off",
            "full_page_writes": "off",
            "autovacuum": "off",
            "max_logical_replication_workers": "0",
            "max_connections": "100",
            "log_min_messages": "warning",
        }
        argv = [str(self.bin_dir / "postgres"), "-D", str(data)]
        for name, value in settings.items():
            argv += ["-c", f"{name}={value}"]
        with open(log, "wb") as log_file:
            self._process = subprocess.Popen(
                account.command(argv), stdin=subprocess.DEVNULL, stdout=log_file, stderr=log_file, cwd=self.root
            )
        try:
            self._wait_until_ready(log)
        except BaseException:
            self.stop()
            raise

    def _wait_until_ready(self, log: Path) -> None:
        import psycopg

        deadline = time.monotonic() + _START_TIMEOUT
        last_error: Exception | None = None
        while time.monotonic() < deadline:
            assert self._process is not None
            if self._process.poll() is not None:
                raise RuntimeError(f"PostgreSQL exited with {self._process.returncode}:\n{log.read_text()}")
            if (self.socket_dir / f".s.PGSQL.{PORT}").exists():
                try:
                    with psycopg.connect(self.dsn(), connect_timeout=5) as connection:
                        connection.execute("SELECT 1")
                    return
                except psycopg.OperationalError as error:
                    last_error = error
            time.sleep(0.05)
        raise RuntimeError(f"PostgreSQL did not accept connections in {_START_TIMEOUT:g} s: {last_error}")

    def create_database(self, name: str | None = None) -> str:
        """Create an empty database and return its name."""
        import psycopg
        from psycopg import sql

        name = name or f"test_{uuid.uuid4().hex[:12]}"
        with psycopg.connect(self.dsn(), autocommit=True) as connection:
            connection.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
        return name

    def drop_database(self, name: str) -> None:
        """Drop a database, closing whatever connections are still open to it."""
        import psycopg
        from psycopg import sql

        with psycopg.connect(self.dsn(), autocommit=True) as connection:
            connection.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))

    def stop(self) -> None:
        """Shut the server down (fast mode: open sessions are ended) and remove its directory."""
        process, self._process = self._process, None
        stop_process(process, signal.SIGINT, _STOP_TIMEOUT)
        self._remove_files()

    def pause(self) -> None:
        """Freeze the server and all its processes (SIGSTOP): a database that hangs, as on a lost network."""
        self._signal_all(signal.SIGSTOP)

    def resume(self) -> None:
        """Let a paused server go on."""
        self._signal_all(signal.SIGCONT)

    def _signal_all(self, sig: signal.Signals) -> None:
        from tests._support.processes import live_descendants

        assert self._process is not None, "the server is not started"
        for pid in {self._process.pid, *live_descendants(self._process.pid)}:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, sig)

    def _remove_files(self) -> None:
        if self.root is not None:
            shutil.rmtree(self.root, ignore_errors=True)
            self.root = None

    def __enter__(self) -> PostgresServer:
        self.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()


@contextlib.contextmanager
def dbos_configured(server: PostgresServer, database: str, name: str) -> Iterator[str]:
    """DBOS configured (as app ``name``) on ``database`` of ``server``, destroyed after the block; its URL."""
    from dbos import DBOS

    url = server.sqlalchemy_url(database)
    DBOS(config={"name": name, "system_database_url": url, "application_version": "test"})
    try:
        yield url
    finally:
        DBOS.destroy(destroy_registry=True)
