"""The statistics the analyses need (the project installs neither scipy nor scikit-learn): PCA with
deterministic signs, k-means with k-means++ seeding and restarts, the silhouette score, Kendall's tau-b
(O(m log² m), for the thousands of cells of an attention matrix), the Gini coefficient, a cluster
bootstrap of ratio statistics and McNemar's exact test of two classifiers on the same examples.

Arguments and results are numpy arrays. The matrix products of PCA, k-means and the silhouette run in
torch (float64): the app runs torch on one thread, while numpy's OpenBLAS starts a thread per core and
was 5-7x slower than one thread on this shared 2-core machine.
"""
from __future__ import annotations

import functools
import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass

import numpy as np
import torch


def _tensor(x) -> torch.Tensor:
    return torch.as_tensor(np.ascontiguousarray(x, dtype=np.float64))


# ---------------------------------------------------------------- projection and clustering

@dataclass
class Projection:
    """Points in 2-D, the two components and the share of the variance each explains."""
    coords: np.ndarray      # (N, 2)
    explained: np.ndarray   # (2,) fractions of the total variance, largest first
    components: np.ndarray  # (2, D) unit loadings; the largest |loading| of each is positive


def pca_2d(x: np.ndarray) -> Projection:
    """Project (N, D) points on their first two principal components (SVD of the centred data).

    An SVD fixes each component only up to its sign, so a correlation with PC 1 could read +0.5 here and
    −0.5 elsewhere; each component is turned so that its largest loading (by magnitude, the first of
    equals) is positive, which does not depend on the order of the points. Components that the data lack
    (N < 3, or points on a line) come out as zeros with 0 explained variance.
    """
    centred = _tensor(x)
    centred = centred - centred.mean(dim=0)
    _, sing, vt = torch.linalg.svd(centred, full_matrices=False)
    m = min(2, len(sing))
    vt = vt[:m]
    largest = vt.gather(1, vt.abs().argmax(dim=1, keepdim=True))
    vt = vt * torch.where(largest < 0, -1.0, 1.0).to(vt.dtype)
    total = float((sing ** 2).sum())
    coords = np.zeros((len(centred), 2))
    explained = np.zeros(2)
    components = np.zeros((2, centred.shape[1]))
    coords[:, :m] = (centred @ vt.T).numpy()
    components[:m] = vt.numpy()
    if total > 0:
        explained[:m] = (sing[:m] ** 2 / total).numpy()
    return Projection(coords, explained, components)


def _squared_distances(x: torch.Tensor, centres: torch.Tensor) -> torch.Tensor:
    """(N, k) squared Euclidean distances, never below 0 (the expansion can round to -1e-16)."""
    return (_nearer(x, centres) + (x ** 2).sum(1)[:, None]).clamp_min(0.0)


def _nearer(x: torch.Tensor, centres: torch.Tensor) -> torch.Tensor:
    """(N, k) squared distances less each point's own |x|^2: the same argmin, one pass fewer over x."""
    return (centres ** 2).sum(1)[None, :] - 2 * x @ centres.T


def _seed_centres(x: torch.Tensor, k: int, rng: np.random.Generator) -> torch.Tensor:
    """k-means++: each next centre drawn with probability proportional to its squared distance to the nearest."""
    chosen = [int(rng.integers(len(x)))]
    nearest = _squared_distances(x, x[chosen]).squeeze(1)
    for _ in range(1, k):
        weights = nearest.numpy()
        total = weights.sum()
        chosen.append(int(rng.choice(len(x), p=weights / total)) if total > 0 else int(rng.integers(len(x))))
        nearest = torch.minimum(nearest, _squared_distances(x, x[chosen[-1:]]).squeeze(1))
    return x[chosen].clone()


RESTARTS = 10  # k-means runs from this many k-means++ seedings and keeps the one of lowest inertia


def kmeans(x: np.ndarray, k: int, seed: int = 0, restarts: int = RESTARTS, iterations: int = 100) -> np.ndarray:
    """(N,) cluster labels 0..k-1 of (N, D) points: Lloyd's algorithm from k-means++ seeds, the best of
    ``restarts`` runs by inertia (Lloyd's algorithm stops in local minima; with 4 runs a better solution
    was missed on real data, while 50 made the silhouette search 8x slower). Labels are renumbered by
    cluster size, largest first."""
    x = _tensor(x)
    if not 1 <= k <= len(x):
        raise ValueError(f"k must be between 1 and the number of points ({len(x)}), not {k}")
    rng = np.random.default_rng(seed)
    best, best_inertia = None, np.inf
    for _ in range(restarts):
        centres = _seed_centres(x, k, rng)
        labels = None
        for _ in range(iterations):
            new = _nearer(x, centres).argmin(dim=1)
            if labels is not None and torch.equal(new, labels):
                break
            labels = new
            counts = torch.bincount(labels, minlength=k)
            sums = torch.zeros_like(centres).index_add_(0, labels, x)
            filled = counts > 0  # an emptied cluster keeps its centre
            centres[filled] = sums[filled] / counts[filled, None]
        inertia = float(_squared_distances(x, centres).gather(1, labels[:, None]).sum())
        if inertia < best_inertia:
            best, best_inertia = labels.numpy(), inertia
    order = np.argsort(-np.bincount(best, minlength=k), kind="stable")
    return np.argsort(order)[best]


def silhouette(x: np.ndarray, labels: np.ndarray) -> float:
    """Mean silhouette (b - a) / max(a, b) over the points, Euclidean; a point alone in its cluster scores 0.

    NaN with fewer than two clusters or as many clusters as points.
    """
    x = _tensor(x)
    labels = np.asarray(labels)
    clusters = np.unique(labels)
    if len(clusters) < 2 or len(clusters) >= len(x):
        return float("nan")
    member = torch.as_tensor(labels[:, None] == clusters[None, :])  # (N, C)
    sums = (torch.cdist(x, x) @ member.double()).numpy()            # (N, C): summed distance to each cluster
    member = member.numpy()
    sizes = member.sum(axis=0)
    own = member.argmax(axis=1)
    own_size = sizes[own]
    a = sums[np.arange(len(x)), own] / np.maximum(own_size - 1, 1)
    b = np.where(member, np.inf, sums / sizes[None, :]).min(axis=1)
    score = np.where(own_size > 1, (b - a) / np.maximum(np.maximum(a, b), 1e-300), 0.0)
    return float(score.mean())


def best_k(x: np.ndarray, ks: Iterable[int] = range(2, 9), seed: int = 0) -> tuple[int, dict[int, float]]:
    """The k of ``ks`` whose k-means clustering has the highest silhouette, and every k's silhouette
    (k = 1 and no scores when no k in ``ks`` fits the points)."""
    scores = {k: silhouette(x, kmeans(x, k, seed)) for k in ks if 2 <= k < len(x)}
    scored = {k: s for k, s in scores.items() if np.isfinite(s)}
    if not scored:
        return 1, scores
    return max(scored, key=scored.get), scores


def cosine_to(x: np.ndarray, q: np.ndarray) -> np.ndarray:
    """(N,) cosine similarity of each row of (N, D) ``x`` with the vector ``q``; 0 for zero vectors."""
    x, q = np.asarray(x, dtype=np.float64), np.ravel(np.asarray(q, dtype=np.float64))
    norms = np.linalg.norm(x, axis=1) * np.linalg.norm(q)
    return np.where(norms > 0, x @ q / np.where(norms > 0, norms, 1.0), 0.0)


# ---------------------------------------------------------------- rank agreement and concentration

def _tied_pairs(*columns: np.ndarray) -> int:
    """Pairs of rows equal in every column, for rows sorted so that equal rows are adjacent."""
    change = np.zeros(len(columns[0]) - 1, dtype=bool)
    for column in columns:
        change |= column[1:] != column[:-1]
    runs = np.diff(np.flatnonzero(np.concatenate(([True], change, [True]))))
    return int((runs * (runs - 1) // 2).sum())


def _inversions(ranks: np.ndarray) -> int:
    """Pairs a < b with ranks[a] > ranks[b], by a bottom-up merge sort whose every level is one numpy pass.

    At width w the array is sorted within blocks of w; for each element of the right half of a pair of
    blocks, the elements of the left half above it are inversions. Offsetting every value by its pair's
    number times the rank range makes the left halves one sorted array that searchsorted can use.
    """
    m = len(ranks)
    span = int(ranks.max()) + 1 if m else 1
    values, position, total, width = ranks.astype(np.int64), np.arange(m), 0, 1
    while width < m:
        pair = position // (2 * width)
        keys = pair * span + values
        right = (position // width) % 2 == 1
        left_keys = keys[~right]
        left_end = np.searchsorted(left_keys, (pair[right] + 1) * span)
        total += int((left_end - np.searchsorted(left_keys, keys[right], side="right")).sum())
        values = np.sort(keys) - pair * span  # the pair's blocks merged; pairs stay in place
        width *= 2
    return total


def kendall_tau(x, y) -> float:
    """Kendall's tau-b of two equally long sequences (ties in either corrected for); NaN pairs are left out.

    NaN when fewer than two pairs remain or one side is constant. Knight's algorithm: sorted by x then
    y, the discordant pairs are the inversions of y, so m values take O(m log² m), not m² pairs.
    """
    x, y = np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64)
    if x.shape != y.shape:
        raise ValueError(f"tau needs sequences of one length, not {x.shape} and {y.shape}")
    keep = np.isfinite(x) & np.isfinite(y)
    x, y = x[keep], y[keep]
    m = len(x)
    if m < 2:
        return float("nan")
    order = np.lexsort((y, x))
    x, y = x[order], y[order]
    pairs = m * (m - 1) // 2
    sorted_y = np.sort(y)
    tied_x, tied_y, tied_both = _tied_pairs(x), _tied_pairs(sorted_y), _tied_pairs(x, y)
    if tied_x == pairs or tied_y == pairs:
        return float("nan")
    discordant = _inversions(np.searchsorted(sorted_y, y))  # y as ranks, ties sharing one
    # concordant + discordant = the pairs tied in neither
    difference = pairs - tied_x - tied_y + tied_both - 2 * discordant
    return float(difference / np.sqrt(float(pairs - tied_x) * float(pairs - tied_y)))


def gini(x):
    """Gini coefficient of non-negative values: 0 when all are equal, (n - 1) / n when one holds everything.

    A 1-D sequence gives a float; an (n, d) array gives the (d,) coefficients of its columns. NaN for no
    values or a zero sum.
    """
    x = np.sort(np.asarray(x, dtype=np.float64), axis=0)
    n = x.shape[0]
    total = x.sum(axis=0)
    # sum_i sum_j |x_i - x_j| = 2 sum_i (2 i - n + 1) x_(i) over the values sorted ascending (i from 0)
    rank = (2 * np.arange(n) - n + 1).reshape((n,) + (1,) * (x.ndim - 1))
    with np.errstate(invalid="ignore", divide="ignore"):
        g = np.where(total > 0, (rank * x).sum(axis=0) / (n * np.where(total > 0, total, 1.0)), np.nan)
    return float(g) if x.ndim == 1 else g


# ---------------------------------------------------------------- null models

@dataclass(frozen=True)
class NullRange:
    """What a statistic takes under a null model (a model without the property it measures): the mean
    and the 5th and 95th percentiles of its draws."""
    mean: float
    low: float
    high: float

    def __str__(self) -> str:
        return f"{self.mean:+.3f} [{self.low:+.3f}, {self.high:+.3f}]"


def null_range(draws) -> NullRange:
    """The :class:`NullRange` of a statistic's draws under a null model (NaN draws left out)."""
    draws = np.asarray(draws, dtype=np.float64)
    draws = draws[np.isfinite(draws)]
    if not len(draws):
        return NullRange(float("nan"), float("nan"), float("nan"))
    low, high = np.percentile(draws, [5, 95])
    return NullRange(float(draws.mean()), float(low), float(high))


def shuffle_rows(values: np.ndarray, mask: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """(..., n, m) values with each row's allowed cells (``mask`` True, broadcast to ``values``) permuted
    among themselves, independently per row; masked cells keep their values.

    A row keeps the values it spreads over its keys, and loses which key gets which: the null of "these
    rows prefer these keys".
    """
    values = np.asarray(values)
    return np.take_along_axis(values, row_shuffle_index(np.broadcast_to(mask, values.shape), rng), axis=-1)


def row_shuffle_index(mask: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """(..., n, m) the cell of the same row whose value each cell takes in :func:`shuffle_rows`: a random
    permutation of every row's allowed cells (``mask`` True); masked cells point at themselves."""
    mask = np.asarray(mask, dtype=bool)
    # allowed cells in a random order, then the masked ones; and the allowed cells in place order
    shuffled = np.argsort(np.where(mask, rng.random(mask.shape), 2.0), axis=-1, kind="stable")
    in_place = np.argsort(~mask, axis=-1, kind="stable")
    source = np.empty_like(shuffled)
    np.put_along_axis(source, in_place, shuffled, axis=-1)  # cell in_place[t] takes the value of shuffled[t]
    return source


# ---------------------------------------------------------------- bootstrap

@functools.lru_cache(maxsize=8)
def _resample_counts(clusters: int, resamples: int, seed: int) -> np.ndarray:
    """(resamples, clusters): how often each cluster is drawn in each resample. Cached, so that the
    statistics of one corpus share their resamples (and their cost)."""
    counts = np.random.default_rng(seed).multinomial(clusters, np.full(clusters, 1 / clusters), size=resamples)
    counts.flags.writeable = False
    return counts


@dataclass(frozen=True)
class Estimate:
    """A statistic and its bootstrap confidence interval."""
    value: float
    low: float
    high: float
    undefined: int = 0  # resamples where the statistic is undefined (a class none of the drawn clusters has):
                        # left out of the interval, and counted so that a reader can judge the interval


def cluster_bootstrap(sums: np.ndarray, statistic: Callable[[np.ndarray], np.ndarray], resamples: int = 1000,
                      level: float = 0.95, seed: int = 0) -> Estimate:
    """A statistic of per-cluster sums with a percentile bootstrap interval that resamples whole clusters.

    ``sums`` is (S, m): m totals per cluster (e.g. per sentence: the attention its stop words receive,
    their count, ...); ``statistic`` maps totals (..., m) to the statistic (...), e.g. a ratio of sums.
    Resampling sentences rather than tokens keeps the dependence between the tokens of one sentence.
    Resamples whose statistic is not finite are left out of the interval and counted in ``undefined``.
    """
    sums = np.asarray(sums, dtype=np.float64)
    if sums.ndim != 2 or len(sums) == 0:
        raise ValueError("the bootstrap needs (clusters, m) totals with at least one cluster")
    counts = _resample_counts(len(sums), resamples, seed)  # (R, S)
    with np.errstate(invalid="ignore", divide="ignore"):
        value = float(statistic(sums.sum(axis=0)))
        draws = statistic(counts @ sums)  # (R,)
    defined = np.isfinite(draws)
    undefined = int(resamples - defined.sum())
    if not defined.any():
        return Estimate(value, float("nan"), float("nan"), undefined)
    tail = (1 - level) / 2 * 100
    low, high = np.percentile(draws[defined], [tail, 100 - tail])
    return Estimate(value, float(low), float(high), undefined)


def mcnemar_exact(only_a: int, only_b: int) -> float:
    """Two-sided exact McNemar p-value of two classifiers on the same examples: ``only_a`` examples only
    the first gets right, ``only_b`` only the second. Under the null each discordant example is a fair
    coin, so p is twice the smaller binomial(n, 1/2) tail, at most 1. Exact integers: no underflow for
    the thousands of discordant examples of a large test set."""
    if min(only_a, only_b) < 0:
        raise ValueError("discordant counts cannot be negative")
    n, k = only_a + only_b, min(only_a, only_b)
    tail = sum(math.comb(n, i) for i in range(k + 1))
    return min(1.0, 2 * tail / 2 ** n)
