"""Knowledge and retrieval: versioned bilingual policy pages, scoped BM25 search, and skills."""

from knowledge.store import KnowledgeBase, default_knowledge_base

__all__ = ["KnowledgeBase", "default_knowledge_base"]
