"""Energy and carbon of one request, after EcoLogits' LLM inference methodology.

For text generation the estimate is EcoLogits' (ecologits 0.11.3, fitted on ML.ENERGY data,
batch size fixed at B = 64):

- GPU energy per output token, per GPU: ``(alpha * exp(beta * B) * P_active + gamma)`` Wh,
  which at fixed B is linear in the active parameter count;
- GPUs needed to hold the model: ``1.2 * P_total * 16 bits / 8 / 80 GB``, rounded up to a
  power of two;
- server energy without GPUs during the generation latency
  ``T_out * (a * P_active + b * B + c)`` seconds (capped by the measured latency when known),
  at 1.2 kW, prorated to the GPUs used and shared by the B requests of the batch;
- times the data-centre PUE; carbon = energy times the grid's gCO2e/kWh.

Like EcoLogits, prompt tokens of a chat request are not counted. Models whose work is mostly
reading input (embeddings, rerank, the audio or image side of transcription and OCR) get a
compute-bound prefill estimate, ``2 * P_active`` FLOPs per input token on an H100 at an assumed
utilization; speech synthesis counts its audio output as generated tokens. Every constant is in
`providers/data/footprint.json` with its source; the reasoning is in `providers/data/SOURCES.md`.
"""

from __future__ import annotations

import functools
import json
import math
import types
from collections.abc import Mapping
from importlib import resources
from typing import Any, Literal

import attrs

from providers.catalog import ModelInfo, ProviderInfo
from providers.types import Usage

Confidence = Literal["low", "medium", "high"]

_WH_PER_KWH = 1000.0
_SECONDS_PER_HOUR = 3600.0
_JOULES_PER_KWH = 3.6e6
_GROUPS_WITH_SOURCES = (
    "llm",
    "prefill",
    "audio",
    "ocr",
    "cpu",
    "datacenter",
    "grid",
    "task_multipliers",
)


class FootprintDataError(ValueError):
    """The footprint table is malformed or lacks a source for a group of constants."""


@attrs.frozen(slots=True)
class Footprint:
    """What the `_gateway.energy` and `_gateway.carbon` objects report for one request."""

    energy_kwh: float
    carbon_gco2e: float
    confidence_level: Confidence
    task_multiplier: float
    provider_pue: float
    grid_region: str
    grid_intensity_gco2_per_kwh: float


@attrs.frozen(slots=True, cache_hash=True)  # a key of `decode_rates`, hashed once
class LlmFactors:
    """EcoLogits' generation constants (energy fit in Wh per token, latency fit in seconds)."""

    gpu_energy_alpha: float
    gpu_energy_beta: float
    gpu_energy_gamma: float
    latency_alpha: float
    latency_beta: float
    latency_gamma: float
    batch_size: int
    quantization_bits: int
    memory_overhead: float
    gpu_memory_gb: float
    server_gpu_count: int
    server_power_kw: float


@attrs.frozen(slots=True)
class PrefillFactors:
    """Compute-bound estimate for reading input tokens (a gateway assumption, not EcoLogits)."""

    flops_per_param_per_token: float
    gpu_peak_flops: float
    gpu_power_w: float
    utilization: float

    @property
    def joules_per_flop(self) -> float:
        return self.gpu_power_w / (self.gpu_peak_flops * self.utilization)


@attrs.frozen(slots=True)
class FootprintFactors:
    """Every constant of the estimate, as loaded from `footprint.json`."""

    llm: LlmFactors
    prefill: PrefillFactors
    audio_tokens_per_second: float
    speech_characters_per_second: float
    characters_per_token: float
    ocr_image_tokens_per_page: int
    ocr_text_tokens_per_page: int
    cpu_core_power_w: float
    default_pue: float
    provider_pue: Mapping[str, float]
    default_region: str
    grid_intensity: Mapping[str, float]
    default_task_multiplier: float
    task_multipliers: Mapping[str, float]

    def intensity(self, region: str) -> float:
        try:
            return self.grid_intensity[region]
        except KeyError:
            raise ValueError(f"unknown grid region {region!r}") from None

    def task_multiplier(self, task_type: str | None) -> float:
        if task_type is None:
            return self.default_task_multiplier
        return self.task_multipliers.get(task_type, self.default_task_multiplier)


# ------------------------------------------------------------------------------- arithmetic


def gpu_count(total_params_b: float, llm: LlmFactors) -> int:
    """GPUs needed to hold the weights, rounded up to a power of two (at least one)."""
    memory_gb = llm.memory_overhead * total_params_b * llm.quantization_bits / 8
    needed = max(1, math.ceil(memory_gb / llm.gpu_memory_gb))
    return int(2 ** math.ceil(math.log2(needed)))


def generation_latency_s(
    active_params_b: float, output_tokens: int, llm: LlmFactors, measured_s: float | None = None
) -> float:
    """EcoLogits' generation latency, never more than the measured request latency."""
    per_token = (
        llm.latency_alpha * active_params_b + llm.latency_beta * llm.batch_size + llm.latency_gamma
    )
    estimated = output_tokens * per_token
    return estimated if measured_s is None else min(estimated, measured_s)


def decode_energy_kwh(
    active_params_b: float,
    total_params_b: float,
    output_tokens: int,
    llm: LlmFactors,
    measured_latency_s: float | None = None,
) -> float:
    """IT energy (before PUE) of generating `output_tokens`: GPUs plus the rest of the server."""
    if output_tokens == 0:
        return 0.0
    gpu_kwh_per_token, seconds_per_token, server_kwh_per_s = decode_rates(
        active_params_b, total_params_b, llm
    )
    latency = output_tokens * seconds_per_token
    if measured_latency_s is not None:
        latency = min(latency, measured_latency_s)
    return output_tokens * gpu_kwh_per_token + latency * server_kwh_per_s


@functools.lru_cache(maxsize=1024)
def decode_rates(
    active_params_b: float, total_params_b: float, llm: LlmFactors
) -> tuple[float, float, float]:
    """A model's generation constants, worked out once per model size and factors (every
    request a model serves used to redo them: a logarithm, an exponential and a dozen
    products): the GPUs' kWh per output token, the seconds per output token
    (`generation_latency_s`), and the server's kWh per second of generation, its share
    of the server (`gpus / server_gpu_count`) over the batch."""
    gpus = gpu_count(total_params_b, llm)
    scale = llm.gpu_energy_alpha * math.exp(llm.gpu_energy_beta * llm.batch_size)
    gpu_kwh_per_token = gpus * (scale * active_params_b + llm.gpu_energy_gamma) / _WH_PER_KWH
    seconds_per_token = generation_latency_s(active_params_b, 1, llm)
    server_kwh_per_s = (
        llm.server_power_kw * (gpus / llm.server_gpu_count) / llm.batch_size / _SECONDS_PER_HOUR
    )
    return gpu_kwh_per_token, seconds_per_token, server_kwh_per_s


def prefill_energy_kwh(active_params_b: float, input_tokens: int, prefill: PrefillFactors) -> float:
    """IT energy (before PUE) of reading `input_tokens` in one compute-bound forward pass."""
    flops = prefill.flops_per_param_per_token * active_params_b * 1e9 * input_tokens
    return flops * prefill.joules_per_flop / _JOULES_PER_KWH


def audio_seconds_to_tokens(seconds: float, factors: FootprintFactors) -> int:
    """Audio tokens for a clip length, at the Whisper encoder's rate (for transcription input)."""
    return math.ceil(max(0.0, seconds) * factors.audio_tokens_per_second)


def _speech_tokens(characters: int, factors: FootprintFactors) -> int:
    seconds = characters / factors.speech_characters_per_second
    return math.ceil(seconds * factors.audio_tokens_per_second)


def it_energy_kwh(
    model: ModelInfo,
    output_tokens: int,
    prompt_tokens: int,
    factors: FootprintFactors,
    measured_latency_s: float | None = None,
) -> float:
    """IT energy (before PUE and task multiplier) by model type; see `estimate` for units."""
    active, total = model.active_params_b, model.total_params_b
    if model.type == "chat":
        return decode_energy_kwh(active, total, output_tokens, factors.llm, measured_latency_s)
    if model.type in ("embedding", "rerank"):
        return prefill_energy_kwh(active, prompt_tokens, factors.prefill)
    if model.type == "speech":
        tokens = _speech_tokens(prompt_tokens, factors)
        return decode_energy_kwh(active, total, tokens, factors.llm, measured_latency_s)
    # transcription, ocr: read audio or page images, then write text.
    read = prefill_energy_kwh(active, prompt_tokens, factors.prefill)
    write = decode_energy_kwh(active, total, output_tokens, factors.llm, measured_latency_s)
    return read + write


def metered_units(model: ModelInfo, usage: Usage, factors: FootprintFactors) -> tuple[int, int]:
    """(prompt units, output tokens) of `usage` in the units `estimate` reads for the model's
    type: the vendor's token counts when it reported them, else an approximation from the
    unit the family meters. Transcription reads the clip as audio tokens (50 a second) and
    writes the spoken text (15 characters a second, 4 characters a token); OCR reads each
    page as one 1024x1024 image (4096 tokens) and writes a full page of text (750 tokens);
    speech reads characters. These approximations are why such estimates are never `high`.
    """
    if model.type == "speech":
        return usage.characters or usage.prompt_tokens, 0
    if model.type == "transcription":
        read = usage.prompt_tokens or audio_seconds_to_tokens(usage.audio_seconds, factors)
        spoken = usage.audio_seconds * factors.speech_characters_per_second
        write = usage.completion_tokens or math.ceil(spoken / factors.characters_per_token)
        return read, write
    if model.type == "ocr":
        read = usage.prompt_tokens or usage.pages * factors.ocr_image_tokens_per_page
        write = usage.completion_tokens or usage.pages * factors.ocr_text_tokens_per_page
        return read, write
    return usage.prompt_tokens, usage.completion_tokens


def estimate_usage(
    model: ModelInfo,
    provider: ProviderInfo,
    usage: Usage,
    task_type: str | None = None,
    *,
    grid_region: str | None = None,
    factors: FootprintFactors | None = None,
) -> Footprint:
    """`estimate` for a metered `Usage` of any family (see `metered_units`)."""
    f = factors if factors is not None else load_footprint_factors()
    prompt, output = metered_units(model, usage, f)
    return estimate(model, provider, output, prompt, task_type, grid_region=grid_region, factors=f)


def cpu_estimate(
    seconds: float, provider: ProviderInfo, factors: FootprintFactors | None = None
) -> Footprint:
    """A local engine with no model size (tesseract OCR): one CPU core busy for `seconds`
    at the footprint table's per-core power, times the provider's PUE. Always `low`."""
    f = factors if factors is not None else load_footprint_factors()
    energy = max(0.0, seconds) / _SECONDS_PER_HOUR * f.cpu_core_power_w / _WH_PER_KWH
    energy *= provider.pue
    intensity = f.intensity(provider.grid_region)
    return Footprint(
        energy_kwh=energy,
        carbon_gco2e=energy * intensity,
        confidence_level="low",
        task_multiplier=1.0,
        provider_pue=provider.pue,
        grid_region=provider.grid_region,
        grid_intensity_gco2_per_kwh=intensity,
    )


def confidence_of(model: ModelInfo) -> Confidence:
    """`low` for guessed parameter counts; `medium` where the method is extrapolated."""
    if model.params_estimated:
        return "low"
    return "high" if model.type == "chat" else "medium"


def estimate(
    model: ModelInfo,
    provider: ProviderInfo,
    output_tokens: int,
    prompt_tokens: int = 0,
    task_type: str | None = None,
    *,
    latency_s: float | None = None,
    grid_region: str | None = None,
    factors: FootprintFactors | None = None,
) -> Footprint:
    """Energy and carbon of one request served by `provider`.

    Units by model type: chat counts `output_tokens` only (as EcoLogits); embedding and rerank
    count `prompt_tokens`; transcription and OCR count both (audio or image tokens in, text out;
    see `audio_seconds_to_tokens`); speech reads `prompt_tokens` as input *characters*.
    `latency_s`, when measured, caps the generation latency. `grid_region` overrides the
    provider's region. Raises `ValueError` for negative counts or an unknown region.
    """
    if output_tokens < 0 or prompt_tokens < 0:
        raise ValueError("token counts must not be negative")
    f = factors if factors is not None else load_footprint_factors()
    region = grid_region if grid_region is not None else provider.grid_region
    intensity = f.intensity(region)
    multiplier = f.task_multiplier(task_type)
    energy = (
        provider.pue * multiplier * it_energy_kwh(model, output_tokens, prompt_tokens, f, latency_s)
    )
    return Footprint(
        energy_kwh=energy,
        carbon_gco2e=energy * intensity,
        confidence_level=confidence_of(model),
        task_multiplier=multiplier,
        provider_pue=provider.pue,
        grid_region=region,
        grid_intensity_gco2_per_kwh=intensity,
    )


# ---------------------------------------------------------------------------------- loading


def parse_footprint_factors(data: Mapping[str, Any]) -> FootprintFactors:
    """Build the factors from the decoded JSON; every constant group must cite a source."""
    try:
        for group in _GROUPS_WITH_SOURCES:
            sources = data[group]["sources"]
            if not sources or not all(s.get("title") and s.get("url") for s in sources):
                raise FootprintDataError(f"group {group!r} lacks a titled, linked source")
        return _parse_factors(data)
    except (KeyError, TypeError) as exc:
        raise FootprintDataError(f"malformed footprint table: {exc!r}") from exc


def _parse_factors(data: Mapping[str, Any]) -> FootprintFactors:
    llm, prefill, audio = data["llm"], data["prefill"], data["audio"]
    dc, grid, tasks = data["datacenter"], data["grid"], data["task_multipliers"]
    intensity = {str(k): float(v) for k, v in grid["intensity_gco2_per_kwh"].items()}
    if grid["default_region"] not in intensity:
        raise FootprintDataError("the default grid region has no intensity")
    return FootprintFactors(
        llm=LlmFactors(**{f.name: llm[f.name] for f in attrs.fields(LlmFactors)}),
        prefill=PrefillFactors(**{f.name: prefill[f.name] for f in attrs.fields(PrefillFactors)}),
        audio_tokens_per_second=float(audio["tokens_per_second"]),
        speech_characters_per_second=float(audio["characters_per_second"]),
        characters_per_token=float(audio["characters_per_token"]),
        ocr_image_tokens_per_page=int(data["ocr"]["image_tokens_per_page"]),
        ocr_text_tokens_per_page=int(data["ocr"]["text_tokens_per_page"]),
        cpu_core_power_w=float(data["cpu"]["core_power_w"]),
        default_pue=float(dc["default_pue"]),
        provider_pue=types.MappingProxyType(
            {str(k): float(v) for k, v in dc["provider_pue"].items()}
        ),
        default_region=str(grid["default_region"]),
        grid_intensity=types.MappingProxyType(intensity),
        default_task_multiplier=float(tasks["default"]),
        task_multipliers=types.MappingProxyType(
            {str(k): float(v) for k, v in tasks["by_task"].items()}
        ),
    )


@functools.cache
def load_footprint_factors() -> FootprintFactors:
    """The packaged footprint table, parsed and validated once per process."""
    text = resources.files("providers").joinpath("data", "footprint.json").read_text("utf-8")
    return parse_footprint_factors(json.loads(text))
