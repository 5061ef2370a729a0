"""``python -m pyspark_datastream``: the commands are listed and bad input is refused clearly."""

from __future__ import annotations

from pyspark_datastream.__main__ import main


def test_help_lists_every_command(capsys):
    assert main(["--help"]) == 0
    out = capsys.readouterr().out
    for command in ("demo", "run", "savepoint"):
        assert command in out


def test_run_refuses_a_missing_file(capsys):
    assert main(["run", "/no/such/notebook.py"]) == 1
    assert "no such file: /no/such/notebook.py" in capsys.readouterr().err


def test_savepoint_inspect_refuses_a_path_that_is_not_a_savepoint(tmp_path, capsys):
    assert main(["savepoint", "inspect", str(tmp_path)]) == 1
    assert "error:" in capsys.readouterr().err
