"""GET /v1/sustainability/*: carbon and energy reports over the caller's workspace usage.

Reading them is the `view_analytics` action (every role may: the spec's viewer role is
"read-only access to analytics"); the workspace is the one `X-Workspace-ID` names. Each
report declares its query (read here with `gateway.platform.shapes` before the period's
own rules, `gateway.sustainability.period`) and its answer (`gateway.sustainability.answers`),
from which the OpenAPI document is written.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import Annotated

import attrs
from quart import Blueprint, Response, request

from gateway.platform.apidoc import MARK, WORKSPACE_HEADER, Operation
from gateway.platform.auth import Principal
from gateway.platform.shapes import (
    NON_BLANK,
    Choices,
    Doc,
    Format,
    Length,
    Pattern,
    Range,
    parse_query,
)
from gateway.platform.web import json_response
from gateway.sustainability import answers, service
from gateway.sustainability.period import MAX_ANALYSIS_DAYS, MAX_DAYS, TIME_RANGES
from gateway.sustainability.services import SustainabilityServices

Report = Callable[
    [SustainabilityServices, Principal, Mapping[str, str]], Awaitable[Mapping[str, object]]
]
PREFIX = "/v1/sustainability"
TAG = "sustainability"
# A day the reports can compute (1970-01-01 to 9999-12-30: the day after must exist).
Day = Annotated[
    str,
    Format("date"),
    Pattern("^(?!9999-12-31$)(19[7-9][0-9]|[2-9][0-9]{3})-", "a day from 1970 to 9999-12-30"),
]
Label = Annotated[str, NON_BLANK, Length(most=200)]
PERIOD_ERRORS = {400: "invalid_period"}


@attrs.frozen
class ReportQuery:
    """A period (both dates, or a named range; the last 7 days by default) and the
    requests' labels to keep. Dates that do not make a period together (an end before
    the start, one without the other, over a year, with `time_range`) are `invalid_period`."""

    start_date: Annotated[Day | None, Doc("First UTC day, with end_date")] = None
    end_date: Annotated[Day | None, Doc(f"Last UTC day, included; at most {MAX_DAYS} days")] = None
    time_range: Annotated[str, Choices(TIME_RANGES)] | None = None
    project_id: Annotated[Label | None, Doc("Requests sent with this X-Service-Project")] = None
    team_id: Annotated[Label | None, Doc("Requests sent with this X-Service-Team")] = None


@attrs.frozen
class AnalysisQuery:
    """The days analysed, up to today (7 by default), and the requests' labels to keep."""

    days: Annotated[int, Range(least=1, most=MAX_ANALYSIS_DAYS)] | None = None
    project_id: Annotated[Label | None, Doc("Requests sent with this X-Service-Project")] = None
    team_id: Annotated[Label | None, Doc("Requests sent with this X-Service-Team")] = None


def _report_operation(summary: str, query: type, answer: type, errors: dict[int, str]) -> Operation:
    return Operation(
        summary=summary,
        tag=TAG,
        query=query,
        answer=answer,
        errors=errors,
        headers=(WORKSPACE_HEADER,),
        permission="view_analytics",
    )


REPORTS: tuple[tuple[str, str, Report, type, Operation], ...] = (
    (
        "dashboard",
        "dashboard",
        service.dashboard,
        ReportQuery,
        _report_operation(
            "Carbon and energy of the workspace's requests over a period",
            ReportQuery,
            answers.Dashboard,
            PERIOD_ERRORS,
        ),
    ),
    (
        "efficiency-score",
        "efficiency_score",
        service.efficiency_score,
        ReportQuery,
        _report_operation(
            "The efficiency score, its components, trend and recommendations",
            ReportQuery,
            answers.EfficiencyReport,
            PERIOD_ERRORS,
        ),
    ),
    (
        "optimization-opportunities",
        "optimization_opportunities",
        service.opportunities_report,
        AnalysisQuery,
        _report_operation(
            "Carbon savings found in the workspace's actual usage, re-priced under each change",
            AnalysisQuery,
            answers.OpportunitiesReport,
            {},
        ),
    ),
    (
        "optimization-summary",
        "optimization_summary",
        service.optimization_summary,
        AnalysisQuery,
        _report_operation(
            "The opportunities in brief: counts, total savings, quick wins",
            AnalysisQuery,
            answers.OpportunitiesSummary,
            {},
        ),
    ),
)


def sustainability_blueprint(sustainability: SustainabilityServices) -> Blueprint:
    bp = Blueprint("sustainability", __name__)
    for path, name, report, query, declared in REPORTS:
        handler = _handler(sustainability, report, query)
        setattr(handler, MARK, declared)  # what `@operation` marks a view with
        bp.add_url_rule(f"{PREFIX}/{path}", name, handler, methods=["GET"])
    return bp


def _handler(
    sustainability: SustainabilityServices, report: Report, query: type
) -> Callable[[], Awaitable[Response]]:
    async def handle() -> Response:
        principal = await sustainability.auth.manager("view_analytics")
        parse_query(query, request.args)  # each parameter as declared; the period's rules next
        return json_response(await report(sustainability, principal, request.args.to_dict()))

    return handle
