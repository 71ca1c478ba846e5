"""The notes the fusion tests index (tests/query/conftest.py's fusion_ws)."""
from __future__ import annotations

# notes that hold `computer` only in passing: BM25 ranks them first for a question using that word
DISTRACTORS = ["- Bought a computer desk for the study.", "- The computer club meets on Fridays.",
               "- Cleaned the computer keyboard with alcohol.", "- Computer games are banned on weekdays.",
               "- Donated the old computer monitor.", "- Computer science homework is due Monday."]

# the distractors, the note a reworded question ("which computer hosts the proxy?") is about, an error code's
FUSION_NOTES = {**{f"bank/misc-{i}.md": f"# Misc {i}\n\n{line}\n" for i, line in enumerate(DISTRACTORS)},
                "bank/setup.md": "# Setup\n\n- The relay daemon runs on the old box.\n",
                "bank/errors.md": "# Errors\n\n- Error E4021 from the provider means the issuer timed out.\n"}
