"""The statistics the analyses need: PCA with deterministic signs, k-means with k-means++ seeding and
restarts, and the silhouette score (scikit-learn's); Kendall's tau-b, the Gini coefficient, a cluster
bootstrap of ratio statistics (our own) and McNemar's exact test of two classifiers on the same examples
(scipy's binomial test).

Our own are kept where the libraries do not serve. scipy's kendalltau took 2.3x as long as ours on the
case study's per-sentence rankings (2,000 sentences of 20 tokens: 0.89 s against 0.38 s; the page computes
two per sentence), its cost being the checks and p-value around each call, which the analyses do not use.
scipy's bootstrap neither counts nor leaves out the resamples where a ratio is undefined (a word class
that no drawn sentence has), nor shares one set of resamples among the statistics of a corpus; ours took
a tenth of its time on the case study's ratios.

Arguments and results are numpy arrays. scikit-learn and scipy are imported on first use: on top of what
the app has loaded, scikit-learn took 1.1-3.1 s to import and scipy.stats 1.6-2.3 s (three fresh
processes each, while tests ran), which a page that needs neither should not wait for. scikit-learn runs
on one thread, as the app runs torch.
"""
from __future__ import annotations

import functools
import warnings
from collections.abc import Callable, Iterable
from dataclasses import dataclass

import numpy as np


@functools.cache
def _threads():
    """The thread pools (OpenBLAS, OpenMP) of numpy, scipy, scikit-learn and torch, made once scikit-learn
    has loaded its libraries: a controller sees only the libraries loaded when it is made."""
    import sklearn.cluster  # noqa: F401
    import sklearn.decomposition  # noqa: F401
    import sklearn.metrics  # noqa: F401
    from threadpoolctl import ThreadpoolController

    return ThreadpoolController()


def _one_thread():
    """A context in which the libraries' numerics run on one thread. With a thread per core, PCA of 287
    vectors of 600 took 0.42 s against 0.03 s on one thread on this shared 2-core machine, and the
    silhouette search over 1,884 of them 4.8-10.5 s against 3.7-4.1 s; the app runs torch on one thread
    too, so that sessions get a core each."""
    return _threads().limit(limits=1)


# ---------------------------------------------------------------- projection and clustering

@dataclass
class Projection:
    """Points in 2-D, the two components and the share of the variance each explains."""
    coords: np.ndarray      # (N, 2)
    explained: np.ndarray   # (2,) fractions of the total variance, largest first
    components: np.ndarray  # (2, D) unit loadings; the largest |loading| of each is positive


def pca_2d(x: np.ndarray) -> Projection:
    """Project (N, D) points on their first two principal components (scikit-learn's PCA: exact, by the
    eigenvectors of the D x D covariance where there are at least as many points as dimensions, 3x
    faster than an SVD on 1,884 vectors of 600, and by an SVD of the centred data where there are fewer).

    An SVD fixes each component only up to its sign, so a correlation with PC 1 could read +0.5 here and
    −0.5 elsewhere; each component is turned so that its largest loading (by magnitude, the first of
    equals) is positive, which does not depend on the order of the points. Components that the data lack
    (the second with N = 2 or D = 1, both with N = 1) come out as zeros with 0 explained variance.
    """
    from sklearn.decomposition import PCA

    x = np.asarray(x, dtype=np.float64)
    n, d = x.shape
    m = min(2, n - 1, d)  # N points span at most N - 1 dimensions
    coords, explained, components = np.zeros((n, 2)), np.zeros(2), np.zeros((2, d))
    if m < 1:
        return Projection(coords, explained, components)
    # identical points: 0 / 0 explained, read as 0
    with _one_thread(), np.errstate(invalid="ignore", divide="ignore"):
        pca = PCA(m, svd_solver="covariance_eigh" if n >= d else "full").fit(x)
    vt = pca.components_  # (m, D)
    largest = vt[np.arange(m), np.abs(vt).argmax(axis=1)]
    vt = vt * np.where(largest < 0, -1.0, 1.0)[:, None]
    coords[:, :m] = (x - pca.mean_) @ vt.T
    components[:m] = vt
    explained[:m] = np.nan_to_num(pca.explained_variance_ratio_)
    return Projection(coords, explained, components)


RESTARTS = 10  # k-means runs from this many k-means++ seedings and keeps the one of lowest inertia


def kmeans(x: np.ndarray, k: int, seed: int = 0, restarts: int = RESTARTS, iterations: int = 100) -> np.ndarray:
    """(N,) cluster labels 0..k-1 of (N, D) points (fewer when the points have fewer than k distinct
    values): scikit-learn's Lloyd's algorithm from k-means++ seeds, the best of ``restarts`` runs by
    inertia (Lloyd's algorithm stops in local minima; with 4 runs a better solution was missed on real
    data, while 50 made the silhouette search 8x slower). A run stops when no label changes (tol=0), not
    at scikit-learn's default small shift of the centres. Labels are renumbered by cluster size, largest
    first, and equal sizes by their first point, so that they depend on the partition alone."""
    from sklearn.cluster import KMeans
    from sklearn.exceptions import ConvergenceWarning

    x = np.asarray(x, dtype=np.float64)
    if not 1 <= k <= len(x):
        raise ValueError(f"k must be between 1 and the number of points ({len(x)}), not {k}")
    with _one_thread(), warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)  # fewer distinct points than k: see the labels
        best = KMeans(k, n_init=restarts, max_iter=iterations, tol=0.0, random_state=seed).fit(x).labels_
    first = np.full(k, len(best))
    np.minimum.at(first, best, np.arange(len(best)))
    order = np.lexsort((first, -np.bincount(best, minlength=k)))
    return np.argsort(order)[best]


def silhouette(x: np.ndarray, labels: np.ndarray) -> float:
    """Mean silhouette (b - a) / max(a, b) over the points (scikit-learn's silhouette_score), Euclidean;
    a point alone in its cluster scores 0.

    NaN with fewer than two clusters or as many clusters as points (where scikit-learn raises).
    """
    from sklearn.metrics import silhouette_score

    labels = np.asarray(labels)
    clusters = len(np.unique(labels))
    if clusters < 2 or clusters >= len(labels):
        return float("nan")
    with _one_thread():
        return float(silhouette_score(np.asarray(x, dtype=np.float64), labels))


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

# Bootstrap resamples behind every interval (the case study's, compare's). Their counts per cluster are
# held at once and cached: 2,000 resamples over the case study's 2,000 sentences are 32 MB, over SNLI's
# 9,824 test pairs 160 MB.
RESAMPLES = 2_000


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
