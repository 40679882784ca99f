from click.testing import CliRunner

from phalanx.cli import cli


def test_help_lists_commands() -> None:
    result = CliRunner().invoke(cli, ["--help"])
    assert result.exit_code == 0
    assert "guard" in result.output
