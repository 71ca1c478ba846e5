"""An explicit `recall.mode` in a config file asks for vectors as `--mode` does: without an embedding
provider, recall says so. Left out, hybrid is the default and says nothing (issue 17)."""
from __future__ import annotations

from helpers.workspace import run, user_config
from zmem.workspace.config import load_config

NO_PROVIDER = "no embedding provider configured"


def test_an_enumerated_setting_records_the_file_that_set_it(tmp_path):
    (tmp_path / "zmem.toml").write_text('[recall]\nmode = "hybrid"\n')
    config = load_config(tmp_path)
    assert config.recall_mode == "hybrid" and config.origins["recall.mode"] == str(tmp_path / "zmem.toml")
    (tmp_path / "zmem.toml").write_text("")
    assert "recall.mode" not in load_config(tmp_path).origins


def test_recall_mode_hybrid_set_explicitly_warns_without_a_provider(ws):
    assert NO_PROVIDER not in run(["-C", str(ws), "recall", "gateway"]).stderr
    user_config('[recall]\nmode = "hybrid"\n')
    res = run(["-C", str(ws), "recall", "gateway"])
    assert res.exit_code == 0 and NO_PROVIDER in res.stderr
