"""Batching by length (data/bucketing.py): buckets of a fixed set, sorted pools of a stream."""

import pytest
import torch

from universal_transformer.data.bucketing import BucketBatcher, SortedPools


def test_bucket_batches_cover_every_example_once_per_epoch_within_the_budget():
    gen = torch.Generator().manual_seed(0)
    lengths = torch.randint(1, 40, (500,), generator=gen).tolist()
    batcher = BucketBatcher(lengths, width=4)
    budget, cap = 512, 1000
    n = batcher.num_batches(budget, cap)
    for epoch in (0, 1):
        seen = []
        for step in range(epoch * n, (epoch + 1) * n):
            index = batcher.batch(7, step, budget, cap).tolist()
            buckets = {(lengths[i] - 1) // 4 for i in index}
            assert len(buckets) == 1  # one length bucket per batch
            bound = (buckets.pop() + 1) * 4
            assert len(index) == 1 or 2 * bound * len(index) <= budget
            seen += index
        assert sorted(seen) == list(range(500))
    first = [batcher.batch(7, s, budget, cap).tolist() for s in range(n)]
    assert first != [batcher.batch(7, s, budget, cap).tolist() for s in range(n, 2 * n)]  # reshuffled
    assert first != [batcher.batch(8, s, budget, cap).tolist() for s in range(n)]  # another seed
    fresh = BucketBatcher(lengths, width=4)  # pure in (seed, step): no state carried between calls
    assert [fresh.batch(7, s, budget, cap).tolist() for s in reversed(range(n))] == first[::-1]
    assert max(len(b) for b in batcher.epoch(7, 0, 100_000, 16)) == 16  # max_batch_size caps it



def test_bucket_batches_by_group_hold_one_group_and_one_length_bucket():
    gen = torch.Generator().manual_seed(1)
    lengths = torch.randint(1, 40, (600,), generator=gen).tolist()
    groups = torch.randint(0, 5, (600,), generator=gen).tolist()
    batcher = BucketBatcher(lengths, width=4, groups=groups)
    budget, cap = 512, 1000
    n = batcher.num_batches(budget, cap)
    assert n > BucketBatcher(lengths, width=4).num_batches(budget, cap)  # buckets split by group
    seen = []
    for step in range(n):
        index = batcher.batch(7, step, budget, cap).tolist()
        assert len({groups[i] for i in index}) == 1 and len({(lengths[i] - 1) // 4 for i in index}) == 1
        bound = ((lengths[index[0]] - 1) // 4 + 1) * 4
        assert len(index) == 1 or 2 * bound * len(index) <= budget  # the same budget per length
        seen += index
    assert sorted(seen) == list(range(600))
    # One group is no grouping: the same batches, step for step.
    one = BucketBatcher(lengths, width=4, groups=[3] * 600)
    plain = BucketBatcher(lengths, width=4)
    assert all(torch.equal(one.batch(7, s, budget, cap), plain.batch(7, s, budget, cap)) for s in range(2 * n))
    with pytest.raises(ValueError, match="599 groups for 600 examples"):
        BucketBatcher(lengths, width=4, groups=groups[:-1])

def _stream(step: int) -> list[tuple[int, int]]:
    """A stream of (step, length) examples, 3 to 9 a step, lengths from the step alone."""
    gen = torch.Generator().manual_seed(1000 + step)
    count = int(torch.randint(3, 10, (1,), generator=gen))
    return [(step, int(n)) for n in torch.randint(1, 50, (count,), generator=gen)]


def test_sorted_pools_regroup_each_window_of_the_stream_by_length():
    pools = SortedPools(4, _stream, lambda ex: ex[1])
    for window in (0, 1, 5):
        steps = range(4 * window, 4 * window + 4)
        batches = [pools.batch(7, s) for s in steps]
        drawn = [ex for s in steps for ex in _stream(s)]
        assert sorted(ex for b in batches for ex in b) == sorted(drawn)  # the window's examples, each once
        assert max(map(len, batches)) - min(map(len, batches)) <= 1  # near-equal counts
        spans = sorted((min(ex[1] for ex in b), max(ex[1] for ex in b)) for b in batches)
        assert all(a[1] <= b[0] for a, b in zip(spans, spans[1:]))  # runs of the sorted window
        padded = sum(len(b) * max(ex[1] for ex in b) for b in batches)
        assert padded < sum(len(_stream(s)) * max(n for _, n in _stream(s)) for s in steps)
    orders = {tuple(min(ex[1] for ex in pools.batch(seed, s)) for s in range(36, 40)) for seed in range(6)}
    assert len(orders) > 1  # the order of a window's runs depends on the seed
    fresh = SortedPools(4, _stream, lambda ex: ex[1])  # pure in (seed, step)
    assert [fresh.batch(7, s) for s in reversed(range(12))] == [pools.batch(7, s) for s in reversed(range(12))]
    assert [SortedPools(1, _stream, lambda ex: ex[1]).batch(7, s) for s in range(3)] == [_stream(s) for s in range(3)]
    with pytest.raises(ValueError, match="pool must be a positive"):
        SortedPools(0, _stream, lambda ex: ex[1])
