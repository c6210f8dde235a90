"""Parsing document files into authored passages: ids, limits, and loud structural errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from contracts.errors import ContractError
from contracts.knowledge import DocumentStatus, Language
from knowledge.passages import MAX_PARAGRAPH_CHARS, parse_document, parse_document_file

HEADER = """---
id: TEST
title_en: Test terms
title_zh: 测试条款
version: "2026-09"
tenant: qinghe
status: active
effective_from: 2026-09-01
effective_to: null
---
"""

PAGE_1 = """
# p01 | First page | 第一页

## en

Returns are accepted for thirty days.

Freight is never refunded.

## zh

三十天内可以退货。

运费不予退还。
"""

PAGE_2 = """
# p02 | Second page | 第二页

## en

Warranty lasts twelve months.

## zh

保修期为十二个月。
"""


def parse(body: str) -> list[str]:
    return [p.passage_id for p in parse_document(HEADER + body, source="TEST.md").passages]


def test_passage_ids_follow_authored_boundaries() -> None:
    parsed = parse_document(HEADER + PAGE_1 + PAGE_2, source="TEST.md")
    assert parsed.header.id == "TEST"
    assert parsed.header.status is DocumentStatus.ACTIVE
    assert [p.passage_id for p in parsed.passages] == [
        "TEST:p01:en:0",
        "TEST:p01:en:1",
        "TEST:p01:zh:0",
        "TEST:p01:zh:1",
        "TEST:p02:en:0",
        "TEST:p02:zh:0",
    ]
    first = parsed.passages[0]
    assert first.page_id == "TEST:p01"
    assert first.doc_version == "2026-09"
    assert first.language is Language.EN
    assert first.page_title == "First page"
    assert first.text == "Returns are accepted for thirty days."
    assert parsed.passages[2].page_title == "第一页"


def test_parse_document_file_reads_utf8(tmp_path: Path) -> None:
    path = tmp_path / "TEST.md"
    path.write_text(HEADER + PAGE_1, encoding="utf-8")
    assert parse_document_file(path).passages[2].text == "三十天内可以退货。"


def test_over_long_paragraph_fails_loudly() -> None:
    body = PAGE_1.replace("Freight is never refunded.", "x" * (MAX_PARAGRAPH_CHARS + 1))
    with pytest.raises(ContractError) as error:
        parse(body)
    assert error.value.code == "passage_too_long"
    assert "TEST.md" in error.value.message
    assert "p01" in error.value.message
    assert "en" in error.value.message
    assert str(MAX_PARAGRAPH_CHARS + 1) in error.value.message


def test_paragraph_at_the_limit_is_kept_whole() -> None:
    text = "y" * MAX_PARAGRAPH_CHARS
    parsed = parse_document(HEADER + PAGE_1.replace("Freight is never refunded.", text), source="TEST.md")
    assert parsed.passages[1].text == text


@pytest.mark.parametrize(
    ("body", "fragment"),
    [
        (PAGE_1.split("## zh")[0], "'## zh' section is missing"),
        (PAGE_1.replace("## zh", "## fr"), "unknown or misplaced heading"),
        (PAGE_1.replace("## en", "### en"), "unknown or misplaced heading"),
        (PAGE_1 + "\n## en\n\nAgain.\n", "unknown or misplaced heading"),
        (PAGE_1.replace("# p01 | First page | 第一页", "# Returns"), "unknown heading"),
        (PAGE_2 + PAGE_1, "out of order"),
        (PAGE_1 + PAGE_1, "out of order"),
        ("Loose text.\n" + PAGE_1, "before the first page"),
        ("", "no pages"),
    ],
)
def test_malformed_structure_is_a_contract_error(body: str, fragment: str) -> None:
    with pytest.raises(ContractError) as error:
        parse(body)
    assert error.value.code == "malformed_document"
    assert fragment in error.value.message


def test_invalid_front_matter_is_a_contract_error() -> None:
    with pytest.raises(ContractError, match="front-matter"):
        parse_document(HEADER.replace("status: active", "status: draft") + PAGE_1, source="TEST.md")
    with pytest.raises(ContractError, match="front-matter"):
        parse_document(PAGE_1, source="TEST.md")
