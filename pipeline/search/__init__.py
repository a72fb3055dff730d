"""Search over a user's memory, as one scope may read it (ARCHITECTURE.md, "Search"); bots call
it through pipeline.read (`search`, `get_context(..., query=...)`), never with a model.

- terms.py: a query's words, and those words as an FTS5 MATCH or a to_tsquery text (quoted, so
  nothing a user types is read as full-text syntax)
- rank.py: the final ranking formula and `Hit`
- find.py: one search: the readable partitions (the audience rule, pipeline/memory/audience.py,
  by point queries), the candidates (pipeline/store/search.py), the ranking

The index itself (memory_items) is kept by database triggers (sql/migrations/0007_search_index).
"""

from .find import find_hits, readable_partitions
from .rank import Hit, rank
from .terms import fts5_match, pg_tsquery, query_terms

__all__ = ["Hit", "find_hits", "readable_partitions", "rank", "query_terms", "fts5_match", "pg_tsquery"]
