"""The report and its sections: the study (stages, families, verdicts), wording, the adapter-check rules,
pitfalls, human judgements, the pytrec_eval cross-check, the output folder and the code record."""
