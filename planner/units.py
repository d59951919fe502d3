"""Units in one place: the integer scales CP-SAT needs (it takes integer coefficients only),
and the conversions between the problem's units (kW, days, requests/s) and the model's."""

from __future__ import annotations

import math

MONEY_PER_USD = 1  # whole dollars: modest coefficients (see cpsat-notes, or-tools#5293)
POWER_PER_W = 1  # whole watts
RATE_PER_RPS = 1000  # milli-requests per second
TIME_PER_DAY = 100  # hundredths of a day (~15 minutes)
PUE_SCALE = 1000  # PUE in thousandths


def usd(x: float) -> int:
    return round(x * MONEY_PER_USD)


def watts_up(x: float) -> int:
    """Power rounded up: a plan never claims less power than it draws."""
    return math.ceil(x * POWER_PER_W - 1e-9)


def rps_down(x: float) -> int:
    """Capacity rounded down: a plan never claims more than a replica serves."""
    return math.floor(x * RATE_PER_RPS + 1e-9)


def rps_up(x: float) -> int:
    return math.ceil(x * RATE_PER_RPS - 1e-9)


def days_up(x: float) -> int:
    return math.ceil(x * TIME_PER_DAY - 1e-9)


def days_down(x: float) -> int:
    return math.floor(x * TIME_PER_DAY + 1e-9)


W_PER_KW = 1000.0


def kw(watts: float) -> float:
    return watts / W_PER_KW


def w(kilowatts: float) -> float:
    return kilowatts * W_PER_KW


def facility_kw(it_watts: float, pue: float) -> float:
    """Facility power: IT power times the power usage effectiveness."""
    return kw(it_watts) * pue


def pue_milli(pue: float) -> int:
    return round(pue * PUE_SCALE)


def site_power_limit(power_kw: float) -> int:
    """A site's kW in the model's units: IT watts x PUE thousandths, exact in integers."""
    return math.floor(w(power_kw) * PUE_SCALE)


def site_power_kw(limit: int) -> float:
    """Back from model units to kW (rounded up to the watt: the least that suffices)."""
    return math.ceil(limit / PUE_SCALE) / W_PER_KW


MS_PER_S = 1000.0


def ms(seconds: float) -> float:
    return seconds * MS_PER_S
