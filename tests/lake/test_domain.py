"""Consolidated sources and report citations carry their domain — the URL's
host, lower-case, without user info, port or "www." (schemas/urls.py
domain_of), NULL for library files — so an analyst can group by site."""

from __future__ import annotations

import json

from hypothesis import given, settings as hypothesis_settings, strategies as st

from schemas.urls import domain_of
from tasks.lake.catalog import open_catalog
from tasks.reporting.report import publish_report
from tests.report_helpers import PACKAGING, PLAN

LABEL = st.text(st.sampled_from("abcXYZ019-中éÉ"), min_size=1, max_size=8)
HOST = st.one_of(
    st.builds(".".join, st.lists(LABEL, min_size=1, max_size=4)),
    st.builds(lambda h: "www." + h, LABEL),
    st.builds(lambda h: "WwW." + h, LABEL),
    st.sampled_from(["[::1]", "[2001:DB8::1]", "127.0.0.1", "localhost", ""]),
)
URL = st.builds(
    lambda space, scheme, user, host, port, rest: f"{space}{scheme}://{user}{host}{port}{rest}",
    st.sampled_from(["", " ", "\u3000", "\u00a0 "]),
    st.sampled_from(["http", "https", "HTTP", "hTTps"]),
    st.sampled_from(["", "user@", "user:pass@", "a@b@"]),
    HOST,
    st.sampled_from(["", ":80", ":8080", ":"]),
    st.sampled_from(["", "/", "/path/x.html", "?q=a@b:c", "#frag", "/a:b@c/d"]),
)


def test_url_domain_names_a_url_as_domain_of_does(settings):
    with open_catalog(settings, "test-domain", read_only=True) as catalog:
        @hypothesis_settings(max_examples=300, deadline=None)
        @given(st.lists(URL, min_size=1, max_size=20))
        def same_domains(urls):
            found = catalog.con.execute("SELECT url_domain(u) FROM unnest(?::VARCHAR[]) AS t(u)", [urls]).fetchall()
            assert [d for (d,) in found] == [domain_of(u) or None for u in urls]

        same_domains()
        fixed = ["https://WWW.Example.com:443/a", "file:///srv/doc.txt", "file://localhost/srv/doc.txt",
                 "ftp://example.com/", "https://www./", None]
        found = catalog.con.execute("SELECT url_domain(u) FROM unnest(?::VARCHAR[]) AS t(u)", [fixed]).fetchall()
        assert [d for (d,) in found] == ["example.com", None, None, None, None, None]


def land_three_sites(lake, inbox, new_bundle, new_item, tmp_path):
    library = tmp_path / "library"
    library.mkdir()
    (library / "notes.txt").write_text("notes")
    items = [new_item("https://WWW.Example.com/a", 0.9), new_item("https://user@example.com:8443/b", 0.8),
             new_item("http://docs.python.org/3/", 0.7), new_item((library / "notes.txt").as_uri(), 0.6)]
    assert not lake.ingest(inbox.write(new_bundle("q1", items)), libraries=[library]).refused
    lake.consolidate()


def test_consolidated_sources_carry_their_domain(cli, lake, inbox, new_bundle, new_item, tmp_path):
    land_three_sites(lake, inbox, new_bundle, new_item, tmp_path)
    done = cli.run("sql", "select domain, count(*) as sources from consolidated group by domain "
                          "order by sources desc, domain nulls last", "--format", "json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == [{"domain": "example.com", "sources": 2},
                                       {"domain": "docs.python.org", "sources": 1},
                                       {"domain": None, "sources": 1}]


def test_analysts_may_name_url_domain(cli, lake, inbox, new_bundle, new_item, tmp_path):
    land_three_sites(lake, inbox, new_bundle, new_item, tmp_path)
    done = cli.run("sql", "select url_domain(url) as site, count(*) as n from results group by 1 order by 2 desc, 1",
                   "--format", "csv")
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["site,n", "example.com,2", "docs.python.org,1", ",1"]


def test_report_citations_carry_their_domain(settings, lake, inbox, new_bundle, new_item):
    items = [new_item(url, 0.9 - i / 10, title=title, content_text=text) for i, (url, title, text) in enumerate(PACKAGING)]
    lake.ingest(inbox.write(new_bundle("q1", items, query_text="pyproject build backend metadata")))
    lake.consolidate()
    publish_report(settings, "t1", PLAN)
    cited = lake.rows("SELECT DISTINCT url, domain FROM report_citations ORDER BY url")
    assert cited and all(domain == domain_of(url) for url, domain in cited)
    assert {domain for _, domain in cited} <= {"packaging.python.org", "peps.python.org", "hatch.pypa.io"}


def test_a_lake_made_before_the_domain_column_gains_it_filled_in(settings, lake, inbox, new_bundle, new_item,
                                                                  tmp_path):
    land_three_sites(lake, inbox, new_bundle, new_item, tmp_path)
    with open_catalog(settings) as catalog:  # as such a lake was: no column, an older schema fingerprint
        catalog.con.execute("ALTER TABLE consolidated DROP COLUMN domain")
        catalog.con.execute("UPDATE searchlake_schema SET fingerprint = 'older'")
    assert lake.rows("SELECT url, domain FROM consolidated ORDER BY final_rank") == [
        ("https://WWW.Example.com/a", "example.com"), ("https://user@example.com:8443/b", "example.com"),
        ("http://docs.python.org/3/", "docs.python.org"), ((tmp_path / "library" / "notes.txt").as_uri(), None)]
    inbox.write(new_bundle("q2", [new_item("https://new.example.org/", 0.95)]))
    lake.ingest(inbox.folder, libraries=[tmp_path / "library"])
    lake.consolidate()  # the earlier rows keep their domain through the merge
    assert lake.rows("SELECT domain FROM consolidated ORDER BY final_rank") == [
        ("new.example.org",), ("example.com",), ("example.com",), ("docs.python.org",), (None,)]
