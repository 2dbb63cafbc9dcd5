""".ci/run installs what it needs of the machine when it is missing (with apt-get)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PREREQUISITES = ROOT / ".ci" / "prerequisites"


def run_with(
    tmp_path: Path, *present: str, pg_lib: Path | None = None, pg_config: Path | None = None
) -> tuple[int, list[str]]:
    """Run the prerequisites step on a PATH holding only ``present`` and a recording apt-get.

    ``pg_lib`` stands for ``/usr/lib/postgresql`` (an empty directory unless given).
    """
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    log = tmp_path / "apt.log"
    fake = bin_dir / "apt-get"
    fake.write_text(f'#!/bin/sh\necho "$@" >> {log}\n')
    fake.chmod(0o755)
    (bin_dir / "python3").symlink_to(sys.executable)
    for name in present:
        tool = bin_dir / name
        tool.write_text("#!/bin/sh\n")
        tool.chmod(0o755)
    if pg_config is not None:
        tool = bin_dir / "pg_config"
        tool.write_text(f"#!/bin/sh\necho {pg_config}\n")
        tool.chmod(0o755)
    bash = shutil.which("bash")
    assert bash is not None
    if pg_lib is None:
        pg_lib = tmp_path / "no-postgresql"
        pg_lib.mkdir()
    env = {**os.environ, "PATH": str(bin_dir), "PG_LIB": str(pg_lib)}
    done = subprocess.run([bash, str(PREREQUISITES)], env=env, capture_output=True, text=True)
    return done.returncode, log.read_text().splitlines() if log.exists() else []


@pytest.mark.skipif(shutil.which("bash") is None, reason="the CI script is bash")
class TestPrerequisites:
    def test_run_calls_the_step(self) -> None:
        assert ".ci/prerequisites" in (ROOT / ".ci" / "run").read_text(encoding="utf-8")

    def test_run_runs_every_opt_in_group(self) -> None:
        """Each mark the default run skips has a session, and CI runs that session."""
        script = (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()
        assert "nox" in script
        for session in ("slow", "reliability"):
            assert f"nox -s {session}" in script

    def test_installs_the_compiler_redis_and_postgres_when_missing(self, tmp_path: Path) -> None:
        code, calls = run_with(tmp_path)
        assert code == 0
        assert calls[0] == "update -qq"
        assert calls[1].split()[-3:] == ["build-essential", "redis-server", "postgresql"]

    def test_installs_nothing_when_all_is_there(self, tmp_path: Path) -> None:
        """PostgreSQL found where Debian's package puts it, off the PATH."""
        pg_lib = tmp_path / "postgresql"
        initdb = pg_lib / "15" / "bin" / "initdb"
        initdb.parent.mkdir(parents=True)
        initdb.write_text("#!/bin/sh\n")
        initdb.chmod(0o755)
        code, calls = run_with(tmp_path, "cc", "c++", "redis-server", pg_lib=pg_lib)
        assert (code, calls) == (0, [])

    def test_postgres_found_through_pg_config(self, tmp_path: Path) -> None:
        """pg_config --bindir names where initdb is (another layout than Debian's)."""
        pg_bin = tmp_path / "pg" / "bin"
        pg_bin.mkdir(parents=True)
        (pg_bin / "initdb").write_text("#!/bin/sh\n")
        (pg_bin / "initdb").chmod(0o755)
        code, calls = run_with(tmp_path, "cc", "c++", "redis-server", pg_config=pg_bin)
        assert (code, calls) == (0, [])

    def test_the_tests_find_the_binaries_the_same_way(self) -> None:
        """tests/_postgres.py looks where this step does: pg_config, then Debian's layout."""
        helper = (ROOT / "tests" / "_postgres.py").read_text(encoding="utf-8")
        assert '"pg_config"' in helper and "/usr/lib/postgresql/*/bin" in helper
