"""Admin routes: an integrator makes candidates' accounts and keys over HTTP, with the server's admin key."""

# ruff: noqa: F811 - pytest fixtures imported from tests.api_fixtures are redefined as arguments
from __future__ import annotations

import hashlib
import json
from typing import get_args

import pytest
from pydantic import ValidationError
from sqlalchemy import select

from app.api.admin import NewKey
from app.api.schemas import RequestModel
from app.api.sessions import SessionConfigIn
from app.config import Settings
from app.errors import ConflictError
from app.store.models import ApiKey, User
from tests.api_fixtures import api, assert_problem, build_api, scorer  # noqa: F401

ADMIN_KEY = "admin-" + "k" * 40


@pytest.fixture
def admin(tmp_path, ingested_store, bank, scorer):
    return build_api(tmp_path, store=ingested_store, bank=bank, scorer=scorer, admin_key=ADMIN_KEY)


def bearer(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


def create(admin, name: str, **body):
    made = admin.client.post("/v1/admin/users", json={"name": name, **body}, headers=bearer(ADMIN_KEY))
    assert made.status_code == 201, made.text
    return made.json()


def works(admin, key: str) -> bool:
    return admin.client.get("/v1/sessions", headers=bearer(key)).status_code == 200


def test_without_an_admin_key_set_the_admin_routes_are_not_there(api):
    """There was no HTTP way to make an account or a key: an integrator had to shell into the server."""
    made = api.client.post("/v1/admin/users", json={"name": "learner-1"}, headers=bearer(ADMIN_KEY))
    assert "INTERVIEWER_ADMIN_KEY" in assert_problem(made, 404)["detail"]


def test_an_integrator_creates_a_candidate_whose_key_works_and_is_stored_hashed(admin):
    body = create(admin, "learner-1")
    key = body["api_key"]
    assert body["user"]["name"] == "learner-1" and body["key"]["name"] == "default"
    assert key.startswith(body["key"]["prefix"]) and works(admin, key)
    with admin.repo._reading() as db:
        stored = db.execute(select(ApiKey.key_hash, ApiKey.prefix).join(User).where(User.name == "learner-1")).all()
    assert stored == [(hashlib.sha256(key.encode()).hexdigest(), key[:8])]  # the hash, never the key
    again = admin.client.post("/v1/admin/users", json={"name": "learner-1"}, headers=bearer(ADMIN_KEY))
    assert "learner-1" in assert_problem(again, 409)["detail"]


@pytest.mark.parametrize("key", [None, "alice", "admin-short"])
def test_only_the_admin_key_opens_the_admin_routes(admin, key):
    headers = {} if key is None else bearer(admin.keys.get(key, key))
    assert_problem(admin.client.post("/v1/admin/users", json={"name": "learner-2"}, headers=headers), 401)
    assert admin.repo.user_named("learner-2") is None


def test_keys_are_rotated_added_listed_and_revoked(admin):
    first = create(admin, "learner-3")["api_key"]
    rotate = admin.client.post("/v1/admin/users/learner-3/keys", json={"name": "second"}, headers=bearer(ADMIN_KEY))
    assert rotate.status_code == 201, rotate.text
    second = rotate.json()["api_key"]
    assert works(admin, second) and not works(admin, first)  # a rotation: the old key stops at once
    beside = admin.client.post("/v1/admin/users/learner-3/keys", json={"name": "third", "revoke_others": False},
                               headers=bearer(ADMIN_KEY)).json()["api_key"]
    assert works(admin, second) and works(admin, beside)
    listed = admin.client.get("/v1/admin/users/learner-3/keys", headers=bearer(ADMIN_KEY)).json()
    assert [(k["name"], k["revoked_at"] is None) for k in listed] == [("default", False), ("second", True),
                                                                      ("third", True)]
    assert not any(second in str(k) or beside in str(k) for k in listed)
    gone = admin.client.delete("/v1/admin/users/learner-3/keys/second", headers=bearer(ADMIN_KEY))
    assert gone.status_code == 204 and not works(admin, second) and works(admin, beside)
    assert_problem(admin.client.delete("/v1/admin/users/learner-3/keys/second", headers=bearer(ADMIN_KEY)), 404)
    assert_problem(admin.client.post("/v1/admin/users/nobody/keys", json={}, headers=bearer(ADMIN_KEY)), 404)
    taken = admin.client.post("/v1/admin/users/learner-3/keys", json={"name": "third"}, headers=bearer(ADMIN_KEY))
    # Said to the integrator about their candidate, not as the CLI's "you already have a key".
    assert assert_problem(taken, 409)["detail"] == ("user 'learner-3' already has a key named 'third' (a revoked key "
                                                    "keeps its name); choose another name")


@pytest.mark.parametrize("revoke_others", ["no", "false", 0, "off"])
def test_revoke_others_is_a_json_boolean(admin, revoke_others):
    """A string or a number was guessed to be a boolean ("no", "off", 0: false) and the key issued: a 422 now, and
    nothing issued or revoked."""
    first = create(admin, "learner-10")["api_key"]
    sent = admin.client.post("/v1/admin/users/learner-10/keys", json={"revoke_others": revoke_others},
                             headers=bearer(ADMIN_KEY))
    assert assert_problem(sent, 422)["detail"].startswith("invalid revoke_others: ")
    assert works(admin, first) and len(admin.client.get("/v1/admin/users/learner-10/keys",
                                                        headers=bearer(ADMIN_KEY)).json()) == 1


def test_every_boolean_in_a_request_body_is_a_json_boolean():
    """Pydantic reads "no", "off", 0 and 1 as booleans unless told not to: every request body's boolean is strict."""
    models = [SessionConfigIn, *_subclasses(RequestModel)]
    booleans = [(model, name) for model in models for name, field in model.model_fields.items()
                if bool in (field.annotation, *get_args(field.annotation))]
    assert (NewKey, "revoke_others") in booleans
    for model, name in booleans:
        with pytest.raises(ValidationError) as refused:
            model.model_validate_json(json.dumps({name: "no"}))
        assert [e["loc"] for e in refused.value.errors() if e["loc"][0] == name] == [(name,)], (model, name)


def _subclasses(cls: type) -> list[type]:
    return [sub for child in cls.__subclasses__() for sub in (child, *_subclasses(child))]


def test_the_readmes_bare_rotation_works_again_and_again(admin):
    """README: `POST /v1/admin/users/{name}/keys` issues a new key and revokes the others. With no body (422) or
    `{}` (409: the name "default" was taken by the first key) it used to fail; unnamed keys take key-2, key-3."""
    first = create(admin, "learner-9")["api_key"]
    issued = [admin.client.post("/v1/admin/users/learner-9/keys", headers=bearer(ADMIN_KEY)),
              admin.client.post("/v1/admin/users/learner-9/keys", json={}, headers=bearer(ADMIN_KEY))]
    assert [r.status_code for r in issued] == [201, 201], issued[0].text
    assert [r.json()["key"]["name"] for r in issued] == ["key-2", "key-3"]
    assert works(admin, issued[1].json()["api_key"]) and not works(admin, issued[0].json()["api_key"])
    assert not works(admin, first)


def test_names_made_before_the_path_rule_are_reached_and_new_ones_follow_it_however_made(admin):
    """The CLI made users and keys with spaces, which every admin route refused (422) as a path name; such names
    are looked up as sent (URL-encoded), and new ones, from the CLI's store calls too, follow the path rule."""
    from app.errors import UserFacingError
    old_name, old_key = "two words", "my laptop"
    with admin.repo._writing() as session:  # as stored before the rule: no store call makes such names now
        user = User(name=old_name)
        session.add(user)
        session.flush()
        session.add(ApiKey(user_id=user.id, name=old_key, key_hash="0" * 64, prefix="iv_old"))
    listed = admin.client.get("/v1/admin/users/two%20words/keys", headers=bearer(ADMIN_KEY))
    assert listed.status_code == 200 and [k["name"] for k in listed.json()] == [old_key]
    gone = admin.client.delete("/v1/admin/users/two%20words/keys/my%20laptop", headers=bearer(ADMIN_KEY))
    assert gone.status_code == 204
    issued = admin.client.post("/v1/admin/users/two%20words/keys", json={}, headers=bearer(ADMIN_KEY))
    assert issued.status_code == 201 and works(admin, issued.json()["api_key"])
    for make in (lambda: admin.repo.get_or_create_user("new user"),
                 lambda: admin.repo.create_api_key(admin.repo.user_named(old_name).id, "my phone")):
        with pytest.raises(UserFacingError, match="may hold only letters, digits and _ . @ \\+ -"):
            make()


@pytest.mark.parametrize("name", ["", "a/b", "two words", "x" * 201, "a\x01b", "\u202egnp.exe", "a\u200bb", ".", ".."])
def test_a_user_name_that_cannot_travel_in_a_path_is_a_422(admin, name):
    made = admin.client.post("/v1/admin/users", json={"name": name}, headers=bearer(ADMIN_KEY))
    assert "name" in assert_problem(made, 422)["detail"]


@pytest.mark.parametrize(("path", "body"), [("/v1/admin/users", {"name": "two words"}),
                                           ("/v1/admin/users", {"name": "learner-5", "key_name": ".hidden"}),
                                           ("/v1/admin/users/learner-6/keys", {"name": "my/laptop"})])
def test_a_name_off_the_path_rule_is_told_the_rule_in_words(admin, path, body):
    """It was "String should match pattern '^[\\w@+-][\\w.@+-]*$'": a regular expression, not a rule to follow."""
    create(admin, "learner-6")
    detail = assert_problem(admin.client.post(path, json=body, headers=bearer(ADMIN_KEY)), 422)["detail"]
    assert detail.endswith("name: may hold only letters, digits and _ . @ + - and not start with a dot (it travels "
                           "in URLs)") and "pattern" not in detail


def test_a_short_admin_key_is_refused_at_start_up(tmp_path):
    with pytest.raises(ValidationError, match="INTERVIEWER_ADMIN_KEY is shorter than 32"):
        Settings(data_dir=tmp_path, admin_key="letmein")


@pytest.mark.parametrize("name", ["l\u0435arner-1", "\uff2c\uff25\uff21\uff32\uff2e\uff25\uff32", "\u0440aypal"])
def test_a_user_name_that_reads_as_a_latin_one_it_is_not_is_refused(admin, name):
    """A job board passing people's input through would get a second "learner-1" nobody can tell from the first:
    a Cyrillic "е" among Latin letters, or fullwidth letters. Names wholly in another script stay welcome."""
    create(admin, "learner-1")
    made = admin.client.post("/v1/admin/users", json={"name": name}, headers=bearer(ADMIN_KEY))
    assert made.status_code in (400, 422), made.text
    assert name in made.json()["detail"]
    for welcome in ("\u0438\u0432\u0430\u043d", "j\u00fcrgen", "user_\u540d\u524d"):
        create(admin, welcome)


def test_a_name_typed_with_its_accents_apart_is_composed_and_found_either_way(admin):
    """"Jose" and a combining acute (NFD, as macOS and some keyboards send it) was a 422 for its combining mark,
    though "José" is allowed: it is kept composed, and the admin routes and the CLI's lookup find it however it is
    typed."""
    made = create(admin, "Jose\u0301", key_name="porta\u0301til")
    assert made["user"]["name"] == "Jos\u00e9" and made["key"]["name"] == "port\u00e1til"
    for spelt in ("Jose%CC%81", "Jos%C3%A9"):
        listed = admin.client.get(f"/v1/admin/users/{spelt}/keys", headers=bearer(ADMIN_KEY))
        assert listed.status_code == 200 and [k["name"] for k in listed.json()] == ["port\u00e1til"], listed.text
    assert admin.repo.get_or_create_user("Jose\u0301").id == made["user"]["id"]
    gone = admin.client.delete("/v1/admin/users/Jos%C3%A9/keys/porta%CC%81til", headers=bearer(ADMIN_KEY))
    assert gone.status_code == 204


@pytest.mark.parametrize(("taken", "twin"), [("learner", "le\u0251rner"), ("admin", "adm\u0131n"),
                                             ("adm\u0131n", "admin"), ("papa", "\u0440\u0430\u0440\u0430")])
def test_a_user_name_drawn_as_an_existing_one_with_latin_look_alikes_is_refused(admin, taken, twin):
    """Latin alpha "ɑ" and dotless "ı" are Latin letters, so "leɑrner" and "admın" passed the script check, as did
    a name wholly in Cyrillic letters drawn as Latin ones: a second account drawn as the first. Refused while the
    first exists; Turkish names and accented ones stay welcome."""
    create(admin, taken)
    made = admin.client.post("/v1/admin/users", json={"name": twin}, headers=bearer(ADMIN_KEY))
    assert taken in assert_problem(made, 409)["detail"]
    with pytest.raises(ConflictError, match="reads as the existing user"):
        admin.repo.get_or_create_user(twin)
    for welcome in ("I\u015f\u0131l", "\u0131l\u0131k", "Jos\u00e9", "Jose", "\u00e7i\u011fdem", "leaner"):
        create(admin, welcome)


@pytest.mark.parametrize(("taken", "twin"), [("learner", "Iearner"), ("learner", "1earner"), ("learner-1", "learner-l"),
                                             ("learner-l", "learner-I"), ("mary", "rnary"), ("rnary", "mary"),
                                             ("Olga", "0lga"), ("learner-1", "learner-\u06f1")])
def test_a_user_name_drawn_as_an_existing_one_in_ascii_is_refused(admin, taken, twin):
    """Only letters outside ASCII were compared, so "Iearner" with a capital I (drawn as an l in most sans-serif
    fonts) was made beside "learner", as was "rnary" beside "mary" and a Persian digit one beside a 1. The ASCII pairs
    folded are Unicode's (its confusables list): I, 1 and l; 0 and O; rn and m."""
    create(admin, taken)
    made = admin.client.post("/v1/admin/users", json={"name": twin}, headers=bearer(ADMIN_KEY))
    assert f"reads as the existing user {taken!r}" in assert_problem(made, 409)["detail"]


def test_names_that_differ_as_drawn_stay_welcome(admin):
    """The fold stops at what Unicode's list draws alike: case stays ("Learner" beside "learner"), as does the digit
    0 beside a lowercase o, which it stands above; numbered names stay apart."""
    for taken in ("learner", "learner-1", "login", "mary", "Olga"):
        create(admin, taken)
    for welcome in ("Learner", "leaner", "learner-2", "learner-10", "learner-11", "l0gin", "many", "marry", "olga"):
        create(admin, welcome)


def test_the_admin_key_is_checked_before_the_query(admin):
    """An unknown parameter was named to a caller without the admin key, before the key was asked for."""
    assert assert_problem(admin.client.get("/v1/admin/users/x/keys", params={"foo": 1}), 401)
    named = admin.client.get("/v1/admin/users/x/keys", params={"foo": 1}, headers=bearer(ADMIN_KEY))
    assert assert_problem(named, 422)["detail"].startswith("unknown query parameter 'foo'")
