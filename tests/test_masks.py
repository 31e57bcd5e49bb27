import math

import torch

from fudbench.core.masks import keep_mask, n_pixels, pixel_order, ranks_from_order, reduce_attribution


def test_reduce_attribution_abs_sum():
    a = torch.tensor([[[[1.0, -2.0]], [[-3.0, 0.5]]]])  # (1, 2, 1, 2)
    assert torch.equal(reduce_attribution(a, "abs_sum"), torch.tensor([[[4.0, 2.5]]]))
    assert torch.equal(reduce_attribution(a, "sum"), torch.tensor([[[-2.0, -1.5]]]))


def test_order_most_relevant_first_and_masks_count_pixels():
    scores = torch.tensor([[[0.1, 0.9], [0.5, 0.3]]])
    order = pixel_order(scores, seeds=[0])
    assert order.tolist() == [[1, 2, 3, 0]]
    ranks = ranks_from_order(order)
    m = keep_mask(ranks, 0.5, "keep", (2, 2))
    assert m.tolist() == [[[[0.0, 1.0], [1.0, 0.0]]]]
    assert torch.equal(keep_mask(ranks, 0.5, "remove", (2, 2)), 1 - m)


def test_ties_broken_by_seed_not_raster_order():
    flat = torch.zeros(1, 8, 8)
    a, b = pixel_order(flat, [1]), pixel_order(flat, [1])
    c = pixel_order(flat, [2])
    assert torch.equal(a, b) and not torch.equal(a, c)
    assert not torch.equal(a[0], torch.arange(64))
    assert sorted(a[0].tolist()) == list(range(64))


def test_non_finite_scores_rank_last():
    scores = torch.tensor([[[float("nan"), 2.0], [1.0, float("inf")]]])
    order = pixel_order(scores, [0])[0].tolist()
    assert order[:2] == [1, 2] and set(order[2:]) == {0, 3}


def test_n_pixels_rounds_to_nearest():
    assert n_pixels(0.1, 1024) == 102
    assert n_pixels(0.5, 9) == 5
    assert all(n_pixels(k / 4, 4) == k for k in range(5))
    assert n_pixels(0.3, 10) == 3 and not math.isclose(0.3 * 10, 2.0)
