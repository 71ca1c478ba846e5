"""Commits signed with an SSH key made for the test, and git log showing each signature's check
(log.showSignature, as many who sign their commits set it): git then prints the check into the
output of every `git log` and `git show` that does not say --no-show-signature."""
from __future__ import annotations

import subprocess
from pathlib import Path

from helpers.workspace import git


def sign_commits(repo: Path, key_dir: Path) -> None:
    """Every later commit in repo is signed, and its log shows the signature's check."""
    key = key_dir / "signing_key"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(key)], check=True, capture_output=True)
    (key_dir / "allowed_signers").write_text(f"t@example.com {key.with_suffix('.pub').read_text()}")
    for name, value in [("gpg.format", "ssh"), ("user.signingkey", str(key)), ("commit.gpgsign", "true"),
                        ("gpg.ssh.allowedSignersFile", str(key_dir / "allowed_signers")),
                        ("log.showSignature", "true")]:
        git(repo, "config", name, value)
