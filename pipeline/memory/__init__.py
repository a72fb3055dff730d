"""Long-term memory: structured facts about users, made by the nightly daily stage (inside its
one summarizer call) and by `facts remember`; validated, de-duplicated per privacy level,
promoted to `global` only when safe everywhere; rendered per (scope, user) into a profile.

- model.py: what a fact is (levels, categories, the summarizer's `Candidate`)
- extract.py: the offline, deterministic extractor (first-person statements)
- validate.py: the rules a candidate must pass before it is stored (each with a counted reason)
- promote.py: global promotion (word-boundary allow and deny lists)
- dedup.py: ADD / UPDATE / NOOP against what is known, never across privacy levels
- profile.py: the facts a scope may read, rendered MEMORY.md-style within a budget
- views.py: a user's facts as one scope may read them, a stored profile (`mempipe facts show`, `profile`)
- files.py: MEMORY.md and journal/YYYY-MM-DD.md per user of a scope (`mempipe memory-files`)
"""
