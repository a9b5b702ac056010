"""The ``%%hermes`` cell magic and ``%hermes`` line magic.

``%%hermes [--device D] [--policy P] [--no-fuse] [--explain] [--profile] [--timeline]
[--placement] [--fusion] [--trace FILE] [--report[=FILE]]`` runs the cell with those settings
scoped to it, then computes every lazy tensor the cell assigned to a name in one graph (so
shared work runs once), rebinds the names to the results, and shows a summary and the views asked for.

``%hermes devices|load|options|explain NAME`` shows tables (and the live load monitor);
``%hermes log [--device D] [--level L] [--kernel K] [--category C]`` the Hermes log view.

A cell fails as a plain Python cell fails (the kernel replies ``error``, so "Run All" and
nbclient stop there): a bad option is a one-line ``UsageError``; an error in the cell's code
shows IPython's usual traceback of the user's line; a failed compute shows one line naming
the error. ``$name`` / ``{expr}`` in the options are expanded from the user's namespace only
in lines of up to ``EXPAND_MAX_CHARS`` characters (IPython's own expansion takes seconds on
long lines).
"""

from __future__ import annotations

import argparse
import difflib
import functools
import os
import shlex
import time
from contextlib import ExitStack
from typing import Any

from IPython.core.error import UsageError
from IPython.core.magic import Magics, line_cell_magic, magics_class, no_var_expand
from IPython.display import display

from hermes_nb import backends, context
from hermes_nb.api.tensor import Tensor, compute
from hermes_nb.notebook.reprs import LoadTable, NamedPlans, RunSummary, device_table
from hermes_nb.runtime import monitor as runtime_monitor
from hermes_nb.runtime.profile import last_profile
from hermes_nb.runtime.profile import naming as profile_naming
from hermes_nb.runtime.report import report as hotspot_report
from hermes_nb.scheduler.scope import POLICIES

CELL_USAGE = ("usage: %%hermes [--device D] [--policy P] [--no-fuse] [--explain] [--profile] "
              "[--timeline] [--placement] [--fusion] [--trace FILE] [--report[=FILE]]")
LINE_USAGE = "usage: %hermes devices | load | options | explain NAME | log [--device D] [--level L]"

_MISSING = object()
EXPAND_MAX_CHARS = 256


class _UsageError(Exception):
    pass


class _Parser(argparse.ArgumentParser):
    # argparse would print usage and sys.exit(), which in a kernel is a traceback wall;
    # raising lets the magic print one line instead
    def error(self, message: str) -> Any:
        raise _UsageError(message)

    def parse_args(self, args: Any = None, namespace: Any = None) -> Any:
        known, unknown = self.parse_known_args(args, namespace)
        if unknown:
            raise _UsageError(_unrecognized(unknown[0], self._option_string_actions))
        return known


def _unrecognized(word: str, options: Any) -> str:
    """``unrecognized arguments: --devcie (did you mean --device?)``: the option names are
    compared without their dashes, which every one shares."""
    flag = word.split("=", 1)[0]
    names = {o.lstrip("-"): o for o in options if o.startswith("--")}
    guess = flag.startswith("--") and len(flag) <= 40  # difflib's time grows with the length
    close = difflib.get_close_matches(flag.lstrip("-"), names, n=1) if guess else []
    hint = f" (did you mean {names[close[0]]}?)" if close else ""
    shown = word if len(word) <= 60 else f"{word[:57]}..."
    return f"unrecognized arguments: {shown}{hint}"


def _cell_parser() -> _Parser:
    parser = _Parser(prog="%%hermes", add_help=False, allow_abbrev=False)
    parser.add_argument("--device", default=None)
    parser.add_argument("--policy", default=None)
    parser.add_argument("--no-fuse", dest="fuse", action="store_false")
    parser.add_argument("--explain", action="store_true")
    parser.add_argument("--profile", action="store_true")
    parser.add_argument("--timeline", action="store_true")
    parser.add_argument("--placement", action="store_true")
    parser.add_argument("--fusion", action="store_true")
    parser.add_argument("--trace", metavar="FILE", default=None)
    # --report shows the hotspot report after the cell; --report=FILE writes it as HTML
    parser.add_argument("--report", metavar="FILE", nargs="?", const="", default=None)
    return parser


@functools.lru_cache(maxsize=64)
def _parsed(line: str) -> tuple[tuple[str, Any], ...]:
    """The options of a ``%%hermes`` line, parsed once per line (a notebook reruns the same
    cells; building the parser and splitting the line cost more than the options' checks)."""
    return tuple(vars(_cell_parser().parse_args(shlex.split(line))).items())


def _widgets_available() -> bool:
    try:
        import ipywidgets  # noqa: F401
        import jupyter_bokeh  # noqa: F401
    except ImportError:
        return False
    return True


def _usage(message: str) -> UsageError:
    """A one-line error IPython shows without a traceback, failing the cell."""
    return UsageError(f"hermes: {message}")


def _show_as_one_line(exc: BaseException, message: str) -> None:
    """Make IPython show ``exc`` as ``message`` alone instead of a traceback."""
    exc._render_traceback_ = lambda: [message]  # type: ignore[attr-defined]


def _new_lazy_tensors(before: dict[str, Any], after: dict[str, Any]) -> dict[str, Tensor]:
    """Names the cell bound (new or rebound) to a lazy Tensor; ``_``-names are IPython's."""
    return {
        name: value
        for name, value in after.items()
        if not name.startswith("_")
        and isinstance(value, Tensor)
        and not value.is_materialized
        and before.get(name, _MISSING) is not value
    }


@magics_class
class HermesMagics(Magics):
    @no_var_expand
    @line_cell_magic
    def hermes(self, line: str, cell: str | None = None) -> None:
        """%%hermes [--device D] [--policy P] [--no-fuse] [--explain] [--profile] [--timeline]
        [--placement] [--fusion] [--trace FILE] [--report[=FILE]]
        %hermes devices | load | options | explain NAME | log [--device D] [--level L]
        """
        line = self._expand(line)
        if cell is None:
            self._line(line)
        else:
            self._cell(line, cell)

    def _expand(self, line: str) -> str:
        """``$name`` and ``{expr}`` from the user's namespace, as IPython expands a magic's
        line, for lines short enough for IPython's expansion to be quick."""
        if len(line) > EXPAND_MAX_CHARS or ("$" not in line and "{" not in line):
            return line
        from IPython.utils.text import DollarFormatter

        try:
            return DollarFormatter().vformat(line, args=[], kwargs=self.shell.user_ns)
        except Exception:  # as IPython does: a line that does not expand is used as it is
            return line

    # ---- line magic ---------------------------------------------------------------
    def _line(self, line: str) -> None:
        words = line.split()
        if words == ["devices"]:
            display(device_table())
        elif words == ["load"]:
            display(LoadTable(tuple(runtime_monitor.load())))
            if _widgets_available():
                # one live monitor per shell: a new one replaces (and stops) the last
                previous = getattr(self, "_monitor", None)
                if previous is not None:
                    previous.close()
                from hermes_nb.widgets.monitor import load_monitor  # needs ipywidgets

                self._monitor = load_monitor()
                display(self._monitor)
        elif words == ["options"]:
            from hermes_nb.context import pinned_device

            opts = context.current_options()
            print(f"hermes: device={pinned_device() or 'unpinned'} policy={context.current_policy()} "
                  f"fuse={opts.fuse} coexec={opts.coexec} progress={opts.progress}")
        elif words[:1] == ["log"]:
            display(_log_view(words[1:]))
        elif len(words) == 2 and words[0] == "explain":
            value = self.shell.user_ns.get(words[1], _MISSING)
            if not isinstance(value, Tensor):
                raise _usage(f"explain: {words[1]!r} is not a Tensor in this namespace")
            display(self._lazy_form(words[1], value).explain())
        else:
            raise _usage(LINE_USAGE)

    def _lazy_form(self, name: str, value: Tensor) -> Tensor:
        """The expression a ``%%hermes`` cell computed into ``name``, while ``name`` still holds
        that result: explaining it shows the kernels the cell ran, not an empty plan."""
        result, lazy = getattr(self, "_computed", {}).get(name, (None, None))
        return lazy if result is value and lazy is not None else value

    # ---- cell magic ---------------------------------------------------------------
    def _cell(self, line: str, cell: str) -> None:
        try:
            args = argparse.Namespace(**dict(_parsed(line)))
            if args.device is not None:
                backends.get_device(args.device)  # validate before running anything
            if args.policy is not None and args.policy not in POLICIES:
                raise _UsageError(f"unknown policy {args.policy!r}; choose one of {', '.join(POLICIES)}")
            if (args.timeline or args.placement or args.fusion) and not _widgets_available():
                raise _UsageError("--timeline, --placement and --fusion need ipywidgets and "
                                  "jupyter_bokeh (pip install hermes_nb[notebook])")
            if args.trace is not None:
                _check_trace_path(args.trace)
        except (_UsageError, ValueError, TypeError, OSError) as exc:
            raise _usage(f"{exc} ({CELL_USAGE})") from None

        with ExitStack() as scope:
            # the settings hold for building the graph (device pinning) and for running it
            # (fusion, placement policy), so the compute below stays inside the scope
            if args.device is not None:
                scope.enter_context(context.device(args.device))
            if args.policy is not None:
                scope.enter_context(context.policy(args.policy))
            if not args.fuse:
                scope.enter_context(context.options(fuse=False))

            ns = self.shell.user_ns
            before = dict(ns)
            # run_cell (not exec) so a failing user line gets IPython's usual traceback
            # (SyntaxError included) and IPython's syntax (!, %) works in the cell
            outer = self.shell.displayhook.exec_result  # the result of the %%hermes cell
            result = self.shell.run_cell(cell)
            if not result.success:
                _fail(outer, result.error_before_exec or result.error_in_exec)
                return
            assigned = _new_lazy_tensors(before, ns)

            if args.explain:
                display(NamedPlans(tuple((name, t.explain()) for name, t in assigned.items())))
                return

            # one tensor bound to several names is computed once
            unique: dict[int, Tensor] = {}
            for t in assigned.values():
                unique.setdefault(id(t), t)
            # planned before the run, while the tensors are still lazy expressions
            fusion = _fusion_view(tuple(unique.values())) if args.fusion else None
            previous = last_profile()
            start = time.perf_counter()
            names: dict[str, str] = {}
            for name, t in assigned.items():
                names.setdefault(t.node.key, name)
            try:  # the run knows the names from the start: the history keeps them
                with profile_naming(names):
                    results = compute(*unique.values()) if unique else ()
            except Exception as exc:  # one line, not the runtime's frames
                _show_as_one_line(exc, f"hermes: compute failed: {type(exc).__name__}: {exc}")
                raise
            wall = time.perf_counter() - start

        done = dict(zip(unique, results))
        computed = getattr(self, "_computed", {})
        for name, t in assigned.items():
            ns[name] = done[id(t)]
            computed[name] = (ns[name], t)
        # only names still bound to what a cell computed keep their expression
        self._computed = {n: rt for n, rt in computed.items() if ns.get(n, _MISSING) is rt[0]}
        profile = last_profile()
        if profile is previous:  # nothing ran (no tensors assigned)
            profile = None
        else:  # views and traces name each kernel after the variable it computes
            for name, t in assigned.items():
                profile.variables.setdefault(t.node.key, name)
        kernels = profile.kernels if profile is not None else []
        used = tuple(sorted({k.device for k in kernels}))
        summary = RunSummary(tuple(assigned), len(kernels), used, wall, profile)
        # a report shown shares the summary's output: one output of a cell, one message sent
        made = _report(profile, "") if args.report == "" else None
        _show(summary, *(() if made is None else (made,)))
        if args.profile:
            if profile is not None:
                display(profile)
            else:
                print("hermes: no profile (nothing was computed)")
        self._views(args, profile, fusion)

    def _views(self, args: argparse.Namespace, profile: Any, fusion: Any) -> None:
        """The views the cell asked for, after the run."""
        if args.trace is not None:
            if profile is None:
                print("hermes: no trace written (nothing was computed)")
            else:
                from hermes_nb.runtime.trace import write_trace

                try:
                    path = write_trace(profile, args.trace)
                except OSError as exc:
                    raise _usage(f"--trace: cannot write {args.trace!r}: {exc.strerror or exc}") from None
                print(f"hermes: wrote a Chrome trace of {len(profile.kernels)} kernel(s) to {path} "
                      "(open it in https://ui.perfetto.dev or chrome://tracing)")
        if args.placement or args.timeline:
            from hermes_nb.widgets import placement_view, timeline_view

            if args.placement:
                display(placement_view(profile))
            if args.timeline:  # the task stream: this run after the ones before it
                display(timeline_view(profile))
        if fusion is not None:
            display(fusion)
        if args.report:  # a file
            _report(profile, args.report)


def _fail(outer: Any, error: BaseException | None) -> None:
    """Fail the ``%%hermes`` cell with the error its code raised (IPython has shown it):
    the cell's result carries it, so the kernel replies ``error``. Outside a running cell
    (``run_cell_magic`` called directly) the error is raised."""
    if error is None:
        return
    if outer is None:
        raise error
    outer.error_in_exec = error


def _report(profile: Any, path: str) -> Any:
    """The run's hotspot report, to be shown (returned), or written to ``path`` as
    standalone HTML (None returned)."""
    if profile is None:
        print("hermes: no report (nothing was computed)")
        return None
    made = hotspot_report(profile)
    if not path:
        return made
    try:
        written = made.to_html(path)
    except OSError as exc:
        raise _usage(f"--report: cannot write {path!r}: {exc.strerror or exc}") from None
    print(f"hermes: wrote the hotspot report to {written}")
    return None


def _show(*shown: Any) -> None:
    """Publish objects that make their own mime bundles (text and HTML) as one output, each
    format's parts joined. ``display(obj)`` would ask IPython's formatter, which probes an
    object for each of its ten formats: after a cell, a few hundred microseconds per output,
    twice the report's own cost."""
    bundles = [obj._repr_mimebundle_() for obj in shown]
    if len(bundles) > 1:
        bundles = [{"text/plain": "\n\n".join(b["text/plain"] for b in bundles),
                    "text/html": "".join(b["text/html"] for b in bundles)}]
    display(bundles[0], raw=True)


def _check_trace_path(path: str) -> None:
    """``path`` names a file this user can create or overwrite (checked by opening it)."""
    target = os.path.abspath(path)
    folder = os.path.dirname(target)
    if os.path.isdir(target):
        raise _UsageError(f"--trace: {path!r} is a folder; give a file name")
    if not os.path.isdir(folder):
        raise _UsageError(f"--trace: folder {folder!r} does not exist")
    existed = os.path.exists(target)
    try:
        with open(target, "a"):
            pass
    except OSError as exc:
        raise _UsageError(f"--trace: cannot write {path!r}: {exc.strerror or exc}") from None
    if not existed:
        os.unlink(target)


def _log_view(words: list[str]) -> Any:
    """``%hermes log [--device D] [--level L] [--kernel K] [--category C]``: the recent
    Hermes log records, as a filterable view (a table without ipywidgets)."""
    parser = _Parser(prog="%hermes log", add_help=False, allow_abbrev=False)
    for option in ("--device", "--level", "--kernel", "--category"):
        parser.add_argument(option, default=None)
    try:
        args = parser.parse_args(words)
        from hermes_nb.logrecords import records

        shown = records(**vars(args))  # checks the level
    except (_UsageError, ValueError) as exc:
        raise _usage(f"log: {exc} (usage: %hermes log [--device D] [--level L] [--kernel K] "
                     "[--category C])") from None
    try:
        from hermes_nb.widgets.log import log_view
    except ImportError:  # no ipywidgets: the table alone
        return shown
    return log_view(**vars(args))


def _fusion_view(tensors: tuple[Tensor, ...]) -> Any:
    from hermes_nb.widgets import fusion_view

    return fusion_view(*tensors)


def load_ipython_extension(ip: Any) -> None:
    """Register the magics with an IPython shell (``%load_ext hermes_nb``)."""
    ip.register_magics(HermesMagics)
