"""The climb: can a population make verified knowledge that no founder holds, and does grounding matter there?

A ladder of harder rungs past the novel region (:func:`lib.core.tasks.rung_of`), a handful of gold hints of the
first rung in every learner's data, then rounds of self-improvement — sample, keep, select, train — by a population
or one learner, with the verifier or a vote as the filter (``configs/society_climb/``, pre-registered there).
Modules: :mod:`~lib.society.climb.config` (the config), :mod:`~lib.society.climb.ladder` (its pools and their
audit), :mod:`~lib.society.climb.keep` (which answers are kept: pure), :mod:`~lib.society.climb.loop` (one shard,
round by round), :mod:`~lib.society.climb.run` (the runner ``lib.experiment`` calls, kind ``llm_climb``).
"""
