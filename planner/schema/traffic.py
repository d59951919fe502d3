"""A service's traffic as the problem file gives it: a request-size mix (buckets, or a CSV of
observed requests) and the user's own per-replica benchmarks."""

from __future__ import annotations

from pydantic import Field, model_validator

from planner.schema.base import Strict
from planner.schema.catalog import Precision

NAME_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.\-]*$"  # workload and bucket names: used in constraint names
Name = str  # workload names: used in constraint names and dotted paths


class MeasuredThroughput(Strict):
    """Your own benchmark of one replica: it wins over the performance model.

    ``requests_per_s`` is what one replica sustains while meeting the service's
    latency targets (no headroom is taken off it). For a generic (non-LLM)
    service this table is the only source of figures.
    """

    gpu: str = Field(min_length=1, description="GPU id")
    precision: Precision = "bf16"
    gpus_per_replica: int = Field(default=1, ge=1, le=1024)
    requests_per_s: float = Field(gt=0, le=1e7, description="per replica, at the service's targets")
    ttft_ms: float | None = Field(default=None, gt=0, le=1e7, description="measured; checked against the target")
    tpot_ms: float | None = Field(default=None, gt=0, le=1e7, description="measured; checked against the target")
    bucket: str | None = Field(
        default=None, description="for a service with a `mix`: the request-size bucket (by name) measured"
    )


class MixBucket(Strict):
    """One request size of a traffic mix and its share of the requests."""

    name: str | None = Field(default=None, pattern=NAME_PATTERN, max_length=80, description="default in<I>-out<O>")
    input_tokens: int = Field(ge=1, le=10_000_000, description="prompt length of this bucket's requests")
    output_tokens: int = Field(ge=1, le=10_000_000, description="generated length of this bucket's requests")
    share: float = Field(gt=0, le=1, description="share of the service's requests")

    @property
    def label(self) -> str:
        return self.name or f"in{self.input_tokens}-out{self.output_tokens}"


class RequestMix(Strict):
    """Traffic as a histogram of request sizes: `buckets`, or a `csv` of observed requests."""

    buckets: list[MixBucket] | None = Field(default=None, min_length=1, max_length=10_000)
    csv: str | None = Field(
        default=None,
        description="observed requests, one per row with columns input_tokens,output_tokens "
        "(a path relative to the problem file, inside its folder); bucketed by the edges",
    )
    input_edges: list[int] | None = Field(
        default=None, min_length=1, max_length=100, description="bucket upper edges for prompt lengths (csv only)"
    )
    output_edges: list[int] | None = Field(
        default=None, min_length=1, max_length=100, description="bucket upper edges for output lengths (csv only)"
    )
    slices: int = Field(
        default=20,
        ge=1,
        le=1000,
        description="routing granularity: each bucket is split into this many equal slices, each served by one "
        "replica kind (Mélange's slice factor)",
    )

    @model_validator(mode="after")
    def _check(self) -> RequestMix:
        if (self.buckets is None) == (self.csv is None) and self.buckets is None:
            raise ValueError("a mix needs `buckets` or `csv`")
        if self.buckets:
            total = sum(b.share for b in self.buckets)
            if abs(total - 1) > 1e-3:
                raise ValueError(f"mix bucket shares must sum to 1, they sum to {total:.6g}")
            labels = [b.label.lower() for b in self.buckets]
            dup = sorted({x for x in labels if labels.count(x) > 1})
            if dup:
                raise ValueError(f"mix bucket {dup[0]!r} appears twice (give buckets distinct names or sizes)")
        for key, edges in (("input_edges", self.input_edges), ("output_edges", self.output_edges)):
            if edges and (any(e < 1 for e in edges) or sorted(set(edges)) != edges):
                raise ValueError(f"{key} must be increasing positive token counts, got {edges}")
        return self

    @property
    def sized(self) -> list[MixBucket]:
        """Buckets with shares normalised to sum exactly to 1."""
        buckets = self.buckets or []
        total = sum(b.share for b in buckets)
        return [b.model_copy(update={"share": b.share / total}) for b in buckets]
