"""The VS Code extension in editors/vscode: its manifest, its code and the .vsix.

An extension-host test needs VS Code itself downloaded (@vscode/test-electron),
which cannot happen offline; docs/editors.md says so. What can be checked
without it is checked here: the manifest VS Code reads, that the code registers
what the manifest promises and starts ``attractor lsp``, the grammar, and the
package CI builds (``.ci/run``).
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import zipfile
from typing import Any

import pytest

from attractor.dot.schema import SHAPE_TO_TYPE, SPECS
from tests.lsp.lspkit import ROOT

EXTENSION = ROOT / "editors" / "vscode"
VSIX = EXTENSION / "attractor-pipelines.vsix"


def _manifest() -> dict[str, Any]:
    data: dict[str, Any] = json.loads((EXTENSION / "package.json").read_text(encoding="utf-8"))
    return data


def test_the_manifest_registers_pipelines_and_activates_on_them() -> None:
    manifest = _manifest()
    assert (EXTENSION / manifest["main"]).is_file()
    assert "onLanguage:attractor" in manifest["activationEvents"]
    contributes = manifest["contributes"]
    [language] = contributes["languages"]
    assert language["id"] == "attractor" and ".dot" in language["extensions"]
    assert (EXTENSION / language["configuration"]).is_file()
    [grammar] = contributes["grammars"]
    assert grammar["language"] == "attractor"
    syntax = json.loads((EXTENSION / grammar["path"]).read_text(encoding="utf-8"))
    assert syntax["scopeName"] == grammar["scopeName"]
    settings = contributes["configuration"]["properties"]
    assert settings["attractor.command"]["default"] == "attractor"
    assert settings["attractor.files"]["default"] == "**/*.dot"
    assert "vscode-languageclient" in manifest["dependencies"]


def test_the_code_starts_attractor_lsp_and_registers_every_command() -> None:
    code = (EXTENSION / "extension.js").read_text(encoding="utf-8")
    assert re.search(r'args: \["lsp"', code)
    assert 'require("vscode-languageclient/node")' in code
    commands = {c["command"] for c in _manifest()["contributes"]["commands"]}
    assert {"attractor.run", "attractor.dryRun", "attractor.openRun"} <= commands
    registered = set(re.findall(r'registerCommand\("([\w.]+)"', code))
    assert registered == commands
    assert "--dry-run" in code and "#/run/" in code  # the page's address of one run


def test_the_extension_is_valid_javascript() -> None:
    if shutil.which("node") is None:
        pytest.skip("needs Node.js: apt-get install nodejs npm")
    done = subprocess.run(
        ["node", "--check", str(EXTENSION / "extension.js")], capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr


def test_the_grammar_knows_every_attribute_and_shape() -> None:
    syntax = json.loads(
        (EXTENSION / "syntaxes" / "attractor.tmLanguage.json").read_text(encoding="utf-8")
    )
    attributes = re.compile(syntax["repository"]["attributes"]["patterns"][0]["match"])
    for name in SPECS:
        found = attributes.search(f"    {name}=1")
        assert found is not None and found.group(1) == name, name
    assert attributes.search("    not_ours=1") is None
    shapes = re.compile(syntax["repository"]["values"]["patterns"][0]["match"])
    for shape in SHAPE_TO_TYPE:
        found = shapes.search(f"shape={shape}]")
        assert found is not None and found.group(1) == shape


def test_the_vsix_ships_the_extension_and_its_language_client() -> None:
    if not VSIX.is_file():
        pytest.skip(
            "no .vsix built: apt-get install nodejs npm, then in editors/vscode "
            "npm ci && npx vsce package -o attractor-pipelines.vsix (bash .ci/run does it)"
        )
    with zipfile.ZipFile(VSIX) as package:
        names = set(package.namelist())
        shipped = json.loads(package.read("extension/package.json"))
    assert shipped == _manifest()
    assert {"extension/extension.js", "extension/syntaxes/attractor.tmLanguage.json"} <= names
    assert "extension/node_modules/vscode-languageclient/package.json" in names
    assert "extension/node_modules/vscode-languageclient/lib/node/main.js" in names
    assert not any("/@vscode/vsce/" in name for name in names)  # a tool, not shipped


def test_the_grammar_is_generated_from_the_current_schema() -> None:
    """A new attribute fails here until ``python editors/vscode/grammar.py`` is run."""
    done = subprocess.run(
        [sys.executable, str(EXTENSION / "grammar.py"), "--check"], capture_output=True, text=True
    )
    assert done.returncode == 0, done.stdout + done.stderr
