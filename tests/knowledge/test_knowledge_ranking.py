"""Ranking: English stemming, Chinese stop characters, the term map, page context, skill notes and
one hit per page."""

from __future__ import annotations

from contracts.knowledge import Language, Passage, SkillSummary
from knowledge.bm25 import index_terms, stem
from knowledge.ranking import EXPANSION_WEIGHT, PHRASE_WORD_WEIGHT, PassageRanker, query_terms, skill_page_notes
from knowledge.skills import Skill, SkillCatalogue
from tests.case_data import passage as policy_passage


def test_stem_folds_inflections_not_derivations() -> None:
    assert {stem(w) for w in ("refund", "refunds", "refunded", "refunding")} == {"refund"}
    assert {stem(w) for w in ("ship", "shipped", "shipping")} == {"ship"}
    assert stem("charged") == stem("charge") == stem("charges")
    assert stem("hoping") == stem("hope")
    assert stem("delivery") != stem("delivered")
    assert [stem(w) for w in ("address", "status", "bring", "qh", "1001", "退款")] == [
        "address",
        "status",
        "bring",
        "qh",
        "1001",
        "退款",
    ]


def test_chinese_runs_split_at_particles_before_bigrams() -> None:
    assert index_terms("上周收到的台灯") == ["上周", "周收", "收到", "台灯"]
    assert index_terms("现在还能退款吗") == ["退款"]
    assert index_terms("退") == ["退"]


def test_conversational_filler_is_not_a_term() -> None:
    assert index_terms("Please, I also got something") == []


def test_term_map_adds_the_policy_word() -> None:
    terms = query_terms("Where is my package?", Language.EN)
    assert terms[stem("package")] == 1.0
    assert terms["parcel"] == EXPANSION_WEIGHT
    assert query_terms("我的快递到哪了", Language.ZH)["包裹"] == EXPANSION_WEIGHT
    assert "parcel" not in query_terms("Where is my order?", Language.EN)


def test_a_translated_phrase_gives_way_to_the_policy_words() -> None:
    terms = query_terms("Is the shipping fee refunded?", Language.EN)
    assert terms["delivery"] == terms["charg"] == EXPANSION_WEIGHT
    assert terms["ship"] == terms["fee"] == PHRASE_WORD_WEIGHT
    assert terms["refund"] == 1.0


def passage(page: int, index: int, text: str, title: str = "Page") -> Passage:
    return policy_passage(f"D:p{page:02d}:en:{index}", title=title, text=text, doc_version="1", tenant="t")


def test_page_context_and_one_hit_per_page() -> None:
    pool = [
        passage(1, 0, "Report damage within 48 hours."),
        passage(1, 1, "Keep the packaging until the claim is closed."),
        passage(1, 2, "Damage photos help the carrier."),
        passage(2, 0, "Keep your receipt for your records."),
        passage(3, 0, "Lamps carry a warranty."),
    ]
    ranker = PassageRanker(pool, {"D": "Terms"}, Language.EN)
    hits = ranker.rank("keep the packaging after damage", top_k=4)
    assert [hit.passage.page_id for hit in hits] == ["D:p01", "D:p02"]
    assert hits[0].passage.passage_id == "D:p01:en:1"
    assert hits[0].score > hits[1].score > 0
    assert ranker.rank("zzzz", top_k=4) == []


def test_titles_count_for_their_paragraphs() -> None:
    pool = [
        passage(1, 0, "It is valid for 15 minutes.", title="Approval and payment"),
        passage(2, 0, "Payment is made by card; approval is not needed.", title="Paying"),
    ]
    hits = PassageRanker(pool, {"D": "Terms"}, Language.EN).rank("approval", top_k=2)
    assert hits[0].passage.page_id == "D:p01"


def catalogue(body_en: str) -> SkillCatalogue:
    summary = SkillSummary(name="refund", description="Use when a customer wants their money back.")
    return SkillCatalogue({"refund": Skill(summary, {Language.EN: body_en, Language.ZH: "阅读 D:p02。"})})


def test_skill_notes_name_the_pages_a_skill_points_to() -> None:
    skills = catalogue("Read D:p02 for the window, and D:p02 again; RETURNS is not a page.")
    assert skill_page_notes(skills, Language.EN) == {"D:p02": "Use when a customer wants their money back."}
    assert skill_page_notes(skills, Language.ZH) == {}


def test_skill_notes_lend_their_words_to_the_page() -> None:
    pool = [
        passage(1, 0, "Items are covered for 12 months."),
        passage(2, 0, "Items may be sent back within 30 days."),
    ]
    notes = skill_page_notes(catalogue("Read D:p02 for the window."), Language.EN)
    assert PassageRanker(pool, {"D": "Terms"}, Language.EN, {}).rank("my money", top_k=2) == []
    hits = PassageRanker(pool, {"D": "Terms"}, Language.EN, notes).rank("my money", top_k=2)
    assert [hit.passage.page_id for hit in hits] == ["D:p02"]


def test_the_configured_skills_annotate_the_pages_they_name() -> None:
    pool = [passage(1, 0, "Items may be sent back within 30 days.")]
    pool = [item.model_copy(update={"page_id": "RETURNS:p02", "doc_id": "RETURNS"}) for item in pool]
    hits = PassageRanker(pool, {"RETURNS": "Returns"}, Language.EN).rank("my money", top_k=1)
    assert [hit.passage.page_id for hit in hits] == ["RETURNS:p02"]
