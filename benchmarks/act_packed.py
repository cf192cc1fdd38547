"""ACT encoder: packed running positions (``act_packed=True``, a run-time option) vs. dense (``act_packed=False``).

A deterministic halting pattern replaces the learned halting unit: ``FixedHalting``
(a ``HaltingUnit`` subclass) returns p = 1.0 for a chosen half of the positions (they halt
after step 1) and p = 0.01 for the others (they run until the forced halt at step 8),
with ``act_epsilon=0.01``, ``act_max_steps=8``, ``act_halt_at_max_steps=True``,
``act_halted_state="copy"``. Both configs get the same weights.

The half that halts is either chosen at random per position (``random``: exactly L/2 per
row, scattered) or the first half of every sequence (``contiguous``); packing gathers the
running positions of each row to the left, so both give the same packed width L/2.

With ``--norm post`` (default) a third contender, ``packed all-K/V``, is the packed loop
without ``FrozenKeyValues``, projecting the keys/values of every position at every step: what
the frozen keys/values save. With ``--norm pre`` the blocks are pre-norm, whose packed loop
always projects every position's keys/values (``FrozenKeyValues`` is post-norm only), so there
is no third contender.

Timed: forward only (eval, no_grad) and forward + backward (train mode, loss = mean(out^2)).
Reported: packed / dense median time (goal <= 0.6x), packed / packed all-K/V, and the
theoretical FLOP ratio.
"""

from __future__ import annotations

import torch

import timing
from universal_transformer.config import UTConfig
from universal_transformer.modules import recurrence
from universal_transformer.modules.halting import HaltingUnit
from universal_transformer.modules.recurrence import RecurrentStack

GOAL = 0.6


class FixedHalting(HaltingUnit):
    """Halting probability 1.0 where ``halt_first`` is True (halt at step 1), ``low`` elsewhere."""

    def __init__(self, d_model: int, halt_first: torch.Tensor, low: float = 0.01) -> None:
        super().__init__(d_model)
        self.register_buffer("halt_first", halt_first)
        self.low = low

    def forward(self, x, padding=None):
        one = torch.ones((), dtype=x.dtype, device=x.device)
        return torch.where(self.halt_first, one, one * self.low).expand(x.shape[:-1])


def split(kind: str, B: int, L: int, generator: torch.Generator) -> torch.Tensor:
    """``[B, L]`` bool, True at the L/2 positions of each row that halt after step 1."""
    mask = torch.zeros(B, L, dtype=torch.bool)
    half = L // 2
    if kind == "contiguous":
        mask[:, :half] = True
    else:
        for b in range(B):
            mask[b, torch.randperm(L, generator=generator)[:half]] = True
    return mask


def theoretical(d, d_ff, L, steps, frac_halted) -> dict[str, float]:
    """FLOPs per sequence (forward; backward scales both sides alike), matmuls and attention only.

    Per position and step: K/V projection 4 d^2, Q + output projection 4 d^2, transition
    4 d d_ff, attention (QK^T, AV over L keys) 4 L d. Here a fraction ``frac_halted`` of the
    positions halts after step 1 and the rest run all ``steps``.

    * dense: every position, every step;
    * packed, K/V of all: step 1 everything; later steps the K/V projection of ALL positions
      (halted ones still serve as keys/values) and the rest only for running positions;
    * packed, fresh K/V: as above, but K/V projected only for positions whose state changed
      in the previous step (post-norm: a frozen position's K/V moves only by the timestep
      term, one vector per step): step 2 projects all positions, later steps the running ones;
    * ideal: halted positions cost nothing after step 1.
    """
    kv, rest = 4 * d * d, 4 * d * d + 4 * d * d_ff + 4 * L * d
    full = L * (kv + rest)
    running = L * (1 - frac_halted)
    dense = steps * full
    packed_all = full + (steps - 1) * (L * kv + running * rest)
    packed_fresh = full + (L * kv + running * rest) + (steps - 2) * running * (kv + rest)
    ideal = full + (steps - 1) * running * (kv + rest)
    return {"dense": dense, "packed_all_kv": packed_all, "packed_fresh_kv": packed_fresh, "ideal": ideal}


class AllKeyValues:
    """Stands in for ``FrozenKeyValues``: projects the keys/values of every position, every step."""

    def __call__(self, blk, x, time, fresh_rows):
        return blk.self_kv(x)


def with_all_key_values(fn):
    """``fn`` run with the packed loop's frozen keys/values replaced by :class:`AllKeyValues`."""
    def run():
        frozen = recurrence.FrozenKeyValues
        recurrence.FrozenKeyValues = AllKeyValues
        try:
            return fn()
        finally:
            recurrence.FrozenKeyValues = frozen
    return run


def main() -> None:
    p = timing.parser(__doc__.split("\n")[0], reps=7, warmup=1)
    timing.add_model_args(p, length=128)
    p.add_argument("--max-steps", type=int, default=8)
    p.add_argument("--modes", default="forward,train", help="comma list of: forward (eval, no_grad), train (fwd+bwd)")
    p.add_argument("--norm", choices=("post", "pre"), default="post", help="the blocks' LayerNorm placement")
    args = p.parse_args()
    if args.quick:
        args.d_model, args.heads, args.d_ff, args.batch, args.length = 128, 4, 512, 4, 32
        args.reps, args.warmup = 3, 1
    info = timing.setup(args)
    d, h, ff, N, B, L = args.d_model, args.heads, args.d_ff, args.max_steps, args.batch, args.length
    fresh = args.norm == "post"  # FrozenKeyValues: K/V projected only for changed positions
    print(f"config: d={d} heads={h} d_ff={ff} max_steps={N} B={B} L={L} norm={args.norm}; half the positions halt after step 1, "
          f"the rest at step {N} (act_epsilon 0.01, halt_at_max_steps, halted state copy)")

    gen = torch.Generator().manual_seed(args.seed)
    masks = {kind: split(kind, B, L, gen) for kind in ("random", "contiguous")}
    x = torch.randn(B, L, d)

    base = None
    models = {}
    cfg = UTConfig(d_model=d, num_heads=h, d_ff=ff, num_steps=max(1, N // 2), act=True, act_max_steps=N,
                   act_epsilon=0.01, act_halt_at_max_steps=True, act_halted_state="copy",
                   dropout=0.1, max_position=max(1024, L), norm=args.norm)
    for packed in (True, False):
        for kind, mask in masks.items():
            torch.manual_seed(args.seed)
            m = RecurrentStack(cfg, causal=False, cross_attention=False)
            m.act_packed = packed
            if base is None:
                base = m.state_dict()
            m.load_state_dict(base)
            m.halting = FixedHalting(d, mask)
            models[(packed, kind)] = m

    # Check: same outputs and halting statistics from both paths (eval, no dropout).
    with torch.no_grad():
        for kind in masks:
            a, b = (models[(pk, kind)].eval()(x) for pk in (True, False))
            diff = (a.hidden - b.hidden).abs().max().item()
            if fresh:
                c = with_all_key_values(lambda: models[(True, kind)](x))()
                diff_all = f", |packed - packed all-K/V| = {(a.hidden - c.hidden).abs().max().item():.2e}"
            else:
                diff_all = ""
            print(f"check {kind}: max |packed - dense| = {diff:.2e}{diff_all}; "
                  f"mean n_updates packed {a.halting.n_updates.mean():.2f} dense {b.halting.n_updates.mean():.2f}")

    th = theoretical(d, ff, L, N, 0.5)
    th["implemented"] = th["packed_fresh_kv"] if fresh else th["packed_all_kv"]
    print("theoretical FLOPs (matmuls + attention), per sequence, forward: "
          f"dense {th['dense'] / 1e9:.2f} G, packed with K/V of all positions every step "
          f"{th['packed_all_kv'] / 1e9:.2f} G, packed with K/V only of changed positions "
          f"{th['packed_fresh_kv'] / 1e9:.2f} G, ideal {th['ideal'] / 1e9:.2f} G")
    print(f"  theoretical packed/dense: K/V of all {th['packed_all_kv'] / th['dense']:.3f}, K/V of changed positions "
          f"{th['packed_fresh_kv'] / th['dense']:.3f}, ideal (halted positions free) {th['ideal'] / th['dense']:.3f}")
    print(f"  the installed src {'projects K/V only for changed positions (FrozenKeyValues)' if fresh else 'projects K/V of all positions every step'}"
          f" -> theoretical ratio as implemented: {th['implemented'] / th['dense']:.3f}")

    summary = []
    payload = {"machine": info, "args": vars(args), "theory": th, "medians": {}}
    for mode in args.modes.split(","):
        contenders = {}
        for kind in masks:
            for packed in (True, False):
                m = models[(packed, kind)]
                name = f"{'packed' if packed else 'dense'} {kind}"
                if mode == "forward":
                    def run(m=m):
                        m.eval()
                        with torch.no_grad():
                            return m(x).hidden
                else:
                    def run(m=m):
                        m.train()
                        m.zero_grad(set_to_none=True)
                        out = m(x).hidden
                        out.pow(2).mean().backward()
                contenders[name] = run
                if packed and fresh:
                    contenders[f"packed all-K/V {kind}"] = with_all_key_values(run)
        title = "forward (eval, no_grad)" if mode == "forward" else "forward + backward (train)"
        print(f"\n## {title}: {len(contenders)} contenders, {args.warmup} warm-up + {args.reps} reps, interleaved", flush=True)
        res = timing.compare(contenders, reps=args.reps, warmup=args.warmup)
        rows = [[n, *timing.timing_row(t)] for n, t in res.items()]
        print(timing.markdown_table(["contender", *timing.TIMING_HEADERS], rows))
        for kind in masks:
            r = timing.ratios(res[f"packed {kind}"], res[f"dense {kind}"])
            r_all = timing.fmt_ratios(timing.ratios(res[f"packed {kind}"], res[f"packed all-K/V {kind}"])) if fresh else "-"
            summary.append([title, kind, f"{res[f'packed {kind}'].median:.4f}", f"{res[f'dense {kind}'].median:.4f}",
                            timing.fmt_ratios(r), timing.verdict(r["median"] <= GOAL), r_all])
        payload["medians"][mode] = {k: v.median for k, v in res.items()}
        payload.setdefault("times", {})[mode] = {k: v.times for k, v in res.items()}
        payload.setdefault("others", {})[mode] = {k: v.others for k, v in res.items()}

    print()
    print(timing.markdown_table(["mode", "halting half", "packed median s", "dense median s", "packed/dense",
                                 f"goal <= {GOAL}", "packed/packed all-K/V"], summary))
    print(timing.RATIO_NOTE)
    print(f"theoretical packed/dense FLOP ratio: {th['implemented'] / th['dense']:.3f} as implemented, "
          f"{th['ideal'] / th['dense']:.3f} ideal")
    timing.write_json(args.json, payload)


if __name__ == "__main__":
    main()
