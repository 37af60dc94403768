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
