#!/usr/bin/env python3
"""Runs drivers' and ORMs' own test suites against a PostgreSQL-compatible server, as
CockroachDB runs them against itself, and compares the outcome with the list of tests
known to fail on pmdb (`<suite>-failures.txt` beside this script).

    driver_suites.py sqlalchemy --pmdb target/debug/pmdb      # a fresh pmdb serve
    driver_suites.py sqlalchemy --dburi postgresql+psycopg://u:p@host:5432/db
    driver_suites.py sqlalchemy --pmdb … --update             # rewrite the list

The suite's source is the pinned release from PyPI, downloaded once into
~/.cache/pmdb-compat and checked against its SHA-256; its own library is imported from
there, so the installed version does not matter. Needs pytest and psycopg 3.

Exit status: 0 when every test that fails is in the list (tests in the list that now
pass are reported, and --update drops them); 1 when a test fails that is not in the
list (a regression); 2 when the suite cannot run; 3 when the installed driver is not
the one the list was recorded with (its outcomes may differ: nothing is compared).
"""

import argparse
import hashlib
import os
import shutil
import socket
import subprocess
import sys
import tarfile
import tempfile
import time
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
    },
}

# Loaded into the suite's pytest: pmdb has no extensions (CREATE EXTENSION is refused),
# which SQLAlchemy's PostgreSQL provisioning creates before the first test.
PLUGIN = '''
from sqlalchemy.dialects.postgresql import provision

provision._extensions.clear()
'''


def fetch(suite):
    spec = SUITES[suite]
    root = CACHE / spec["dir"]
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
        t.extractall(CACHE, filter="data")
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


def run_suite(suite, dburi, root, report):
    plugin_dir = Path(tempfile.mkdtemp())
    (plugin_dir / "pmdb_suite_plugin.py").write_text(PLUGIN)
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(plugin_dir), str(root / "lib")])
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    # Some tests pick from a set (an isolation level other than the default): the same
    # pick at every run.
    env["PYTHONHASHSEED"] = "0"
    cmd = [
        sys.executable, "-m", "pytest", *SUITES[suite]["tests"],
        "-p", "pmdb_suite_plugin", "-p", "no:cacheprovider",
        "--dburi", dburi, "-q", "--tb=no", "--maxfail=100000",
        f"--junitxml={report}",
    ]
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
    where.add_argument("--dburi", help="a server to run against (PostgreSQL, say)")
    p.add_argument("--update", action="store_true", help="rewrite the failure list")
    args = p.parse_args()

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
            dburi = f"postgresql+psycopg://pmdb:pmdb@127.0.0.1:{port}/pmdb"
        report = work / "report.xml"
        run_suite(args.suite, dburi, root, report)
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
    failing = sorted(k for k, v in got.items() if v == "failed")
    driver = f"# driver: psycopg {version('psycopg')}"
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
