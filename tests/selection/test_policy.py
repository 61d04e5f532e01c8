"""Search policies by demand id: the seeded default, the demand's own row,
the fallback to built-in values when a row cannot be read, and set/list."""

from __future__ import annotations

import json

import pytest

from schemas.governance import Policy, PolicyError
from tasks.lake.catalog import open_catalog
from tasks.selection.policy import list_policies, load_policy, parse_assignments, set_policy


@pytest.fixture
def catalog(settings):
    with open_catalog(settings, "test-policy") as cat:
        yield cat


def store_raw(catalog, demand_id: str, config: str) -> None:
    """A row as any SQL client could write it, bypassing validation."""
    catalog.run("policy_delete", [demand_id])
    catalog.run("policy_put", [demand_id, config])


def test_default_row_is_seeded_with_the_built_in_values(catalog):
    rows = catalog.con.execute("SELECT demand_id, config FROM search_policy").fetchall()
    assert [r[0] for r in rows] == ["default"]
    assert json.loads(rows[0][1]) == Policy().to_dict()


def test_seed_never_overwrites_an_edited_default(settings):
    with open_catalog(settings, "test") as cat:
        set_policy(cat, "default", max_keywords=9)
    with open_catalog(settings, "test") as cat:
        assert load_policy(cat, "anything") == (Policy(max_keywords=9), "default")


def test_demand_with_its_own_row_is_db(catalog):
    set_policy(catalog, "42", max_detail_fetch=12, enable_llm_review="false")
    policy, source = load_policy(catalog, "42")
    assert source == "db"
    assert (policy.max_detail_fetch, policy.enable_llm_review, policy.max_keywords) == (12, False, 6)


def test_unknown_demand_gets_the_default_row(catalog):
    set_policy(catalog, "default", filter_near_ratio=0.5)
    policy, source = load_policy(catalog, "nobody")
    assert source == "default"
    assert policy.filter_near_ratio == 0.5


def test_no_demand_id_means_default(catalog):
    assert load_policy(catalog, None) == (Policy(), "default")
    assert load_policy(catalog, "default")[1] == "default"


@pytest.mark.parametrize("config", [
    '[1, 2, 3]',                                  # not an object
    '"fast"',
    '{"max_keywords": "many"}',                  # wrong type
    '{"max_detail_fetch": 0}',                   # out of range
    '{"near_enough_candidate_multiplier": 3.0}',  # above the pass multiplier
    '{"max_keyword": 6}',                        # unknown field
])
def test_corrupt_row_falls_back_to_built_in_defaults(catalog, config):
    set_policy(catalog, "default", max_keywords=9)  # the default row must NOT be used instead
    store_raw(catalog, "7", config)
    notes: list[str] = []
    assert load_policy(catalog, "7", notes) == (Policy(), "default(fallback)")
    assert len(notes) == 1 and "'7'" in notes[0]


def test_corrupt_default_row_falls_back_for_demands_without_a_row(catalog):
    store_raw(catalog, "default", '{"filter_near_ratio": 2}')
    assert load_policy(catalog, "x") == (Policy(), "default(fallback)")


def test_missing_table_falls_back(catalog):
    catalog.con.execute("DROP TABLE search_policy")
    notes: list[str] = []
    assert load_policy(catalog, "42", notes) == (Policy(), "default(fallback)")
    assert "cannot be read" in notes[0]


def test_empty_table_falls_back(catalog):
    catalog.con.execute("DELETE FROM search_policy")
    assert load_policy(catalog, "42") == (Policy(), "default(fallback)")


def test_stored_row_lacking_fields_takes_built_in_values(catalog):
    store_raw(catalog, "5", '{"max_keywords": 3}')
    assert load_policy(catalog, "5") == (Policy(max_keywords=3), "db")


def test_set_starts_from_what_the_demand_gets_now(catalog):
    set_policy(catalog, "default", max_keywords=9)
    policy = set_policy(catalog, "42", max_detail_fetch="40")
    assert (policy.max_keywords, policy.max_detail_fetch) == (9, 40)
    again = set_policy(catalog, "42", min_candidate_multiplier="3")
    assert (again.max_detail_fetch, again.min_candidate_multiplier) == (40, 3.0)


@pytest.mark.parametrize("fields, words", [
    ({"max_keywords": "0"}, ["max_keywords=0", "out of range"]),
    ({"max_keywords": "six"}, ["max_keywords='six'", "integer"]),
    ({"filter_near_ratio": 1.5}, ["filter_near_ratio=1.5", "<= 1"]),
    ({"enable_llm_review": "maybe"}, ["enable_llm_review='maybe'", "true or false"]),
    ({"colour": "blue"}, ["unknown policy field 'colour'", "max_keywords"]),
    ({"near_enough_candidate_multiplier": 2.5}, ["near_enough_candidate_multiplier=2.5", "min_candidate_multiplier"]),
])
def test_set_refuses_bad_fields_in_one_line_and_stores_nothing(catalog, fields, words):
    with pytest.raises(ValueError) as caught:
        set_policy(catalog, "42", **fields)
    assert isinstance(caught.value, PolicyError)
    assert "\n" not in str(caught.value)
    for word in words:
        assert word in str(caught.value)
    assert load_policy(catalog, "42")[1] == "default"


def test_set_refuses_an_empty_demand_id(catalog):
    with pytest.raises(PolicyError, match="demand id"):
        set_policy(catalog, "  ", max_keywords=3)


def test_list_shows_default_first_and_unusable_rows_with_their_error(catalog):
    set_policy(catalog, "b", max_keywords=2)
    store_raw(catalog, "a", '{"max_keywords": -1}')
    rows = list_policies(catalog)
    assert [r.demand_id for r in rows] == ["default", "a", "b"]
    assert rows[0].policy == Policy() and rows[0].error is None
    assert rows[1].policy is None and "max_keywords=-1" in rows[1].error
    assert rows[2].policy.max_keywords == 2 and rows[2].updated_at is not None


def test_parse_assignments():
    assert parse_assignments(["max_keywords=8", " enable_llm_review = false "]) == {
        "max_keywords": "8", "enable_llm_review": "false"}
    with pytest.raises(PolicyError, match="key=value"):
        parse_assignments(["max_keywords"])
