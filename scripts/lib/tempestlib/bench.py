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
         run, twice: with blocking reads, and (reference 2) with reads
         that poll for 50 us before they block, as a node's wait does.
         And how late a 10 ms timer runs during a storm of 50 us
         handlers, against the empty round trip of the same mode.  And the
         GAM round trip (<am.h>, guest/bench/gam_bench.c: am_request_1
         and its handler's am_reply_1, --smp 1) against the same
         reference, and a 1 MiB am_store against that round trip.
  strata Strata's control network on 2, 4, 8 and 16 nodes (--smp 1,
         guest/bench/strata_bench.c): Barrier, CombineInt and one Broadcast,
         each against the active-message round trip (SendLeftPollBoth and
         a reply from the handler, both nodes polling) of the same run;
         and the host's own barrier of as many processes, sleeping on a
         futex and yielding first (guest/bench/barrier_host.c, right
         after each cluster run): the floor of a barrier on this host.
         On 2 and 16 nodes also the same program linked with libtempest
         (strata_bench_shared.elf: libstrata shares its rings), run right
         after it: its Barrier and AM round trip against Strata alone's.
  bulk   the transfer engine between two nodes (--smp 2, --mem 320M,
         guest/bench/bulk_bench.c): time per transfer (and MB/s) of 4 KiB
         to 64 MiB against a host memcpy and a host Unix-domain socket
         stream of the same sizes measured in the same run
         (guest/bench/bulk_host.c); the initiation latency (one XFER
         command) and the fetch-and-op round trip against the
         active-message round trip; the active-message round trip while a
         64 MiB transfer runs, against the idle one and the transfer's
         time.
  scale  hello, a Strata barrier loop and the radix sort (4096 keys a
         node) on 16, 64 and 256 nodes: wall time against 16 nodes, the
         time of one barrier and of the sort, and the peak resident set of
         a node (sampled VmHWM); and the CPU an
         idle cluster of 64 nodes costs the host (guest/bench/
         idle_bench.c: the nodes' CPU time while they sleep 5 s, a run
         that sleeps minus one that does not), as a fraction of a core.
  tags   tagged memory (guest/bench/tags_bench.c): a memory-bound loop
         over untagged RAM (the reference), tagged all-Writable pages and
         pages with one restricted block; a local fault-handler-resume
         round trip, tag upgrades and downgrades against an empty
         device read; the Jacobi of guest/examples/dsm on 4 nodes, shared
         memory (invalidation protocol, and update protocol) against
         explicit messages.
  linux  boot-to-program of Linux nodes (run --linux, docs/linux.rst):
         from the launcher's start to the moment the last node's /init
         starts the program, on 1 (the reference), 8 and 16 nodes booted
         at once (--smp 1, 256M; goal: 8 nodes under 6 times 1).
"""

import json
import os
import re
import resource
import statistics
import subprocess
import sys
import threading
import time

from . import build, cluster
from .common import GUEST_LINUX_BUILD, QEMU_BIN, ROOT, StepError, rel, say


RUNS = os.path.join(ROOT, "build", "bench-runs")


def _med(vals):
    """(median, min, max) of a list of seconds."""
    return statistics.median(vals), min(vals), max(vals)


def _median_time(fn, repeat):
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return _med(times)


def _cluster(elf, nodes, args, name, **kwargs):
    """Boot a quiet cluster in build/bench-runs/name; node 0's log, or
    StepError naming what failed."""
    res = cluster.run_cluster(elf, nodes, args, echo=False,
                              run_dir=os.path.join(RUNS, name), **kwargs)
    if res.status != 0:
        raise StepError(f"bench: {res.summary}")
    return res.log(0)


def _host(path, args, timeout):
    """Run a host reference program; its output, or StepError."""
    r = subprocess.run([path] + args, capture_output=True, text=True,
                       timeout=timeout)
    if r.returncode != 0:
        raise StepError(f"bench: {os.path.basename(path)} exited "
                        f"{r.returncode}")
    return r.stdout


def bench_boot(repeat):
    hello = build.guest_program("examples/hello/hello.elf")

    def direct():
        r = subprocess.run(cluster.node_command(0, 1, hello, []),
                           stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL,
                           stdin=subprocess.DEVNULL)
        if r.returncode != 0:
            raise StepError(f"bench: hello exited {r.returncode}")

    def launcher(n):
        return lambda: _cluster(hello, n, [], f"boot-{n}", smp=1)

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


def _pair_ratio(subject, reference, key, ref_key=None):
    """(median, min, max) of subject[i][key] / reference[i][ref_key or
    key]: ratios of measurements taken in the same round, one after the
    other."""
    ref_key = ref_key or key
    return _med([a[key] / b[ref_key] for a, b in zip(subject, reference)])


def _medians(samples):
    out = {}
    for key, _ in AM_METRICS:
        out[key] = _med([s[key] / 1e9 for s in samples])
    return out


def bench_am(repeat):
    elf = build.guest_program("bench/am_bench.elf")
    uds = os.path.join(os.path.dirname(elf), "uds_bench")
    if not os.path.exists(uds):
        raise StepError(f"bench: {uds} is not built")
    args = [str(AM_ROUNDS), str(AM_STREAM)]

    def host():
        return _parse_bench(_host(uds, args, 120), "uds_bench")

    def guest(smp):
        return _parse_bench(_cluster(elf, 2, args, f"am-smp{smp}", smp=smp),
                            "am_bench")

    # Reference and subjects interleaved (host, smp 2, smp 1, host, ...):
    # the machine drifts, so each ratio is taken within one round and the
    # median of the rounds' ratios is reported with their spread.
    def gam():
        return _parse_bench(_cluster(gam_elf, 2, [str(AM_ROUNDS)], "gam",
                                     smp=1), "gam_bench")

    gam_elf = build.guest_program("bench/gam_bench.elf")
    refs, raw, gams = [], {2: [], 1: []}, []
    for _ in range(repeat):
        refs.append(host())
        for smp in raw:
            raw[smp].append(guest(smp))
        gams.append(gam())
    ref = _medians(refs)
    modes = {smp: _medians(samples) for smp, samples in raw.items()}
    rows = []
    for key, what in AM_METRICS:
        rows.append((f"host UDS, {what} (reference)", ref[key], 1.0))
        for smp, med in modes.items():
            rows.append((f"AM --smp {smp}, {what}", med[key],
                         _pair_ratio(raw[smp], refs, key)))
    # The second reference: the same with reads that poll for 50 us before
    # they block, as a node's wait does (guest/bench/uds_bench.c): it
    # does not pay the host's wake-up of a sleeping thread, which made
    # the blocking reference bimodal.  New entries; the ones above keep
    # their names and meaning.
    spin = [{key: r[key[:-3] + "_spin_ns"] for key, _ in AM_METRICS}
            for r in refs]
    sref = _medians(spin)
    for key, what in AM_METRICS:
        rows.append((f"host UDS spinning 50 us, {what} (reference 2)",
                     sref[key], 1.0))
        for smp, med in modes.items():
            rows.append((f"AM --smp {smp}, {what}, against reference 2",
                         med[key], _pair_ratio(raw[smp], spin, key)))
    # GAM (<am.h>): am_request_1 and its handler's am_reply_1, both nodes
    # polling in am_poll(), against the host's empty round trip; a 1 MiB
    # am_store whose handler replies, against that GAM round trip.
    for s in gams:
        s["rtt_empty_ns"] = s["rtt_ns"]
    rtt = _med([s["rtt_ns"] / 1e9 for s in gams])
    rows.append(("GAM --smp 1, round trip (am_request_1, am_reply_1)", rtt,
                 _pair_ratio(gams, refs, "rtt_empty_ns")))
    store = _med([s["store_1m_ns"] / 1e9 for s in gams])
    rows.append(("GAM --smp 1, am_store 1 MiB + reply (x GAM round trip)",
                 store, store[0] / rtt[0]))
    # The first 4096-byte phase, which warms up the measured one (TCG
    # translating its path, first touches of the receive queue): against
    # the warm figure of its own run.  No goal; shown so that nothing the
    # warm-up leaves out is hidden.
    for smp, samples in raw.items():
        cold = _med([s["rtt_full_cold_ns"] / 1e9 for s in samples])
        rows.append((f"AM --smp {smp}, round trip, 4096-byte message, "
                     "first phase (cold, x warm)", cold,
                     _med([s["rtt_full_cold_ns"] / s["rtt_full_ns"]
                           for s in samples])))
    # How late a timer runs in a message storm (tests/guest/am_timers.c
    # checks only that it runs first), against that mode's round trip.
    for smp, samples in raw.items():
        late = _med([s["timer_late_ns"] / 1e9 for s in samples])
        msgs = statistics.median(s["timer_late_msgs"] for s in samples)
        rows.append((f"AM --smp {smp}, storm timer lateness ({msgs:g} "
                     "late msgs)", late,
                     late[0] / modes[smp]["rtt_empty_ns"][0]))
    return rows


# ---- strata ------------------------------------------------------------
STRATA_ROUNDS = 300
STRATA_NODES = (2, 4, 8, 16)
STRATA_METRICS = [("barrier_ns", "Barrier"),
                  ("combine_ns", "CombineInt (ReduceAdd)"),
                  ("bcast_ns", "Broadcast, one word")]


# Node counts also run as strata_bench_shared.elf (libstrata a client of
# libtempest's protocol thread: docs/strata.rst, "Strata with
# libtempest"), alternated with the plain program.
STRATA_SHARED_NODES = (2, 16)
STRATA_SHARED = [("barrier_ns", "Barrier"),
                 ("bcast_ns", "Broadcast, one word"),
                 ("am_rtt_ns", "AM round trip")]

STRATA_HOST = [("futex_ns", "host processes' barrier, sleeping at once "
                 "(the floor)"),
               ("yield_ns", "host processes' barrier, yielding up to 500 us "
                "first (the floor with sleep-yield-us=500)")]


def bench_strata(repeat):
    """Per node count: the cluster's collectives against the AM round
    trip of the same run, and the host's own barrier of as many processes
    (guest/bench/barrier_host.c; each repeat right after the cluster's
    run): what a barrier cannot go below on this host."""
    elf = build.guest_program("bench/strata_bench.elf")
    shared_elf = build.guest_program("bench/strata_bench_shared.elf")
    host = os.path.join(os.path.dirname(elf), "barrier_host")
    if not os.path.exists(host):
        raise StepError(f"bench: {host} is not built")

    def once(n, program=elf, tag=""):
        return _parse_bench(_cluster(program, n, [str(STRATA_ROUNDS)],
                                     f"strata{tag}-{n}", smp=1, mem="64M"),
                            "strata_bench")

    def host_once(n):
        return _parse_bench(_host(host, [str(n), str(STRATA_ROUNDS)], 120),
                            "barrier_host")

    def key_med(samples, key):
        return _med([s[key] / 1e9 for s in samples])

    rows = []
    for n in STRATA_NODES:
        samples, hosts, shared = [], [], []
        for _ in range(repeat):
            samples.append(once(n))
            hosts.append(host_once(n))
            if n in STRATA_SHARED_NODES:
                shared.append(once(n, shared_elf, "-shared"))
        ref = key_med(samples, "am_rtt_ns")
        rows.append((f"{n} nodes: AM round trip (reference)", ref, 1.0))
        # Each run measures its collectives and its reference in the same
        # cluster, one after the other: the ratio is taken within a run.
        for key, what in STRATA_METRICS:
            rows.append((f"{n} nodes: {what}", key_med(samples, key),
                         _pair_ratio(samples, samples, key, "am_rtt_ns")))
        for key, what in STRATA_HOST:
            m = key_med(hosts, key)
            rows.append((f"{n} nodes: {what}", m, m[0] / ref[0]))
        rows.append((f"{n} nodes: Barrier / the host's yielding barrier",
                     key_med(samples, "barrier_ns"),
                     _pair_ratio(samples, hosts, "barrier_ns", "yield_ns")))
        for key, what in STRATA_SHARED if shared else ():
            rows.append((f"{n} nodes: {what}, Strata sharing libtempest's "
                         f"rings / the same of Strata alone",
                         key_med(shared, key),
                         _pair_ratio(shared, samples, key, key)))
    return rows


BULK_MAX_MB = 64
BULK_ROUNDS = 1000
BULK_LATENCY = [("am_ns", "AM round trip, main waits for the reply"),
                ("fop_ns", "fetch-and-op round trip to node 1"),
                ("fop_self_ns", "fetch-and-op on this node's own word"),
                ("init_ns", "XFER initiation (one command, to itself)")]


def _bulk_lines(text, prefix):
    """{size: {key: int}} of the 'prefix: size=N ...' lines, and the rest."""
    sizes, other = {}, {}
    for m in re.finditer(prefix + r": (.*)$", text, re.M):
        kv = {k: int(v) for k, v in re.findall(r"(\w+)=(\d+)", m.group(1))}
        if "size" in kv:
            sizes[kv["size"]] = kv
        else:
            other.update(kv)
    if not sizes:
        raise StepError(f"bench: no '{prefix}:' lines in:\n{text[-2000:]}")
    return sizes, other


def _size_name(size):
    return f"{size >> 20} MiB" if size >= 1 << 20 else f"{size >> 10} KiB"


def bench_bulk(repeat):
    elf = build.guest_program("bench/bulk_bench.elf")
    host = os.path.join(os.path.dirname(elf), "bulk_host")
    if not os.path.exists(host):
        raise StepError(f"bench: {host} is not built")

    def host_once():
        return _bulk_lines(_host(host, [str(BULK_MAX_MB)], 300),
                           "bulk_host")[0]

    def guest_once():
        return _bulk_lines(_cluster(elf, 2, [str(BULK_MAX_MB),
                                             str(BULK_ROUNDS)], "bulk",
                                    smp=2, mem="320M"), "bulk_bench")

    # Interleaved (host, guest, host, guest, ...): see bench_am.
    hosts, guests = [], []
    for _ in range(repeat):
        hosts.append(host_once())
        guests.append(guest_once())
    rows = []
    for size in sorted(hosts[0]):
        reps = hosts[0][size]["reps"]
        uds = _med([h[size]["uds_ns"] / reps / 1e9 for h in hosts])
        mc = _med([h[size]["memcpy_ns"] / reps / 1e9 for h in hosts])
        xf = _med([g[0][size]["ns"] / g[0][size]["reps"] / 1e9
                  for g in guests])
        name = _size_name(size)
        rows.append((f"{name}: host UDS stream {size / uds[0] / 1e6:.0f} "
                     "MB/s (reference)", uds, 1.0))
        rows.append((f"{name}: host memcpy {size / mc[0] / 1e6:.0f} MB/s",
                     mc, mc[0] / uds[0]))
        per_round = _med([(g[0][size]["ns"] / g[0][size]["reps"]) /
                          (h[size]["uds_ns"] / reps)
                          for g, h in zip(guests, hosts)])
        rows.append((f"{name}: XFER {size / xf[0] / 1e6:.0f} MB/s, "
                     f"{100 / per_round[0]:.0f}% of the stream", xf,
                     per_round))
    ref = _med([g[1]["am_hh_ns"] / 1e9 for g in guests])
    rows.append(("AM round trip, handler to handler (reference)", ref, 1.0))
    for key, what in BULK_LATENCY:
        m = _med([g[1][key] / 1e9 for g in guests])
        rows.append((what, m, m[0] / ref[0]))
    return rows + _bulk_busy(guests)


CHAN_ROUNDS = 1000


def bench_chan(repeat):
    """The channel controller (docs/chan.rst): a 4-byte and a 1 MiB round
    trip over one channel (chan_bench: the device's instructions, a turn
    one OUTPUT_INPUT on node controller 1.16, waits that spin on the CQ
    and then sleep as libtempest's do), as ratios to the AM round trips
    (main waits for the reply; handler to handler) and to the XFER stream
    of 1 MiB of bulk_bench, both programs run in the same round."""
    chan_elf = build.guest_program("bench/chan_bench.elf")
    bulk_elf = build.guest_program("bench/bulk_bench.elf")
    lib_elf = build.guest_program("bench/libchan_bench.elf")
    rounds = []
    libs = {"device": [], "turn": [], "soft": []}
    for _ in range(repeat):
        # <chan.h> on each path, A/B in the same round.
        for path in libs:
            libs[path].append(_libchan_round(lib_elf, path))
        bulk = _bulk_lines(_cluster(bulk_elf, 2, [str(BULK_MAX_MB),
                                                  str(BULK_ROUNDS)],
                                    "chan-bulk", smp=2, mem="320M"),
                           "bulk_bench")
        chan = _bulk_lines(_cluster(chan_elf, 2, [str(CHAN_ROUNDS)],
                                    "chan", smp=1, mem="128M"),
                           "chan_bench")[0]
        rounds.append((bulk, chan))
    mib = 1 << 20
    am = _med([b[1]["am_ns"] / 1e9 for b, _ in rounds])
    stream = _med([b[0][mib]["ns"] / b[0][mib]["reps"] / 1e9
                   for b, _ in rounds])
    small = _med([c[4]["ns"] / c[4]["rounds"] / 1e9 for _, c in rounds])
    big = _med([c[mib]["ns"] / c[mib]["rounds"] / 1e9 for _, c in rounds])
    # Per round: the 4-byte round trip over the AM one (goal <= 1.0),
    # and the channel's bytes per second (2 MiB a round trip) over the
    # stream's (goal >= 0.9).
    small_r = _med([(c[4]["ns"] / c[4]["rounds"]) / b[1]["am_ns"]
                    for b, c in rounds])
    hh = _med([b[1]["am_hh_ns"] / 1e9 for b, _ in rounds])
    small_hh = _med([(c[4]["ns"] / c[4]["rounds"]) / b[1]["am_hh_ns"]
                     for b, c in rounds])
    big_r = _med([(2 * b[0][mib]["ns"] / b[0][mib]["reps"]) /
                  (c[mib]["ns"] / c[mib]["rounds"]) for b, c in rounds])
    return [
        ("AM round trip, main waits for the reply (reference)", am, 1.0),
        ("channel round trip, 4 bytes (goal <= 1.0x)",
         small, small_r),
        ("AM round trip, handler to handler (second reference)", hh, 1.0),
        ("channel round trip, 4 bytes, to the handler-to-handler one",
         small, small_hh),
        (f"XFER stream, 1 MiB ({mib / stream[0] / 1e6:.0f} MB/s; "
         "reference)", stream, 1.0),
        (f"channel round trip, 1 MiB each way ({2 * mib / big[0] / 1e6:.0f}"
         " MB/s; ratio: its throughput to the stream's, goal >= 0.9x)",
         big, big_r),
    ] + _libchan_rows(libs, rounds)


def _libchan_round(elf, path):
    """One run of libchan_bench on @path ('device'; 'turn', the device
    with node 0's turns by chan_output_input; or 'soft':
    TEMPEST_CHAN=soft); its size lines."""
    args = [str(CHAN_ROUNDS)] + (["turn"] if path == "turn" else [])
    old = os.environ.get(cluster.CHAN_ENV)
    if path == "soft":
        os.environ[cluster.CHAN_ENV] = "soft"
    else:
        os.environ.pop(cluster.CHAN_ENV, None)
    try:
        log = _cluster(elf, 2, args, "libchan-" + path, smp=2, mem="128M")
    finally:
        if old is None:
            os.environ.pop(cluster.CHAN_ENV, None)
        else:
            os.environ[cluster.CHAN_ENV] = old
    sizes, other = _bulk_lines(log, "libchan_bench")
    if other.get("device") != (path != "soft"):
        raise StepError(f"bench: libchan_bench ran off the {path} path")
    return sizes


def _libchan_rows(libs, rounds):
    """<chan.h> round trips (--smp 2, calls that sleep) on the device and
    in software, each as a ratio to the AM round trip in which main waits
    for the reply, of the same round."""
    rows = []
    for size in (4, 4080):
        for path, what in (("device", "on the device"),
                           ("turn", "on the device, node 0's turn one "
                            "chan_output_input"),
                           ("soft", "in software")):
            per = [lib[size]["ns"] / lib[size]["rounds"]
                   for lib in libs[path]]
            rows.append((f"<chan.h> round trip, {size} bytes, {what}",
                         _med([t / 1e9 for t in per]),
                         _med([t / b[1]["am_ns"]
                               for t, (b, _) in zip(per, rounds)])))
    return rows


def _bulk_busy(guests):
    """Active messages during a transfer (the figures tests/guest/
    xfer_latency.c prints and no longer bounds): the round trip while a
    BULK_MAX_MB transfer runs against the idle one (main waits for the
    reply in both), and against the transfer's own time (FLASH 3.3.2:
    pieces interleaved with other requests keep it a small fraction)."""
    idle = _med([g[1]["am_ns"] / 1e9 for g in guests])
    busy = [g[1] for g in guests if g[1].get("busy_rtts")]
    what = f"AM round trip during a {BULK_MAX_MB} MiB XFER"
    if not busy:
        return [(f"{what}: none completed before it ended", (0, 0, 0), 0.0)]
    rtt = _med([b["busy_rtt_ns"] / 1e9 for b in busy])
    xfer = _med([b["busy_xfer_ns"] / 1e9 for b in busy])
    return [(f"{what}, vs idle ({min(b['busy_rtts'] for b in busy)}+ "
             "during it)", rtt, rtt[0] / idle[0]),
            (f"{BULK_MAX_MB} MiB XFER alone; ratio: busy round trip / it",
             xfer, rtt[0] / xfer[0])]


# ---- scale ---------------------------------------------------------------
SCALE_NODES = (16, 64, 256)
SCALE_IDLE_NODES = 64
SCALE_IDLE_MS = 5000
SCALE_BARRIERS = 50         # strata_bench rounds: Barrier, CombineInt, ...
SCALE_RADIX_KEYS = 4096     # keys per node (weak scaling)
SCALE_TIMEOUT_S = 900       # a cluster's time limit in bench scale


def _children_cpu():
    """CPU seconds (user + system) of this process's reaped children: the
    QEMUs of the clusters run so far."""
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime


class _PeakRss:
    """While a cluster runs, samples the peak resident set (VmHWM) of each
    QEMU this process started; peak() is the largest per node, in bytes.
    It counts what a node shares with others (the QEMU binary's pages) in
    each node, so it is an upper bound of what one more node costs."""

    PERIOD = 0.02

    def __init__(self):
        self.kib = {}
        self.done = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.done.set()
        self.thread.join()

    def _scan(self):
        pids = set()
        for task in os.listdir("/proc/self/task"):
            try:
                with open(f"/proc/self/task/{task}/children") as f:
                    pids.update(f.read().split())
            except OSError:
                continue
        for pid in pids:
            try:
                with open(f"/proc/{pid}/status") as f:
                    st = dict(line.split(":", 1) for line in f
                              if ":" in line)
            except OSError:
                continue
            if st.get("Name", "").strip().startswith("qemu"):
                hwm = int(st.get("VmHWM", "0 kB").split()[0])
                self.kib[pid] = max(self.kib.get(pid, 0), hwm)

    def _run(self):
        while not self.done.wait(self.PERIOD):
            self._scan()

    def peak(self):
        return max(self.kib.values(), default=0) * 1024


def bench_scale(repeat):
    """Hello, a Strata barrier loop and the radix sort on 16, 64 and 256
    nodes (wall time against 16 nodes; the barrier's own time and the
    sort's; the peak resident set of a node), and what an idle cluster of
    64 nodes costs the host: the nodes' CPU time while they sleep
    SCALE_IDLE_MS (a run that sleeps minus one that does not), as a
    fraction of one core."""
    hello = build.guest_program("examples/hello/hello.elf")
    idle = build.guest_program("bench/idle_bench.elf")
    strata = build.guest_program("bench/strata_bench.elf")
    radix = build.guest_program("examples/radix-sort/radix.elf")
    # (what, program, its arguments, the time it reports of itself: what
    # and how to read it from node 0's log, or None)
    jobs = [("hello", hello, [], None),
            ("Barrier loop", strata, [str(SCALE_BARRIERS)],
             ("per barrier", lambda log: _parse_bench(
                 log, "strata_bench")["barrier_ns"] / 1e9)),
            ("radix sort", radix, [str(SCALE_RADIX_KEYS)],
             ("the sort", _radix_s))]
    rows, mem = [], []
    for what, elf, args, inner in jobs:
        ref = ref_in = None
        for n in SCALE_NODES:
            walls, ins, peaks = [], [], []
            for _ in range(repeat):
                with _PeakRss() as rss:
                    t0 = time.perf_counter()
                    # run's 120 s is short for 256 nodes on a VM whose
                    # context switches are dear (2026-12-01: the radix
                    # sort 97 s, 136 s right after the smaller runs).
                    log = _cluster(elf, n, args, f"scale-{n}", smp=1,
                                   mem="64M", timeout=SCALE_TIMEOUT_S)
                    walls.append(time.perf_counter() - t0)
                peaks.append(rss.peak())
                if inner:
                    ins.append(inner[1](log))
            wall = _med(walls)
            ref = ref or wall
            rows.append((f"{what}, {n} nodes, wall"
                         + (" (reference)" if n == SCALE_NODES[0] else ""),
                         wall, wall[0] / ref[0]))
            if inner:
                m = _med(ins)
                ref_in = ref_in or m
                rows.append((f"{what}, {n} nodes, {inner[0]} (ratio: to "
                             f"{SCALE_NODES[0]})", m, m[0] / ref_in[0]))
            mem.append((what, n, _med([p / 2**20 for p in peaks])))

    for what, n, peak in mem:
        if what == "hello" or n == SCALE_NODES[-1]:
            rows.append((f"{what}, {n} nodes: peak RSS of a node", peak,
                         None, "MiB"))

    def idle_cpu(ms):
        c0 = _children_cpu()
        _cluster(idle, SCALE_IDLE_NODES, [str(ms)], f"idle-{ms}", smp=1,
                 mem="64M")
        return _children_cpu() - c0

    fractions = []
    for _ in range(repeat):
        base = idle_cpu(0)
        fractions.append(max(0.0, idle_cpu(SCALE_IDLE_MS) - base) /
                         (SCALE_IDLE_MS / 1000))
    f = _med(fractions)
    rows.append((f"idle {SCALE_IDLE_NODES} nodes, CPU s per s (ratio: of "
                 "one core)", f, f[0]))
    return rows


def _radix_s(log):
    """The sort's own time, from radix.c's line."""
    m = re.search(r"radix-sort: .*: sorted in ([\d.]+) ms", log)
    if not m:
        raise StepError(f"bench: radix-sort did not sort:\n{log[-2000:]}")
    return float(m.group(1)) / 1e3


BENCHES = {"boot": bench_boot, "am": bench_am, "strata": bench_strata,
           "bulk": bench_bulk, "scale": bench_scale}


# ---- tags: tagged memory, block access faults, shared memory -------------
TAGS_PASSES = 20
TAGS_FAULTS = 2000
TAGS_JACOBI_NODES = 4


def bench_tags(repeat):
    """Tagged memory (guest/bench/tags_bench.c, one node, --smp 1): the same
    memory-bound loop over untagged RAM (the reference), tagged pages all
    Writable (goal: within 5%) and tagged pages each holding one ReadOnly
    block the loop does not touch (the slow path); a local fault-handler-
    resume round trip (the mean, which holds the faults that waited for a
    host core, and the median of faults timed one by one), a tag upgrade, a downgrade and a tag change that
    changes nothing against an empty device read (the SCRATCH register:
    one MMIO exit, the unit of the node controller's cost), with the
    protocol thread
    interrupt-driven (--smp 1) and on its own vCPU (--smp 2); the Jacobi
    relaxation of guest/examples/dsm on 4 nodes over shared memory against
    the same sweeps with explicit messages (the reference), and over the
    update protocol (jacobi.elf dsm-update: edge rows pushed to their
    readers), the three interleaved."""
    elf = build.guest_program("bench/tags_bench.elf")
    jacobi = build.guest_program("examples/dsm/jacobi.elf")

    def guest(args, smp):
        return _parse_bench(_cluster(elf, 1, args, "tags", smp=smp),
                            "tags_bench")

    def sweeps(mode):
        log = _cluster(jacobi, TAGS_JACOBI_NODES, [mode], "tags-jacobi",
                       smp=1)
        m = re.search(r"jacobi [\w-]+ ok: .* in (\d+) us", log)
        if not m:
            raise StepError(f"bench: jacobi {mode} printed no time")
        return int(m.group(1)) / 1e6

    rows = []
    mem = [guest(["mem", str(TAGS_PASSES)], 1) for _ in range(repeat)]
    ref = _med([s["untagged_ns"] / 1e9 for s in mem])
    rows.append(("loop over untagged RAM (reference)", ref, 1.0))
    for key, what in (("writable_ns", "same loop, tagged pages all Writable"),
                      ("restricted_ns", "same, one ReadOnly block a page")):
        m = _med([s[key] / 1e9 for s in mem])
        rows.append((what, m, m[0] / ref[0]))
    for smp in (1, 2):
        flt = [guest(["fault", str(TAGS_FAULTS)], smp)
               for _ in range(repeat)]
        ref = _med([s["mmio_ns"] / 1e9 for s in flt])
        rows.append((f"--smp {smp}: empty device read (reference)",
                     ref, 1.0))
        for key, what in (("noop_ns", "tag change that changes nothing"),
                          ("upgrade_ns", "tag upgrade"),
                          ("downgrade_ns", "tag downgrade (all vCPUs)"),
                          ("fault_ns", "fault, handler, upgrade, resume"),
                          ("fault_med_ns", "the same, median of 1025")):
            m = _med([s[key] / 1e9 for s in flt])
            rows.append((f"--smp {smp}: {what}", m, m[0] / ref[0]))
    # Interleaved, so that the three meet the same machine.
    runs = [(sweeps("msg"), sweeps("dsm"), sweeps("dsm-update"))
            for _ in range(repeat)]
    ref = _med([r[0] for r in runs])
    rows.append((f"Jacobi on {TAGS_JACOBI_NODES} nodes, messages "
                 "(reference)", ref, 1.0))
    for i, what in ((1, "shared memory"),
                    (2, "shared memory, update protocol")):
        m = _med([r[i] for r in runs])
        rows.append((f"Jacobi on {TAGS_JACOBI_NODES} nodes, {what}", m,
                     m[0] / ref[0]))
    return rows


BENCHES["tags"] = bench_tags
BENCHES["chan"] = bench_chan


# ---- linux: Linux nodes' boot ----------------------------------------------
LINUX_NODES = (1, 8, 16)


def bench_linux(repeat):
    """Boot-to-program of 1, 8 and 16 Linux nodes at once: the launcher's
    start to the last node's "running" line (RunResult.booted), the
    program being busybox's 'true'."""
    def boot(n):
        res = cluster.run_cluster("true", n, [], echo=False, linux=True,
                                  run_dir=os.path.join(RUNS, f"linux-{n}"),
                                  smp=1, timeout=300)
        if res.status != 0 or None in res.booted:
            raise StepError(f"bench: {res.summary}")
        return max(res.booted)

    rows = []
    ref = None
    for n in LINUX_NODES:
        m = _med([boot(n) for _ in range(repeat)])
        ref = ref or m
        rows.append((f"Linux boot to program, {n} node{'s' if n > 1 else ''}"
                     + (" (reference)" if n == LINUX_NODES[0] else ""),
                     m, m[0] / ref[0]))
    return rows + _linux_am(repeat)


def _linux_am(repeat):
    """am_bench between two Linux processes (guest/rt-linux) against the
    same program between two bare-metal nodes, interleaved round by
    round, with --smp 1 and 2."""
    bare = build.guest_program("bench/am_bench.elf")
    lin = os.path.join(GUEST_LINUX_BUILD, "guest", "bench", "am_bench.elf")
    if not os.path.exists(lin):
        raise StepError(f"bench: {rel(lin)} is not built")
    args = [str(AM_ROUNDS), str(AM_STREAM // 10)]
    rows = []
    for smp in (1, 2):
        refs, subs = [], []
        for _ in range(repeat):
            refs.append(_parse_bench(_cluster(bare, 2, args,
                                              f"am-bare-smp{smp}", smp=smp),
                                     "am_bench"))
            subs.append(_parse_bench(_cluster(lin, 2, args,
                                              f"am-linux-smp{smp}", smp=smp,
                                              linux=True, timeout=300),
                                     "am_bench"))
        for key, what in AM_METRICS[:2]:
            rows.append((f"bare metal --smp {smp}, AM {what} (reference)",
                         _med([s[key] / 1e9 for s in refs]), 1.0))
            rows.append((f"Linux processes --smp {smp}, AM {what}",
                         _med([s[key] / 1e9 for s in subs]),
                         _pair_ratio(subs, refs, key)))
    return rows


BENCHES["linux"] = bench_linux


def _fmt(seconds):
    if seconds < 0.01:
        return f"{seconds * 1e6:9.1f} us"
    return f"{seconds * 1000:9.1f} ms"


def run(name, repeat, as_json=False, out=None, fabric=None):
    """Run the benchmarks; the table (or with as_json the JSON alone) goes
    to out (standard output), progress to standard error.  fabric: of
    every cluster (cluster.fabric_kind)."""
    out = out or sys.stdout
    fabric = cluster.fabric_kind(fabric)
    os.environ[cluster.FABRIC_ENV] = fabric     # for every run below
    if not os.path.exists(QEMU_BIN):
        raise StepError("bench: QEMU is not built")
    names = [name] if name else list(BENCHES)
    results = {}
    for n in names:
        if n not in BENCHES:
            raise StepError(f"bench: no benchmark '{n}' (have: "
                            f"{', '.join(BENCHES)})")
        load = os.getloadavg()
        say(f"bench {n}: median of {repeat} runs, fabric {fabric}; load "
            f"average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")
        rows = BENCHES[n](repeat)
        results[n] = []
        for row in rows:
            w, m, r = row[:3]
            if len(row) > 3:
                # A quantity in row[3]'s unit, not a time: no ratio.
                results[n].append({"what": w, "median": m[0], "min": m[1],
                                   "max": m[2], "unit": row[3],
                                   "loadavg": load[0], "fabric": fabric})
                if not as_json:
                    print(f"  {w:<54} {m[0]:7.1f} {row[3]}  (min "
                          f"{m[1]:.1f}, max {m[2]:.1f})", file=out,
                          flush=True)
                continue
            # r: a ratio of medians, or (median, min, max) of per-round
            # ratios where reference and subject were interleaved.
            rr = r if isinstance(r, tuple) else (r, r, r)
            results[n].append({"what": w, "median_s": m[0], "min_s": m[1],
                               "max_s": m[2], "ratio": rr[0],
                               "ratio_min": rr[1], "ratio_max": rr[2],
                               "loadavg": load[0], "fabric": fabric})
            if not as_json:
                spread = (f" [{rr[1]:.2f}-{rr[2]:.2f}]"
                          if isinstance(r, tuple) else "")
                print(f"  {w:<54} {_fmt(m[0])}  (min {_fmt(m[1]).strip()}"
                      f", max {_fmt(m[2]).strip()})  ratio {rr[0]:5.2f}"
                      f"{spread}", file=out, flush=True)
    if as_json:
        print(json.dumps(results, indent=2), file=out, flush=True)
    return 0
