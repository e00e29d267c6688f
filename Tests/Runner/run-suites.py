#!/usr/bin/env python3
"""Runs the package's tests: each suite in a process of its own, several at once.

    Tests/Runner/run-suites.py [--jobs N] [--binary PATH] [REGEX...]

The suites wait far more than they compute (fail delays, time-outs, servers starting), so `make test` runs
them side by side: N processes at once (default 4, or GATEKEEPER_TEST_JOBS), the longest expected first.
Inside each process the suite's tests run one after another (`--no-parallel`), as they were written to:
a suite never shares its process, its cooperative threads or its time-outs with another.

As root, each process runs under private-host.sh: in a mount namespace where the host's /etc, /var, /usr,
/run, /tmp and the rest are overlays, so two suites that add the same account or write the same PAM file
never meet, nothing reaches the host's own files, and what a suite leaves behind fails it.

A suite's expected time is its time in the last run (.build/test-durations.txt), else in
Tests/Runner/durations.txt; the order only decides how soon the run ends, never what it checks. REGEX
arguments run only the suites whose names (Module.Suite) match one of them.
"""

import argparse
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
PRIVATE_HOST = os.path.join(HERE, "private-host.sh")
COMMITTED_DURATIONS = os.path.join(HERE, "durations.txt")
LAST_DURATIONS = os.path.join(ROOT, ".build", "test-durations.txt")
LOGS = os.path.join(ROOT, ".build", "test-logs")
# A suite that has not finished after this long is stopped and fails (each suite's own time limits are
# shorter; this catches a process that hangs outside any test).
TASK_LIMIT = 20 * 60
# Suites expected to take less than this share a process with others, up to this much in all.
SMALL = 3.0
# Suites expected to take longer than this run each test in a process of its own.
SPLIT = 90.0

SUITE_DONE = re.compile(r'Suite "?(.+?)"? (passed|failed) after ([0-9.]+) seconds')
# Swift Testing's own lines begin with a symbol and a space; a test's output that says the same is no summary.
RUN_DONE = re.compile(r"^\S+ Test run with (\d+) tests? in (\d+) suites? (passed|failed)", re.M)
SKIPPED = re.compile(r"^\S+ (?:Test|Suite) (.+?) skipped", re.M)


def read_durations(path):
    durations = {}
    try:
        with open(path, encoding="utf-8") as file:
            for line in file:
                seconds, _, suite = line.strip().partition(" ")
                if suite and not seconds.startswith("#"):
                    durations[suite] = float(seconds)
    except (OSError, ValueError):
        pass
    return durations


def list_suites(binary):
    listed = subprocess.run(
        [binary, "--testing-library", "swift-testing", "--list-tests"],
        cwd=ROOT, capture_output=True, text=True, check=True)
    suites = {}
    for line in listed.stdout.splitlines():
        if "/" in line:
            suite, test = line.split("/", 1)
            suites.setdefault(suite, []).append(test)
    if not suites:
        sys.exit("run-suites.py: the test binary lists no tests")
    return suites


def plan(suites, expected):
    """Tasks of one suite each, small suites gathered, long suites' tests each a task of its own, the longest
    expected first. A task is a list of filters: a suite's name, or a suite's name and a test's."""
    big = []
    for suite, tests in suites.items():
        if expected(suite) >= SPLIT and len(tests) > 1:
            big += [[f"{suite}/{test}"] for test in tests]
        elif expected(suite) >= SMALL:
            big.append([suite])
    small = sorted((suite for suite in suites if expected(suite) < SMALL), key=expected, reverse=True)
    gathered, current, total = [], [], 0.0
    for suite in small:
        if current and total + expected(suite) > SMALL:
            gathered.append(current)
            current, total = [], 0.0
        current.append(suite)
        total += expected(suite)
    if current:
        gathered.append(current)
    return big + gathered


def task_expected(expected):
    """A task's expected time: its suites'. A test of a split suite is taken as long as its whole suite (its
    time is not known, and one test may be most of it): those tests start first."""
    def seconds(task):
        return sum(expected(f.split("/")[0]) for f in task)
    return seconds


class Run:
    def __init__(self, binary, scratch, jobs):
        self.binary, self.scratch, self.jobs = binary, scratch, jobs
        self.lock = threading.Lock()
        self.durations, self.failed, self.tests, self.finished, self.skipped = {}, [], 0, 0, []

    def command(self, task):
        # A suite's name matches its tests' IDs (Module.Suite/test()/File.swift:12:6); a test's name, its own.
        filters = [argument for name in task
                   for argument in ("--filter", "^" + re.escape(name) + ("(/|$)" if "/" in name else "/"))]
        test = [self.binary, "--testing-library", "swift-testing", "--no-parallel"] + filters
        return ([PRIVATE_HOST] if os.getuid() == 0 else []) + test

    def perform(self, task, tasks):
        name = task[0] if len(task) == 1 else f"{task[0]} and {len(task) - 1} more"
        log_path = os.path.join(LOGS, re.sub(r"[^A-Za-z0-9._-]", "", task[0].replace("/", ".")) + ".log")
        directory = tempfile.mkdtemp(prefix="suite.", dir=self.scratch)
        os.chmod(directory, 0o1777)
        environment = dict(os.environ, TMPDIR=directory, NO_COLOR="1", GATEKEEPER_WATCH_TMPDIR="1")
        started = time.monotonic()
        with open(log_path, "w+", encoding="utf-8", errors="replace") as log:
            process = subprocess.Popen(
                self.command(task), cwd=ROOT, env=environment, stdin=subprocess.DEVNULL, stdout=log,
                stderr=subprocess.STDOUT, start_new_session=True)
            try:
                status = process.wait(timeout=TASK_LIMIT)
                problem = None if status == 0 else f"exit status {status}"
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()
                problem = f"still running after {TASK_LIMIT} s, stopped"
            log.seek(0)
            output = log.read()
        left = os.listdir(directory)
        shutil.rmtree(directory, ignore_errors=True)
        if left:
            problem = problem or f"left {', '.join(sorted(left))} in its TMPDIR"
        for match in SUITE_DONE.finditer(output):
            suite = next((s for s in task if s.split("/")[0].rsplit(".", 1)[-1] == match.group(1)), None)
            # A suite split into tests keeps the time it had: each of its processes pays its own start.
            if suite and "/" not in suite:
                with self.lock:
                    self.durations[suite] = float(match.group(3))
        runs = RUN_DONE.findall(output)
        run = runs[-1] if runs else None
        if problem is None and (run is None or run[2] != "passed"):
            problem = "the test run did not finish" if run is None else "failed"
        skipped = SKIPPED.findall(output)
        with self.lock:
            self.finished += 1
            seconds = time.monotonic() - started
            if run:
                self.tests += int(run[0])
            self.skipped += skipped
            if problem:
                self.failed.append(name)
                print(f"\n{'=' * 30} {name}: {problem} {'=' * 30}\n{output}", flush=True)
            print(f"[{self.finished}/{tasks}] {'FAILED' if problem else 'ok'} {name} "
                  f"({seconds:.1f} s, log {os.path.relpath(log_path, ROOT)})", flush=True)

    def xctest(self):
        """XCTest's cases, if any ever appear: run as the suites are (in a private copy of the host, as root),
        never skipped unseen. Answers how many ran."""
        prefix = [PRIVATE_HOST] if os.getuid() == 0 else []
        result = subprocess.run(prefix + [self.binary], cwd=ROOT, capture_output=True, text=True,
                                env=dict(os.environ, TMPDIR=self.scratch))
        executed = re.search(r"Executed (\d+) tests?, with (\d+) failures?", result.stdout + result.stderr)
        if result.returncode != 0 or executed is None:
            self.failed.append("XCTest")
            print(result.stdout + result.stderr, flush=True)
            return 0
        return int(executed.group(1))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--jobs", type=int, default=int(os.environ.get("GATEKEEPER_TEST_JOBS", "4")))
    parser.add_argument("--binary", default=os.path.join(ROOT, ".build/debug/swift-gatekeeperPackageTests.xctest"))
    parser.add_argument("patterns", nargs="*", metavar="REGEX")
    arguments = parser.parse_args()
    if arguments.jobs < 1:
        parser.error("--jobs must be 1 or more")

    suites = list_suites(arguments.binary)
    if arguments.patterns:
        suites = {s: t for s, t in suites.items() if any(re.search(p, s) for p in arguments.patterns)}
        if not suites:
            sys.exit("run-suites.py: no suite matches " + " ".join(arguments.patterns))
    known = read_durations(COMMITTED_DURATIONS)
    known.update(read_durations(LAST_DURATIONS))
    expected = lambda suite: known.get(suite, 1.0)
    tasks = sorted(plan(suites, expected), key=task_expected(expected), reverse=True)

    os.makedirs(LOGS, exist_ok=True)
    scratch = tempfile.mkdtemp(prefix="gatekeeper-tests.", dir=os.environ.get("TMPDIR"))
    os.chmod(scratch, 0o1777)
    started = time.monotonic()
    run = Run(arguments.binary, scratch, arguments.jobs)
    print(f"{len(suites)} suites in {len(tasks)} processes, {arguments.jobs} at once"
          + (" (each in a private copy of the host: Tests/Runner/private-host.sh)" if os.getuid() == 0 else ""),
          flush=True)
    try:
        xctests = run.xctest()
        with ThreadPoolExecutor(max_workers=arguments.jobs) as pool:
            for task in tasks:
                pool.submit(run.perform, task, len(tasks))
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    if not arguments.patterns:
        known.update(run.durations)
        with open(LAST_DURATIONS, "w", encoding="utf-8") as file:
            for suite in sorted(known, key=lambda s: -known[s]):
                if suite in suites:
                    file.write(f"{known[suite]:.1f} {suite}\n")
    elapsed = time.monotonic() - started
    listed = sum(map(len, suites.values()))
    if not run.failed and run.tests != listed:
        run.failed.append(f"the processes ran {run.tests} tests of the {listed} listed")
    # A test skipped is a test that did not run. As root, with the peers make test installs, none is; without
    # root, those that need it are, and the summary says how many.
    if run.skipped:
        print(f"\n{len(run.skipped)} skipped: " + ", ".join(sorted(set(run.skipped))), flush=True)
        if os.getuid() == 0:
            run.failed.append(f"{len(run.skipped)} tests skipped as root")
    if run.failed:
        print(f"\n{len(run.failed)} of {len(tasks)} processes failed after {elapsed:.0f} s: "
              + ", ".join(run.failed), flush=True)
        return 1
    print(f"\n{run.tests} tests in {len(suites)} suites passed after {elapsed:.0f} s ({arguments.jobs} at once)"
          + (f", and {xctests} XCTest cases" if xctests else "")
          + (f"; {len(run.skipped)} skipped" if run.skipped else ""), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
