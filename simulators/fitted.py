"""A user population for a world fitted to a deployment's log (``world.json``, docs/logs.md),
so every scenario can run in it: ``users=fitted users.world=DIR/world.json``.

Moment matching, from the fitted values:

- ``base_rate``: the withheld success rate, the shown rates' mean less the lifts' mean
  (``procmem_core.logs.world.withheld_rate``, the base the flat-rule prescription designs
  at too);
- ``heterogeneity``: the users' icc (0 without ``user_id`` in the log);
- effects: the normal lift distribution ``N(mu, sd)`` as the population's three-point law
  with no neutral share: helpful with probability ``Phi(mu / sd)`` by ``E[L | L > 0] = mu +
  sd phi(z) / Phi(z)``, harmful otherwise by ``-E[L | L < 0] = -(mu - sd phi(z) / (1 -
  Phi(z)))`` (``z = mu / sd``): the mean lift and the share of helpful procedures are kept.
  Without fitted lifts, no procedure has an effect.
"""

from __future__ import annotations

import numpy as np
from scipy import stats

from procmem_core.errors import ParameterError
from procmem_core.logs.world import withheld_rate
from simulators.users import UserPopulation


def fitted_population(world: dict, **fixed: object) -> UserPopulation:
    """The population of a loaded world (``{"rates": {"mean": p, ...}, "lifts": ...,
    "users": ...}``, each ``p`` with ``.value``); ``fixed``: other fields kept as given
    (``interference``)."""
    try:
        base = withheld_rate(world).value
    except (KeyError, TypeError, AttributeError):
        raise ParameterError("users.world", world, "a fitted world with rates.mean") from None
    lifts = world.get("lifts")
    shares = {"helpful_share": 0.0, "harmful_share": 0.0,
              "helpful_effect": 0.0, "harmful_effect": 0.0}  # fmt: skip
    if lifts:
        mu, sd = float(lifts["mean"].value), max(float(lifts["sd"].value), 1e-9)
        z = mu / sd
        up, down = stats.norm.cdf(z), stats.norm.sf(z)
        pdf = stats.norm.pdf(z)
        shares = {
            "helpful_share": float(up),
            "harmful_share": float(down),
            "helpful_effect": float(np.clip(mu + sd * pdf / max(up, 1e-12), 0, 1)),
            "harmful_effect": float(np.clip(-(mu - sd * pdf / max(down, 1e-12)), 0, 1)),
        }
    users = world.get("users")
    icc = float(np.clip(users["icc"].value, 0.0, 0.99)) if users else 0.0
    return UserPopulation(base_rate=base, heterogeneity=icc, **shares, **fixed)
