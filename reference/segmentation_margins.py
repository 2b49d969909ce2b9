#!/usr/bin/env python3
"""Per layer and content token, the reference's segmentation margin: the gap
between the two largest head-averaged [SEP] attentions, relative to the
larger ((a - b) / a; ANALYSIS.md §5 calls a token undecided when it is at
most 1e-4). Tokens whose margin lies within float noise of 1e-4 can land on
either side of the rule in two correct implementations; the parity test
allows exactly those to differ.

    python3 segmentation_margins.py REF.npz OUT.json   # REF.npz from ref_analysis.py --npz
"""
import json, sys
import numpy as np

z = np.load(sys.argv[1])
ids, att = z["input_ids"], z["attentions"]
# BERT's ids, as ref_analysis.py builds the input.
cls, sep = 101, 102
seps = np.where(ids == sep)[0]
content = np.where((ids != sep) & (ids != cls))[0]
layers = []
for l in range(att.shape[0]):
    am = att[l].mean(axis=0)[content][:, seps]
    top = -np.sort(-am, axis=1)
    a = top[:, 0]
    b = top[:, 1] if am.shape[1] > 1 else np.zeros_like(a)
    layers.append([float(x) for x in (a - b) / a])
json.dump({"margins": layers}, open(sys.argv[2], "w"))
