#!/usr/bin/env python3
"""Runs drivers' and ORMs' own test suites against a PostgreSQL-compatible server, as
CockroachDB runs them against itself, and compares the outcome with the list of tests
known to fail on pmdb (`<suite>-failures.txt` beside this script).

    driver_suites.py sqlalchemy --pmdb target/debug/pmdb      # a fresh pmdb serve
    driver_suites.py asyncpg --dburi postgresql://u:p@host:5432/postgres
    driver_suites.py sqlalchemy --pmdb … --update             # rewrite the list
    driver_suites.py sqlalchemy --pmdb … --share 4            # a quarter: CI's fast run

The suites: SQLAlchemy's dialect compliance suite (through psycopg 3; its own library
is imported from its source, so the installed SQLAlchemy does not matter) and asyncpg's
test suite (run against the installed asyncpg, whose version the list names, with the
modules its tests import: distro). Each
suite's source is the pinned release from PyPI, downloaded once into ~/.cache/pmdb-compat
and checked against its SHA-256. Needs pytest, and psycopg 3 or asyncpg.

Exit status: 0 when every test that fails is in the list (tests in the list that now
pass are reported, and --update drops them); 1 when a test fails that is not in the
list (a regression); 2 when the suite cannot run; 3 when the installed driver is not
the one the list was recorded with (its outcomes may differ: nothing is compared).
"""

import argparse
import hashlib
import importlib.util
import os
import shutil
import socket
import subprocess
import sys
import tarfile
import tempfile
import time
import urllib.parse
import urllib.request
import xml.etree.ElementTree as ET
from importlib.metadata import version
from pathlib import Path

HERE = Path(__file__).resolve().parent
CACHE = Path(os.environ.get("PMDB_COMPAT_CACHE", Path.home() / ".cache" / "pmdb-compat"))

SUITES = {
    "sqlalchemy": {
        "url": "https://files.pythonhosted.org/packages/3f/69/"
        "b87a540f6888ebc1f63a6e6138e8dc0827331a9be7c5eb15e3bd40a76281/"
        "sqlalchemy-2.1.9.tar.gz",
        "sha256": "d700a8b2edfb26282a470333d6bc4a454c4acda4d201a3bea7b72fa76c217d28",
        "dir": "sqlalchemy-2.1.9",
        # The dialect compliance suite: what every third-party dialect runs.
        "tests": ["test/dialect/test_suite.py"],
        "driver": "psycopg",
        # The schemas its README asks the test database to have.
        "setup": ["CREATE SCHEMA IF NOT EXISTS test_schema",
                  "CREATE SCHEMA IF NOT EXISTS test_schema_2"],
    },
    "asyncpg": {
        "url": "https://files.pythonhosted.org/packages/80/4e/"
        "59dc964f962f09e3ed472e5d2d3ba670a41a2be25080dc62ab3db507ff5e/"
        "asyncpg-0.32.0.tar.gz",
        "sha256": "45e64e56714d888330b884aad1dfb363d0bf43fb343e3d1a8968525f3bade478",
        "dir": "asyncpg-0.32.0",
        # Only the tests: beside the source they would import the uncompiled package.
        "only": "tests",
        # TestConnectionAttributes starts servers of its own (a primary and a standby).
        "tests": ["tests", "-k", "not TestConnectionAttributes"],
        "driver": "asyncpg",
        # Modules its tests import beside the driver (its release's test extras).
        "needs": ["distro"],
        # Outcomes that vary from run to run: never a regression, never listed.
        "flaky": [
            # A pool closed while its background connect is under way.
            "tests.test_pool.TestPool::test_pool_config_persistence",
            # Cursors over pg_sleep cancelled by client-side timeouts: a race with the
            # cancel requests.
            "tests.test_timeout.TestTimeout::test_timeout_06",
            # Depends on the tests before it (on PostgreSQL too).
            "tests.test_execute.TestExecuteMany::test_executemany_server_failure_during_writes",
            # A close 0.2 s into pg_sleep: on a loaded machine the close may come first.
            "tests.test_execute.TestExecuteScript::test_execute_script_interrupted_close",
        ],
    },
}

# Loaded into every suite's pytest: with PMDB_SUITE_SHARE=N, only the test classes whose
# name hashes to 0 modulo N run. Whole classes, because their tables are made once per
# class; a stable hash (CRC-32, not Python's salted one), so every run picks the same.
SHARE_PLUGIN = '''
import os
import zlib


def pytest_collection_modifyitems(config, items):
    share = int(os.environ.get("PMDB_SUITE_SHARE", "1"))
    if share <= 1:
        return
    kept, dropped = [], []
    for item in items:
        owner = item.nodeid.rpartition("::")[0]
        (kept if zlib.crc32(owner.encode()) % share == 0 else dropped).append(item)
    config.hook.pytest_deselected(items=dropped)
    items[:] = kept
'''

# Loaded besides into SQLAlchemy's: pmdb has no extensions (CREATE EXTENSION is refused),
# which SQLAlchemy's PostgreSQL provisioning creates before the first test.
SQLALCHEMY_PLUGIN = '''
from sqlalchemy.dialects.postgresql import provision

provision._extensions.clear()
'''


def fetch(suite):
    """The suite's directory: the release unpacked, or with "only", that part of it."""
    spec = SUITES[suite]
    root = CACHE / (spec["dir"] + ("-" + spec["only"] if "only" in spec else ""))
    if root.exists():
        return root
    CACHE.mkdir(parents=True, exist_ok=True)
    archive = CACHE / Path(spec["url"]).name
    if not archive.exists():
        with urllib.request.urlopen(spec["url"], timeout=120) as r:
            data = r.read()
        digest = hashlib.sha256(data).hexdigest()
        if digest != spec["sha256"]:
            raise RuntimeError(f"{archive.name}: SHA-256 {digest}, expected {spec['sha256']}")
        archive.write_bytes(data)
    with tarfile.open(archive) as t:
        if "only" not in spec:
            t.extractall(CACHE, filter="data")
            return root
        part = f"{spec['dir']}/{spec['only']}/"
        unpacked = Path(tempfile.mkdtemp(dir=CACHE))
        t.extractall(unpacked, members=[m for m in t.getmembers() if m.name.startswith(part)],
                     filter="data")
        root.mkdir()
        (unpacked / part).rename(root / spec["only"])
        shutil.rmtree(unpacked)
    return root


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_pmdb(binary, data_dir):
    port = free_port()
    server = subprocess.Popen(
        [binary, "serve", "--path", str(data_dir), "--listen", f"127.0.0.1:{port}"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    for _ in range(300):
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return server, port
        except OSError:
            if server.poll() is not None:
                raise RuntimeError(f"pmdb serve exited with {server.returncode}")
            time.sleep(0.1)
    server.kill()
    raise RuntimeError("pmdb serve did not start listening")


def prepare(suite, dburi):
    """Runs the statements the suite expects its database to have run (through
    psycopg, which the SQLAlchemy suite runs on)."""
    statements = SUITES[suite].get("setup", [])
    if not statements:
        return
    import psycopg

    with psycopg.connect(dburi, autocommit=True) as conn:
        for statement in statements:
            conn.execute(statement)


def run_suite(suite, dburi, root, report, share):
    plugin_dir = Path(tempfile.mkdtemp())
    env = dict(os.environ)
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    env["PMDB_SUITE_SHARE"] = str(share)
    # Some tests pick from a set (an isolation level other than the default): the same
    # pick at every run.
    env["PYTHONHASHSEED"] = "0"
    url = urllib.parse.urlsplit(dburi)
    args = ["-p", "no:cacheprovider", "-p", "no:randomly", "-q", "--tb=no",
            "--maxfail=100000", f"--junitxml={report}", "-p", "pmdb_suite_plugin"]
    plugin = SHARE_PLUGIN
    paths = [str(plugin_dir)]
    if suite == "sqlalchemy":
        plugin += SQLALCHEMY_PLUGIN
        paths.append(str(root / "lib"))
        sa_uri = url._replace(scheme="postgresql+psycopg").geturl()
        args += ["--dburi", sa_uri]
    else:
        # With PGHOST set, asyncpg's test base uses the running server, not one of its
        # own; pools in the suite name the database postgres.
        env.update(PGHOST=url.hostname, PGPORT=str(url.port or 5432),
                   PGUSER=url.username or "", PGPASSWORD=url.password or "",
                   PGDATABASE=url.path.lstrip("/") or "postgres")
    (plugin_dir / "pmdb_suite_plugin.py").write_text(plugin)
    env["PYTHONPATH"] = os.pathsep.join(paths)
    cmd = [sys.executable, "-m", "pytest", *SUITES[suite]["tests"], *args]
    try:
        subprocess.run(cmd, cwd=root, env=env, stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL, timeout=1800)
    finally:
        shutil.rmtree(plugin_dir, ignore_errors=True)


def outcomes(report):
    """Each test's id and outcome: passed, failed (an error in its setup included) or
    skipped."""
    result = {}
    for case in ET.parse(report).getroot().iter("testcase"):
        name = f"{case.get('classname')}::{case.get('name')}"
        if case.find("skipped") is not None:
            outcome = "skipped"
        elif case.find("failure") is not None or case.find("error") is not None:
            outcome = "failed"
        else:
            outcome = "passed"
        # A test that fails in its teardown counts as failed.
        if result.get(name) != "failed":
            result[name] = outcome
    return result


def normalised(name):
    """A test id without the server's version, which the suite puts in class names."""
    head, _, tail = name.partition("::")
    parts = head.split("_")
    while parts and parts[-1].isdigit():
        parts.pop()
    return "_".join(parts) + "::" + tail


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("suite", choices=sorted(SUITES))
    where = p.add_mutually_exclusive_group(required=True)
    where.add_argument("--pmdb", help="pmdb binary: runs a fresh `pmdb serve`")
    where.add_argument("--dburi", help="a server to run against (PostgreSQL, say), as "
                       "postgresql://user:password@host:port/database")
    p.add_argument("--update", action="store_true", help="rewrite the failure list")
    p.add_argument("--share", type=int, default=1, metavar="N",
                   help="run about 1/N of the test classes, the same ones at every run")
    args = p.parse_args()
    if args.share < 1 or (args.update and args.share > 1):
        p.error("--share takes N >= 1, and --update needs the whole suite (no --share)")

    needs = SUITES[args.suite].get("needs", [])
    missing = [m for m in needs if importlib.util.find_spec(m) is None]
    if missing:
        print(f"the {args.suite} suite needs the Python modules {', '.join(missing)}",
              file=sys.stderr)
        return 2
    try:
        root = fetch(args.suite)
    except Exception as e:  # noqa: BLE001 - any download problem means: cannot run
        print(f"cannot fetch the {args.suite} suite: {e}", file=sys.stderr)
        return 2
    work = Path(tempfile.mkdtemp())
    server = None
    try:
        dburi = args.dburi
        if args.pmdb:
            server, port = start_pmdb(args.pmdb, work / "db")
            database = "postgres" if args.suite == "asyncpg" else "pmdb"
            dburi = f"postgresql://pmdb:pmdb@127.0.0.1:{port}/{database}"
        report = work / "report.xml"
        prepare(args.suite, dburi)
        run_suite(args.suite, dburi, root, report, args.share)
        if not report.exists():
            print("the suite wrote no report", file=sys.stderr)
            return 2
        got = {normalised(k): v for k, v in outcomes(report).items()}
    finally:
        if server:
            server.kill()
            server.wait()
        shutil.rmtree(work, ignore_errors=True)

    counts = {o: sum(1 for v in got.values() if v == o) for o in ("passed", "failed", "skipped")}
    print(f"{args.suite}: {counts['passed']} passed, {counts['failed']} failed, "
          f"{counts['skipped']} skipped")
    if args.dburi and not args.update:
        return 0
    listed_path = HERE / f"{args.suite}-failures.txt"
    flaky = set(SUITES[args.suite].get("flaky", []))
    failing = sorted(k for k, v in got.items() if v == "failed" and k not in flaky)
    driver_name = SUITES[args.suite]["driver"]
    driver = f"# driver: {driver_name} {version(driver_name)}"
    if args.update:
        listed_path.write_text(
            f"# Tests of the {args.suite} suite that fail on pmdb "
            "(scripts/compat/driver_suites.py --update rewrites this list).\n"
            f"{driver}\n" + "".join(f"{t}\n" for t in failing)
        )
        print(f"{listed_path.name}: {len(failing)} tests")
        return 0
    lines = listed_path.read_text().splitlines()
    if driver not in lines:
        recorded = next((line for line in lines if line.startswith("# driver:")), "?")
        print(f"the list was recorded with {recorded[2:]}, this is {driver[2:]}: not compared")
        return 3
    listed = {line.strip() for line in lines if line.strip() and not line.startswith("#")}
    regressed = [t for t in failing if t not in listed]
    fixed = sorted(t for t in listed if got.get(t) == "passed")
    for t in fixed:
        print(f"now passes: {t}")
    for t in regressed:
        print(f"REGRESSION: {t}")
    print(f"{len(regressed)} regressions, {len(fixed)} listed tests now pass")
    return 1 if regressed else 0


if __name__ == "__main__":
    sys.exit(main())
