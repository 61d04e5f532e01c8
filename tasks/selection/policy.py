"""Search policies by demand id (docs/research.md, "Policy"), kept in the catalog table
`search_policy` (sql/schema_60_governance.sql, which seeds the 'default' row).

Which policy a run gets, and the `policy_source` it reports:
  the demand's own row, readable            -> that policy, "db"
  no row for the demand, 'default' readable -> the default row, "default"
  the row to use cannot be read (not a JSON
  object, unknown field, value out of range),
  or the table cannot be queried            -> built-in Policy(), "default(fallback)"
A stored row holds a whole policy; fields it lacks take the built-in values.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from datetime import datetime
from typing import Any


from schemas.governance import Policy, PolicyError
from tasks.lake.catalog import Catalog, CatalogError

log = logging.getLogger(__name__)

DEFAULT_DEMAND = "default"
SOURCE_DB = "db"
SOURCE_DEFAULT = "default"
SOURCE_FALLBACK = "default(fallback)"
MAX_DEMAND_ID = 200


@dataclass(frozen=True)
class PolicyRow:
    """A stored policy as `list_policies` shows it; `error` says why a row
    cannot be used (then `policy` is None)."""

    demand_id: str
    config: Any
    updated_at: datetime | None
    policy: Policy | None
    error: str | None = None


def load_policy(catalog: Catalog, demand_id: str | None, notes: list[str] | None = None) -> tuple[Policy, str]:
    """The policy of `demand_id` and where it came from (see the module doc).
    Never raises for a bad row or table: a run must not die of its policy.
    Why a fallback happened is logged and appended to `notes` when given."""
    demand = _clean_demand_id(demand_id) if demand_id else DEFAULT_DEMAND
    try:
        rows = catalog.rows("policy_get", [demand])
    except CatalogError as exc:
        return _fallback(f"search_policy cannot be read: {_first_line(exc)}", notes)
    if not rows:
        return _fallback("search_policy holds neither this demand's row nor 'default'", notes)
    row_demand, config = rows[0]
    try:
        policy = policy_from_json(config)
    except PolicyError as exc:
        return _fallback(f"policy row {row_demand!r} is unusable: {exc}", notes)
    return policy, SOURCE_DB if row_demand == demand and demand != DEFAULT_DEMAND else SOURCE_DEFAULT


def set_policy(catalog: Catalog, demand_id: str, **fields: Any) -> Policy:
    """Store a demand's policy: the policy it gets now with `fields` changed
    (values may be text as typed: "2.5", "false"). A bad field or value
    raises a one-line ValueError (PolicyError) and stores nothing."""
    demand = _clean_demand_id(demand_id)
    current, _ = load_policy(catalog, demand)
    policy = Policy.from_mapping(fields, base=current)
    config = json.dumps(policy.to_dict())

    def replace(cat: Catalog) -> None:
        cat.run("policy_delete", [demand])
        cat.run("policy_put", [demand, config])

    catalog.transaction(replace, action=f"policy {demand}",
                        detail=", ".join(f"{name}={value}" for name, value in fields.items()))
    return policy


def list_policies(catalog: Catalog) -> list[PolicyRow]:
    """Every stored policy, 'default' first, unusable rows included."""
    listed = []
    for demand, config, updated_at in catalog.rows("policy_list"):
        try:
            listed.append(PolicyRow(demand, json.loads(config), updated_at, policy_from_json(config)))
        except (PolicyError, ValueError) as exc:
            listed.append(PolicyRow(demand, config, updated_at, None, str(exc)))
    return listed


def policy_from_json(text: str) -> Policy:
    try:
        data = json.loads(text)
    except (TypeError, ValueError):
        raise PolicyError("config is not valid JSON") from None
    return Policy.from_mapping(data)


def parse_assignments(pairs: list[str]) -> dict[str, str]:
    """["max_keywords=8", ...] as typed after --set, as a dict of texts."""
    fields = {}
    for pair in pairs:
        name, sep, value = pair.partition("=")
        if not sep or not name.strip():
            raise PolicyError(f"--set {pair!r} is not key=value")
        fields[name.strip()] = value.strip()
    return fields


def _clean_demand_id(demand_id: str) -> str:
    demand = str(demand_id).strip()
    if not demand or len(demand) > MAX_DEMAND_ID:
        raise PolicyError(f"demand id {demand_id!r} must be 1-{MAX_DEMAND_ID} characters")
    return demand


def _fallback(reason: str, notes: list[str] | None) -> tuple[Policy, str]:
    log.warning("using the built-in search policy: %s", reason)
    if notes is not None:
        notes.append(reason)
    return Policy(), SOURCE_FALLBACK


def _first_line(exc: Exception) -> str:
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0]
