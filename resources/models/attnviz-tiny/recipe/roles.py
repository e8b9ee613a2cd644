# SPDX-License-Identifier: GPL-3.0-or-later
"""The head-role scores (one attention matrix w [T, T] of one head, causal, rows sum to 1).

These are the definitions the MANIFEST's table uses and the C++ side should mirror:
- previous-token: mean over queries i = 1..T-1 of w[i, i-1]
- first-token (sink): mean over queries i = 1..T-1 of w[i, 0]  (query 0 can only look at itself)
- same-token: over queries whose token occurred before, the mean of the weight on those earlier
  occurrences (sum over j < i with ids[j] == ids[i] of w[i, j])
- induction: on a sequence r r of L random tokens said twice (T = 2L), the mean over the second
  copy's queries i = L..2L-1 of w[i, i-L+1], the token after the same token's first occurrence.
"""
import numpy as np


def previous_token(w):
    T = w.shape[-1]
    return float(np.mean(w[..., np.arange(1, T), np.arange(0, T - 1)]))


def first_token(w):
    return float(np.mean(w[..., 1:, 0]))


def same_token(w, ids):
    ids = np.asarray(ids)
    T = len(ids)
    same = (ids[:, None] == ids[None, :]) & np.tri(T, T, -1, dtype=bool)
    rows = same.any(1)
    if not rows.any():
        return float("nan")
    return float(np.mean((w[..., rows, :] * same[rows]).sum(-1)))


def induction(w, L):
    i = np.arange(L, 2 * L)
    return float(np.mean(w[..., i, i - L + 1]))
