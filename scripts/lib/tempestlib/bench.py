# SPDX-License-Identifier: GPL-2.0-or-later
"""scripts/tempest bench: benchmarks, as ratios to a reference measured in
the same run (these machines are noisy; absolute times are printed but
never asserted).

  boot   boot-to-exit of the hello example: one QEMU started directly (the
         reference), then 1, 4 and 8 nodes through the launcher.
"""

import json
import os
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


BENCHES = {"boot": bench_boot}


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
                print(f"  {w:<34} {m[0] * 1000:9.1f} ms  (min {m[1] * 1000:.1f}"
                      f", max {m[2] * 1000:.1f})  ratio {r:5.2f}")
    if as_json:
        print(json.dumps(results, indent=2))
    return 0
