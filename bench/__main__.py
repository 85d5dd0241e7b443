"""`python -m bench [--quick] [--skip-litellm] [--only SECTION,...]`: run the benchmarks.

Starts the simulator, the gateway and (unless skipped) LiteLLM, runs the sections in
order, and writes one summary per run: `bench/results/<date>.json` (everything measured) and
`<date>.png` (one chart). The Markdown summary goes to stdout (`--report` renders it again
from the JSON); a full run also refreshes it in `bench/README.md`. Progress goes to stderr.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
import traceback
from collections.abc import Callable, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

import attrs

from bench import (
    budget,
    charts,
    checks,
    floor,
    fronts,
    hotpath,
    instructions,
    machine,
    observability,
    procs,
    report,
    sections,
    workers,
)
from bench.plan import RUN_ORDER, SECTIONS, Plan, Run
from bench.stack import GATEWAY_ENV, Stack, running_stack

RESULTS = Path(__file__).resolve().parent / "results"
QUICK_SECTIONS = tuple(s for s in SECTIONS if s != "instructions")
FD_LIMIT = 20_000
QUIET_LOAD = 1.0


def parse_args(argv: Sequence[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__)
    parser.add_argument("--quick", action="store_true", help="a first look in under a minute")
    parser.add_argument("--skip-litellm", action="store_true", help="no LiteLLM comparison")
    parser.add_argument(
        "--litellm", action="store_true", help="with --quick: include LiteLLM (adds ~20 s)"
    )
    parser.add_argument(
        "--only",
        type=_sections,
        default=None,
        help=f"comma-separated: {','.join(SECTIONS)} (default: all; --quick leaves out"
        " instructions, which runs the servers under valgrind for minutes)",
    )
    parser.add_argument("--json", action="store_true", help="print the results JSON on stdout")
    parser.add_argument(
        "--report",
        type=Path,
        metavar="JSON",
        help="measure nothing: re-render the summary and charts of a results file",
    )
    parser.add_argument(
        "--wait-quiet",
        type=float,
        default=0.0,
        metavar="S",
        help="first wait up to S seconds for the 1-minute load average to drop below 1",
    )
    return parser.parse_args(argv)


def _sections(text: str) -> tuple[str, ...]:
    chosen = tuple(part.strip() for part in text.split(",") if part.strip())
    unknown = set(chosen) - set(SECTIONS)
    if unknown:
        raise argparse.ArgumentTypeError(f"unknown sections: {', '.join(sorted(unknown))}")
    return tuple(s for s in SECTIONS if s in chosen)


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    args = parse_args(argv)
    if args.report:
        return _rerender(args.report)
    if args.only is None:
        args.only = QUICK_SECTIONS if args.quick else SECTIONS
    plan = Plan.quick_look() if args.quick else Plan.full()
    with_litellm = not args.skip_litellm and (args.litellm or not args.quick)
    pinning = machine.plan_pinning()
    procs.raise_fd_limit(FD_LIMIT)  # inherited by every process started below
    os.sched_setaffinity(0, set(pinning.load))  # this process is the load generator
    chart_problem = charts.ensure_matplotlib()
    work = Path(tempfile.mkdtemp(prefix="gateway-bench-"))
    run = Run(plan, work, machine.describe(), pinning)
    run.say(f"machine: {run.machine.label()}; scratch files in {work}")
    _wait_quiet(run, args.wait_quiet)
    try:
        results = _measure(run, args, with_litellm)
    except procs.ProcessFailed as exc:
        run.say(f"a process under test failed; logs kept in {work}\n{exc}")
        return 1
    results["command"] = " ".join(["python -m bench", *argv])
    stamp = datetime.now().strftime("%Y-%m-%d-%H%M%S") + ("-quick" if plan.quick else "")
    every_section = not args.quick and args.only == SECTIONS
    verdicts = _write(RESULTS / stamp, results, chart_problem, update_readme=every_section)
    run.say(f"results written under {RESULTS}")
    if args.json:
        print(json.dumps(results, indent=2))
    shutil.rmtree(work, ignore_errors=True)
    return _guard(verdicts) if args.quick else 0


def _guard(verdicts: list[checks.Check]) -> int:
    """The regression guard of `make bench-quick`: non-zero when a guarded figure (the
    hot path's, against the floor of the same run) is more than 15 % below its target."""
    failed = [c for c in verdicts if c.guard_failed]
    for check in failed:
        print(
            f"GUARD: {check.name}: {check.value} {check.unit}, target {check.target}"
            f" (at {check.score:.0%} of it, under {1 - checks.GUARD_SHORTFALL:.0%})",
            file=sys.stderr,
        )
    return 3 if failed else 0


def _wait_quiet(run: Run, seconds: float) -> None:
    """Other work on the machine skews every figure: give it a chance to finish."""
    give_up = time.monotonic() + seconds
    while os.getloadavg()[0] >= QUIET_LOAD and time.monotonic() < give_up:
        run.say(f"waiting for a quiet machine: load average {os.getloadavg()[0]:.2f}")
        time.sleep(10)


def _measure(run: Run, args: argparse.Namespace, with_litellm: bool) -> dict[str, Any]:
    load_before = os.getloadavg()
    run.say("starting the simulator, the gateway" + (" and LiteLLM" if with_litellm else ""))
    why_not = "--skip-litellm" if args.skip_litellm else "--quick without --litellm"
    with running_stack(
        run.work, run.pinning, with_litellm=with_litellm, skipped_because=why_not
    ) as stack:
        run.say(f"targets ready: {', '.join(stack.targets)}; LiteLLM: {stack.litellm_note}")
        measured = _run_sections(run, stack, args.only)
    return {
        "date": datetime.now().astimezone().isoformat(timespec="seconds"),
        "machine": _asdict(run.machine),
        "pinning": _asdict(run.pinning),
        "plan": run.plan.to_json(),
        "litellm": {"note": stack.litellm_note, "version": stack.litellm_version},
        "gateway_env": GATEWAY_ENV,
        "elapsed_s": round(time.monotonic() - run.started, 1),
        # Other work on the machine skews every figure: the report says how busy it was.
        "load_average_before": [round(x, 2) for x in load_before],
        "load_average_after": [round(x, 2) for x in os.getloadavg()],
        "sections": measured,
    }


def _run_sections(run: Run, stack: Stack, chosen: tuple[str, ...]) -> dict[str, Any]:
    """Each chosen section in order; one that fails is reported and the run goes on."""
    measured: dict[str, Any] = {}
    steps: dict[str, Callable[[], dict[str, Any]]] = {
        "nonstream": lambda: sections.nonstream(run, stack),
        "stream": lambda: sections.stream(run, stack),
        "open-streams": lambda: sections.open_streams(run, stack),
        "soak": lambda: sections.soak(run, stack),
        "ceiling": lambda: sections.ceiling(run, stack, measured),
        "floor": lambda: floor.floor(run, stack, measured),
        "workers": lambda: workers.workers(run, stack),
        "fronts": lambda: fronts.fronts(run, stack),
        "observability": lambda: observability.observability(run, stack),
        "hotpath": lambda: hotpath.hotpath(run, stack),
        "budget": lambda: budget.budget(run, stack),
        "instructions": lambda: instructions.instructions(run, stack),
    }
    for name in RUN_ORDER:
        if name not in chosen:
            continue
        run.say(f"section {SECTIONS.index(name) + 1}: {name}")
        try:
            measured[name] = steps[name]()
        except Exception as exc:
            traceback.print_exc()
            run.say(f"section {name} failed: {exc!r}")
            measured[name] = {"error": repr(exc)}
        for proc in (stack.sim, stack.gateway):
            proc.check_alive()
    return measured


def _asdict(value: Any) -> dict[str, Any]:
    return attrs.asdict(value)


def _rerender(path: Path) -> int:
    """Write the JSON and chart of `path` again and print its summary, with the current
    checks (and the soak's figures recomputed from its samples); the README too for a full
    run."""
    results = json.loads(path.read_text())
    soak = results["sections"].get("soak")
    if soak and "samples" in soak:
        series = [(t, rss, fds) for t, rss, fds in soak["samples"]]
        soak |= sections.soak_figures(series, warmup_s=soak["warmup_s"], until_s=soak["duration_s"])
    complete = all(name in results["sections"] for name in SECTIONS)
    _write(
        path.with_suffix(""),
        results,
        charts.ensure_matplotlib(),
        update_readme=complete and not results["plan"]["quick"],
    )
    return 0


def _write(
    stem: Path, results: dict[str, Any], chart_problem: str | None, *, update_readme: bool
) -> list[checks.Check]:
    """The run's summary: `<stem>.json` and `<stem>.png`, nothing else (the Markdown is
    printed, and rendered again from the JSON by `--report`)."""
    stem.parent.mkdir(exist_ok=True)
    verdicts = checks.evaluate(results)
    results["checks"] = [c.to_json() for c in verdicts]
    chart: Path | None = None
    if chart_problem is None:
        chart = charts.draw(results, stem.with_suffix(".png"))
    else:
        results["charts_missing"] = chart_problem
    report.write_json(stem.with_suffix(".json"), results)
    if update_readme:
        report.update_readme(report.markdown(results, verdicts, chart, chart_dir="results/"))
    print(report.markdown(results, verdicts, chart))
    return verdicts


if __name__ == "__main__":
    sys.exit(main())
