# SPDX-License-Identifier: GPL-2.0-or-later
"""scripts/tempest bench: benchmarks, as ratios to a reference measured in
the same run (these machines are noisy; absolute times are printed but
never asserted).

  boot   boot-to-exit of the hello example: one QEMU started directly (the
         reference), then 1, 4 and 8 nodes through the launcher.
  am     active messages between two nodes (guest/bench/am_bench.c): round
         trip of an empty and of a TPPI_MAX_AM_BYTES message, and the time
         per message of a one-way stream, with the protocol thread on its
         own vCPU (--smp 2) and interrupt-driven (--smp 1); the reference
         is the same measured between two host processes over a
         Unix-domain socket pair (guest/bench/uds_bench.c), in the same
         run.
"""

import json
import os
import re
import statistics
import subprocess
import time

from . import build, cluster
from .common import QEMU_BIN, ROOT, StepError, say


def _median_time(fn, repeat):
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times), min(times), max(times)


def bench_boot(repeat):
    hello = build.guest_program("examples/hello/hello.elf")
    runs = os.path.join(ROOT, "build", "bench-runs")

    def direct():
        r = subprocess.run(cluster.node_command(0, 1, hello, []),
                           stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL,
                           stdin=subprocess.DEVNULL)
        if r.returncode != 0:
            raise StepError(f"bench: hello exited {r.returncode}")

    def launcher(n):
        def go():
            res = cluster.run_cluster(hello, n, smp=1, echo=False,
                                      run_dir=os.path.join(runs, f"boot-{n}"))
            if res.status != 0:
                raise StepError(f"bench: {res.summary}")
        return go

    ref = _median_time(direct, repeat)
    rows = [("qemu direct, 1 node (reference)", ref, 1.0)]
    for n in (1, 4, 8):
        m = _median_time(launcher(n), repeat)
        rows.append((f"launcher, {n} node{'s' if n > 1 else ''}", m,
                     m[0] / ref[0]))
    return rows


AM_ROUNDS = 2000
AM_STREAM = 100000
AM_METRICS = [("rtt_empty_ns", "round trip, empty message"),
              ("rtt_full_ns", "round trip, 4096-byte message"),
              ("oneway_ns", "one-way stream, per message")]


def _parse_bench(text, prefix):
    m = re.search(prefix + r": (.*)$", text, re.M)
    if not m:
        raise StepError(f"bench: no '{prefix}:' line in:\n{text[-2000:]}")
    return {k: int(v) for k, v in re.findall(r"(\w+)=(\d+)", m.group(1))}


def _medians(samples):
    out = {}
    for key, _ in AM_METRICS:
        vals = [s[key] / 1e9 for s in samples]
        out[key] = (statistics.median(vals), min(vals), max(vals))
    return out


def bench_am(repeat):
    elf = build.guest_program("bench/am_bench.elf")
    uds = os.path.join(os.path.dirname(elf), "uds_bench")
    runs = os.path.join(ROOT, "build", "bench-runs")
    if not os.path.exists(uds):
        raise StepError(f"bench: {uds} is not built")
    args = [str(AM_ROUNDS), str(AM_STREAM)]

    def host():
        r = subprocess.run([uds] + args, capture_output=True, text=True,
                           timeout=120)
        if r.returncode != 0:
            raise StepError(f"bench: uds_bench exited {r.returncode}")
        return _parse_bench(r.stdout, "uds_bench")

    def guest(smp):
        res = cluster.run_cluster(elf, 2, args, smp=smp, echo=False,
                                  run_dir=os.path.join(runs, f"am-smp{smp}"))
        if res.status != 0:
            raise StepError(f"bench: {res.summary}")
        return _parse_bench(res.log(0), "am_bench")

    ref = _medians([host() for _ in range(repeat)])
    modes = {smp: _medians([guest(smp) for _ in range(repeat)])
             for smp in (2, 1)}
    rows = []
    for key, what in AM_METRICS:
        rows.append((f"host UDS, {what} (reference)", ref[key], 1.0))
        for smp, med in modes.items():
            rows.append((f"AM --smp {smp}, {what}", med[key],
                         med[key][0] / ref[key][0]))
    return rows


BENCHES = {"boot": bench_boot, "am": bench_am}


def _fmt(seconds):
    if seconds < 0.01:
        return f"{seconds * 1e6:9.1f} us"
    return f"{seconds * 1000:9.1f} ms"


def run(name, repeat, as_json=False):
    if not os.path.exists(QEMU_BIN):
        raise StepError("bench: QEMU is not built")
    names = [name] if name else list(BENCHES)
    results = {}
    for n in names:
        if n not in BENCHES:
            raise StepError(f"bench: no benchmark '{n}' (have: "
                            f"{', '.join(BENCHES)})")
        say(f"bench {n}: median of {repeat} runs")
        rows = BENCHES[n](repeat)
        results[n] = [{"what": w, "median_s": m[0], "min_s": m[1],
                       "max_s": m[2], "ratio": r} for w, m, r in rows]
        if not as_json:
            for w, m, r in rows:
                print(f"  {w:<54} {_fmt(m[0])}  (min {_fmt(m[1]).strip()}"
                      f", max {_fmt(m[2]).strip()})  ratio {r:5.2f}")
    if as_json:
        print(json.dumps(results, indent=2))
    return 0
