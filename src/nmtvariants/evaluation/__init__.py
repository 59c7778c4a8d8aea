"""Metrics: sacreBLEU/chrF/TER, tokenised BLEU, bootstrap significance, ContraWSD, AER."""
