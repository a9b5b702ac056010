"""The ``hermes`` command line: ``hermes devices``."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence


def _devices() -> int:
    from hermes_nb.devices import devices

    for d in devices():
        print(
            f"{d.id:<10} {d.name}  memory={d.memory_bytes / 2**30:.1f} GiB  "
            f"compute_units={d.compute_units}  fp64={'yes' if d.fp64 else 'no'}"
        )
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="hermes", description="Hermes heterogeneous computing")
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("devices", help="list the devices Hermes can run on")
    sub.add_parser("demo", help="run the headless demo on every device")
    args = parser.parse_args(argv)
    if args.command == "devices":
        return _devices()
    from hermes_nb.demo import main as demo

    return demo()


if __name__ == "__main__":
    sys.exit(main())
