"""llama.cpp's own prompt processing of a GGUF file, the anchor of
headscope's GGUF timings in scripts/bench.sh (issue: every model file
opens and runs fast).

    python reference/llamacpp_ref.py time --model FILE.gguf --tokens 512 --runs 3 [--threads 2]

prints one JSON line as `reference/torch_ref.py time` does: the median
wall time in ms of evaluating `tokens` random token ids (1000 … 20000, as
torch_ref.py draws them) in one batch from an empty KV cache, the logits
of the last one only, after a warm-up, and the peak resident memory.

Needs `llama-cpp-python`, built from its PyPI source (see scripts/bench.sh
for the CMAKE_ARGS: the native build's AMX path crashes on some CPUs).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import time


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("mode", choices=["time"])
    ap.add_argument("--model", required=True)
    ap.add_argument("--tokens", type=int, default=512)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    a = ap.parse_args()

    from llama_cpp import Llama

    llm = Llama(
        model_path=a.model,
        n_ctx=a.tokens,
        n_batch=a.tokens,
        n_ubatch=a.tokens,
        n_threads=a.threads,
        n_threads_batch=a.threads,
        logits_all=False,
        verbose=False,
    )
    rng = random.Random(0)
    vocabulary = llm.n_vocab()
    ids = [rng.randrange(1000, min(20000, vocabulary)) for _ in range(a.tokens)]
    times = []
    for _ in range(a.runs + 1):  # the first is the warm-up
        llm.reset()
        start = time.perf_counter()
        llm.eval(ids)
        times.append(time.perf_counter() - start)
    times = sorted(times[1:])
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(
        json.dumps(
            {
                "tokens": a.tokens,
                "median_ms": 1000 * times[len(times) // 2],
                "peak_rss_mb": peak_mb,
                "threads": a.threads,
            }
        )
    )


if __name__ == "__main__":
    main()
