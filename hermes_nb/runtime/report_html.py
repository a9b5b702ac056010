"""The hotspot report as text and as HTML: bars in CSS, the style inline, nothing loaded
from anywhere else (a written file opens offline)."""

from __future__ import annotations

import html
from typing import Any

# a hermes_nb.runtime.report Report and KernelRow (that module imports this one)
Report = KernelRow = Any

# escaped each time, not cached: right after a run a cache lookup, which reads the cached
# key's strings as well as these, costs more than escaping (a clean string is returned as is)
_e = html.escape

#: what the report means by a device's idle time
IDLE_MEANS = ("idle: the part of the wall time a device neither ran, compiled nor received "
              "a copy for this run (waiting for inputs from another device, for the host, "
              "or with nothing to do)")
#: what the report means by time no device was busy
HOST_MEANS = ("no device busy: the part of the wall time when no device ran, compiled or "
              "copied (planning, Python and hand-offs between threads)")
FLOPS_MEANS = ("GFLOP/s are exact for a matmul (2·M·N·K); elsewhere an estimate (the "
               "instructions of a fused program times its elements, two per stencil tap)")

#: the parts of a device's wall time (Okabe-Ito colours, safe for colour-blind readers)
PARTS = (("compile", "#E69F00"), ("run", "#0072B2"), ("copies", "#CC79A7"), ("idle", "#D9D9D9"))
TOP = 20  # rows of the kernel and op tables

CSS = """
.hermes-report{font-family:system-ui,-apple-system,'Segoe UI',sans-serif;font-size:13px;
color:#222;max-width:1100px}
.hermes-report h3{margin:14px 0 6px;font-size:15px}
.hermes-report table{border-collapse:collapse;margin:4px 0}
.hermes-report th,.hermes-report td{padding:2px 8px;border-bottom:1px solid #e4e4e4;
text-align:right;white-space:nowrap}
.hermes-report th:first-child,.hermes-report td:first-child{text-align:left}
.hermes-report .bar{display:flex;width:420px;height:14px;border:1px solid #bbb}
.hermes-report .bar span{display:block;height:100%}
.hermes-report .share{display:inline-block;height:9px;background:#0072B2;vertical-align:middle}
.hermes-report .key{display:inline-block;width:10px;height:10px;margin:0 3px 0 10px}
.hermes-report .note{color:#666;font-size:12px}
.hermes-report li{margin:3px 0}
"""


def _ms(seconds: float) -> str:
    return f"{seconds * 1e3:.2f} ms"


def _mb(n: int | None) -> str:
    return "—" if n is None else f"{n / 1e6:.2f} MB"


def _rate(x: float | None, unit: str = "") -> str:
    return "—" if x is None else f"{x:.3g} {unit}".rstrip()


def _roof(k: KernelRow) -> str:
    if k.roofline is None:
        return "peak unknown" if k.peak is None or not k.peak.gb_per_s else "—"
    return f"{100 * k.roofline:.0f}% of {k.bound} peak"


def _parts(d: object) -> list[float]:
    return [d.compile_s, d.run_s, d.copy_s, d.idle_s]  # type: ignore[attr-defined]


def text(r: Report) -> str:
    lines = [f"Hotspot report: {len(r.kernels)} kernel(s) in {_ms(r.wall_s)} wall "
             f"(compile {_ms(r.compile_s)}, run {_ms(r.run_s)}, copies {_ms(r.copy_s)}, "
             f"no device busy {_ms(r.no_device_s)})", "", "device      compile        run"
             "     copies       idle  peak"]
    for d in r.devices:
        peak = r.peaks.get(d.device)
        figures = ("peak unknown" if peak is None else
                   f"{_rate(peak.gb_per_s, 'GB/s')}, {_rate(peak.gflop_per_s, 'GFLOP/s')}")
        lines.append(f"{d.device:<10}" + "".join(f"{_ms(s):>11}" for s in _parts(d))
                     + f"  {figures}")
    lines += ["", f"{'kernel':<34} {'device':<10} {'ms':>9} {'compile':>9} {'share':>6} "
              f"{'MB':>9} {'GB/s':>8} {'GFLOP/s':>8}  roofline"]
    for k in r.kernels[:TOP]:
        lines.append(f"{k.name[:34]:<34} {','.join(k.devices):<10} {k.run_s * 1e3:9.3f} "
                     f"{k.compile_s * 1e3:9.1f} {100 * k.share:5.1f}% "
                     f"{'—' if k.nbytes is None else f'{k.nbytes / 1e6:.2f}':>9} "
                     f"{_rate(k.gb_per_s):>8} {_rate(k.gflop_per_s):>8}  {_roof(k)}")
    lines += ["", "op (before fusion)            count         ms  share"]
    for o in r.ops[:TOP]:
        lines.append(f"{o.op[:28]:<28} {o.count:6d} {o.seconds * 1e3:10.3f} {100 * o.share:5.1f}%")
    for c in r.copies:
        lines.append(f"copies {c.source} -> {c.device}: {c.count} ({_mb(c.nbytes)}) in "
                     f"{_ms(c.seconds)}, {100 * c.share:.0f}% of the wall time")
    if r.fusion is not None:
        lines += ["", _fusion_line(r)]
    lines += ["", "suggestions:"] + [f"  - {s.text}" for s in r.suggestions] + (
        ["  (none: nothing stands out)"] if not r.suggestions else [])
    lines += ["", IDLE_MEANS + ".", HOST_MEANS + ".", FLOPS_MEANS + "."]
    return "\n".join(lines)


def _fusion_line(r: Report) -> str:
    f = r.fusion
    assert f is not None
    unknown = f" ({f.unknown} unfused kernel(s) of unknown size)" if f.unknown else ""
    return (f"fusion: {f.kernels} kernel(s) moving {_mb(f.nbytes)} instead of "
            f"{f.unfused_kernels} moving {_mb(f.unfused_bytes)} unfused: "
            f"{f.kernels_saved} kernel(s) and {_mb(f.bytes_saved)} avoided{unknown}")


_KEYS = "".join(f"<span class='key' style='background:{c}'></span>{n}" for n, c in PARTS)
_HEAD = f"<div class='hermes-report'><style>{CSS}</style>"
_DEVICES_HEAD = ("</ul><h3>Wall time per device</h3><table><thead><tr><th>device</th>"
                 f"<th>wall time {_KEYS}</th><th>compile</th><th>run</th><th>copies</th>"
                 "<th>idle</th><th>measured peak</th></tr></thead><tbody>")
_KERNELS_HEAD = ("</tbody></table><h3>Kernels by time</h3><table><thead><tr><th>kernel</th>"
                 "<th>op</th><th>device</th><th>run ms</th><th>compile ms</th>"
                 "<th>share of wall</th><th>read+written</th><th>GB/s</th><th>GFLOP/s</th>"
                 "<th>roofline</th></tr></thead><tbody>")
_OPS_HEAD = ("</tbody></table><h3>Ops by time</h3><table><thead><tr><th>op (before fusion)</th>"
             "<th>count</th><th>in kernels</th><th>ms</th><th>share of wall</th></tr></thead>"
             "<tbody>")
_COPIES_HEAD = ("<table><thead><tr><th>copies</th><th>count</th><th>bytes</th><th>ms</th>"
                "<th>GB/s</th><th>share of wall</th></tr></thead><tbody>")
NOTE = (f"<p class='note'>{_e(IDLE_MEANS)}.<br>{_e(HOST_MEANS)}.<br>"
        f"{_e(FLOPS_MEANS)} (marked *). A fused kernel's time is split evenly over "
        "its ops. Peaks: a streaming add and a float32 matmul, measured once per device.</p>")
# The HTML of a report is one %-template per layout (its devices, kernels, ops and copies,
# which cells hold a figure and which a dash, its fusion line and peaks), kept once made:
# a report renders after every %%hermes --report cell, the same cell keeps its layout, and
# one format call then writes the run's figures into the template, where building the rows
# anew (their names escaped, their strings joined) was most of the rendering's time.
#: the most layouts kept (all are dropped when it is reached: a new layout is rare)
LAYOUTS = 64
_layouts: dict[tuple[Any, ...], str] = {}
_SHARE = "<td><span class='share' style='width:%.1fpx'></span> %.1f%%</td>"
_NOTHING = "<li>none: nothing stands out</li>"


def _fixed(s: str) -> str:
    """HTML ``s`` as fixed text of a %-template (its % signs doubled)."""
    return s.replace("%", "%%")


def _lit(s: str) -> str:
    """Text ``s`` escaped for HTML, as fixed text of a %-template."""
    return _fixed(_e(s))


def _layout(r: Report) -> tuple[tuple[Any, ...], tuple[Any, ...]]:
    """The report's layout (what its template holds as text, one flat tuple: the rows'
    counts first, so no two layouts read the same) and its figures (what the template's
    slots take), in one pass over its rows."""
    wall, devices, kernels, ops, copies = r.wall_s, r.devices, r.kernels[:TOP], r.ops[:TOP], r.copies
    f = r.fusion
    key: list[Any] = [len(r.suggestions), len(devices), len(kernels), len(ops), len(copies),
                      None if f is None else (f.kernels, f.nbytes, f.unfused_kernels,
                                              f.unfused_bytes, f.unknown)]
    compile_s = run_s = copy_s = 0.0
    for d in devices:
        compile_s, run_s, copy_s = compile_s + d.compile_s, run_s + d.run_s, copy_s + d.copy_s
    values: list[Any] = [len(r.kernels), 1e3 * wall, 1e3 * compile_s, 1e3 * run_s,
                         1e3 * copy_s, 1e3 * r.no_device_s]
    values += [_e(s.text) for s in r.suggestions]
    add, peaks, on = values.append, r.peaks, wall > 0
    for d in devices:
        parts = (d.compile_s, d.run_s, d.copy_s, max(d.wall_s - d.busy_s, 0.0))  # idle_s
        key += (d.device, peaks.get(d.device))
        for s in parts:  # a bar's span for each part of its time there is
            if on and s > 0:
                key.append(True)
                values += (100 * s / wall, 1e3 * s)
            else:
                key.append(False)
        values += (1e3 * parts[0], 1e3 * parts[1], 1e3 * parts[2], 1e3 * parts[3])
    for k in kernels:
        gb, gflop, x, roof, n = k.gb_per_s, k.gflop_per_s, k.share, k.roofline, k.nbytes
        # a kernel's key changes from run to run (its inputs' tokens): a slot, not layout
        values += (_e(k.key), 1e3 * k.run_s, 1e3 * k.compile_s, min(max(x, 0.0), 1.0) * 80,
                   100 * x)
        if n is not None:
            add(n / 1e6)
        if gb is not None:
            add(gb)
        if gflop is not None:
            add(gflop)
        if roof is not None:
            add(100 * roof)
            state: Any = k.bound
        else:
            state = k.peak is None or not k.peak.gb_per_s  # "peak unknown", else a dash
        key += (k.name, k.op, k.devices, n is None, gb is None, gflop is None,
                k.flops_estimated, state)
    for o in ops:
        x = o.share
        values += (o.count, 1e3 * o.seconds, min(max(x, 0.0), 1.0) * 80, 100 * x)
        key += (o.op, o.kernels)
    for c in copies:
        x, seconds = c.share, c.seconds
        values += (c.count, c.nbytes / 1e6, 1e3 * seconds)
        if seconds > 0:  # its GB/s
            add(c.nbytes / seconds / 1e9)
        values += (min(max(x, 0.0), 1.0) * 80, 100 * x)
        key += (c.source, c.device, seconds > 0)
    return tuple(key), tuple(values)


def _template(r: Report) -> str:
    """The %-template of ``r``'s layout (:func:`_layout` says what fills its slots)."""
    wall = r.wall_s
    out = [_fixed(_HEAD), "<h3>Hotspot report: %d kernel(s) in %.2f ms</h3><p>"
           "compile %.2f ms · run %.2f ms · copies %.2f ms · no device busy %.2f ms</p>"
           "<h3>Suggestions</h3><ul>"]
    out += ["<li>%s</li>"] * len(r.suggestions) or [_NOTHING]
    out.append(_fixed(_DEVICES_HEAD))
    for d in r.devices:
        parts = (d.compile_s, d.run_s, d.copy_s, max(d.wall_s - d.busy_s, 0.0))
        spans = "".join(f"<span style='width:%.2f%%;background:{color}' title='{name} %.2f ms'>"
                        "</span>" for (name, color), s in zip(PARTS, parts) if wall > 0 and s > 0)
        peak = r.peaks.get(d.device)
        figures = ("peak unknown" if peak is None else
                   f"{_rate(peak.gb_per_s, 'GB/s')}, {_rate(peak.gflop_per_s, 'GFLOP/s')}")
        out.append(f"<tr><td>{_lit(d.device)}</td><td><div class='bar'>{spans}</div></td>"
                   "<td>%.2f ms</td><td>%.2f ms</td><td>%.2f ms</td><td>%.2f ms</td>"
                   f"<td>{_lit(figures)}</td></tr>")
    out.append(_fixed(_KERNELS_HEAD))
    for k in r.kernels[:TOP]:
        gflop, roof = k.gflop_per_s, k.roofline
        if roof is None:
            roofs = "peak unknown" if k.peak is None or not k.peak.gb_per_s else "—"
        else:  # its words need no escaping
            roofs = f"%.0f%% of {k.bound} peak"
        star = "*" if gflop is not None and k.flops_estimated else ""
        out.append(f"<tr><td title='%s'>{_lit(k.name)}</td><td>{_lit(k.op)}</td>"
                   f"<td>{_lit(', '.join(k.devices))}</td><td>%.3f</td><td>%.1f</td>{_SHARE}"
                   f"<td>{'—' if k.nbytes is None else '%.2f MB'}</td>"
                   f"<td>{'—' if k.gb_per_s is None else '%.3g'}</td>"
                   f"<td>{'—' if gflop is None else '%.3g'}{star}</td><td>{roofs}</td></tr>")
    out.append(_fixed(_OPS_HEAD))
    for o in r.ops[:TOP]:
        out.append(f"<tr><td>{_lit(o.op)}</td><td>%d</td><td>{_lit(', '.join(o.kernels)[:80])}"
                   f"</td><td>%.3f</td>{_SHARE}</tr>")
    out.append("</tbody></table><h3>Copies</h3>")
    if not r.copies:
        out.append("<p class='note'>No copies between devices.</p>")
    else:
        out.append(_fixed(_COPIES_HEAD))
        for c in r.copies:
            out.append(f"<tr><td>{_lit(c.source)} → {_lit(c.device)}</td><td>%d</td>"
                       f"<td>%.2f MB</td><td>%.3f</td><td>{'—' if c.gb_per_s is None else '%.3g'}"
                       f"</td>{_SHARE}</tr>")
        out.append("</tbody></table>")
    out.append(f"<h3>What fusion saved</h3><p>{_lit(_fusion_line(r))}</p>"
               if r.fusion is not None else "<h3>What fusion saved</h3><p class='note'>No "
               "plan kept for this run: fusion savings unknown.</p>")
    out.append(_fixed(NOTE))
    out.append("</div>")
    return "".join(out)


def fragment(r: Report) -> str:
    """The report as a block of HTML for a notebook output (its style included): its
    layout's template, made once, with this run's figures written in."""
    key, values = _layout(r)
    template = _layouts.get(key)
    if template is None:
        if len(_layouts) >= LAYOUTS:
            _layouts.clear()
        template = _layouts[key] = _template(r)
    return template % values


def document(r: Report) -> str:
    """A standalone HTML page of the report."""
    return ("<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>"
            "<title>Hermes hotspot report</title></head>"
            f"<body>{fragment(r)}</body></html>\n")
