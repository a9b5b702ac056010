"""The ``hermes`` command line: ``devices``, ``doctor``, ``cache``, ``demo``."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence


def _devices(show_all: bool) -> int:
    from hermes_nb.backends import devices
    from hermes_nb.backends.memory import memory_text

    for d in devices():
        info = d.info()
        extra = f"  driver={info['driver']}" if "driver" in info else ""
        print(
            f"{d.id:<10} {d.name}  memory={memory_text(d)}  "
            f"compute_units={d.compute_units}  fp64={'yes' if d.fp64 else 'no'}{extra}"
        )
    if show_all:
        from hermes_nb.backends.opencl.device import hidden_devices

        for hidden in hidden_devices():
            print(f"{'-':<10} {hidden.name}  driver={hidden.driver}  not used: {hidden.reason}")
    return 0


def _cache(action: str) -> int:
    from hermes_nb.backends.opencl import cache_trim
    from hermes_nb.cache import cache_dir, cache_sizes, clear_all

    sizes = cache_sizes()
    if action == "info":
        for name, size in sorted(sizes.items()):
            print(f"{size / 2**20:8.1f} MiB  {cache_dir(name)}")
        return 0
    if action == "trim":
        report = cache_trim.trim_driver_caches(cache_dir("pocl"))
        print(f"driver caches: removed {len(report.removed_folders)} unused folder(s) and "
              f"{report.evicted_programs} program(s), {report.freed_bytes / 2**20:.1f} MiB")
        _print_busy(report.busy_folders)
        return 0
    # the driver folders first, each once no process builds in it; the rest after
    _, busy = cache_trim.remove_driver_folders(cache_dir("pocl"))
    removed = clear_all(keep=("pocl",) if busy else ())
    print(f"removed {len(removed)} cache(s), {sum(sizes.values()) / 2**20:.1f} MiB, from {cache_dir()}")
    _print_busy(busy)
    return 1 if busy else 0


def _print_busy(busy: list) -> None:
    for folder in busy:
        print(f"in use by another process, left as it is: {folder}")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="hermes", description="Hermes heterogeneous computing")
    sub = parser.add_subparsers(dest="command", required=True)
    listing = sub.add_parser("devices", help="list the devices Hermes can run on")
    listing.add_argument("--all", action="store_true",
                         help="also list devices left out (duplicate drivers, failed self-tests)")
    sub.add_parser("doctor", help="check drivers, self-tests, caches and a sample pipeline")
    cache = sub.add_parser("cache", help="show or empty the caches Hermes keeps")
    cache.add_argument("action", choices=["info", "trim", "clear"],
                       help="info: sizes; trim: what a daily trim removes, now; clear: all")
    sub.add_parser("demo", help="run the headless demo on every device")
    args = parser.parse_args(argv)
    if args.command == "devices":
        return _devices(args.all)
    if args.command == "doctor":
        from hermes_nb.doctor import main as doctor

        return doctor()
    if args.command == "cache":
        return _cache(args.action)
    from hermes_nb.demo import main as demo

    return demo()


if __name__ == "__main__":
    sys.exit(main())
