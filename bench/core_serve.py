"""`python -m bench.core_serve ARGS`: `python -m gateway ARGS` as a core install runs it.

Issue 37's memory target is on the core install (`pip install ai-gateway`, no extra), whose
gateway mounts none of the families an extra gates. The bench runs from the project's venv,
where every extra is installed, so this blocks the modules of every extra
(`gateway.platform.extras.EXTRAS`) before the gateway is imported: the composition root
then finds each extra missing (`Extra.installed`) and mounts what a core install mounts,
and an optional import of one of those packages fails as it would there. The usage
writer's child is started afresh (`python -m`) and is not affected: it imports none of
them either way.
"""

from __future__ import annotations

import sys

from gateway.platform.extras import EXTRAS


def block_extras() -> tuple[str, ...]:
    """Make every extra's modules unimportable in this process; the names blocked."""
    blocked = tuple(sorted({module for extra in EXTRAS for module in extra.modules}))
    for module in blocked:
        sys.modules[module] = None  # type: ignore[assignment]  # how `import` spells "absent"
    return blocked


def main(argv: list[str] | None = None) -> int:
    block_extras()
    from gateway.app.cli import main as gateway_main

    return gateway_main(sys.argv[1:] if argv is None else argv)


if __name__ == "__main__":
    raise SystemExit(main())
