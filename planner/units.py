"""Integer scales for CP-SAT (it takes integer coefficients only). One place, stated once."""

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
