"""Recall hits as text lines, shared by the click command and the entry point's plain recall
(cli/entry.py), which prints without importing click."""
from __future__ import annotations

from zmem.cli.terminal import Bold


def hit_lines(h) -> list[tuple[str, ...]]:
    """The lines `zmem recall` prints for one hit, each as the parts terminal.echo joins (the
    citation Bold): the citation and score line, the --explain line, the indented snippet."""
    # a daily log titled by its day: the heading path (`2025-09-15 > Notes`) says the day once
    day = "" if h.day and (h.heading == h.day or (h.heading or "").startswith(h.day + " > ")) else h.day
    meta = " · ".join(x for x in (f"{h.score:.4g}", day or "", h.heading) if x)
    lines: list[tuple[str, ...]] = [(Bold(h.citation), f"  {meta}")]
    if h.explain:
        e = h.explain
        lines.append((f"    [bm25 rank {e['bm25_rank'] or '-'} score {e['bm25_score'] or '-'} · vector rank "
                      f"{e['vector_rank'] or '-'} similarity {e['vector_similarity'] or '-'} · fused {e['fused']}"
                      # the fused score as the sum it is, when the hit has both parts
                      + (f" = text {e['text_weight']} x {e['text_score']} + vector {e['vector_weight']} x "
                         f"{e['vector_score']} (keyword evidence {e['keyword_evidence']})" if "text_score" in e
                         else f" · weights text {e['text_weight']} vector {e['vector_weight']} (keyword evidence "
                         f"{e['keyword_evidence']})" if "text_weight" in e else "")
                      + (f" · answer probability {e['answer_probability']}" if "answer_probability" in e else "")
                      + (f" · covers {e['keyword_coverage']} of the query" if "keyword_coverage" in e else "")
                      + (f" · {e['words_together']} of its words together" if "words_together" in e else "")
                      + (f" · rerank {e['rerank']}" if "rerank" in e else "")
                      + (f" · token coverage {e['token_coverage']}" if "token_coverage" in e else "")
                      # the passage the cited lines were found in (`zmem get PATH --from A --lines N` for context)
                      + (f" · chunk L{h.chunk_start_line}-L{h.chunk_end_line}"
                         if getattr(h, "chunk_start_line", None) else "") + "]",))
    lines.append(("\n".join("    " + line for line in h.snippet.split("\n")),))
    return lines
