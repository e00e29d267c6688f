#!/usr/bin/python3
"""Draws gatekeeperd against SSSD from a `gatekeeper-bench --json` report: logins a second and p99 latency
against clients at once, for both, over StartTLS and ldaps — the picture docs/fleet.md shows.

    sssd-chart.py REPORT.json OUTPUT.svg

Exits 1 when the report has no SSSD figures (the section was skipped: not root, sssd missing)."""
import json
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

if len(sys.argv) != 3:
    sys.exit("usage: sssd-chart.py REPORT.json OUTPUT.svg")
with open(sys.argv[1]) as source:
    report = json.load(source)
sssd = report.get("sssd")
transports = [name for name in ("StartTLS", "ldaps") if sssd and name in sssd]
if not transports:
    sys.exit("sssd-chart: the report has no SSSD figures")

# Deterministic output: no date or random ids in the SVG, so a chart of the same figures is the same file.
plt.rcParams["svg.hashsalt"] = "gatekeeper"
plt.rcParams["svg.fonttype"] = "none"
figure, (rate, tail) = plt.subplots(1, 2, figsize=(10, 4.2))
colours = {"gatekeeperd": "#1b6ac9", "sssd": "#d1495b"}
styles = {"StartTLS": "-", "ldaps": "--"}
for transport in transports:
    for side, label in (("gatekeeperd", "gatekeeperd"), ("sssd", "SSSD")):
        points = sssd[transport][side]
        clients = [point["clients"] for point in points]
        rate.plot(clients, [point["per_second"] for point in points], styles[transport], marker="o",
                  color=colours[side], label=f"{label}, {transport}")
        tail.plot(clients, [point["p99_ms"] for point in points], styles[transport], marker="o",
                  color=colours[side], label=f"{label}, {transport}")
for axes, title, unit in ((rate, "Logins a second (higher is better)", "logins/s"),
                          (tail, "p99 latency of a login (lower is better)", "ms")):
    axes.set_xscale("log", base=2)
    axes.set_xticks(clients)
    axes.set_xticklabels([str(count) for count in clients])
    axes.set_xlabel("clients at once (pam_start → pam_acct_mgmt → pam_end each)")
    axes.set_ylabel(unit)
    axes.set_title(title, fontsize=11)
    axes.set_ylim(bottom=0)
    axes.grid(True, alpha=0.3)
tail.legend(fontsize=8, loc="upper left")
tuning = sssd.get("sssd_tuning", "")
figure.suptitle(f"gatekeeperd + pam_gatekeeper.so against SSSD + pam_sss ({tuning}), one slapd, one host",
                fontsize=11)
figure.tight_layout()
figure.savefig(sys.argv[2], metadata={"Date": None})
print(f"sssd-chart: wrote {sys.argv[2]}")
