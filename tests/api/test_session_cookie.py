"""The UI session cookie's seal (ragd.api.session_cookie): a MAC under the service key, checked in
memory before any catalog lookup, so a made-up cookie costs nothing and a rotated key ends them all."""

from __future__ import annotations

import secrets

import pytest
from pydantic import SecretStr

from ragd.api.session_cookie import seal, unseal

KEY = SecretStr("k" * 40)
OTHER = SecretStr("o" * 40)


def test_a_sealed_secret_unseals_under_the_same_key_only() -> None:
    secret = secrets.token_urlsafe(32)
    value = seal(secret, KEY)
    assert value.startswith(secret + ".")
    assert KEY.get_secret_value() not in value
    assert unseal(value, KEY) == secret
    assert unseal(value, OTHER) is None  # the service key was rotated
    assert unseal(secret, KEY) is None  # no MAC
    assert unseal(value[:-1] + ("A" if value[-1] != "A" else "B"), KEY) is None


def test_an_open_service_takes_the_secret_as_it_is() -> None:
    secret = secrets.token_urlsafe(32)
    assert seal(secret, None) == secret
    assert unseal(secret, None) == secret
    assert unseal(seal(secret, KEY), None) == secret


@pytest.mark.parametrize("junk", ["", ".", "a" * 31, "!" * 43, "é" * 40, "x" * 200, "a" * 43 + "\x00.mac"])
def test_malformed_values_are_never_looked_up(junk: str) -> None:
    assert unseal(junk, KEY) is None
    assert unseal(junk, None) is None
