"""Notebook 01, the population operators: :mod:`.ops` (consensus, conformity, behavioural distance, QD
selection, complementary pairing: pure functions of answers), :mod:`.population` (the synthetic population and
its runner), :mod:`.analysis`, :mod:`.tables` (the README's numbers) and :mod:`.figures` (Fig. 1, S1).
"""
