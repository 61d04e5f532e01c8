"""The evidence scorer's parameters, in one object with documented defaults.

Relevance — what orders a part's evidence — is a weighted sum of the
features evidence.FEATURES names; its weights are fitted by
bench/fit_scorer.py, a logistic model of which candidate sentences hold a
judged fact (a nugget) of their question, over the tuning halves of the
judged sets, cross-validated by question. Run it again and it prints the
weights to put here. The other parameters shape what the features measure
and when a part counts as answered; they are set by measurement on the
tuning halves (bench/HISTORY.md says which)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Parameters:
    # -- relevance: the weight of each feature (evidence.FEATURES) ----------------------
    coverage: float = 1.0        # the share of the part's words the window holds, with context (the scale)
    lexical: float = 0.25        # BM25 of the window for the part, with pseudo-relevance feedback
    dense: float = 0.3           # the word-vector model's cosine of the window and the question
    answer_type: float = 0.2     # it holds the kind of answer the part wants
    rank: float = 0.3            # the prior of the source's place in the task's ranking, 1/rank
    heading: float = 0.2         # the share of the part's words its heading holds
    heading_asks: float = 0.2    # its heading asks for the kind of answer the part wants ("How often")
    section: float = 0.3         # the share of the part's words its whole section holds
    sentence: float = 0.5        # the multilingual sentence model's closeness (pool median 0, best 1)

    # -- what a word counts ----------------------------------------------------------------
    context_credit: float = 0.5   # a word the sentence's title, heading or neighbours hold, not the sentence
    meaning_credit: float = 0.6   # a word only matched by meaning, at most
    framing_credit: float = 0.15  # what a word that frames the answer adds ("Temperature | 24-26 °C")
    meaning_floor: float = 0.25   # word cosines: below the floor no credit ...
    meaning_full: float = 0.6     # ... from here on all of it
    carried: float = 0.5          # in ordering a later part's evidence, what a word of the parts before counts
    # general rarity of a word (Zipf: 7 for the commonest words, 1 for the rarest):
    # (common_zipf − zipf) / rarity_scale, within [rarity_min, rarity_max]; a number counts as rare_zipf
    common_zipf: float = 7.0
    rarity_scale: float = 4.0
    rarity_min: float = 0.15
    rarity_max: float = 1.25
    rare_zipf: float = 3.0

    # -- support: whether a window answers a part -------------------------------------------
    eligible: float = 0.3         # evidence: support at least this
    sure: float = 0.6             # support from which a part counts as answered, not only touched
    named_zipf: float = 3.25      # a question's word rarer than this (Zipf) that no source mentions: a name they lack
    type_support: float = 0.2     # what holding the measure a part asks for adds to support
    dense_support: float = 0.15   # what the word-vector cosine adds
    sentence_support: float = 0.3  # what the sentence model's closeness adds, where the window holds a word
    related_share: float = 0.1    # a window speaks to a part (a table's row joins a quote) from this share
    defining_head: int = 4        # words a defining sentence names its subject within

    # -- the sentence model ----------------------------------------------------------------
    sentence_pool: int = 100      # windows it reads in each script (Chinese, other): the most relevant by everything else
    sentence_spread: float = 0.04  # cosine above the pool's median that is full closeness, at least

    @property
    def untyped_measure_support(self) -> float:
        """At most, for evidence without the measure a part asks for."""
        return self.sure - 0.01


PARAMETERS = Parameters()
