#!/usr/bin/env python3
"""The rate PyTorch's sgemm reaches on a model's own products, the yardstick
scripts/bench.sh sets headscope's model part beside (the engine issue's
aim: the model part at 0.9 or more of it).

The products of one pass of N tokens, as headscope's model part makes them:
every linear layer the model applies (found by hooks on one forward pass of
the model built from its config.json with random weights: the shapes, not
the weights, matter), and for each layer and head the attention's Q·Kᵀ and
P·V (a causal model's in blocks of 128 query rows against the keys each
block sees, as headscope's attention core makes them) and S = O·Oᵀ (whole).
Each distinct shape is timed with torch.matmul in float32 on torch's
threads (the CPU's cores unless --threads), the median of --runs after a
warm-up; the products take the sum of each one's count times its time.

Prints one JSON line: tokens, gflop (every product), sgemm_ms (their time
at PyTorch's pace), gflops (the pace), and the dense layers' and the
attention's shares.
"""
import argparse, collections, json, statistics, time
import torch
from transformers import AutoConfig, AutoModel

DECODERS = {"gpt2", "llama", "mistral", "qwen2", "gpt_neox", "gemma", "gemma2", "gemma3_text", "qwen3", "phi3",
            "olmo2"}
# headscope's attention core: a causal head's queries in blocks of this many
# rows, each against the keys up to its last row.
QUERY_BLOCK = 128


def dense_products(config, tokens):
    """(rows, inner, columns) of every linear layer one pass applies."""
    torch.manual_seed(0)
    model = AutoModel.from_config(config).eval()
    shapes = []

    def record(module, inputs, _output):
        x = inputs[0]
        inner = x.shape[-1]
        columns = module.weight.shape[0] if isinstance(module, torch.nn.Linear) else module.weight.shape[1]
        shapes.append((x.numel() // inner, inner, columns))

    # Linear, and GPT-2's Conv1D (a linear layer with its weight transposed).
    hooks = [m.register_forward_hook(record) for m in model.modules()
             if isinstance(m, torch.nn.Linear) or type(m).__name__ == "Conv1D"]
    vocab = getattr(config, "vocab_size", 1000)
    ids = torch.randint(4, max(5, min(vocab, 1000)), (1, tokens))
    with torch.inference_mode():
        model(input_ids=ids, attention_mask=torch.ones_like(ids))
    for h in hooks:
        h.remove()
    del model
    return shapes


def attention_products(config, tokens):
    """(batch, rows, inner, columns) of each layer's attention products and
    S, batched over the heads."""
    heads = config.num_attention_heads
    head_dim = getattr(config, "head_dim", None) or config.hidden_size // heads
    layers = config.num_hidden_layers
    products = []
    if config.model_type in DECODERS:
        for start in range(0, tokens, QUERY_BLOCK):
            rows = min(QUERY_BLOCK, tokens - start)
            keys = start + rows
            products += [(heads, rows, head_dim, keys), (heads, rows, keys, head_dim)]
    else:
        products += [(heads, tokens, head_dim, tokens), (heads, tokens, tokens, head_dim)]
    products.append((heads, tokens, head_dim, tokens))  # S = O·Oᵀ
    return [p for p in products for _ in range(layers)]


def time_product(shape, runs):
    """Median seconds of one torch.matmul of this shape."""
    *batch, m, k, n = shape
    a = torch.randn(*batch, m, k)
    b = torch.randn(*batch, k, n)
    out = torch.empty(*batch, m, n)
    torch.matmul(a, b, out=out)
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        torch.matmul(a, b, out=out)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", required=True, help="model folder (its config.json)")
    ap.add_argument("--tokens", type=int, default=512)
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--threads", type=int, default=None)
    args = ap.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    config = AutoConfig.from_pretrained(args.model)
    parts = {"dense": [(1, *s) for s in dense_products(config, args.tokens)],
             "attention": attention_products(config, args.tokens)}
    report = {"tokens": args.tokens, "threads": torch.get_num_threads()}
    total_flop = total_seconds = 0.0
    for name, products in parts.items():
        flop = seconds = 0.0
        for shape, count in collections.Counter(products).items():
            batch, m, k, n = shape
            flop += count * 2.0 * batch * m * k * n
            seconds += count * time_product(shape, args.runs)
        report[f"{name}_gflop"] = round(flop / 1e9, 2)
        report[f"{name}_gflops"] = round(flop / seconds / 1e9, 1)
        total_flop += flop
        total_seconds += seconds
    report.update(gflop=round(total_flop / 1e9, 2), sgemm_ms=round(total_seconds * 1e3, 1),
                  gflops=round(total_flop / total_seconds / 1e9, 1))
    print(json.dumps(report))


if __name__ == "__main__":
    main()
