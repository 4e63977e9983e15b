"""attractor.redact: which values and credential shapes are taken out, and how."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from attractor import redact
from attractor.redact import MIN_SECRET_LENGTH, Redactor

OPENAI = "sk-test-0123456789abcdefghijklmnop"
ENV = {
    "OPENAI_API_KEY": OPENAI,
    "DEPLOY_TOKEN": "dt-9f8e7d6c5b4a",
    "db_password": "correct horse battery",
    "TOKENIZERS_PARALLELISM": "false",  # a secret name, but too short to be a secret
    "SESSION_SECRET_TTL": "86400000",  # only digits: a count, not a secret
    "HOME": "/home/someone",
    "PLAIN": "not a secret at all",
}


@pytest.fixture
def redactor() -> Redactor:
    return Redactor.from_environment(ENV, ["MYCO_*"])


def test_values_of_secret_variables_become_their_names(redactor: Redactor) -> None:
    text = f"key={OPENAI} token=dt-9f8e7d6c5b4a pw='correct horse battery' home=/home/someone"

    assert redactor.text(text) == (
        "key=[redacted:OPENAI_API_KEY] token=[redacted:DEPLOY_TOKEN] "
        "pw='[redacted:db_password]' home=/home/someone"
    )
    assert redactor.names == ("DEPLOY_TOKEN", "OPENAI_API_KEY", "db_password")


def test_short_numeric_and_path_values_are_left_alone(tmp_path: Path) -> None:
    key_file = tmp_path / "key.json"
    key_file.write_text("{}")
    env = {
        "A_TOKEN": "x" * (MIN_SECRET_LENGTH - 1),
        "B_SECRET": "86400000",
        "GOOGLE_APPLICATION_CREDENTIALS": str(key_file),
        "C_TOKEN": "y" * MIN_SECRET_LENGTH,
    }
    redactor = Redactor.from_environment(env)

    assert redactor.names == ("C_TOKEN",)
    assert redactor.text(f"{'x' * 7} 86400000 {key_file}") == f"{'x' * 7} 86400000 {key_file}"


def test_declared_names_and_patterns_count_as_secret() -> None:
    env = {"MYCO_DEPLOY": "deploy-value-1", "RELEASE_PIN": "release-value-2", "OTHER": "other-v-3"}
    redactor = Redactor.from_environment(env, ["MYCO_*", "RELEASE_PIN"])

    assert redactor.text("deploy-value-1 release-value-2 other-v-3") == (
        "[redacted:MYCO_DEPLOY] [redacted:RELEASE_PIN] other-v-3"
    )


@pytest.mark.parametrize(
    ("raw", "kind"),
    [
        ("sk-proj-" + "A1b2C3d4" * 6, "openai-key"),
        ("sk-" + "Zz09" * 12, "openai-key"),
        ("sk-ant-api03-" + "Q" * 40, "anthropic-key"),
        ("AIzaSy" + "B" * 33, "google-api-key"),
        ("ghp_" + "a1" * 18, "github-token"),
        ("gho_" + "b2" * 18, "github-token"),
        ("github_pat_" + "11ABCDEFG" * 4, "github-token"),
        ("AKIAIOSFODNN7EXAMPLE", "aws-access-key"),
        ("xoxb-123456789012-abcdefghij", "slack-token"),
    ],
)
def test_credential_shapes_become_their_kind(raw: str, kind: str) -> None:
    assert Redactor().text(f"got {raw}.") == f"got [redacted:{kind}]."
    assert Redactor().data(f"got {raw}\n".encode()) == f"got [redacted:{kind}]\n".encode()


def test_near_misses_are_not_credentials() -> None:
    text = "task-0123456789abcdefghijklmn disk-aaaaaaaaaaaaaaaaaaaaaaa AKIA123 xoxb- ghp_short"
    assert Redactor().text(text) is text


def test_an_authorization_header_keeps_its_scheme() -> None:
    redactor = Redactor()
    assert redactor.text("curl -H 'Authorization: Bearer eyJhbGciOi.abc.def'") == (
        "curl -H 'Authorization: Bearer [redacted:bearer-token]'"
    )
    assert redactor.text('{"authorization": "Basic dXNlcjpwYXNzd29yZA=="}') == (
        '{"authorization": "Basic [redacted:bearer-token]"}'
    )


BLOCK = (
    "-----BEGIN RSA PRIVATE KEY-----\n"
    "Proc-Type: 4,ENCRYPTED\n"
    "MIIEpAIBAAKCAQEAx1234567890abcdefABCDEF+/xyz\n"
    "abcdefABCDEF0123456789==\n"
    "-----END RSA PRIVATE KEY-----"
)


def test_a_private_key_block_goes_whole() -> None:
    redactor = Redactor()
    assert redactor.text(f"before\n{BLOCK}\nafter\n") == "before\n[redacted:private-key]\nafter\n"
    # As JSON writes it (a service account file), and cut off before its END line.
    assert redactor.text(json.dumps({"k": BLOCK})) == '{"k": "[redacted:private-key]"}'
    cut = BLOCK.rsplit("\n", 2)[0]
    assert redactor.text(cut + "\n") == "[redacted:private-key]\n"
    # Numbered lines, as the agent's read_file shows a file.
    numbered = "".join(f"{i:>3} | {line}\n" for i, line in enumerate(BLOCK.split("\n")[:3], 1))
    assert "MIIEpAIBAAKCAQEAx" not in redactor.text(numbered)


def test_json_escaped_values_are_found_and_json_stays_valid() -> None:
    redactor = Redactor.from_environment({"ODD_SECRET": 'quote"back\\slash-é'})
    encoded = json.dumps({"out": 'x quote"back\\slash-é y'})  # ensure_ascii: \u00e9

    assert json.loads(redactor.text(encoded)) == {"out": "x [redacted:ODD_SECRET] y"}


def test_value_redacts_nested_strings_and_keeps_untouched_objects(redactor: Redactor) -> None:
    clean = {"a": ["b", {"c": 1}], "d": None}
    assert redactor.value(clean) is clean
    dirty = {"a": [f"k {OPENAI}", ("dt-9f8e7d6c5b4a",)], "n": 3}
    assert redactor.value(dirty) == {
        "a": ["k [redacted:OPENAI_API_KEY]", ("[redacted:DEPLOY_TOKEN]",)],
        "n": 3,
    }


def test_scrub_file_rewrites_only_a_file_with_secrets(tmp_path: Path, redactor: Redactor) -> None:
    clean = tmp_path / "clean.txt"
    clean.write_text("nothing here\n")
    before = clean.stat().st_mtime_ns
    assert not redactor.scrub_file(clean)
    assert clean.stat().st_mtime_ns == before
    assert not redactor.scrub_file(tmp_path / "missing.txt")

    dirty = tmp_path / "stdout.txt"
    dirty.write_bytes(b"\xff\xfe not utf-8 " + OPENAI.encode() + b"\n")
    dirty.chmod(0o640)
    assert redactor.scrub_file(dirty)
    assert dirty.read_bytes() == b"\xff\xfe not utf-8 [redacted:OPENAI_API_KEY]\n"
    assert dirty.stat().st_mode & 0o777 == 0o640
    assert sorted(p.name for p in tmp_path.iterdir()) == ["clean.txt", "stdout.txt"]


def test_scrub_file_finds_secrets_across_its_chunks(tmp_path: Path, redactor: Redactor) -> None:
    filler = "x" * 99 + "\n"
    lines = [filler] * 30_000  # 3 MB: several chunks
    lines[10_485] = f"{OPENAI}\n"  # near the first chunk's end
    lines[20_970] = BLOCK + "\n"  # a key block astride the second chunk's end
    lines.append("tail " + OPENAI)  # a last line without newline
    path = tmp_path / "big.txt"
    path.write_text("".join(lines))

    assert redactor.scrub_file(path)
    text = path.read_text()
    assert OPENAI not in text and "MIIEpAIBAAKCAQEAx" not in text and "Proc-Type" not in text
    assert text.count("[redacted:OPENAI_API_KEY]") == 2
    assert text.count("[redacted:private-key]") == 1
    assert len(text.splitlines()) == 30_001


def test_module_functions_redact_only_inside_a_run(redactor: Redactor) -> None:
    assert redact.text(OPENAI) == OPENAI  # outside a run: a user's own file stays as it is
    token = redact.CURRENT.set(redactor)
    try:
        assert redact.text(OPENAI) == "[redacted:OPENAI_API_KEY]"
        assert redact.value([OPENAI]) == ["[redacted:OPENAI_API_KEY]"]
    finally:
        redact.CURRENT.reset(token)


def test_value_turns_other_objects_holding_a_secret_into_redacted_text() -> None:
    redactor = Redactor.from_environment({"X_TOKEN": "abcdefghijk"})
    holder = {"found": {"abcdefghijk"}, "path": Path("/tmp/abcdefghijk"), "n": 1.5}

    assert redactor.value(holder) == {
        "found": "{'[redacted:X_TOKEN]'}",
        "path": "/tmp/[redacted:X_TOKEN]",
        "n": 1.5,
    }
    plain = {"path": Path("/tmp/x")}
    assert redactor.value(plain) is plain


def test_scrub_file_leaves_a_fifo_alone(tmp_path: Path, redactor: Redactor) -> None:
    fifo = tmp_path / "stdout.txt"
    os.mkfifo(fifo)  # a command may leave one where its output was: never waited on
    assert not redactor.scrub_file(fifo)


def test_attractors_settings_that_name_variables_are_not_secrets() -> None:
    env = {"ATTRACTOR_SECRETS": "MYCO_DEPLOY_*", "ATTRACTOR_API_KEY_ENV": "LOCAL_LLM_KEY"}
    assert Redactor.from_environment(env).names == ()


def test_overlapping_finds_leave_no_part_of_either() -> None:
    # A key shape that ends inside a secret value: the value's tail must not stay.
    redactor = Redactor.from_environment({"X_TOKEN": "AKIAQWERTYUIOPASDFGH-tail-of-the-value"})
    text = "id AKIAQWERTYUIOPASDFGH-tail-of-the-value end"
    assert redactor.text(text) == "id [redacted:X_TOKEN] end"
    other = Redactor.from_environment({"Y_TOKEN": "prefix-AKIAQWERTYUIOPASDFG"})
    assert other.text("prefix-AKIAQWERTYUIOPASDFGH!") == "[redacted:Y_TOKEN]!"


def test_scrub_file_finds_a_secret_on_a_line_longer_than_its_chunks(
    tmp_path: Path, redactor: Redactor
) -> None:
    words = ("word " * 230_000).encode()  # 1.15 MB without a newline: more than a chunk
    path = tmp_path / "one-line.txt"
    path.write_bytes(words[: 1024 * 1024 - 10] + OPENAI.encode() + b" " + words)

    assert redactor.scrub_file(path)
    assert OPENAI.encode() not in path.read_bytes()
