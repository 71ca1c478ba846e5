"""The automatic watcher's settings ([watch] auto, auto_min_files, idle_exit, auto_max): defaults, types, limits."""
from __future__ import annotations

import pytest

from helpers.workspace import user_config
from zmem.errors import ConfigError
from zmem.workspace.config import load_config


def test_the_defaults_start_a_watcher_at_5000_files_that_exits_after_15_idle_minutes():
    cfg = load_config(None)
    assert (cfg.watch_auto, cfg.watch_auto_min_files, cfg.watch_idle_exit) == (True, 5000, 900.0)
    assert cfg.watch_auto_max == 4


def test_the_settings_are_read_from_the_watch_table():
    user_config("[watch]\nauto = false\nauto_min_files = 0\nidle_exit = 2.5\nauto_max = 9\n")
    cfg = load_config(None)
    assert (cfg.watch_auto, cfg.watch_auto_min_files, cfg.watch_idle_exit, cfg.watch_auto_max) == (False, 0, 2.5, 9)
    assert not cfg.warnings


@pytest.mark.parametrize("line, says", [
    ('auto = "no"', "`watch.auto` has the wrong type (str)"),
    ("auto = 0", "`watch.auto` has the wrong type (int)"),
    ("auto_min_files = true", "`watch.auto_min_files` has the wrong type (bool)"),
    ("auto_min_files = -1", "`watch.auto_min_files` must be at least 0"),
    ("idle_exit = 0", "`watch.idle_exit` must be at least 1"),
    ("auto_max = 0", "`watch.auto_max` must be at least 1"),
])
def test_wrong_values_are_errors_naming_the_key(line, says):
    user_config(f"[watch]\n{line}\n")
    with pytest.raises(ConfigError) as e:
        load_config(None)
    assert says in e.value.message
