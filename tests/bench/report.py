#!/usr/bin/env python3
"""Tables and charts of docs/performance.md, generated from the bench's JSON.

The doc marks each generated part; everything between a begin and an end
marker is rewritten, the prose around it is kept:

    <!-- bench:begin KIND ARG... -->
    (generated)
    <!-- bench:end -->

KIND (paths relative to the doc's directory):
    side-by-side FILE...         figures of every agent in these runs, one column per agent
    targets FILE...              issue 18's targets against both upstream builds
    runs FILE...                 commit, machine, load and duration of each run
    charts NAME FILE...          draws bench/NAME-p1-cdf.svg and bench/NAME-timeline.svg
                                 from these runs and shows them
    scale FILE...                one row per --scale run
    startup FILE...              one row per agent of each --startup run
    startup-builds FILE...       the same, one row per run, labelled by the agent binary's
                                 file name (to compare builds: name each build after its
                                 commit and pass it as SYNCWEAVE_BIN)

Commands:
    report.py doc [--check] [DOC]     regenerate DOC (default docs/performance.md) and its
                                      charts; --check: exit 1 if anything would change
    report.py show FILE...            print the side-by-side and target tables of runs
    report.py flamegraph PERF.data [OUT.svg]
                                      fold `perf script` stacks into OUT.folded, draw
                                      OUT.svg (default beside PERF.data) and print the
                                      functions with the most samples

Python 3 standard library only.
"""

import html
import json
import math
import os
import re
import subprocess
import sys
import zlib
from collections import Counter, defaultdict

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DEFAULT_DOC = os.path.join(REPO, "docs", "performance.md")

AGENT_ORDER = ["upstream", "upstream-unthrottled", "syncweave", "syncweave-fifo", "ceiling"]
AGENT_TITLE = {
    "upstream": "upstream v0.7.0",
    "upstream-unthrottled": "upstream, unthrottled",
    "syncweave": "syncweave",
    "syncweave-fifo": "syncweave, queue priority off",
    "ceiling": "ceiling (plain client)",
}
COLORS = {
    "upstream": "#d62728",
    "upstream-unthrottled": "#ff7f0e",
    "syncweave": "#1f77b4",
    "syncweave-fifo": "#9467bd",
    "ceiling": "#2ca02c",
}


# ---------------------------------------------------------------- loading


def load(path):
    with open(path) as f:
        run = json.load(f)
    run["_path"] = path
    run.setdefault("kind", "startup" if run.get("options", {}).get("startup") else "side-by-side")
    return run


def agent_title(a, run):
    """The agent's column title; syncweave runs with a Wasm step (--plugin) say which."""
    title = AGENT_TITLE.get(a["agent"], a["agent"])
    plugin = run.get("options", {}).get("plugin", "none")
    if a["agent"] == "syncweave" and plugin not in (None, "none"):
        title += f", --plugin {plugin}"
    return title


def agents_of(runs):
    """(agent figures, run) for every agent of the runs, in AGENT_ORDER."""
    out = []
    for run in runs:
        for a in run.get("agents", []):
            out.append((a, run))
    out.sort(key=lambda p: AGENT_ORDER.index(p[0]["agent"]) if p[0]["agent"] in AGENT_ORDER else 99)
    return out


# ---------------------------------------------------------------- formatting


def ms(v):
    if v is None:
        return None
    if v >= 10000:
        return f"{v / 1000:.0f} s"
    if v >= 1000:
        return f"{v / 1000:.1f} s"
    return f"{v:.0f} ms"


def mib(kb):
    return None if kb is None else f"{kb / 1024:.1f} MiB"


def num(v, fmt="{:.2f}"):
    return None if v is None else fmt.format(v)


def cell(v):
    return "–" if v is None or v == "" else str(v)


def latency_cell(l):
    if not l:
        return None
    p50 = ms(l.get("p50_ms")) or f"> {l.get('objects')} copies missing"
    p99 = ms(l.get("p99_ms"))
    if p99 is None:
        missing = l["objects"] - l["seen"]
        p99 = f"unknown ({missing} of {l['objects']} copies missing)" if missing else "–"
    s = f"{p50} / {p99}"
    if l.get("quiet") is False:
        s += " (agent still busy when it began)"
    if l.get("kept_up") is False:
        s += (
            f" (fell behind the rate: p50 {ms(l.get('first_fifth_p50_ms'))} for the first fifth,"
            f" {ms(l.get('last_fifth_p50_ms')) or 'copies missing'} for the last)"
        )
    if l.get("sent_during_backlog") is not None:
        s += f"; {l['sent_during_backlog']} of {l['objects']} sent during the sync"
    return s


def table(header, rows):
    out = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for r in rows:
        out.append("| " + " | ".join(cell(c) for c in r) + " |")
    return "\n".join(out)


def ceiling_rate(runs):
    for a, _ in agents_of(runs):
        if a["agent"] == "ceiling" and a.get("p2") and a["p2"].get("complete"):
            return a["p2"]["objects_per_second"]
    return None


def probes_cell(p4):
    parts = []
    for path, codes in sorted((p4.get("probes") or {}).items()):
        parts.append(path + " " + ", ".join(f"{c}×{n}" for c, n in sorted(codes.items())))
    return "; ".join(parts) or "none answered"


# ---------------------------------------------------------------- sections


def side_by_side(runs):
    ags = agents_of(runs)
    ceiling = ceiling_rate(runs)
    header = [""] + [agent_title(a, r) for a, r in ags]

    def row(label, f):
        return [label] + [f(a, r) for a, r in ags]

    def p2(a, r):
        p = a.get("p2")
        if not p:
            return a.get("error") and "failed"
        s = f"{p['objects_per_second']:.1f} ({p['synced']} in {p['seconds']:.0f} s)"
        if not p["complete"]:
            s = f"≥ {s}: incomplete at the timeout"
        return s

    def every_copy(a, r):
        # Copies made while P2 ran, the new objects' (P1 under load)
        # included: an agent that puts them first syncs them inside P2's
        # time. Older runs have only the proxy's top kinds to read it from.
        p = a.get("p2")
        if not p or not p.get("complete"):
            return None
        n = p.get("copies_created")
        if n is None:
            m = re.search(r"create crontabs\.example\.com ×(\d+)", p.get("requests_service_top") or "")
            n = m and int(m.group(1))
        if not n:
            return None
        return f"{n / p['seconds']:.1f} ({n} in {p['seconds']:.0f} s)"

    def share(a, r):
        # Against the ceiling of the agent's own run when it has one (the
        # servers' pace differs between runs), else the one of the set.
        own = ceiling_rate([r]) or ceiling
        p = a.get("p2")
        if not p or not own or a["agent"] == "ceiling":
            return None
        return f"{100 * p['objects_per_second'] / own:.0f} %"

    def ready(a, r):
        p = a.get("p2")
        if not p or a["agent"] == "ceiling":
            return None
        if p.get("ready_seconds") is not None:
            return f"{p['ready_seconds']:.2f} s"
        return "never (no 200 from /readyz)"

    def mem(a, r):
        m, i = a.get("p3"), a.get("idle")
        if not m:
            return None
        s = f"{mib(i and i.get('rss_kb'))} → {mib(m.get('rss_kb_settled'))}"
        if m.get("bytes_per_object") is not None:
            s += f": {m['bytes_per_object'] / 1024:.1f} KiB × {m['objects_held']}"
        if not m.get("settled_quiet"):
            s += " (not quiet)"
        return s

    def cost(a, f):
        c = a.get("cost")
        return None if not c else f(c)

    def p4(a, r):
        p = a.get("p4")
        if not p:
            return None
        s = (
            f"{p['requests_kcp'] + p['requests_service']} in {p['window_seconds']} s = "
            f"{p['requests_per_object']:.5f}/object"
        )
        kinds = "; ".join(t for t in (p.get("requests_kcp_top"), p.get("requests_service_top")) if t)
        if kinds:
            s += f": {kinds}"
        if not p.get("quiet"):
            s += " (not quiet before)"
        return s

    o = runs[0].get("options", {})
    rows = [
        row(
            f"P1 sustained p50 / p99 ({o.get('latency_objects')} at {o.get('rate')}/s, agent idle before)",
            lambda a, r: latency_cell(a.get("p1_sustained")),
        ),
        row(
            f"P1 under load p50 / p99 ({o.get('load_latency_objects')} at {o.get('rate')}/s from the agent's start)",
            lambda a, r: latency_cell(a.get("p1_under_load")),
        ),
        row(f"P2 initial sync, objects/s ({o.get('objects')} objects)", p2),
        row("P2 as a share of the ceiling", share),
        row("every copy made while P2 ran, objects/s (the backlog and the new objects)", every_copy),
        row("start to Ready, with the backlog", ready),
        row("P3 peak RSS (VmHWM) after P2", lambda a, r: mib((a.get("p3") or {}).get("hwm_kb"))),
        row("RSS idle → settled: per cached object", mem),
        row("CPU seconds per 1 000 objects (P2)", lambda a, r: num((a.get("p2") or {}).get("cpu_seconds_per_1000_objects"))),
        row(
            "API writes per new object (kcp + service)",
            lambda a, r: cost(
                a,
                lambda c: f"{c['writes_per_object']:.2f} ({c['writes_kcp_per_object']:.2f} + {c['writes_service_per_object']:.2f})",
            ),
        ),
        row("requests per new object (no watches)", lambda a, r: cost(a, lambda c: f"{c['requests_per_object']:.2f}")),
        row("plugin calls per new object", lambda a, r: cost(a, lambda c: num(c.get("plugin_calls_per_object")))),
        row(
            f"P4 requests over {o.get('window')} s, health polled every {o.get('probe_interval')} s",
            p4,
        ),
        row("P4 probe answers", lambda a, r: a.get("p4") and probes_cell(a["p4"])),
    ]
    rows = [r for r in rows if any(c not in (None, "") for c in r[1:])]
    errors = [f"- {a['agent']} failed: {a['error']}" for a, _ in ags if a.get("error")]
    return table(header, rows) + ("\n\n" + "\n".join(errors) if errors else "")


def targets(runs):
    by = {a["agent"]: a for a, _ in agents_of(runs) if not a.get("error")}
    sw = by.get("syncweave")
    if not sw:
        return "(no syncweave run)"
    rows = []

    def verdict(ok):
        return "met" if ok else "**missed**"

    for base in ("upstream", "upstream-unthrottled"):
        up = by.get(base)
        if not up:
            continue
        name = AGENT_TITLE[base]
        s, u = sw.get("p1_sustained") or {}, up.get("p1_sustained") or {}
        if s.get("p50_ms") is not None and u.get("p50_ms") is not None:
            r = s["p50_ms"] / u["p50_ms"]
            rows.append(["P1 sustained p50 ≤ 0.5×", name, f"{r:.2f}×", verdict(r <= 0.5)])
        elif s.get("p50_ms") is not None:
            rows.append(["P1 sustained p50 ≤ 0.5×", name, "upstream's unknown (copies missing)", "–"])
        s2, u2 = sw.get("p2"), up.get("p2")
        if s2 and u2:
            r = s2["objects_per_second"] / u2["objects_per_second"]
            ok = s2["complete"] and r >= 2
            rows.append(
                [
                    "P2 ≥ 2×",
                    name,
                    ("≥ " if not u2["complete"] else "") + f"{r:.2f}×",
                    verdict(ok) if (u2["complete"] or ok) else "unknown",
                ]
            )
        s3, u3 = (sw.get("p3") or {}).get("hwm_kb"), (up.get("p3") or {}).get("hwm_kb")
        if s3 and u3:
            r = s3 / u3
            rows.append(["P3 peak RSS ≤ 0.5×", name, f"{r:.2f}×", verdict(r <= 0.5)])
    p4 = sw.get("p4")
    if p4:
        n = p4["requests_kcp"] + p4["requests_service"]
        rows.append(["P4 = 0 requests", "–", f"{n} in {p4['window_seconds']} s", verdict(n == 0)])
    b = (sw.get("p3") or {}).get("bytes_per_object")
    if b is not None:
        rows.append(["≤ 3 KB per cached object", "–", f"{b:.0f} B", verdict(b <= 3072)])
    return table(["target (issue 18)", "against", "measured", ""], rows)


def runs_section(runs):
    out = []
    for r in runs:
        m = r.get("machine", {})
        o = r.get("options", {})
        commit = (r.get("commit") or "?")[:10]
        dirty = " (with uncommitted changes)" if r.get("uncommitted_changes") else ""
        agents = ", ".join(a["agent"] for a in r.get("agents", []))
        out.append(
            f"- [`{os.path.basename(r['_path'])}`](bench/{os.path.basename(r['_path'])}): "
            f"{r['kind']}, agents {agents}; commit `{commit}`{dirty}; "
            f"{m.get('nproc')} × {m.get('cpu_model') or '?'}, {m.get('mem_total_mb')} MB; "
            f"load average {m.get('load_avg')} before, {r.get('load_avg_at_end')} after; "
            + ("" if r["kind"] == "startup" else f"{o.get('objects')} objects in {o.get('workspaces')} workspaces; ")
            + f"{r.get('total_seconds', 0) / 60:.0f} min"
        )
    return "\n".join(out)


def p2_rate(a):
    p2 = a.get("p2")
    if not p2:
        return "failed" if a.get("error") else None
    return f"{p2['objects_per_second']:.1f}" + ("" if p2["complete"] else " (incomplete)")


def scale(runs):
    rows = []
    for run in runs:
        for a in run.get("agents", []):
            p2, p3, c = a.get("p2") or {}, a.get("p3") or {}, a.get("cost") or {}
            at = a.get("p1_at_size") or {}
            sus = a.get("p1_sustained") or {}
            rows.append(
                [
                    a["agent"],
                    f"`{(run.get('commit') or '?')[:7]}`",
                    f"{p2.get('objects', run['options'].get('objects'))} in {run['options'].get('workspaces')}",
                    p2_rate(a),
                    num(p2.get("ready_seconds"), "{:.2f} s"),
                    mib(p3.get("hwm_kb")),
                    mib((a.get("idle") or {}).get("rss_kb")),
                    mib(p3.get("rss_kb_settled")),
                    num(p3.get("bytes_per_object"), "{:.0f} B"),
                    num(p2.get("cpu_seconds_per_1000_objects")),
                    num(c.get("plugin_calls_per_object")),
                    num(c.get("writes_per_object")),
                    f"{ms(sus.get('p50_ms'))} / {ms(sus.get('p99_ms'))}" if sus else "not run",
                    f"{ms(at.get('p50_ms'))} / {ms(at.get('p99_ms'))}" if at else "not run",
                ]
            )
    return table(
        [
            "agent",
            "commit",
            "objects in workspaces",
            "P2 objects/s",
            "start to Ready",
            "peak RSS",
            "RSS idle",
            "RSS settled",
            "bytes per object",
            "CPU s / 1 000",
            "plugin calls / object",
            "writes / object",
            "P1 sustained p50 / p99 (idle agent, no object held)",
            "P1 at size p50 / p99",
        ],
        rows,
    )


def startup(runs, by_binary=False):
    """One row per agent of each run; by_binary: labelled by the agent
    binary's file name (to compare builds), with RSS split into anonymous
    and file-backed memory."""
    rows = []
    for i, run in enumerate(runs, 1):
        for a in run.get("agents", []):
            label = (f"`{os.path.basename(a.get('binary') or a['agent'])}`" if by_binary
                     else AGENT_TITLE.get(a["agent"], a["agent"]))
            split = [mib(a.get("rss_anon_kb")) or "–", mib(a.get("rss_file_kb")) or "–"] if by_binary else []
            rows.append(
                [
                    str(i),
                    label,
                    num(a.get("ready_seconds"), "{:.2f} s") or "–",
                    num(a.get("first_copies_seconds"), "{:.2f} s"),
                    mib(a.get("vm_hwm_kb")),
                    mib(a.get("vm_rss_kb")),
                    *split,
                    num(a.get("cpu_seconds"), "{:.2f} s"),
                ]
            )
    head = ["run", "agent binary" if by_binary else "agent", "ready", "copies", "peak RSS", "RSS"]
    head += ["of it anonymous", "of it file-backed"] if by_binary else []
    return table(head + ["CPU"], rows)


# ---------------------------------------------------------------- SVG


def svg_doc(w, h, body, title):
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" viewBox="0 0 {w} {h}" '
        f'font-family="sans-serif" font-size="12">\n<title>{html.escape(title)}</title>\n'
        f'<rect width="{w}" height="{h}" fill="white"/>\n' + "\n".join(body) + "\n</svg>\n"
    )


def nice_ticks(lo, hi, n=5):
    if hi <= lo:
        hi = lo + 1
    span = hi - lo
    step = 10 ** math.floor(math.log10(span / n))
    for m in (1, 2, 5, 10):
        if span / (step * m) <= n:
            step *= m
            break
    t = math.ceil(lo / step) * step
    out = []
    while t <= hi + 1e-9:
        out.append(t)
        t += step
    return out


def fmt_tick(v):
    return f"{v:g}" if abs(v) < 1e6 else f"{v:.0e}"


def panel(x0, y0, w, h, xr, yr, series, xlabel, ylabel, xlog=False, xtick_fmt=fmt_tick):
    """Axes and polylines. series: [(points, color, dash, label)]."""
    (xa, xb), (ya, yb) = xr, yr

    def sx(x):
        if xlog:
            x = math.log10(max(x, xa))
            return x0 + (x - math.log10(xa)) / (math.log10(xb) - math.log10(xa)) * w
        return x0 + (x - xa) / ((xb - xa) or 1) * w

    def sy(y):
        return y0 + h - (y - ya) / ((yb - ya) or 1) * h

    out = [f'<rect x="{x0}" y="{y0}" width="{w}" height="{h}" fill="none" stroke="#999"/>']
    if xlog:
        xt = [10**e for e in range(math.ceil(math.log10(xa)), math.floor(math.log10(xb)) + 1)]
    else:
        xt = nice_ticks(xa, xb)
    for t in xt:
        X = sx(t)
        out.append(f'<line x1="{X:.1f}" y1="{y0}" x2="{X:.1f}" y2="{y0 + h}" stroke="#eee"/>')
        out.append(f'<text x="{X:.1f}" y="{y0 + h + 15}" text-anchor="middle">{html.escape(xtick_fmt(t))}</text>')
    for t in nice_ticks(ya, yb):
        Y = sy(t)
        out.append(f'<line x1="{x0}" y1="{Y:.1f}" x2="{x0 + w}" y2="{Y:.1f}" stroke="#eee"/>')
        out.append(f'<text x="{x0 - 5}" y="{Y + 4:.1f}" text-anchor="end">{fmt_tick(t)}</text>')
    out.append(f'<text x="{x0 + w / 2}" y="{y0 + h + 32}" text-anchor="middle">{html.escape(xlabel)}</text>')
    out.append(
        f'<text x="{x0 - 45}" y="{y0 + h / 2}" text-anchor="middle" '
        f'transform="rotate(-90 {x0 - 45} {y0 + h / 2})">{html.escape(ylabel)}</text>'
    )
    for pts, color, dash, _ in series:
        if not pts:
            continue
        d = " ".join(f"{sx(x):.1f},{sy(y):.1f}" for x, y in pts)
        da = f' stroke-dasharray="{dash}"' if dash else ""
        out.append(f'<polyline fill="none" stroke="{color}" stroke-width="1.8"{da} points="{d}"/>')
    return out


def legend(x, y, entries):
    out = []
    for i, (label, color, dash) in enumerate(entries):
        Y = y + i * 16
        da = f' stroke-dasharray="{dash}"' if dash else ""
        out.append(f'<line x1="{x}" y1="{Y}" x2="{x + 24}" y2="{Y}" stroke="{color}" stroke-width="2"{da}/>')
        out.append(f'<text x="{x + 30}" y="{Y + 4}">{html.escape(label)}</text>')
    return out


def ms_tick(v):
    if v >= 1000:
        return f"{v / 1000:g} s"
    return f"{v:g} ms"


def cdf_svg(runs, title):
    series, entries, lo, hi = [], [], None, None
    for a, _ in agents_of(runs):
        color = COLORS.get(a["agent"], "#555")
        for key, dash, what in (("p1_sustained", "", "sustained"), ("p1_under_load", "6 4", "under load")):
            l = a.get(key)
            if not l or not l.get("latencies_ms"):
                continue
            n = len(l["latencies_ms"])
            vals = sorted(v for v in l["latencies_ms"] if v is not None)
            if not vals:
                continue
            pts = [(max(v, 1.0), (i + 1) / n) for i, v in enumerate(vals)]
            pts.insert(0, (pts[0][0], 0))
            lo = min(lo or vals[0], max(vals[0], 1.0))
            hi = max(hi or vals[-1], vals[-1])
            series.append((pts, color, dash, ""))
            miss = n - len(vals)
            entries.append(
                (f"{AGENT_TITLE.get(a['agent'], a['agent'])}, {what}" + (f" ({miss} of {n} never came)" if miss else ""), color, dash)
            )
    if not series:
        return None
    xa = 10 ** math.floor(math.log10(lo))
    xb = 10 ** math.ceil(math.log10(hi * 1.01))
    if xb / xa < 100:
        xb = xa * 100
    body = [f'<text x="20" y="20" font-size="14" font-weight="bold">{html.escape(title)}</text>']
    body += panel(70, 40, 560, 260, (xa, xb), (0, 1), series, "create → copy on the service cluster (log scale)", "share of objects", xlog=True, xtick_fmt=ms_tick)
    body += legend(80, 350, entries)
    return svg_doc(720, 360 + 16 * len(entries), body, title)


def timeline_svg(runs, title):
    rss, rate, entries = [], [], []
    tmax, rmax, qmax = 1, 1, 1
    for a, _ in agents_of(runs):
        s = a.get("samples") or []
        if len(s) < 2:
            continue
        color = COLORS.get(a["agent"], "#555")
        rp = [(x["t"], x["rss_kb"] / 1024) for x in s if x.get("rss_kb") is not None]
        qp = []
        for p, q in zip(s, s[1:]):
            dt = q["t"] - p["t"]
            if dt > 0:
                r = (q["kcp_requests"] + q["service_requests"] - p["kcp_requests"] - p["service_requests"]) / dt
                qp.append(((p["t"] + q["t"]) / 2, r))
        tmax = max(tmax, s[-1]["t"])
        rmax = max([rmax] + [y for _, y in rp])
        qmax = max([qmax] + [y for _, y in qp])
        rss.append((rp, color, "", ""))
        rate.append((qp, color, "", ""))
        entries.append((AGENT_TITLE.get(a["agent"], a["agent"]), color, ""))
    if not entries:
        return None
    body = [f'<text x="20" y="20" font-size="14" font-weight="bold">{html.escape(title)}</text>']
    body += panel(70, 40, 560, 200, (0, tmax), (0, rmax * 1.1), rss, "", "RSS (MiB)")
    body += panel(70, 290, 560, 200, (0, tmax), (0, qmax * 1.1), rate, "seconds since the agent's start (initial sync, then settling and P4)", "requests/s (kcp + service)")
    body += legend(80, 560, entries)
    return svg_doc(720, 570 + 16 * len(entries), body, title)


# ---------------------------------------------------------------- the doc

MARK = re.compile(r"<!-- bench:begin (?P<args>[^>]*?) -->\n(?P<body>.*?)<!-- bench:end -->", re.S)


def render(kind, args, docdir, written):
    if kind == "charts":
        name, files = args[0], args[1:]
        runs = [load(os.path.join(docdir, f)) for f in files]
        out = []
        for suffix, make, what in (
            ("p1-cdf", cdf_svg, "P1 latency, cumulative"),
            ("timeline", timeline_svg, "RSS and requests over time"),
        ):
            svg = make(runs, what)
            if svg is None:
                continue
            rel = os.path.join("bench", f"{name}-{suffix}.svg")
            written[os.path.join(docdir, rel)] = svg
            out.append(f"![{what}]({rel})")
        return "\n\n".join(out)
    runs = [load(os.path.join(docdir, f)) for f in args]
    fn = {
        "side-by-side": side_by_side,
        "targets": targets,
        "runs": runs_section,
        "scale": scale,
        "startup": startup,
        "startup-builds": lambda runs: startup(runs, by_binary=True),
    }.get(kind)
    if fn is None:
        raise SystemExit(f"unknown bench section kind {kind!r} (side-by-side, targets, runs, charts, scale, startup, startup-builds)")
    return fn(runs)


def doc(path, check):
    docdir = os.path.dirname(os.path.abspath(path))
    with open(path) as f:
        text = f.read()
    written = {}

    def sub(m):
        args = m.group("args").split()
        body = render(args[0], args[1:], docdir, written)
        return f"<!-- bench:begin {m.group('args')} -->\n{body}\n<!-- bench:end -->"

    new = MARK.sub(sub, text)
    stale = []
    if new != text:
        stale.append(path)
    for p, content in written.items():
        old = None
        if os.path.exists(p):
            with open(p) as f:
                old = f.read()
        if old != content:
            stale.append(p)
    if check:
        if stale:
            print("out of date (run tests/bench/report.py doc): " + ", ".join(os.path.relpath(p, REPO) for p in stale))
            return 1
        print(f"{os.path.relpath(path, REPO)} matches its JSON")
        return 0
    with open(path, "w") as f:
        f.write(new)
    for p, content in written.items():
        with open(p, "w") as f:
            f.write(content)
    for p in stale:
        print("wrote " + os.path.relpath(p, REPO))
    return 0


# ---------------------------------------------------------------- flame graphs


def demangle(sym):
    """Rust legacy mangling (_ZN…E) to a path, without the hash."""
    m = re.match(r"^_ZN(.*)E(\.llvm\.\d+)?$", sym)
    if not m:
        return sym
    s, parts, i = m.group(1), [], 0
    while i < len(s) and s[i].isdigit():
        j = i
        while j < len(s) and s[j].isdigit():
            j += 1
        n = int(s[i:j])
        parts.append(s[j : j + n])
        i = j + n
    if parts and re.fullmatch(r"h[0-9a-f]{16}", parts[-1]):
        parts.pop()
    out = "::".join(parts)
    for a, b in (("$LT$", "<"), ("$GT$", ">"), ("$u20$", " "), ("$RF$", "&"), ("$C$", ","), ("..", "::"), ("$u7b$", "{"), ("$u7d$", "}")):
        out = out.replace(a, b)
    return out or sym


def fold(perf_data):
    try:
        text = subprocess.run(
            ["perf", "script", "--no-inline", "-i", perf_data, "-F", "comm,ip,sym"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
    except (OSError, subprocess.CalledProcessError) as e:
        raise SystemExit(f"perf script -i {perf_data} failed: {e}")
    stacks = Counter()
    for block in text.split("\n\n"):
        lines = [l for l in block.split("\n") if l.strip()]
        if not lines:
            continue
        comm = lines[0].strip().split()[0] if not lines[0].startswith(("\t", " ")) else "?"
        frames = []
        for l in lines[1:] if not lines[0].startswith(("\t", " ")) else lines:
            parts = l.strip().split(None, 1)
            sym = parts[1] if len(parts) > 1 else parts[0]
            sym = re.sub(r"\+0x[0-9a-f]+$", "", sym)
            sym = re.sub(r" \(.*\)$", "", sym)
            frames.append(demangle(sym).replace(";", ":"))
        frames.reverse()
        stacks[";".join([comm] + frames)] += 1
    return stacks


def flame_svg(stacks, title):
    tree = {"n": 0, "c": {}}
    for stack, n in stacks.items():
        node = tree
        node["n"] += n
        for f in stack.split(";"):
            node = node["c"].setdefault(f, {"n": 0, "c": {}})
            node["n"] += n
    total = tree["n"] or 1
    W, row = 1200, 16
    rects, depth_max = [], [0]

    def walk(node, x, depth):
        for name, ch in sorted(node["c"].items()):
            w = ch["n"] / total * (W - 20)
            # Deeper than 120 frames is an unwinding failure, not a program.
            if w >= 0.3 and depth < 120:
                rects.append((name, x, depth, w, ch["n"]))
                depth_max[0] = max(depth_max[0], depth)
                walk(ch, x, depth + 1)
            x += w

    walk(tree, 10, 0)
    H = (depth_max[0] + 1) * row + 50
    body = [f'<text x="10" y="20" font-size="14" font-weight="bold">{html.escape(title)} ({total} samples)</text>']
    for name, x, d, w, n in rects:
        y = H - 10 - (d + 1) * row
        h = zlib.crc32(name.encode()) % 60
        color = f"rgb({200 + h // 2},{80 + h * 2},{40})"
        label = name if len(name) * 6.5 < w else (name[: int(w / 6.5) - 2] + "…" if w > 30 else "")
        body.append(
            f'<g><title>{html.escape(name)}: {n} samples ({100 * n / total:.1f} %)</title>'
            f'<rect x="{x:.1f}" y="{y}" width="{max(w - 0.5, 0.1):.1f}" height="{row - 1}" fill="{color}"/>'
            + (f'<text x="{x + 3:.1f}" y="{y + 11}" font-size="11">{html.escape(label)}</text>' if label else "")
            + "</g>"
        )
    return svg_doc(W, H, body, title)


def flamegraph(perf_data, out_svg):
    stacks = fold(perf_data)
    base = out_svg[:-4] if out_svg.endswith(".svg") else out_svg
    with open(base + ".folded", "w") as f:
        for s, n in sorted(stacks.items()):
            f.write(f"{s} {n}\n")
    with open(out_svg, "w") as f:
        f.write(flame_svg(stacks, f"CPU profile of {os.path.basename(perf_data)}"))
    total = sum(stacks.values()) or 1
    self_c, incl = Counter(), Counter()
    for s, n in stacks.items():
        frames = s.split(";")
        self_c[frames[-1]] += n
        for f in set(frames[1:]):
            incl[f] += n
    print(f"{total} samples; wrote {out_svg} and {base}.folded")
    print("\nmost samples in the function itself:")
    for f, n in self_c.most_common(25):
        print(f"  {100 * n / total:5.1f} %  {f}")
    print("\nmost samples including callees:")
    for f, n in incl.most_common(25):
        print(f"  {100 * n / total:5.1f} %  {f}")


# ---------------------------------------------------------------- main


def main(argv):
    if not argv or argv[0] in ("-h", "--help"):
        print(__doc__)
        return 0
    cmd, rest = argv[0], argv[1:]
    if cmd == "doc":
        check = "--check" in rest
        paths = [a for a in rest if a != "--check"]
        return doc(paths[0] if paths else DEFAULT_DOC, check)
    if cmd == "show":
        runs = [load(p) for p in rest]
        if all(r["kind"] == "startup" for r in runs):
            print(startup(runs))
        elif all(r["kind"] == "scale" for r in runs):
            print(scale(runs))
        else:
            print(side_by_side(runs))
            print()
            print(targets(runs))
        print()
        print(runs_section(runs))
        return 0
    if cmd == "flamegraph":
        if not rest:
            raise SystemExit("usage: report.py flamegraph PERF.data [OUT.svg]")
        out = rest[1] if len(rest) > 1 else os.path.splitext(rest[0])[0] + ".svg"
        flamegraph(rest[0], out)
        return 0
    raise SystemExit(f"unknown command {cmd!r}; see report.py --help")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
