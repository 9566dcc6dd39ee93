"""Literal, loop-based implementations of the paper's equations, for checking the library.

Every loop runs over the query token j, the attended token i and the feature k exactly
as the equations are written; they are slow and only meant for tiny inputs.
"""

import torch


def act(name, x):
    return {"elu": torch.nn.functional.elu, "relu": torch.relu}[name](x)


def allowed(direction, j, i):
    return {"forward": i < j, "backward": i > j, "diag": i != j}[direction]


def disa(block, x, length, activation="elu", probs=None, gate=None):
    """One sentence x (n, d_e) through a DiSA block's parameters (eval mode). Returns h, P, s, F, u.

    ``probs`` (n, n, d) [j, i, k] and ``gate`` (n, d), when given, take the place of P and F."""
    W_h, b_h = block.fc_h.linear.weight, block.fc_h.linear.bias
    W1, W2, b1 = block.w1.weight, block.w2.weight, block.b1
    Wf1, bf1 = block.fuse_s.linear.weight, block.fuse_s.linear.bias
    Wf2, bf2 = block.fuse_h.linear.weight, block.fuse_h.linear.bias
    c = block.c
    n, d = x.shape[0], W_h.shape[0]
    h = [act(activation, W_h @ x[t] + b_h) if t < length else torch.zeros(d, dtype=x.dtype) for t in range(n)]
    zero = torch.zeros((), dtype=x.dtype)
    P = [[[zero] * d for _ in range(n)] for _ in range(n)]  # P[j][i][k], built without in-place writes
    s = [torch.zeros(d, dtype=x.dtype) for _ in range(n)]
    for j in range(length):
        keys = [i for i in range(length) if allowed(block.direction, j, i)]
        for k in range(d):
            f = {i: c * torch.tanh((W1[k] @ h[i] + W2[k] @ h[j] + b1[k]) / c) for i in keys}
            z = sum(torch.exp(f[i]) for i in keys)
            for i in keys:
                P[j][i][k] = torch.exp(f[i]) / z
        s[j] = sum((torch.stack(P[j][i]) * h[i] for i in keys), torch.zeros(d, dtype=x.dtype))
    P = torch.stack([torch.stack([torch.stack(row) for row in P[j]]) for j in range(n)])
    if probs is not None:
        P = probs
        s = [sum((P[j, i] * h[i] for i in range(n)), torch.zeros(d, dtype=x.dtype)) for j in range(n)]
    F, u = [], []
    for j in range(n):
        g = torch.sigmoid(Wf1 @ s[j] + bf1 + Wf2 @ h[j] + bf2 + block.b_f) if gate is None else gate[j]
        F.append(g)
        u.append((g * h[j] + (1 - g) * s[j]) if j < length else torch.zeros(d, dtype=x.dtype))
    return torch.stack(h), P, torch.stack(s), torch.stack(F), torch.stack(u)


def source2token(s2t, x, length, activation="elu"):
    """x (n, d) -> (P (n, d), s (d)): softmax over the first ``length`` tokens for every feature."""
    W1, b1 = s2t.fc1.linear.weight, s2t.fc1.linear.bias
    W, b = s2t.fc2.linear.weight, s2t.fc2.linear.bias
    n, d = x.shape
    f = [W @ act(activation, W1 @ x[i] + b1) + b for i in range(length)]
    zero = torch.zeros((), dtype=x.dtype)
    P = [[zero] * d for _ in range(n)]
    for k in range(d):
        m = max(float(f[i][k].detach()) for i in range(length))  # a constant shift: softmax does not depend on it
        z = sum(torch.exp(f[i][k] - m) for i in range(length))
        for i in range(length):
            P[i][k] = torch.exp(f[i][k] - m) / z
    P = torch.stack([torch.stack(row) for row in P])
    out = sum((P[i] * x[i] for i in range(length)), torch.zeros(d, dtype=x.dtype))
    return P, out


def disan(encoder, x, length, activation="elu", replaced=None):
    """One sentence through a DiSANEncoder: its two DiSA blocks, concatenation, source2token.
    ``replaced``: block name -> {"probs": ..., "gate": ...}, what :func:`disa` takes in place of P and F."""
    replaced = replaced or {}
    fw, bw = (disa(block, x, length, activation, **replaced.get(block.name, {})) for block in encoder.blocks)
    P, out = source2token(encoder.s2t, torch.cat([fw[4], bw[4]], dim=-1), length, activation)
    return fw, bw, P, out
