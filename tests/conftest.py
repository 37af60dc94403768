"""Shared fixtures: the chips every parametrised test runs on."""

import pytest

import npusim

MAIN_CHIPS = ["atlas-a2", "atlas-training"]


@pytest.fixture(params=MAIN_CHIPS)
def chip_name(request):
    return request.param


@pytest.fixture(params=npusim.chips())
def any_chip(request):
    return npusim.load_chip(request.param)


@pytest.fixture(autouse=True)
def _private_cache(tmp_path_factory, monkeypatch):
    """Every test's study-point cache is a folder of its own (npusim/studies/cache.py), never
    the user's ~/.cache/npusim."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path_factory.mktemp("xdg-cache")))
