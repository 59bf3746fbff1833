"""Reference solutions of notebook 09's exercises (decoding, §6.1). Try the exercises first."""

import torch


def greedy(model, src, src_mask, max_len, start_symbol, end_symbol):
    memory = model.encode(src, src_mask)  # (1, S, d_model)
    ys = torch.tensor([[start_symbol]])  # (1, 1)
    while ys.size(1) < max_len:
        causal = torch.ones(ys.size(1), ys.size(1), dtype=torch.bool).tril()[None, None]  # (1, 1, t, t)
        hidden = model.decode(memory, src_mask, ys, causal)  # (1, t, d_model)
        next_word = model.generator(hidden[:, -1]).argmax(dim=-1)  # (1,): from the last position
        ys = torch.cat([ys, next_word[:, None]], dim=1)  # (1, t + 1)
        if next_word.item() == end_symbol:
            break
    return ys[0].tolist()


def beam_score(log_prob, length, alpha):
    return log_prob / ((5 + length) / 6) ** alpha


def top_k_extensions(beam_log_probs, next_log_probs, k):
    V = next_log_probs.size(1)
    candidates = beam_log_probs[:, None] + next_log_probs  # (k, V): log P of every extension
    scores, index = candidates.flatten().topk(k)  # (k,), (k,): index = beam · V + word
    return scores, index // V, index % V
