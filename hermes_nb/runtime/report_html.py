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
_layouts: dict[tuple[Any, ...], list[str | None]] = {}  # [HTML, text], each made once asked
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
    for s in r.suggestions:  # escaped for the HTML, as it is for the text
        values += (_e(s.text), s.text)
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
    out += ["<li>%s</li>%.0s"] * len(r.suggestions) or [_NOTHING]
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


def _text_template(r: Report) -> str:
    """The plain-text %-template of ``r``'s layout: the same slots as the HTML's, in the same
    order (``%.0s`` takes a slot the text does not show: a bar's width, a kernel's key)."""
    wall = r.wall_s
    out = ["Hotspot report: %d kernel(s) in %.2f ms wall (compile %.2f ms, run %.2f ms, "
           "copies %.2f ms, no device busy %.2f ms)\n\nsuggestions:\n"]
    out += ["%.0s  - %s\n"] * len(r.suggestions) or ["  (none: nothing stands out)\n"]
    out.append("\ndevice      compile        run     copies       idle  peak\n")
    for d in r.devices:
        parts = (d.compile_s, d.run_s, d.copy_s, max(d.wall_s - d.busy_s, 0.0))
        bar = "%.0s%.0s" * sum(1 for s in parts if wall > 0 and s > 0)
        peak = r.peaks.get(d.device)
        figures = ("peak unknown" if peak is None else
                   f"{_rate(peak.gb_per_s, 'GB/s')}, {_rate(peak.gflop_per_s, 'GFLOP/s')}")
        out.append(f"{_fixed(f'{d.device:<10}')}{bar}" + "%8.2f ms" * 4 + f"  {_fixed(figures)}\n")
    out.append(f"\n{'kernel':<34} {'device':<10} {'ms':>9} {'compile':>9} {'share':>6} "
               f"{'MB':>9} {'GB/s':>8} {'GFLOP/s':>8}  roofline\n")
    dash = f"{'—':>8}"
    for k in r.kernels[:TOP]:
        roof = (f"%.0f%% of {k.bound} peak" if k.roofline is not None else
                "peak unknown" if k.peak is None or not k.peak.gb_per_s else "—")
        out.append(f"%.0s{_fixed(f'{k.name[:34]:<34} {_comma(k.devices):<10}')} %9.3f %9.1f "
                   f"%.0s%5.1f%% {' ' + dash if k.nbytes is None else '%9.2f'} "
                   f"{dash if k.gb_per_s is None else '%8.3g'} "
                   f"{dash if k.gflop_per_s is None else '%8.3g'}  {roof}\n")
    out.append("\nop (before fusion)            count         ms  share\n")
    for o in r.ops[:TOP]:
        out.append(f"{_fixed(f'{o.op[:28]:<28}')} %6d %10.3f %.0s%5.1f%%\n")
    for c in r.copies:
        out.append(f"copies {_fixed(c.source)} -> {_fixed(c.device)}: %d (%.2f MB) in %.2f ms, "
                   f"{'%.0s' if c.seconds > 0 else ''}%.0s%.0f%% of the wall time\n")
    if r.fusion is not None:
        out.append(f"\n{_fixed(_fusion_line(r))}\n")
    out.append(_fixed(f"\n{IDLE_MEANS}.\n{HOST_MEANS}.\n{FLOPS_MEANS}."))
    return "".join(out)


def _comma(devices: tuple[str, ...]) -> str:
    return ",".join(devices)


def _formats(r: Report, html: bool, plain: bool) -> tuple[str, str]:
    """The report's HTML and text (each "" unless asked for), from its layout's templates,
    made once, with this run's figures written in."""
    key, values = _layout(r)
    templates = _layouts.get(key)
    if templates is None:
        if len(_layouts) >= LAYOUTS:
            _layouts.clear()
        templates = _layouts[key] = [None, None]
    page, lines = templates
    if html and page is None:
        page = templates[0] = _template(r)
    if plain and lines is None:
        lines = templates[1] = _text_template(r)
    return (page % values if page is not None and html else "",
            lines % values if lines is not None and plain else "")


def fragment(r: Report) -> str:
    """The report as a block of HTML for a notebook output (its style included)."""
    return _formats(r, True, False)[0]


def text(r: Report) -> str:
    """The report as plain text (what ``print`` shows)."""
    return _formats(r, False, True)[1]


def mimebundle(r: Report) -> dict[str, str]:
    """The report's HTML and text for a notebook output, its figures formatted once."""
    html_text, plain = _formats(r, True, True)
    return {"text/plain": plain, "text/html": html_text}


def document(r: Report) -> str:
    """A standalone HTML page of the report."""
    return ("<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>"
            "<title>Hermes hotspot report</title></head>"
            f"<body>{fragment(r)}</body></html>\n")
