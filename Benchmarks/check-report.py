#!/usr/bin/env python3
"""Checks a `gatekeeper-bench --json` report read from standard input: well-formed JSON, every section
measured (none null: a section that cannot run is a rotted harness), and goals recorded. Prints a line."""
import json
import sys

report = json.load(sys.stdin)
missing = [key for key, value in report.items() if value is None]
goals = report.get("goals") or []
if missing or not goals:
    sys.exit(f"bench report: not measured: {', '.join(missing) or 'no goals recorded'}")
print(f"bench report: {len(report) - 1} sections measured, {len(goals)} goals, JSON well formed")
