"""The statistics the analyses need: PCA with deterministic signs, k-means with k-means++ seeding and
restarts, the silhouette score, Kendall's tau-b, the Gini coefficient, a cluster bootstrap of ratio
statistics (our own) and McNemar's exact test of two classifiers on the same examples (scipy's binomial
test); and the fewest sentences a verdict is read from (:data:`MIN_SENTENCES`), for every analysis that
gives one.

PCA, k-means and the silhouette are our own, in torch (float64): scikit-learn's took 1.7-2.5 s to import
(with the scipy.stats it loads), which a fresh server's first Corpus senses or Feature atlas visit paid
before its first figure, while ours are as fast as its once loaded (the silhouette search over 1,166
vectors of 600: 1.4 s against 1.2-1.3 s) and run on torch's threads, one in the app. The tests check them
against scikit-learn's. scipy's kendalltau took 2.3x as long as ours on the case study's per-sentence
rankings (2,000 sentences of 20 tokens: 0.89 s against 0.38 s; the page computes two per sentence), its
cost being the checks and p-value around each call, which the analyses do not use. scipy's bootstrap
neither counts nor leaves out the resamples where a ratio is undefined (a word class that no drawn sentence
has), nor shares one set of resamples among the statistics of a corpus; ours took a tenth of its time on
the case study's ratios.

Arguments and results are numpy arrays. scipy is imported on first use (scipy.stats took 1.6-2.3 s), which
a page that does not test should not wait for.
"""
from __future__ import annotations

import functools
import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass

import numpy as np
import torch

from disan.analyses.choices import RESAMPLES


# ---------------------------------------------------------------- projection and clustering

@dataclass
class Projection:
    """Points in 2-D, the two components and the share of the variance each explains."""
    coords: np.ndarray      # (N, 2)
    explained: np.ndarray   # (2,) fractions of the total variance, largest first
    components: np.ndarray  # (2, D) unit loadings; the largest |loading| of each is positive


def _float64(x) -> torch.Tensor:
    return torch.as_tensor(np.asarray(x, dtype=np.float64))


def pca_2d(x: np.ndarray) -> Projection:
    """Project (N, D) points on their first two principal components: exact, by the eigenvectors of the
    D x D covariance where there are at least as many points as dimensions (3x faster than an SVD on 1,884
    vectors of 600), and by an SVD of the centred data where there are fewer.

    An SVD fixes each component only up to its sign, so a correlation with PC 1 could read +0.5 here and
    −0.5 elsewhere; each component is turned so that its largest loading (by magnitude, the first of
    equals) is positive, which does not depend on the order of the points. Components that the data lack
    (the second with N = 2 or D = 1, both with N = 1) come out as zeros with 0 explained variance.
    """
    x = _float64(x)
    n, d = x.shape
    m = min(2, n - 1, d)  # N points span at most N - 1 dimensions
    coords, explained, components = np.zeros((n, 2)), np.zeros(2), np.zeros((2, d))
    if m < 1:
        return Projection(coords, explained, components)
    centred = x - x.mean(dim=0)
    if n >= d:
        variances, vectors = torch.linalg.eigh(centred.T @ centred)  # ascending
        variances, vt = variances.flip(0)[:m].clamp_min(0.0), vectors.flip(1)[:, :m].T
    else:
        _, singular, vt = torch.linalg.svd(centred, full_matrices=False)
        variances, vt = singular[:m] ** 2, vt[:m]
    largest = vt[torch.arange(m), vt.abs().argmax(dim=1)]
    vt = vt * torch.where(largest < 0, -1.0, 1.0)[:, None]
    coords[:, :m] = (centred @ vt.T).numpy()
    components[:m] = vt.numpy()
    total = float((centred ** 2).sum())
    if total > 0:  # identical points: 0 / 0 explained, read as 0
        explained[:m] = (variances / total).numpy()
    return Projection(coords, explained, components)


def _squared_distances(xt: torch.Tensor, norms: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """(M, N) squared Euclidean distances of the rows of (M, D) y to the points whose (D, N) transpose is
    ``xt`` (contiguous: the product reads it faster than the points' rows) and whose squared norms are
    ``norms``; never below 0 (the expansion can round to -1e-16)."""
    return torch.addmm(norms[None, :], y, xt, alpha=-2).add_((y ** 2).sum(dim=1)[:, None]).clamp_min_(0.0)


def _seed_centres(x: torch.Tensor, xt: torch.Tensor, norms: torch.Tensor, k: int, rng: np.random.Generator
                  ) -> torch.Tensor:
    """k-means++ seeding, greedy: the first centre a random point; each next one the best of 2 + ln k
    candidates, each drawn with probability proportional to its squared distance to the nearest centre,
    the best being the one that leaves the smallest sum of those distances (one candidate alone, as in the
    original k-means++, more often starts Lloyd's algorithm in a poor local minimum)."""
    trials = 2 + int(math.log(k))
    chosen = [int(rng.integers(len(x)))]
    nearest = _squared_distances(xt, norms, x[chosen])[0]
    for _ in range(1, k):
        total = float(nearest.sum())
        if total <= 0:  # fewer distinct points than centres
            chosen.append(int(rng.integers(len(x))))
            continue
        drawn = np.searchsorted(np.cumsum(nearest.numpy()), rng.random(trials) * total)
        drawn = np.minimum(drawn, len(x) - 1)
        candidates = torch.minimum(nearest[None, :], _squared_distances(xt, norms, x[drawn]))  # (trials, N)
        best = int(candidates.sum(dim=1).argmin())
        chosen.append(int(drawn[best]))
        nearest = candidates[best]
    return x[chosen].clone()


def _lloyd(x: torch.Tensor, xt: torch.Tensor, norms: torch.Tensor, centres: torch.Tensor, iterations: int
           ) -> tuple[torch.Tensor, float]:
    """Lloyd's algorithm on (N, D) points ``x`` (``xt``: their transpose, contiguous) from (k, D)
    ``centres`` until no label changes (or ``iterations``): (N,) labels and the inertia, the sum of squared
    distances to the centres of the final labels. An emptied cluster keeps its centre."""
    k, n = len(centres), len(x)
    labels = torch.full((n,), k, dtype=torch.long)  # k: no cluster yet
    sums = torch.zeros(k + 1, x.shape[1], dtype=x.dtype)
    counts = torch.zeros(k + 1, dtype=x.dtype)
    for _ in range(iterations):
        # (N, k) |x - c|^2 less |x|^2, which each point shares across centres: the same argmin
        distances = ((centres ** 2).sum(dim=1)[:, None] - 2 * centres @ xt).T.contiguous()
        new = distances.argmin(dim=1)
        moved = (new != labels).nonzero()[:, 0]
        if not len(moved):
            break
        # the clusters' sums change by the points that moved only, which late iterations make few
        points, old, labels = x[moved], labels[moved], new
        ones = torch.ones(len(moved), dtype=x.dtype)
        sums.index_add_(0, old, points, alpha=-1).index_add_(0, new[moved], points)
        counts.index_add_(0, old, ones, alpha=-1).index_add_(0, new[moved], ones)
        centres = torch.where(counts[:k, None] > 0, sums[:k] / counts[:k, None].clamp_min(1.0), centres)
    inertia = float((norms + distances.gather(1, labels[:, None])[:, 0]).clamp_min(0.0).sum())
    return labels, inertia


RESTARTS = 10  # k-means runs from this many k-means++ seedings and keeps the one of lowest inertia


def kmeans(x: np.ndarray, k: int, seed: int = 0, restarts: int = RESTARTS, iterations: int = 100) -> np.ndarray:
    """(N,) cluster labels 0..k-1 of (N, D) points (fewer when the points have fewer than k distinct
    values): Lloyd's algorithm from greedy k-means++ seeds, the best of ``restarts`` runs by inertia
    (Lloyd's algorithm stops in local minima; with 4 runs a better solution was missed on real data, while
    50 made the silhouette search 8x slower). A run stops when no label changes. Labels are renumbered by
    cluster size, largest first, and equal sizes by their first point, so that they depend on the
    partition alone."""
    x = _float64(x)
    if not 1 <= k <= len(x):
        raise ValueError(f"k must be between 1 and the number of points ({len(x)}), not {k}")
    norms, xt = (x ** 2).sum(dim=1), x.T.contiguous()
    rng = np.random.default_rng(seed)
    best, lowest = None, math.inf
    for _ in range(restarts):
        labels, inertia = _lloyd(x, xt, norms, _seed_centres(x, xt, norms, k, rng), iterations)
        if inertia < lowest:
            best, lowest = labels.numpy(), inertia
    first = np.full(k, len(best))
    np.minimum.at(first, best, np.arange(len(best)))
    order = np.lexsort((first, -np.bincount(best, minlength=k)))
    return np.argsort(order)[best]


def _distances(x) -> torch.Tensor:
    """(N, N) Euclidean distances between the rows of (N, D) points, 0 on the diagonal."""
    x = _float64(x)
    return _squared_distances(x.T.contiguous(), (x ** 2).sum(dim=1), x).fill_diagonal_(0.0).sqrt_()


def _silhouette(distances: torch.Tensor, labels) -> float:
    """:func:`silhouette` from the points' (N, N) distances."""
    clusters, own = np.unique(np.asarray(labels), return_inverse=True)
    n = len(own)
    if len(clusters) < 2 or len(clusters) >= n:
        return float("nan")
    member = torch.as_tensor(own[:, None] == np.arange(len(clusters))[None, :])  # (N, C)
    sums = (distances @ member.double()).numpy()                                # summed distance to each cluster
    member = member.numpy()
    sizes = member.sum(axis=0)
    own_size = sizes[own]
    a = sums[np.arange(n), own] / np.maximum(own_size - 1, 1)  # the mean distance to the others of its cluster
    b = np.where(member, np.inf, sums / sizes[None, :]).min(axis=1)  # ... to the nearest other cluster
    score = np.where(own_size > 1, (b - a) / np.maximum(np.maximum(a, b), 1e-300), 0.0)
    return float(score.mean())


def silhouette(x: np.ndarray, labels: np.ndarray) -> float:
    """Mean silhouette (b - a) / max(a, b) over the points, Euclidean, where a is a point's mean distance to
    the others of its cluster and b to the points of the nearest other cluster; a point alone in its
    cluster scores 0.

    NaN with fewer than two clusters or as many clusters as points.
    """
    return _silhouette(_distances(x), labels)


def best_k(x: np.ndarray, ks: Iterable[int] = range(2, 9), seed: int = 0) -> tuple[int, dict[int, float]]:
    """The k of ``ks`` whose k-means clustering has the highest silhouette, and every k's silhouette
    (k = 1 and no scores when no k in ``ks`` fits the points)."""
    distances = _distances(x)  # once for every k
    scores = {k: _silhouette(distances, kmeans(x, k, seed)) for k in ks if 2 <= k < len(x)}
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


def _signs(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(R, n²) the sign of x_i − x_j of each row of (R, n) scores (0 where either is NaN), and whether both
    tokens have a score."""
    valid = np.isfinite(x)
    with np.errstate(invalid="ignore"):
        signs = np.nan_to_num(np.sign(x[:, :, None] - x[:, None, :]), nan=0.0, posinf=0.0, neginf=0.0)
    both = valid[:, :, None] & valid[:, None, :]
    cells = x.shape[1] ** 2
    return signs.reshape(len(x), cells), both.reshape(len(x), cells).astype(np.float64)


def kendall_matrix(x, y=None) -> np.ndarray:
    """(R, Q) Kendall's tau-b between every row of (R, n) scores ``x`` and every row of (Q, n) scores ``y``
    (default: ``x`` itself), as :func:`kendall_tau` gives it for each pair (ties corrected for; a token NaN in
    either row of a pair left out of that pair; NaN when fewer than two tokens remain or one row is constant
    on them), all pairs at once: with s_r(i, j) the sign of row r's x_i − x_j (0 where either is NaN),
    tau(a, b) = Σ s_a s_b / √(Σ s_a² v_b · Σ s_b² v_a), v_r(i, j) saying both tokens have a score in row r.
    O(R Q n²) in one product, for the few rows and short sentences of one input's explanations, where
    :func:`kendall_tau`'s per-call checks cost more than the pairs themselves."""
    x = np.asarray(x, dtype=np.float64)
    y = x if y is None else np.asarray(y, dtype=np.float64)
    if x.ndim != 2 or y.ndim != 2 or x.shape[1] != y.shape[1]:
        raise ValueError(f"kendall_matrix needs (rows, n) scores of one n, not {x.shape} and {y.shape}")
    (sx, vx), (sy, vy) = _signs(x), _signs(y)
    untied_x = (sx ** 2) @ vy.T    # [a, b]: ordered pairs untied in x_a whose tokens both have a score in y_b
    untied_y = ((sy ** 2) @ vx.T).T
    with np.errstate(invalid="ignore", divide="ignore"):
        tau = (sx @ sy.T) / np.sqrt(untied_x * untied_y)
    return np.where((untied_x > 0) & (untied_y > 0), tau, np.nan)


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


# Below this many sentences (or inputs) an analysis gives its measures and no verdict: two sentences allow
# three distinct resamples, one allows none, and any difference would read as a finding
MIN_SENTENCES = 20
TOO_FEW = f"too few sentences for a verdict (fewer than {MIN_SENTENCES})"


@dataclass(frozen=True)
class Estimate:
    """A statistic and its bootstrap confidence interval."""
    value: float
    low: float
    high: float
    undefined: int = 0  # resamples where the statistic is undefined (a class none of the drawn clusters has):
                        # left out of the interval, and counted so that a reader can judge the interval


def cluster_bootstrap(sums: np.ndarray, statistic: Callable[[np.ndarray], np.ndarray], resamples: int = RESAMPLES,
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


def sentence_mean(values: np.ndarray, resamples: int = RESAMPLES, seed: int = 0) -> Estimate:
    """The mean of one value per sentence (NaN left out) with its cluster-bootstrap interval over sentences."""
    values = np.asarray(values, dtype=np.float64)
    values = values[np.isfinite(values)]
    if not len(values):
        return Estimate(np.nan, np.nan, np.nan)
    sums = np.column_stack([values, np.ones_like(values)])
    return cluster_bootstrap(sums, lambda t: t[..., 0] / t[..., 1], resamples, seed=seed)


def spearman(x, y) -> float:
    """Spearman's rank correlation of two score vectors (average ranks for ties, NaN scores left out in
    both); NaN when fewer than two scores remain or either side is constant."""
    from scipy.stats import rankdata

    x, y = np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64)
    kept = np.isfinite(x) & np.isfinite(y)
    if kept.sum() < 2:
        return float("nan")
    rx, ry = rankdata(x[kept]), rankdata(y[kept])
    if rx.std() == 0 or ry.std() == 0:
        return float("nan")
    return float(np.corrcoef(rx, ry)[0, 1])


def mcnemar_exact(only_a: int, only_b: int) -> float:
    """Two-sided exact McNemar p-value of two classifiers on the same examples: ``only_a`` examples only
    the first gets right, ``only_b`` only the second. Under the null each discordant example is a fair
    coin: scipy's exact binomial test of the smaller count, twice the smaller binomial(n, 1/2) tail, at
    most 1; 1 when no example is discordant (where scipy raises)."""
    from scipy.stats import binomtest

    if min(only_a, only_b) < 0:
        raise ValueError("discordant counts cannot be negative")
    n = only_a + only_b
    return float(binomtest(min(only_a, only_b), n).pvalue) if n else 1.0
