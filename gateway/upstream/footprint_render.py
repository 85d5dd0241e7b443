"""What every family's answer says about its accounting: the energy and carbon objects
and the footprint headers. Pure functions of an `Accounting`."""

from __future__ import annotations

from typing import Any

from gateway.upstream.accounting import Accounting


def energy_object(accounting: Accounting) -> dict[str, Any]:
    footprint = accounting.footprint
    if footprint is None:
        return {
            "energy_kwh": 0.0,
            "confidence_level": "none",
            "task_multiplier": 1.0,
            "provider_pue": None,
        }
    return {
        "energy_kwh": footprint.energy_kwh,
        "confidence_level": footprint.confidence_level,
        "task_multiplier": footprint.task_multiplier,
        "provider_pue": footprint.provider_pue,
    }


def carbon_object(accounting: Accounting) -> dict[str, Any]:
    footprint = accounting.footprint
    if footprint is None:
        return {
            "carbon_gco2e": 0.0,
            "grid_region": None,
            "grid_intensity_gco2_per_kwh": None,
            "confidence_level": "none",
        }
    return {
        "carbon_gco2e": footprint.carbon_gco2e,
        "grid_region": footprint.grid_region,
        "grid_intensity_gco2_per_kwh": footprint.grid_intensity_gco2_per_kwh,
        "confidence_level": footprint.confidence_level,
    }


def footprint_headers(accounting: Accounting) -> dict[str, str]:
    footprint = accounting.footprint
    energy = footprint.energy_kwh if footprint else 0.0
    carbon = footprint.carbon_gco2e if footprint else 0.0
    return {"X-Service-Energy-Kwh": f"{energy:.10f}", "X-Service-Carbon-gCO2e": f"{carbon:.8f}"}
