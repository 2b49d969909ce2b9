#!/usr/bin/env python3
"""Compares headscope's `analyze --json --npz` with ref_analysis.py's output
for the same text, by the tolerances of the model issue: identical input ids;
attentions, head outputs and similarity within 1e-4 of each tensor's largest
magnitude; every figure within 1e-3; and the share of heads whose category
and focus token agree. Exit status 1 when anything is out of tolerance.

    compare.py REF.json REF.npz OURS.json OURS.npz
"""
import json, math, sys
import numpy as np


LARGEST = {"difference": 0.0, "where": None}


def close(a, b, tol=1e-3, where=None):
    if isinstance(a, (int, float)) and isinstance(b, (int, float)) and not (math.isnan(a) or math.isnan(b)):
        if abs(a - b) > LARGEST["difference"]:
            LARGEST.update(difference=abs(a - b), where=where)
    if isinstance(b, str):  # a figure missing from headscope's output
        return False
    if a is None or b is None:
        return a is None and b is None
    if isinstance(a, float) and math.isnan(a):
        return isinstance(b, float) and math.isnan(b)
    return abs(a - b) <= tol


def main():
    ref_json, ref_npz, our_json, our_npz = sys.argv[1:5]
    ref, ours = json.load(open(ref_json)), json.load(open(our_json))
    rz, oz = np.load(ref_npz), np.load(our_npz)
    failures = []
    if list(rz["input_ids"]) != list(oz["input_ids"]):
        failures.append("input ids differ")
    worst = {}
    for name in ("attentions", "heads", "similarity"):
        r, o = rz[name].astype(np.float64), oz[name].astype(np.float64)
        if r.shape != o.shape:
            failures.append(f"{name}: shape {o.shape} != {r.shape}")
            continue
        worst[name] = float(np.abs(r - o).max() / max(np.abs(r).max(), 1e-30))
        if worst[name] > 1e-4:
            failures.append(f"{name}: relative difference {worst[name]:.2e}")
    figures = same_category = same_focus = heads = 0
    for key in ("sentences_analysed", "sentences_left_out"):
        if ref[key] != ours[key]:
            failures.append(f"{key}: {ours[key]} != {ref[key]}")
    for l, (rl, ol) in enumerate(zip(ref["layers"], ours["layers"])):
        for key in ("mean_distance", "same_sentence_fraction", "separator_attention",
                    "focus_uniqueness", "segmentation_accuracy", "segmentation_undecided",
                    "sink_attention"):
            figures += 1
            if not close(rl[key], ol.get(key, "missing"), where=f"L{l} {key}"):
                failures.append(f"L{l} {key}: {ol.get(key, 'missing')} != {rl[key]}")
        for h, (rh, oh) in enumerate(zip(rl["heads"], ol["heads"])):
            heads += 1
            same_category += rh["category"] == oh["category"]
            same_focus += rh["focus_token_id"] == oh["focus_token_id"]
            for key in ("mean_distance", "same_sentence_fraction", "repetition_fraction",
                        "focus_share", "local_fraction", "separator_attention", "sink_attention"):
                figures += 1
                if not close(rh[key], oh.get(key, "missing"), where=f"L{l} H{h} {key}"):
                    failures.append(f"L{l} H{h} {key}: {oh.get(key, 'missing')} != {rh[key]}")
    agree = min(same_category, same_focus) / max(heads, 1)
    if agree < 0.95:
        failures.append(f"categories/focus tokens agree on only {agree:.1%}")
    print(json.dumps({"tokens": len(rz["input_ids"]), "relative_difference": worst,
                      "figures": figures, "largest_figure_difference": LARGEST, "figures_out_of_tolerance": sum("L" in f for f in failures),
                      "categories_same": f"{same_category}/{heads}", "focus_tokens_same": f"{same_focus}/{heads}",
                      "sentences_left_out": ours["sentences_left_out"]}))
    for failure in failures:
        print("  " + failure)
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
