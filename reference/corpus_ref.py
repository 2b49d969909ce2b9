#!/usr/bin/env python3
"""Corpus throughput of the transformers reference: the work `headscope
corpus` does, in windows per second, on the same documents.

Each text file is split into sentences (a simple split after . ! ? or at
blank lines: Python has no UAX #29 splitter, so the windows are close to,
not identical with, headscope's), packed into sentence-aligned windows of at
most the model's limit, `[CLS] s1 [SEP] s2 [SEP] ...` (ref_analysis's
build_input), and each window is run with every attention and head output
captured and every similarity matrix (torch_ref's run), then all the figures
(ref_analysis's analyse). Prints one JSON line.

    python corpus_ref.py --model MODEL_DIR [--random-init] FILE_OR_FOLDER...
"""
import argparse, json, os, re, sys, time
import torch
from tokenizers import Tokenizer
sys.path.insert(0, os.path.dirname(__file__))
from torch_ref import load, run, special_ids
from ref_analysis import analyse, build_input, max_tokens, sentences_fitting

SENTENCE_END = re.compile(r"(?<=[.!?])\s+|\n\s*\n")


def documents(paths):
    for path in paths:
        if os.path.isdir(path):
            for root, _, names in sorted(os.walk(path)):
                for name in sorted(names):
                    if name.lower().endswith((".txt", ".md")):
                        yield os.path.join(root, name)
        else:
            yield path


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", required=True)
    ap.add_argument("--random-init", action="store_true")
    ap.add_argument("--threads", type=int, default=0)
    ap.add_argument("paths", nargs="+")
    a = ap.parse_args()
    if a.threads:
        torch.set_num_threads(a.threads)
    model = load(a.model, a.random_init)
    tok = Tokenizer.from_file(f"{a.model}/tokenizer.json")
    tok.no_padding(); tok.no_truncation()
    (start, _), (sep, _) = special_ids(tok)
    limit = max_tokens(model.config)
    windows = tokens = docs = 0
    t0 = time.perf_counter()
    for path in documents(a.paths):
        text = open(path, encoding="utf-8", errors="replace").read()
        sentences = [s.strip() for s in SENTENCE_END.split(text) if s.strip()]
        docs += 1
        while sentences:
            ids, sent, special = build_input(tok, sentences, start, sep, None, limit)
            used = sentences_fitting(sent)
            if used == 0:  # a sentence too long alone: left out, as headscope does
                sentences = sentences[1:]
                continue
            heads, att, sims = run(model, torch.from_numpy(ids).unsqueeze(0))
            analyse(ids, sent, special, att.numpy(), heads.numpy(), sims.numpy(), sep)
            windows += 1
            tokens += len(ids)
            sentences = sentences[used:]
    seconds = time.perf_counter() - t0
    print(json.dumps({"documents": docs, "windows": windows, "tokens_per_window": tokens / max(windows, 1),
                      "seconds": seconds, "windows_per_second": windows / seconds,
                      "threads": torch.get_num_threads()}))


if __name__ == "__main__":
    main()
