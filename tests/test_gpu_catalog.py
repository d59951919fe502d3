"""The GPU and server catalogs: every part says what it is (lifecycle, class), the contract's
GPU names exist, figures are dense and sane, and rack-scale systems draw what vendors say."""

from __future__ import annotations

import datetime as dt

import pytest
from pydantic import ValidationError

from planner.bom import PoolKey, pool_spec
from planner.catalog import Catalog
from planner.schema.catalog import DEPLOYMENT_CLASSES, LIFECYCLES, Gpu, ServerChassis

# problem-format.md, "Names": the GPU ids the contract guarantees.
CONTRACT_GPUS = {
    "H100-SXM", "H100-PCIe", "H100-NVL", "H200-SXM", "H200-NVL", "H800-SXM", "H20", "B200", "GB200",
    "A100-SXM-80GB", "A100-PCIe-40GB", "A100-PCIe-80GB", "L40S", "L40", "L4", "A10", "T4", "A2",
    "RTX-4090", "RTX-3090", "RTX-6000-Ada", "RTX-A6000", "MI300X", "MI325X", "Gaudi3", "Ascend-910B",
    "Jetson-AGX-Orin", "Ascend-310P",
}  # fmt: skip
# Added with the 2026 catalog (Hygon-K100 is the K100-AI card, Apple-M3-Ultra the 512 GB Mac Studio).
NEW_GPUS = {"B300", "GB300", "MI355X", "RTX-PRO-6000", "MLU370-X8", "MLU220", "BR100", "Hygon-K100", "Apple-M3-Ultra"}
LATEST_SOURCE_DATE = dt.date(2026, 12, 31)


def test_contract_gpu_names_exist(catalog: Catalog) -> None:
    missing = (CONTRACT_GPUS | NEW_GPUS) - set(catalog.gpus)
    assert not missing


def test_every_gpu_and_chassis_says_what_it_is(catalog: Catalog) -> None:
    parts: list[Gpu | ServerChassis] = [*catalog.gpus.values(), *catalog.servers.values()]
    for part in parts:
        assert part.lifecycle in LIFECYCLES, part.id
        assert part.deployment_class in DEPLOYMENT_CLASSES, part.id
        assert part.lifecycle != "announced" or part.announced_date is not None, part.id
        if part.lead_time_weeks is not None:
            assert "lead time" in part.notes.lower(), f"{part.id}: a lead time needs its source in notes"


@pytest.mark.parametrize(
    ("gpu", "lifecycle", "deployment_class"),
    [
        ("A100-PCIe-40GB", "end-of-life", "datacenter"),
        ("T4", "end-of-life", "datacenter"),
        ("A2", "end-of-life", "datacenter"),
        ("H800-SXM", "end-of-life", "datacenter"),
        ("RTX-4090", "end-of-life", "consumer"),
        ("RTX-3090", "end-of-life", "consumer"),
        ("RTX-6000-Ada", "current", "workstation"),
        ("RTX-A6000", "current", "workstation"),
        ("Jetson-AGX-Orin", "current", "edge"),
        ("Ascend-310P", "current", "edge"),
        ("Apple-M3-Ultra", "current", "edge"),
        ("MLU220", "current", "edge"),
        ("H100-SXM", "current", "datacenter"),
        ("B300", "current", "datacenter"),
        ("GB300", "current", "datacenter"),
        ("MI355X", "current", "datacenter"),
        ("RTX-PRO-6000", "current", "datacenter"),
    ],
)
def test_parts_are_marked_for_what_they_are(catalog: Catalog, gpu: str, lifecycle: str, deployment_class: str) -> None:
    g = catalog.gpus[gpu]
    assert (g.lifecycle, g.deployment_class) == (lifecycle, deployment_class)


def test_desk_side_and_edge_chassis_need_no_rack(catalog: Catalog) -> None:
    for s in catalog.servers.values():
        assert s.needs_rack == (s.deployment_class == "datacenter"), s.id
        if s.kind in {"workstation", "edge"}:
            assert s.deployment_class in {"workstation", "edge"}, s.id


def test_dense_figures_are_sane(catalog: Catalog) -> None:
    for g in catalog.gpus.values():
        f = g.tflops_dense
        assert g.memory_gb > 0 and g.memory_bandwidth_gb_per_s > 0 and g.tdp_w > 0, g.id
        assert all(v > 0 for v in f.values()), g.id
        sixteen = f.get("bf16", f.get("fp16", 0.0))
        if "bf16" in f and "fp16" in f and g.id != "Gaudi3":  # Gaudi 3 runs FP16 matrices at quarter rate
            assert f["bf16"] == pytest.approx(f["fp16"]), g.id
        if "fp8" in f:
            # Twice the 16-bit rate on NVIDIA and AMD tensor cores; Gaudi 3 runs both at one rate.
            ratio = f["fp8"] / sixteen
            assert ratio == pytest.approx(1.0 if g.vendor == "intel" else 2.0, rel=0.02), g.id
        if "fp4" in f:
            assert 1.9 <= f["fp4"] / f["fp8"] <= 3.05, g.id  # Blackwell 2x, Blackwell Ultra 3x
        if "fp32" in f:
            assert f["fp32"] <= sixteen, g.id
        # A sparse figure slipped in would show as an implausible FLOPs per watt.
        assert sixteen / g.tdp_w < 2.5, f"{g.id}: {sixteen / g.tdp_w:.2f} 16-bit TFLOPS per W - sparse?"


@pytest.mark.parametrize(
    ("gpu", "bf16", "fp8", "fp4", "memory_gb", "bandwidth"),
    [
        ("B300", 2250, 4500, 13500, 270, 7700),
        ("GB300", 2500, 5000, 15000, 279, 8000),
        ("MI355X", 2516.6, 5033.2, 10066.3, 288, 8000),
        ("RTX-PRO-6000", 503.8, 1007.6, 2015.2, 96, 1597),
    ],
)
def test_new_gpus_carry_dense_vendor_figures(
    catalog: Catalog, gpu: str, bf16: float, fp8: float, fp4: float, memory_gb: float, bandwidth: float
) -> None:
    g = catalog.gpus[gpu]
    assert (g.tflops_dense["bf16"], g.tflops_dense["fp8"], g.tflops_dense["fp4"]) == (bf16, fp8, fp4)
    assert (g.memory_gb, g.memory_bandwidth_gb_per_s) == (memory_gb, bandwidth)


def test_sources_have_dates_and_new_parts_cite_a_source(catalog: Catalog) -> None:
    for g in catalog.gpus.values():
        for source in (g.source, g.price.source):
            assert isinstance(source.date, dt.date) and source.date <= LATEST_SOURCE_DATE, g.id
    for s in catalog.servers.values():
        for source in (s.source, s.base_price.source):
            assert isinstance(source.date, dt.date) and source.date <= LATEST_SOURCE_DATE, s.id
    for gpu_id in NEW_GPUS:
        g = catalog.gpus[gpu_id]
        assert g.source.url.startswith("http"), gpu_id
        assert g.notes, gpu_id


def test_thin_figures_say_so(catalog: Catalog) -> None:
    for gpu_id in ("MLU220", "BR100", "Hygon-K100"):
        assert catalog.gpus[gpu_id].confidence == "low", gpu_id
    assert catalog.gpus["MI355X"].confidence == "high"


def test_new_generations_are_marked_uncalibrated(catalog: Catalog) -> None:
    generations = catalog.efficiency.generations
    for gpu_id in NEW_GPUS:
        generation = catalog.gpus[gpu_id].generation
        assert generations[generation].calibrated is False, (gpu_id, generation)
    assert generations["hopper"].calibrated and generations["blackwell"].calibrated


@pytest.mark.parametrize(("server", "gpu", "low_kw", "high_kw"), [("gb200-nvl72", "GB200", 120, 125)])
def test_gb200_nvl72_rack_draws_what_nvidia_says(
    catalog: Catalog, server: str, gpu: str, low_kw: float, high_kw: float
) -> None:
    """NVIDIA: ~120 kW per GB200 NVL72 rack. Grace is in the chassis base, not in the GPU's TDP."""
    assert catalog.gpus[gpu].tdp_w == 1200
    for fabric in ("none", "ib-ndr"):  # alone, and with its 72 scale-out NICs
        spec = pool_spec(catalog, PoolKey(server, gpu, fabric))
        assert spec.gpus_per_server == 72
        assert low_kw <= spec.power_w / 1e3 <= high_kw, (fabric, spec.power_w)


def test_gb300_nvl72_rack_draws_what_vendors_say(catalog: Catalog) -> None:
    """1,400 W per GPU puts GB300 above GB200: Supermicro ~132-140 kW, Microsoft ~136 kW."""
    for fabric in ("none", "ib-ndr"):
        spec = pool_spec(catalog, PoolKey("gb300-nvl72", "GB300", fabric))
        assert 132 <= spec.power_w / 1e3 <= 140, (fabric, spec.power_w)


@pytest.mark.parametrize(("server", "gpu"), [("gb200-nvl72", "GB200"), ("gb300-nvl72", "GB300")])
def test_nvl72_racks_cost_what_is_reported(catalog: Catalog, server: str, gpu: str) -> None:
    """~$3M per GB200 NVL72 rack is commonly quoted (Morgan Stanley ~$3.1M); GB300 $3-4M."""
    rack = pool_spec(catalog, PoolKey(server, gpu, "none")).server_price_usd
    assert 2.8e6 <= rack <= 3.3e6 if gpu == "GB200" else 3.0e6 <= rack <= 4.0e6


def test_rack_scale_systems_are_built_of_trays(catalog: Catalog) -> None:
    rack_scale = [s for s in catalog.servers.values() if s.kind == "rack-scale"]
    assert {s.id for s in rack_scale} >= {"gb200-nvl72", "gb300-nvl72"}
    for s in rack_scale:
        assert (s.gpus_per_tray, s.trays, s.nvlink_domain) == (4, 18, 72), s.id


def test_every_new_gpu_has_a_chassis(catalog: Catalog) -> None:
    housed = {g for s in catalog.servers.values() for g in s.gpus}
    assert housed >= NEW_GPUS


def _chassis(**changes: object) -> dict[str, object]:
    source = {"title": "t", "date": "2026-01-01"}
    base: dict[str, object] = {
        "id": "x", "name": "x", "kind": "rack-scale", "gpus": ["GB200"], "gpus_per_server": 72,
        "gpu_link": "nvlink", "rack_units": 48, "base_power_w": 1, "scaleout_nics": 0,
        "base_price": {"usd": 1, "source": source}, "source": source,
        "lifecycle": "current", "deployment_class": "datacenter", "gpus_per_tray": 4,
    }  # fmt: skip
    return base | changes


def test_schema_checks_lifecycle_and_trays() -> None:
    ServerChassis.model_validate(_chassis())
    with pytest.raises(ValidationError, match="announced_date"):
        ServerChassis.model_validate(_chassis(lifecycle="announced"))
    ServerChassis.model_validate(_chassis(lifecycle="announced", announced_date="2026-03-16"))
    with pytest.raises(ValidationError, match="gpus_per_tray"):
        ServerChassis.model_validate(_chassis(gpus_per_tray=None))
    with pytest.raises(ValidationError, match="multiple of gpus_per_tray"):
        ServerChassis.model_validate(_chassis(gpus_per_tray=5))
    with pytest.raises(ValidationError, match="deployment_class"):
        ServerChassis.model_validate(_chassis(deployment_class="cloud"))
