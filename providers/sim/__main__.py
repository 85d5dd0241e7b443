"""`python -m providers.sim`: run the simulated upstreams in the foreground."""

from __future__ import annotations

import argparse
from collections.abc import Sequence

from providers.sim.server import SimConfig, run


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m providers.sim",
        description="Simulated AI upstreams (OpenAI wire protocol under /openai, ...).",
    )
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8900, help="0 picks a free port")
    parser.add_argument("--ttft-ms", type=float, default=0.0, help="time to first token")
    parser.add_argument(
        "--tokens-per-second", type=float, default=0.0, help="streaming pace (0: no pacing)"
    )
    parser.add_argument("--default-max-tokens", type=int, default=20)
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> None:
    args = parse_args(argv)
    config = SimConfig(
        ttft_ms=args.ttft_ms,
        tokens_per_second=args.tokens_per_second,
        default_max_tokens=args.default_max_tokens,
    )
    run(args.host, args.port, config)


if __name__ == "__main__":
    main()
