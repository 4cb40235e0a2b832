"""A pytest plugin for running the public array-api-tests suite on wick quickly: after the
suite's own conftest has loaded its Hypothesis profile, reload it without the shrink and explain
phases (a failing example is reported as found, not minimized), so a run of the whole suite
takes minutes. Used by tests/run_array_api_tests.sh (`-p array_api_plugin`)."""

import pytest
from hypothesis import Phase, settings


@pytest.hookimpl(trylast=True)
def pytest_configure(config):
    settings.register_profile(
        "wick-fast", parent=settings.get_profile("array-api-tests"),
        phases=[Phase.explicit, Phase.reuse, Phase.generate])
    settings.load_profile("wick-fast")
