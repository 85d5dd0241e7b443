"""What the sustainability reports answer, as types: the render functions build these
(mypy holds them to it) and the OpenAPI document is written from them; the method behind
every figure is in docs/sustainability.md."""

from __future__ import annotations

from typing import Annotated, Literal, TypedDict

from gateway.platform.shapes import Choices, Doc, Format, Range

Day = Annotated[str, Format("date")]
OpportunityType = Annotated[
    str,
    Choices(
        (
            "model_downgrade",
            "enable_caching",
            "green_routing",
            "batch_requests",
            "time_shifting",
            "token_optimization",
        )
    ),
]
Grade = Annotated[str, Choices(("A+", "A", "B+", "B", "C+", "C", "D", "F"))]
Score = Annotated[int, Range(least=0, most=100)]


class PeriodObject(TypedDict):
    """The UTC days the report covers, both included."""

    start_date: Day
    end_date: Day
    days: int


class ScoreComponent(TypedDict):
    """One part of the efficiency score, against its benchmark."""

    score: Score
    weight: float
    description: str
    current_value: float
    benchmark: float
    unit: str


class ScoreComponents(TypedDict):
    carbon_savings_rate: ScoreComponent
    cache_hit_rate: ScoreComponent
    grid_efficiency: ScoreComponent


class Efficiency(TypedDict):
    """The efficiency score, its grade, and its percentile among the workspace's own
    days before the period."""

    overall_score: Score
    grade: Grade
    percentile: Annotated[int, Range(least=0, most=100)]
    components: ScoreComponents


class Trend(TypedDict):
    direction: Literal["improving", "declining", "stable"]
    change_percent: Annotated[float | None, Doc("null when the previous score was 0")]
    previous_score: Score


class EfficiencyReport(Efficiency):
    """`GET /v1/sustainability/efficiency-score`."""

    period: PeriodObject
    trend: Trend
    recommendations: list[str]


class ModelShare(TypedDict):
    model: str
    carbon_gco2e: float
    percentage: float


class ProviderShare(TypedDict):
    provider: str
    carbon_gco2e: float
    percentage: float


class Summary(TypedDict):
    """The period's totals; percentages of a breakdown add up to exactly 100."""

    total_carbon_gco2e: float
    total_energy_kwh: float
    total_requests: int
    avg_carbon_per_request_gco2e: float
    carbon_per_1k_tokens_gco2e: float
    carbon_trend_percent: Annotated[float | None, Doc("null when the previous period had none")]
    breakdown_by_model: list[ModelShare]
    breakdown_by_provider: list[ProviderShare]


class DashboardSummary(Summary):
    efficiency_score: Score


class DayPoint(TypedDict):
    """One day of the period (days without traffic at zero)."""

    date: Day
    carbon_gco2e: float
    energy_kwh: float
    requests: int


class DashboardItem(TypedDict):
    """One of the top opportunities, its implementation in one sentence."""

    type: OpportunityType
    title: str
    description: str
    potential_savings_kg_co2: float
    implementation: str


class Dashboard(TypedDict):
    """`GET /v1/sustainability/dashboard`."""

    period: PeriodObject
    summary: DashboardSummary
    time_series: list[DayPoint]
    efficiency: Efficiency
    opportunities: Annotated[list[DashboardItem], Doc("At most 5")]


class Implementation(TypedDict):
    action: str
    code_change: str
    dashboard_path: str
    api_endpoint: str


class Impact(TypedDict):
    quality_impact: str
    latency_impact: str
    cost_impact: str


class Opportunity(TypedDict):
    """A change that would have saved carbon on the workspace's actual usage."""

    id: str
    type: OpportunityType
    priority: Annotated[str, Choices(("high", "medium", "low"))]
    title: str
    description: str
    affected_requests_percent: float
    potential_savings_kg_co2: Annotated[float, Doc("kg CO2e a month at the period's rate")]
    potential_savings_percent: float
    implementation: Implementation
    impact: Impact


class OpportunitiesReport(TypedDict):
    """`GET /v1/sustainability/optimization-opportunities`."""

    opportunities: list[Opportunity]
    total_potential_savings_kg_co2: float
    total_potential_savings_percent: float
    analysis_period_days: int
    analyzed_requests: int


class OpportunitiesSummary(TypedDict):
    """`GET /v1/sustainability/optimization-summary`."""

    total_opportunities: int
    total_potential_savings_kg_co2: float
    total_potential_savings_percent: float
    high_priority_count: int
    quick_wins: list[str]
