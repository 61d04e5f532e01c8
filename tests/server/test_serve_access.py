"""Who may use `searchlake serve`, and with which folders: beyond the
loopback only with SEARCHLAKE_SERVE_TOKEN, and then every request carries
it (a bearer header, or the cookie the login form sets); only allowed host
names are answered; the library field takes only the folders the server
offers. The real app through Starlette's TestClient, a real uvicorn where
binding matters, and the real command line."""

from __future__ import annotations

import os

import httpx
import pytest
from starlette.testclient import TestClient

from tasks.common.settings import Settings
from tasks.server.handoff import fingerprint
from tasks.server.serve import ServeError, build_app, make_server
from tasks.server.web.guards import SESSION_COOKIE
from tests.server.test_serve_input import Recorder

TOKEN = "correct-horse-battery-staple-42"
OWNER_KEY = "key-of-the-process-that-runs-the-server"
SALT = "the server's salt"  # of its settings' fingerprint (tasks/server/handoff.py)


@pytest.fixture
def recorder() -> Recorder:
    return Recorder()


@pytest.fixture
def with_token(settings, monkeypatch) -> Settings:
    monkeypatch.setenv("SEARCHLAKE_SERVE_TOKEN", TOKEN)
    return Settings()


def client_for(settings: Settings, launcher=None, host: str = "0.0.0.0", base: str = "http://127.0.0.1",
               owner_key: str | None = None) -> TestClient:
    """A client sending what the page's own forms and scripts send: the server's Origin."""
    return TestClient(build_app(settings, launcher, host=host, owner_key=owner_key, fingerprint_salt=SALT),
                      base_url=base, headers={"Origin": base})


# -- binding ---------------------------------------------------------------------

def test_serving_beyond_the_loopback_needs_a_token(settings):
    with pytest.raises(ServeError, match="SEARCHLAKE_SERVE_TOKEN"):
        make_server(settings, "0.0.0.0", 0)


def test_the_command_refuses_to_serve_beyond_the_loopback_without_a_token(cli, error_lines_of):
    done = cli.run("serve", "--host", "0.0.0.0", "--port", "0", timeout=60)
    assert done.returncode == 2
    (line,) = error_lines_of(done.stderr)
    assert line.startswith("error: serving on 0.0.0.0 needs SEARCHLAKE_SERVE_TOKEN")
    assert done.stderr.count("\n") == 1


def test_a_short_token_is_refused(cli, error_lines_of):
    done = cli.run("serve", "--host", "0.0.0.0", "--port", "0", timeout=60, SEARCHLAKE_SERVE_TOKEN="short")
    assert done.returncode == 2
    (line,) = error_lines_of(done.stderr)
    assert line.startswith("error: invalid setting serve_token: ") and "16 characters" in line
    assert "short" not in line.removeprefix("error: invalid setting serve_token")


def test_a_server_beyond_the_loopback_answers_only_with_the_token(with_token):
    with make_server(with_token, "0.0.0.0", 0) as server:
        assert server.url.startswith("http://127.0.0.1:")  # where this machine reaches it
        assert httpx.get(f"{server.url}/runs", timeout=10).status_code == 401
        answer = httpx.get(f"{server.url}/runs", headers={"Authorization": f"Bearer {TOKEN}"}, timeout=10)
        assert answer.status_code == 200 and answer.json() == {"runs": []}


# -- the token -------------------------------------------------------------------

@pytest.mark.parametrize("method, path", [("GET", "/runs"), ("GET", "/health"), ("GET", "/runs/t1/r1/events"),
                                          ("POST", "/api/research"), ("GET", "/tasks/t1")])
def test_every_request_without_the_token_is_refused(with_token, recorder, method, path):
    with client_for(with_token, recorder) as client:
        response = client.request(method, path, headers={"Accept": "application/json"}, json={})
        assert response.status_code == 401
        assert response.headers["www-authenticate"] == "Bearer"
        wrong = client.request(method, path, headers={"Authorization": "Bearer not-" + TOKEN}, json={})
        assert wrong.status_code == 401
    assert recorder.started == []


def test_the_api_refuses_in_json(with_token):
    with client_for(with_token) as client:
        response = client.post("/api/research", json={})
    assert response.json() == {"error": "this server needs its token (Authorization: Bearer …)"}


def test_a_browser_is_sent_to_the_login_form_and_back(with_token):
    with client_for(with_token) as client:
        response = client.get("/tasks/t1?x=1", headers={"Accept": "text/html"}, follow_redirects=False)
        assert response.status_code == 303 and response.headers["location"] == "/login?next=%2Ftasks%2Ft1%3Fx%3D1"
        form = client.get(response.headers["location"])
        assert form.status_code == 200 and 'name="token"' in form.text and 'type="password"' in form.text

        refused = client.post("/login", data={"token": "wrong", "next": "/tasks/t1?x=1"}, follow_redirects=False)
        assert refused.status_code == 401 and "set-cookie" not in refused.headers
        assert client.get("/runs").status_code == 401

        login = client.post("/login", data={"token": TOKEN, "next": "/tasks/t1?x=1"}, follow_redirects=False)
        assert login.status_code == 303 and login.headers["location"] == "/tasks/t1?x=1"
        cookie = login.headers["set-cookie"]
        assert "httponly" in cookie.lower() and "samesite=strict" in cookie.lower()
        assert TOKEN not in cookie  # the cookie proves the token without being it
        assert client.get("/runs").status_code == 200  # the client keeps the cookie


@pytest.mark.parametrize("target", ["//evil.example/x", "https://evil.example/", "/\\evil.example"])
def test_the_login_form_sends_nobody_elsewhere(with_token, target):
    with client_for(with_token) as client:
        login = client.post("/login", data={"token": TOKEN, "next": target}, follow_redirects=False)
    assert login.status_code == 303 and login.headers["location"] == "/"


def test_the_page_assets_need_no_token(with_token):
    with client_for(with_token) as client:
        assert client.get("/static/app.css").status_code == 200


def test_a_configured_token_is_asked_for_on_the_loopback_too(with_token):
    with client_for(with_token, host="127.0.0.1") as client:
        assert client.get("/runs").status_code == 401


# -- requests from other sites ------------------------------------------------------

NOT_FROM_HERE = {
    "origin null": {"Origin": "null"},  # a sandboxed frame, a file: page, a redirect from elsewhere
    "neither origin nor referer": {},
    "another site's origin": {"Origin": "http://evil.example"},
    "another site's referer": {"Referer": "http://evil.example/page"},
    "origin null beside our referer": {"Origin": "null", "Referer": "http://127.0.0.1/"},
}


@pytest.mark.parametrize("headers", NOT_FROM_HERE.values(), ids=NOT_FROM_HERE.keys())
def test_a_request_that_changes_something_must_come_from_the_servers_own_page(settings, recorder, headers):
    with make_server(settings, "127.0.0.1", 0, recorder) as server:
        for path in ("/research", "/ask"):
            posted = httpx.post(server.url + path, data={"question": "solar"}, headers=headers, timeout=10)
            assert posted.status_code == 403, path
            assert "must come from this server's own page" in posted.text
        api = httpx.post(server.url + "/api/research", headers=headers, timeout=10,
                         json={"question": "solar", "fingerprint": fingerprint(settings, SALT)})
        assert api.status_code == 403 and "must come from this server's own page" in api.json()["error"]
        for method in ("PUT", "DELETE", "PATCH"):
            assert httpx.request(method, server.url + "/research", headers=headers, timeout=10).status_code == 403
        # reading stays as it was: a link from anywhere opens the page
        assert httpx.get(server.url + "/", headers=headers, timeout=10).status_code == 200
    assert recorder.started == []


@pytest.mark.parametrize("header", ["Origin", "Referer"])
def test_the_servers_own_page_may_change_things(settings, recorder, header):
    with make_server(settings, "127.0.0.1", 0, recorder) as server:
        named = server.url if header == "Origin" else server.url + "/"
        posted = httpx.post(server.url + "/research", data={"question": "solar"}, headers={header: named},
                            timeout=10)
    assert posted.status_code == 303 and [r.question for r in recorder.started] == ["solar"]


def test_a_program_with_the_servers_key_needs_no_origin(settings, recorder):
    """`searchlake research` hands its run over with the owner's key and no
    Origin: a program, not a browser (no other site can make a browser send it)."""
    body = {"question": "solar", "fingerprint": fingerprint(settings, SALT)}
    with make_server(settings, "127.0.0.1", 0, recorder, owner_key=OWNER_KEY, fingerprint_salt=SALT) as server:
        stranger = httpx.post(server.url + "/api/research", json=body, timeout=10,
                              headers={"Authorization": "Bearer not-the-key"})
        owner = httpx.post(server.url + "/api/research", json=body, timeout=10,
                           headers={"Authorization": f"Bearer {OWNER_KEY}"})
    assert stranger.status_code == 403
    assert owner.status_code != 403 and [r.question for r in recorder.started] == ["solar"]


def test_with_a_token_a_program_needs_no_origin_but_a_browsers_cookie_does(with_token, recorder):
    body = {"question": "solar", "fingerprint": fingerprint(with_token, SALT)}
    with client_for(with_token, recorder, host="127.0.0.1") as page:
        page.post("/login", data={"token": TOKEN, "next": "/"}, follow_redirects=False)
        cookie = {"Cookie": f"{SESSION_COOKIE}={page.cookies[SESSION_COOKIE]}"}
    with make_server(with_token, "127.0.0.1", 0, recorder, fingerprint_salt=SALT) as server:
        browser = httpx.post(server.url + "/api/research", json=body, headers=cookie, timeout=10)
        script = httpx.post(server.url + "/api/research", json=body, timeout=10,
                            headers={"Authorization": f"Bearer {TOKEN}"})
    assert browser.status_code == 403
    assert script.status_code != 403 and [r.question for r in recorder.started] == ["solar"]


# -- host names --------------------------------------------------------------------

def test_beyond_the_loopback_other_host_names_are_refused(with_token):
    bearer = {"Authorization": f"Bearer {TOKEN}"}
    with client_for(with_token, base="http://evil.example") as client:
        assert client.get("/runs", headers=bearer).status_code == 400


def test_configured_host_names_are_answered(with_token, monkeypatch):
    monkeypatch.setenv("SEARCHLAKE_SERVE_ALLOWED_HOSTS", "lake.example.org, 10.0.0.7")
    bearer = {"Authorization": f"Bearer {TOKEN}"}
    for base, status in (("http://lake.example.org", 200), ("http://10.0.0.7:8765", 200),
                         ("http://localhost", 200), ("http://evil.example", 400), ("http://lake.example", 400)):
        with client_for(Settings(), base=base) as client:
            assert client.get("/runs", headers=bearer).status_code == status, base


def test_an_address_the_server_is_bound_to_is_its_own_host_name(with_token):
    bearer = {"Authorization": f"Bearer {TOKEN}"}
    with client_for(with_token, host="10.1.2.3", base="http://10.1.2.3") as client:
        assert client.get("/runs", headers=bearer).status_code == 200


# -- library folders ----------------------------------------------------------------

@pytest.fixture
def folders(tmp_path):
    """An offered library, a folder that is not offered, and a link to the first."""
    offered, private = tmp_path / "offered", tmp_path / "private"
    offered.mkdir()
    private.mkdir()
    (tmp_path / "link-to-offered").symlink_to(offered)
    return offered, private, tmp_path / "link-to-offered"


def post_form(settings, recorder, library: str):
    with client_for(settings, recorder, host="127.0.0.1") as client:
        return client.post("/research", data={"question": "solar", "library": library}, follow_redirects=False)


@pytest.mark.parametrize("variable", ["SEARCHLAKE_LIBRARY", "SEARCHLAKE_SERVE_LIBRARIES"])
def test_the_library_field_takes_the_offered_folders(settings, recorder, folders, monkeypatch, variable):
    offered, private, link = folders
    monkeypatch.setenv(variable, str(offered) if variable == "SEARCHLAKE_LIBRARY" else f"{private}x{os.pathsep}{offered}")
    config = Settings()
    assert post_form(config, recorder, "").status_code == 303  # the default library
    assert post_form(config, recorder, str(offered)).status_code == 303
    assert post_form(config, recorder, str(link)).status_code == 303  # the same folder, once resolved
    real = str(offered.resolve())
    assert [request.library for request in recorder.started] == [None, real, real]


@pytest.mark.parametrize("which", ["private", "parent", "dot-dot", "root"])
def test_the_library_field_refuses_any_other_folder(settings, recorder, folders, monkeypatch, which):
    offered, private, _ = folders
    monkeypatch.setenv("SEARCHLAKE_SERVE_LIBRARIES", str(offered))
    asked = {"private": str(private), "parent": str(offered.parent), "dot-dot": f"{offered}/../private",
             "root": "/"}[which]
    response = post_form(Settings(), recorder, asked)
    assert response.status_code == 400
    assert "is not a library this server offers" in response.text
    assert recorder.started == []


def test_the_api_refuses_a_folder_that_is_not_offered(settings, recorder, folders):
    _, private, _ = folders
    body = {"question": "solar", "fingerprint": fingerprint(settings, SALT), "library": str(private)}
    with client_for(settings, recorder, host="127.0.0.1") as client:
        response = client.post("/api/research", json=body)
    assert response.status_code == 403
    assert response.json()["error"].startswith(f"library folder '{private}' is not a library this server offers")
    assert recorder.started == []


def test_the_servers_own_user_may_name_any_folder(settings, recorder, folders):
    """`searchlake research --library DIR` hands its run over with the key the
    server wrote to $SEARCHLAKE_HOME/serve-<pid>.json (readable by its user only):
    whoever can read that file can read the folder anyway."""
    _, private, _ = folders
    body = {"question": "solar", "fingerprint": fingerprint(settings, SALT), "library": str(private)}
    with client_for(settings, recorder, host="127.0.0.1", owner_key=OWNER_KEY) as client:
        stranger = client.post("/api/research", json=body, headers={"Authorization": "Bearer not-the-key"})
        owner = client.post("/api/research", json=body, headers={"Authorization": f"Bearer {OWNER_KEY}"})
    assert stranger.status_code == 403
    assert owner.status_code == 503 and [request.library for request in recorder.started] == [str(private)]


def test_the_owner_key_opens_a_server_with_a_token(with_token, recorder):
    with client_for(with_token, recorder, owner_key=OWNER_KEY) as client:
        assert client.get("/runs", headers={"Authorization": f"Bearer {OWNER_KEY}"}).status_code == 200
