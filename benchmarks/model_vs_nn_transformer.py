"""Train-step throughput and forward latency: this package's model vs torch.nn.Transformer.

Same config for both (d_model 256, 3+3 layers, 8 heads, d_ff 1024, dropout 0.1), same embeddings,
positional encoding, tied generator and loss; batch 64, source/target lengths around 25 with padding.
Rounds alternate between the models so that all see the same machine state.

The package's default puts dropout where the paper does (§5.4: sub-layer outputs, embeddings);
nn.Transformer also drops attention weights and the FFN's hidden layer. Both variants of the package's
model are measured: "paper dropout" (the default) and "nn.T dropout" (attention_dropout = ffn_dropout =
0.1, the same work as nn.Transformer), so the ratio of implementation alone is visible too.

    python benchmarks/model_vs_nn_transformer.py [--rounds 6] [--steps 5]
"""

from __future__ import annotations

import argparse
import time

import torch
import torch.nn.functional as F
from torch import nn

import transformer_course as tc

PAD = 0


class TorchTransformer(nn.Module):
    """nn.Transformer (post-LN, batch_first) between the package's embeddings and generator."""

    def __init__(self, ours: tc.Transformer) -> None:
        super().__init__()
        c = ours.model_config
        self.src_embed, self.tgt_embed = ours.src_embed, ours.tgt_embed  # reused modules: same cost
        self.src_pos, self.tgt_pos, self.generator = ours.src_pos, ours.tgt_pos, ours.generator
        self.core = nn.Transformer(c.d_model, c.h, c.N, c.N, c.d_ff, c.dropout, batch_first=True)

    def forward(self, src, tgt, src_pad, tgt_causal, tgt_pad):
        x = self.core(
            self.src_pos(self.src_embed(src)),
            self.tgt_pos(self.tgt_embed(tgt)),
            tgt_mask=tgt_causal,
            src_key_padding_mask=src_pad,
            tgt_key_padding_mask=tgt_pad,
            memory_key_padding_mask=src_pad,
        )
        return x


def make_batch(batch: int, vocab: int, generator: torch.Generator):
    def side():
        lengths = torch.randint(18, 33, (batch,), generator=generator)  # lengths ~25
        tokens = torch.randint(4, vocab, (batch, int(lengths.max())), generator=generator)
        tokens[torch.arange(tokens.size(1))[None, :] >= lengths[:, None]] = PAD
        return tokens

    return side(), side()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--steps", type=int, default=5, help="train steps per model per round")
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--vocab", type=int, default=8000)
    args = parser.parse_args()
    torch.manual_seed(0)
    sizes = dict(N=3, d_model=256, d_ff=1024, h=8, dropout=0.1)
    ours = tc.make_model(args.vocab, args.vocab, **sizes)
    ours_t = tc.make_model(args.vocab, args.vocab, attention_dropout=0.1, ffn_dropout=0.1, **sizes)
    ref = TorchTransformer(tc.make_model(args.vocab, args.vocab, **sizes))
    src, tgt = make_batch(args.batch, args.vocab, torch.Generator().manual_seed(0))
    tgt_in, tgt_out = tgt[:, :-1], tgt[:, 1:]
    n_tokens = int((tgt_out != PAD).sum())
    src_mask, tgt_mask = tc.padding_mask(src, PAD), tc.target_mask(tgt_in, PAD)
    causal = nn.Transformer.generate_square_subsequent_mask(tgt_in.size(1), dtype=torch.bool)  # True = blocked

    def ours_hidden():
        return ours(src, tgt_in, src_mask, tgt_mask)

    def ours_t_hidden():
        return ours_t(src, tgt_in, src_mask, tgt_mask)

    def ref_hidden():
        return ref(src, tgt_in, src == PAD, causal, tgt_in == PAD)

    runs = {
        "ours (paper dropout)": (ours, ours_hidden),
        "ours (nn.T dropout)": (ours_t, ours_t_hidden),
        "nn.Transformer": (ref, ref_hidden),
    }
    optims = {name: torch.optim.Adam(m.parameters(), lr=1e-4) for name, (m, _) in runs.items()}

    def train_steps(name: str, steps: int) -> float:
        model, hidden = runs[name]
        model.train()
        start = time.perf_counter()
        for _ in range(steps):
            logits = model.generator(hidden())
            loss = F.cross_entropy(logits.reshape(-1, logits.size(-1)), tgt_out.reshape(-1), ignore_index=PAD)
            optims[name].zero_grad(set_to_none=True)
            loss.backward()
            optims[name].step()
        return time.perf_counter() - start

    def forward_time(name: str, steps: int) -> float:
        model, hidden = runs[name]
        model.eval()
        with torch.inference_mode():
            start = time.perf_counter()
            for _ in range(steps):
                model.generator(hidden())
            return time.perf_counter() - start

    for name in runs:  # warm-up
        train_steps(name, 1)
        forward_time(name, 1)
    train = {name: 0.0 for name in runs}
    fwd = {name: 0.0 for name in runs}
    for r in range(args.rounds):
        order = list(runs)[r % len(runs) :] + list(runs)[: r % len(runs)]  # rotate who goes first
        for name in order:
            train[name] += train_steps(name, args.steps)
            fwd[name] += forward_time(name, args.steps)
    total = args.rounds * args.steps
    print(
        f"torch {torch.__version__}, threads {torch.get_num_threads()}, batch {args.batch}, "
        f"target tokens/step {n_tokens}, {total} steps per model"
    )
    for name in runs:
        print(
            f"{name:>22}: train {n_tokens * total / train[name]:8.0f} tgt tokens/s   "
            f"forward {1000 * fwd[name] / total:7.1f} ms/batch"
        )
    b = "nn.Transformer"
    for a in list(runs)[:2]:
        print(
            f"{a}: train-step throughput {train[b] / train[a]:.2f}x nn.Transformer's (target >= 1.1x), "
            f"forward latency {fwd[b] / fwd[a]:.2f}x faster"
        )


if __name__ == "__main__":
    main()
