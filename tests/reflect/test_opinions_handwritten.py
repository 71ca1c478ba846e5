"""`zmem opinions` and doctor agree on what bank/opinions.md holds: opinions reflect wrote, and
opinions written by hand as one bullet in the Retain syntax; with none yet, they say that opinions
come from `zmem reflect` and how many `O` facts await it."""
from __future__ import annotations

import json

from helpers.workspace import commit_all, reflect_json, run, run_json, write

FACTS = ("# 2025-11-24\n\n## Retain\n\n- O(c=0.9) @Peter: Prefers tea over coffee.\n"
         "- O(c=0.8) @Ana: Likes long walks by the sea.\n- O @Peter: Trusts the Lisbon office.\n"
         "- W @Peter: Moved to Porto.\n")


def _opinions(root, *extra) -> tuple[dict, str]:
    return run_json(["-C", str(root), "opinions", "--json", *extra])


def test_no_opinions_yet_says_they_come_from_reflect_and_how_many_facts_await_it(ws):
    write(ws, "memory/2025-11-24.md", FACTS)
    commit_all(ws)
    res = run(["-C", str(ws), "opinions"])
    assert res.exit_code == 0 and res.stdout == ""
    assert "zmem reflect" in res.stderr and "3 `O` facts await it" in res.stderr, res.stderr
    out, _ = _opinions(ws)
    assert out == {"opinions": [], "awaiting_reflect": 3}
    assert _opinions(ws, "--entity", "Peter")[0]["awaiting_reflect"] == 2
    assert "2 `O` facts about @Peter await it" in run(["-C", str(ws), "opinions", "--entity", "@Peter"]).stderr

    reflect_json(ws)
    out, err = _opinions(ws)
    assert len(out["opinions"]) == 3 and out["awaiting_reflect"] == 0 and "reflect" not in err
    write(ws, "memory/2025-11-25.md", "# 2025-11-25\n\n## Retain\n\n- O(c=0.6) @Ana: Prefers trains to planes.\n")
    commit_all(ws)
    res = run(["-C", str(ws), "opinions"])
    assert res.exit_code == 0 and len(res.stdout.splitlines()) == 3
    assert "1 `O` fact is not in any opinion yet: run `zmem reflect`" in res.stderr


def test_a_hand_written_opinion_bullet_is_an_opinion_for_opinions_doctor_and_reflect(ws):
    write(ws, "bank/opinions.md", "# Opinions\n\n- O(c=0.7) @Peter: Prefers tea over coffee.\n"
          "- O @[Ana Lima]: Likes the sea.\n\n## Retain\n\n- O(c=0.5) @Peter: Reads on the train.\n")
    commit_all(ws)
    out, err = _opinions(ws)
    assert err == ""
    assert [(o["statement"], o["entities"], o["confidence"], o["source"], o["evidence"]) for o in out["opinions"]] == [
        ("Prefers tea over coffee.", ["Peter"], 0.7, "bank/opinions.md#L3", []),
        ("Likes the sea.", ["Ana Lima"], 0.6, "bank/opinions.md#L4", [])]
    assert out["awaiting_reflect"] == 1  # the bullet under ## Retain is a fact: reflect makes it an opinion
    text = run(["-C", str(ws), "opinions", "--entity", "Peter"])
    assert text.stdout.startswith("c=0.70  Prefers tea over coffee.  @Peter") and "#L3" in text.stdout
    doctor = run(["-C", str(ws), "doctor"]).stdout
    assert ("[ok  ] opinions: bank/opinions.md: 2 opinions (2 written as `- O` bullets), all readable; "
            "1 `O` fact awaits `zmem reflect`") in doctor, doctor

    # a new fact saying the same is evidence for the hand-written opinion, moving it from the person's c
    write(ws, "memory/2025-11-26.md", "# 2025-11-26\n\n## Retain\n\n- O(c=0.9) @Peter: prefers tea over coffee!\n")
    commit_all(ws)
    res, _ = reflect_json(ws)
    peter = next(o for o in res["opinions"] if o["statement"] == "Prefers tea over coffee.")
    assert (peter["before"], peter["after"], peter["new"]) == (0.7, 0.75, False)  # 0.7 + 0.2·0.9·0.3
    text = (ws / "bank/opinions.md").read_text()
    assert "- O(c=0.7) @Peter" not in text and "\n\n## Prefers tea over coffee.\n- entities: @Peter\n" in text
    assert "- O @[Ana Lima]: Likes the sea.\n" in text  # untouched
    out, _ = _opinions(ws)
    assert [o["statement"] for o in out["opinions"]][:2] == ["Prefers tea over coffee.", "Likes the sea."]
    assert out["opinions"][0]["confidence"] == 0.75 and len(out["opinions"][0]["evidence"]) == 1
    assert out["awaiting_reflect"] == 0
    assert reflect_json(ws)[0]["files"] == []  # nothing counted twice


def test_an_unreadable_opinion_bullet_is_a_warning_naming_file_and_line(ws):
    write(ws, "bank/opinions.md", "# Opinions\n\n- O(c=1.5) @Peter: Prefers tea.\n")
    commit_all(ws)
    res = run(["-C", str(ws), "opinions", "--json"])
    assert res.exit_code == 0 and json.loads(res.stdout)["opinions"] == []
    assert "bank/opinions.md:3: confidence c=1.5 is outside 0.0..1.0" in res.stderr
    doctor = run(["-C", str(ws), "doctor"]).stdout
    assert "[WARN] opinions: bank/opinions.md:3: confidence c=1.5" in doctor
    assert "[ok  ] opinions: bank/opinions.md: 0 opinions" in doctor


def test_new_evidence_goes_after_the_last_evidence_line_and_a_persons_lines_stay_put(ws):
    """A remark under the heading and a hand-written evidence bullet were moved below the new evidence
    (the bullet then hung under the remark): the rest of the section stays as written."""
    write(ws, "memory/2025-11-01.md", "# 2025-11-01\n\n## Retain\n\n- O(c=0.6) @Peter: Prefers tea.\n")
    commit_all(ws)
    reflect_json(ws)
    text = (ws / "bank/opinions.md").read_text()
    text = text.replace("## Prefers tea.\n", "## Prefers tea.\nMy remark: only green tea.\n")
    text = text.replace("- evidence:\n", "- evidence:\n  - (hand) heard it from Maria\n")
    write(ws, "bank/opinions.md", text)
    write(ws, "memory/2025-11-04.md", "# 2025-11-04\n\n## Retain\n\n- O(c=0.9) @Peter: Prefers tea a lot.\n")
    commit_all(ws)
    reflect_json(ws)
    section = (ws / "bank/opinions.md").read_text().split("## Prefers tea.\n", 1)[1].splitlines()
    assert section[0] == "My remark: only green tea."
    assert section[1:4] == ["- entities: @Peter", "- confidence: 0.67", "- updated: 2025-11-04"]
    assert section[4:7] == ["- evidence:", "  - (hand) heard it from Maria",
                            "  - supports memory/2025-11-01.md#L5 (fact " + section[6].split("(fact ")[1]]
    assert section[7].startswith("  - supports memory/2025-11-04.md#L5 (fact ") and len(section) == 8
