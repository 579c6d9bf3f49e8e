"""Print results.json as tables (Rich if available, else plain text)."""

from __future__ import annotations

from typing import Any


def _mmm(s: dict[str, Any] | None, unit: str = "") -> str:
    if not s or s.get("median") is None:
        return "-"
    return f"{s['median']:g}{unit}  ({s['min']:g} .. {s['max']:g})"


def _ms(figure: dict[str, Any], key: str) -> str:
    value = figure.get(key)
    return "-" if value is None else f"{value:g}"


class _Out:
    def __init__(self) -> None:
        try:
            import sys

            from rich.console import Console
            from rich.table import Table
        except ImportError:  # pragma: no cover
            self.console, self.Table = None, None
        else:
            self.console = Console() if sys.stdout.isatty() else Console(width=130)
            self.Table = Table

    def table(self, title: str, columns: list[str], rows: list[list[Any]]) -> None:
        if self.console is not None and self.Table is not None:
            t = self.Table(title=title, title_justify="left")
            for c in columns:
                t.add_column(c)
            for r in rows:
                t.add_row(*[str(x) for x in r])
            self.console.print(t)
            return
        print(f"\n{title}")
        widths = [max(len(str(x)) for x in col) for col in zip(columns, *rows, strict=False)]
        for r in [columns, *rows]:
            print("  ".join(str(x).ljust(w) for x, w in zip(r, widths, strict=False)))


def print_report(results: dict[str, Any]) -> None:
    out = _Out()
    print(f"\nbenchmarks ({results['mode']}): {results['ours_graph']}; cpus={results['machine']['cpus']}, "
          f"sqlite {results['machine']['sqlite']}; figures are median (min .. max)")
    if ov := results.get("overhead"):
        for name, v in ov["variants"].items():
            print(f"   {name}: {v['about']}")
        rows = [[name, _mmm(v["cycles_per_s"]), _mmm(v["ms_per_cycle"])] for name, v in ov["variants"].items()]
        out.table(f"1. one pause+resume cycle ({ov['rounds']} rounds x {ov['cycles_per_round']} cycles)",
                  ["setup", "cycles/s", "ms/cycle"], rows)
        cpu = ov.get("cpu_ratios", {})
        out.table("1. ratios per round (above 1: the first is slower): wall time, and CPU time (all threads)",
                  ["ratio", "wall x", "cpu x"],
                  [[k, _mmm(v), _mmm(cpu[k]) if k in cpu else "-"] for k, v in ov["ratios"].items()])
    if pr := results.get("profile"):
        rows = []
        for name, v in pr.items():
            calls = ", ".join(f"{k} {c:g}" for k, c in v["saver_calls"].items())
            rows.append([name, f"{v['commits']:g}", calls])
        out.table("profile: per cycle", ["setup", "SQLite commits", "checkpoint saver calls"], rows)
        for name, v in pr.items():
            if "effects" in v and name in ("ours", "ours_async"):
                out.table(f"profile: {name}, the runner's I/O per cycle (start {v['ms']['start']} ms, "
                          f"resume {v['ms']['resume']} ms)", ["effect", "per cycle", "us each"],
                          [[e["effect"], f"{e['per_cycle']:g}", e["us_each"]] for e in v["effects"]])
    if li := results.get("listing"):
        listing = li["listing"]
        rows = []
        for size, s in listing["ours_first_page_ms"].items():
            plain = listing["plain_scan"].get(size, {})
            rows.append([f"{int(size):,}", _mmm(s, " ms"), _mmm(plain.get("ms"), " ms"), _mmm(plain.get("plain / ours"), "x"),
                         f"{li['populated'][size]['seconds']} s, {li['populated'][size]['mb']} MB"])
        out.table("2. list pending reviews: first page of 50", ["paused threads", "ours", "plain (full scan)",
                                                                  "plain / ours", "bulk populate"], rows)
        out.table("2. ours, page size at the largest database", ["page size", "ours"],
                  [[p, _mmm(s, " ms")] for p, s in listing["ours_page_size_ms_at_largest"].items()])
        r = li["resume"]
        small, large = str(r["small"]), str(r["large"])
        rows = []
        for key in ("ours", "plain", "ours_with_proposed_index"):
            if key in r:
                e = r[key]
                rows.append([key, _mmm(e["ms"][small], " ms"), _mmm(e["ms"][large], " ms"), f"{e['median large / median small']}x",
                             _mmm(e["large / small (pairs)"], "x")])
        out.table(f"3. resume one random paused thread ({r['bulk_threads_resumed_ok']}/{r['bulk_threads_resumed']} "
                  "bulk threads resumed ok)", ["setup", f"{int(small):,} threads", f"{int(large):,} threads",
                                               "median ratio", "ratio per pair"], rows)
        if "ours_with_proposed_index" in r:
            print(f"   proposed index: {r['ours_with_proposed_index']['index']}")
    if tp := results.get("throughput"):
        rows = []
        for name, e in tp["configs"].items():
            check = e.get("check")
            one, two = e["1"], e["2"]
            rows.append([name, _mmm(one["cycles_per_s"]), _mmm(two["cycles_per_s"]), _mmm(e["scaling"], "x"),
                         f"{_ms(one, 'p50_ms')} / {_ms(one, 'p99_ms')} / {_ms(one, 'max_ms')}",
                         f"{_ms(two, 'p50_ms')} / {_ms(two, 'p99_ms')} / {_ms(two, 'max_ms')}",
                         two["conflicts"], "-" if check is None else ("ok" if check["ok"] else f"FAILED {check}")])
        raw = tp["raw_sqlite_commits_per_s"]
        out.table(f"4. throughput: 1 and 2 worker processes on one file ({tp['windows']} windows of "
                  f"{tp['seconds_per_window']} s each; latency of every cycle of all windows)",
                  ["setup", "1 worker cycles/s", "2 workers cycles/s", "2/1 per window", "1w p50 / p99 / max ms",
                   "2w p50 / p99 / max ms", "conflicts (2w)", "lost / doubled"], rows)
        print(f"   raw SQLite commits/s on this disk: FULL {raw['FULL']:,}, NORMAL {raw['NORMAL']:,}")
        if bound := tp.get("commit_bound_cycles_per_s"):
            print("   commit-bound ceiling (raw commits/s / commits per cycle): "
                  + ", ".join(f"{name} {b['FULL']:,}" for name, b in bound.items() if name in tp["configs"]))
    if dk := results.get("disk"):
        rows = []
        for name, v in dk.items():
            if name == "threads":
                continue
            detail = ", ".join(f"{k} {b}" for k, b in v["paused"].items() if k != "total")
            rows.append([name, v["paused"].get("total", 0), v["finished"].get("total", 0), detail])
        out.table(f"5. bytes on disk per thread ({dk['threads']} threads, after VACUUM)",
                  ["setup", "paused", "finished", "paused, by table"], rows)
    if ap := results.get("api"):
        page, dec = ap["reviews_first_page_ms"], ap["decision_ms"]
        out.table(f"6. the HTTP API over loopback vs in process ({ap['threads']:,} paused threads)",
                  ["operation", "over HTTP", "in process", "target"],
                  [["GET /api/reviews, first 50", _mmm(page["http_loopback"], " ms"), _mmm(page["in_process"], " ms"),
                    f"p50 < {page['target_ms']} ms"],
                   ["a decision (resume), http.client", _mmm(dec["http_loopback"], " ms"), _mmm(dec["in_process_resume"], " ms"),
                    f"+{dec['api_minus_in_process_median_ms']} ms (target <= {dec['target_ms']} ms)"],
                   *([["the same decision, httpx", _mmm(dec["http_loopback_httpx"], " ms"), "",
                       f"+{dec['httpx_minus_in_process_median_ms']} ms (the client's own cost included)"]]
                     if "http_loopback_httpx" in dec else [])])
    if pg := results.get("postgres"):
        _postgres(out, pg)
    if lg := results.get("large"):
        rows = []
        for label, e in lg["sizes"].items():
            ms, b = e["cycle"]["ms_per_cycle"], e["bytes"]
            rows.append([label, _mmm(ms["ours"], " ms"), _mmm(ms["plain_exit"], " ms"),
                         _mmm(e["cycle"]["ratios"]["ours / plain_exit"], "x"),
                         _mmm(e["cycle"]["ratios"]["ours / plain_exit_reused_threads"], "x"),
                         f"{b['ours']['finished'].get('total', 0):,}", f"{b['plain_exit']['finished'].get('total', 0):,}",
                         f"{b['ours_minus_plain_finished']:+,}"])
        out.table(f"8. large states ({lg['rounds']} rounds x {lg['cycles_per_round']} cycles; bytes over "
                  f"{lg['threads']} threads)", ["field", "ours", "plain exit", "ours / plain", "ours / plain reused",
                                               "B/finished ours", "B/finished plain", "ours - plain"], rows)
        for label, e in lg["sizes"].items():
            o, p = e["bytes"]["ours"]["finished"], e["bytes"]["plain_exit"]["finished"]
            cpu = e["cycle"].get("cpu_ratios", {})
            print(f"   {label} CPU time (all threads) ratios: " + ", ".join(f"{k} {_mmm(v, 'x')}" for k, v in cpu.items()))
            print(f"   {label} finished, by table: " + ", ".join(f"{k} {v:,} (plain {p.get(k, 0):,})"
                                                             for k, v in o.items() if k != "total"))
    if an := results.get("async"):
        for part, what in ((an, "steps that only compute"), (an.get("waiting"), "each step first waits on I/O")):
            if part:
                _async(out, part, f"{what}, {part.get('step_wait_ms', 0):g} ms")
    if tg := results.get("targets"):
        out.table("targets (met: - when not judged: a quick run, or fewer than 100,000 threads)",
                  ["what", "target", "measured", "met"],
                  [[t["what"], t["target"], t["measured"], {True: "yes", False: "NO", None: "-"}[t["met"]]]
                   for t in tg])


def _async(out: _Out, an: dict[str, Any], what: str) -> None:
    n = an["cycles_per_batch"]
    out.table(f"9. async cycles ({an['rounds']} rounds x {an['batches_per_round']} batches of {n} cycles), one event loop; "
              f"{what}", ["setup", "cycles/s", "ms/cycle", "process cores busy"],
              [[name, _mmm(v["cycles_per_s"]), _mmm(v["ms_per_cycle"]), _mmm(an.get("process_cores_busy", {}).get(name))]
               for name, v in an["variants"].items()])
    gain = an[f"throughput_{n}_vs_1"]
    out.table(f"9. async ratios per round; {what}", ["ratio", "x", "target"],
              [*[[k, _mmm(v), an["targets"].get(k, "-")] for k, v in an["ratios"].items()],
               *[[f"throughput {n} at once / 1 at a time: {k}", _mmm(v), an["targets"].get(f"throughput_{n}_vs_1 {k}", "-")]
                 for k, v in gain.items()]])


def _postgres(out: _Out, pg: dict[str, Any]) -> None:
    server = pg["server"]
    print(f"\n7. PostgreSQL {server['server_version']}, fsync={server['fsync']}, synchronous_commit="
          f"{server['synchronous_commit']} (a throwaway server on this machine)")
    tp = pg["throughput"]
    counts = [k for k in tp["configs"]["ours"] if k.isdigit()]
    rows = []
    for name, e in tp["configs"].items():
        check = e.get("check")
        rows.append([name, *[f"{_mmm(e[k]['per_s'])} [{e['scaling'][k]}x]" for k in counts],
                     "-" if check is None else ("ok" if check["ok"] else f"FAILED {check}")])
    for name in ("ours", "ours_own_threads"):
        if f"{name} / plain_postgres" in tp:
            rows.append([f"{name} / plain_postgres", *[f"{tp[f'{name} / plain_postgres'][k]}x" for k in counts], ""])
    for name, e in tp["configs"].items():
        rows.append([f"{name}: what idle cores allow", *[f"{e[k]['cores_allow_per_s']} (CPU/cycle)" for k in counts], ""])
    out.table(f"7. cycles/s with N processes [vs 1 process] ({tp['windows']} windows of {tp['seconds_per_window']} s, "
              f"durability={tp['durability']!r} both)", ["setup", *[f"{k} proc" for k in counts], "decisions"], rows)
    rows = []
    for part in ("throughput", "audit"):
        for name, e in pg[part]["configs"].items():
            for k in counts if part == "throughput" else [c for c in e if c.isdigit()]:
                v = e[k]
                states = v["sessions_by_state"]
                rows.append([f"{name} x{k}", v["cores_busy"]["our_processes"]["median"], v["cores_busy"]["server"]["median"],
                             v["cpu_ms_per_cycle"]["median"], v["cores_busy"]["machine_fraction"]["median"],
                             ", ".join(f"{s} {x['median']:.0%}" for s, x in states.items() if x["median"] >= 0.01)])
    out.table("7. where the time goes (medians): cores busy in our processes and in the server, their CPU per cycle "
              "(per append), the machine's busy fraction (all programs), what the database sessions were doing",
              ["run", "ours cores", "server cores", "CPU ms per cycle", "machine busy", "sessions"], rows)
    au = pg["audit"]
    ks = [k for k in au["configs"]["audit_chain"] if k.isdigit()]
    out.table(f"7. audit chain: appends/s with N processes appending at once (verify: {'ok' if au['verify']['ok'] else 'FAILED'}, "
              f"{au['verify']['checked']} entries)", ["setup", *[f"{k} proc" for k in ks]],
              [[name, *[_mmm(e[k]["per_s"]) for k in ks]] for name, e in au["configs"].items()]
              + [["chain / unchained", *[f"{au['chain / unchained'][k]}x" for k in ks], ""],
                 ["bare round trips vs 2 processes", *[f"{au['bare_round_trips vs 2 processes'].get(k, '-')}x" for k in ks], ""]])
    li = pg["listing"]
    rows = [[f"{int(size):,}", _mmm(s, " ms"), _mmm(li["plain_scan"].get(size, {}).get("ms"), " ms"),
             f"{li['populated'][size]['seconds']} s"] for size, s in li["ours_first_page_ms"].items()]
    out.table("7. first page of 50 pending reviews on PostgreSQL", ["paused threads", "ours", "plain (full scan)",
                                                                   "bulk populate"], rows)
    r = li["resume"]
    small, large = str(r["small"]), str(r["large"])
    out.table(f"7. resume one random paused thread on PostgreSQL ({r['bulk_threads_resumed_ok']}/{r['bulk_threads_resumed']} ok)",
              ["setup", f"{int(small):,} threads", f"{int(large):,} threads", "median ratio"],
              [[k, _mmm(r[k]["ms"][small], " ms"), _mmm(r[k]["ms"][large], " ms"), f"{r[k]['median large / median small']}x"]
               for k in ("ours", "plain_postgres")])
