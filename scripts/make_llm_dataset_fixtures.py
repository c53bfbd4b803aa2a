#!/usr/bin/env python3
"""Small LLM dataset files of the official structure, for the dataset readers' tests.

tests/fixtures/datasets/cnn_eval_tiny.json: four samples written the way the MLCommons
llama3.1-8b reference's download_cnndm.py writes cnn_eval.json (a JSON array, json.dump with
indent=4 and ensure_ascii=False) with its four keys: `instruction` ({"llama": template}),
`input` (the article), `tok_input` (the prompt's token ids, Llama 3's <|begin_of_text|> 128000
first) and `output` (the reference summary). The articles, summaries and ids are made up here:
no Llama 3 tokenizer is needed, and the readers do not re-tokenize.

Run from the repository root: python3 scripts/make_llm_dataset_fixtures.py (standard library only).
"""
import json
import random

TEMPLATE = ("Summarize the following news article in 128 tokens. Please output the summary only, "
            "without any other text.\n\nArticle:\n{input}\n\nSummary:")

ARTICLES = [
    ("The city council approved a new budget on Tuesday. It funds two libraries and a bridge.",
     "Council approves budget.\nIt funds two libraries and a bridge."),
    ("Rain is expected across the region this weekend, forecasters said.",
     "Rain expected this weekend."),
    ("A local team won the championship after a late goal in extra time.",
     "Local team wins championship with a late goal."),
    ("Der Bürgermeister eröffnete am Montag die neue Brücke über den Fluss.",
     "Mayor opens the new bridge; the Bürgermeister spoke."),
]


def main():
    rng = random.Random(20261125)
    entries = []
    for article, summary in ARTICLES:
        ids = [128000] + [rng.randrange(1, 128000) for _ in range(12 + len(article) // 8)]
        entries.append({"instruction": {"llama": TEMPLATE}, "input": article, "tok_input": ids, "output": summary})
    with open("tests/fixtures/datasets/cnn_eval_tiny.json", "w", encoding="utf-8") as f:
        json.dump(entries, f, indent=4, ensure_ascii=False)


if __name__ == "__main__":
    main()
