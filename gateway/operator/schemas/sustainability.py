"""The sustainability family: dashboard, efficiency score, optimisation opportunities.

Shapes follow `gateway.sustainability` (figures, score, opportunities); the method behind
every figure is in docs/sustainability.md. Every route also answers 404 for an
`X-Workspace-ID` the caller cannot reach.
"""

from __future__ import annotations

from gateway.operator.apidoc import (
    AUTH_ERRORS,
    INT,
    NUM,
    STR,
    STRS,
    Operation,
    Schema,
    all_required,
    arr,
    filled,
    nullable,
    obj,
    query,
)

TAG = "sustainability"
ERRORS = (*AUTH_ERRORS, 404)
DATE: Schema = {"type": "string", "format": "date"}
TYPES: Schema = {
    "enum": [
        "model_downgrade",
        "enable_caching",
        "green_routing",
        "batch_requests",
        "time_shifting",
        "token_optimization",
    ]
}
GRADE: Schema = {"enum": ["A+", "A", "B+", "B", "C+", "C", "D", "F"]}
PERIOD = all_required(start_date=DATE, end_date=DATE, days=INT)
COMPONENT = all_required(
    score=INT,
    weight=NUM,
    description=STR,
    current_value=NUM,
    benchmark=NUM,
    unit=STR,
)
COMPONENTS = all_required(
    carbon_savings_rate=COMPONENT,
    cache_hit_rate=COMPONENT,
    grid_efficiency=COMPONENT,
)
EFFICIENCY = all_required(
    overall_score=INT,
    components=COMPONENTS,
    grade=GRADE,
    percentile=INT,
)


def share(name: str) -> Schema:
    return obj(
        (name, "carbon_gco2e", "percentage"), **{name: STR}, carbon_gco2e=NUM, percentage=NUM
    )


SUMMARY = obj(
    (
        "total_carbon_gco2e",
        "total_energy_kwh",
        "total_requests",
        "avg_carbon_per_request_gco2e",
        "efficiency_score",
        "carbon_trend_percent",
        "breakdown_by_model",
        "breakdown_by_provider",
    ),
    total_carbon_gco2e=NUM,
    total_energy_kwh=NUM,
    total_requests=INT,
    avg_carbon_per_request_gco2e=NUM,
    carbon_per_1k_tokens_gco2e=NUM,
    efficiency_score={"type": "integer", "minimum": 0, "maximum": 100},
    carbon_trend_percent=nullable(NUM),
    breakdown_by_model=arr(share("model")),
    breakdown_by_provider=arr(share("provider")),
)
POINT = all_required(
    date=DATE,
    carbon_gco2e=NUM,
    energy_kwh=NUM,
    requests=INT,
)
DASHBOARD_ITEM = all_required(
    type=TYPES,
    title=STR,
    description=STR,
    potential_savings_kg_co2=NUM,
    implementation=STR,
)
OPPORTUNITY = all_required(
    id=STR,
    type=TYPES,
    priority={"enum": ["high", "medium", "low"]},
    title=STR,
    description=STR,
    affected_requests_percent=NUM,
    potential_savings_kg_co2=NUM,
    potential_savings_percent=NUM,
    implementation=all_required(
        action=STR,
        code_change=STR,
        dashboard_path=STR,
        api_endpoint=STR,
    ),
    impact=all_required(
        quality_impact=STR,
        latency_impact=STR,
        cost_impact=STR,
    ),
)
RANGE = (
    query("start_date", DATE, "YYYY-MM-DD, with end_date"),
    query("end_date", DATE, "YYYY-MM-DD, with start_date"),
    query(
        "time_range",
        {"enum": ["last_7_days", "last_30_days", "this_month", "this_quarter"]},
        "default last_7_days",
    ),
)
FILTERS = (
    query("project_id", filled(200), "requests sent with this X-Service-Project"),
    query("team_id", filled(200), "requests sent with this X-Service-Team"),
)
DAYS = query("days", {"type": "integer", "minimum": 1, "maximum": 90}, "default 7")

OPERATIONS: dict[str, Operation] = {
    "sustainability.dashboard": Operation(
        "Carbon and energy of the workspace's requests over a period",
        TAG,
        obj(
            ("summary", "time_series", "efficiency", "opportunities"),
            period=PERIOD,
            summary=SUMMARY,
            time_series=arr(POINT),
            efficiency=EFFICIENCY,
            opportunities=arr(DASHBOARD_ITEM, maxItems=5),
        ),
        query=(*RANGE, *FILTERS),
        errors=ERRORS,
    ),
    "sustainability.efficiency_score": Operation(
        "The efficiency score, its components, trend and recommendations",
        TAG,
        {
            "allOf": [
                EFFICIENCY,
                obj(
                    ("trend", "recommendations"),
                    period=PERIOD,
                    trend=all_required(
                        direction={"enum": ["improving", "declining", "stable"]},
                        change_percent=nullable(NUM),
                        previous_score=INT,
                    ),
                    recommendations=STRS,
                ),
            ]
        },
        query=(*RANGE, *FILTERS),
        errors=ERRORS,
    ),
    "sustainability.optimization_opportunities": Operation(
        "Carbon savings found in the workspace's actual usage, re-priced under each change",
        TAG,
        all_required(
            opportunities=arr(OPPORTUNITY),
            total_potential_savings_kg_co2=NUM,
            total_potential_savings_percent=NUM,
            analysis_period_days=INT,
            analyzed_requests=INT,
        ),
        query=(DAYS, *FILTERS),
        errors=ERRORS,
    ),
    "sustainability.optimization_summary": Operation(
        "The opportunities in brief: counts, total savings, quick wins",
        TAG,
        all_required(
            total_opportunities=INT,
            total_potential_savings_kg_co2=NUM,
            total_potential_savings_percent=NUM,
            high_priority_count=INT,
            quick_wins=STRS,
        ),
        query=(DAYS, *FILTERS),
        errors=ERRORS,
    ),
}
