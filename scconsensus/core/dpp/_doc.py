"""Parameter text shared by :func:`scconsensus.core.dpp.dpp_consensus` and ``tl.dpp``."""

DPP_PARAMS = {
    "dpp_n_runs": """\
n_runs
    Number of runs ``R`` (paper: 200).""",
    # --- one entry per options record (core/dpp/_options.py), fields in their order ---
    "dpp_sampling": """\
sampler
    ``"dpp"`` (determinantal generators), ``"uniform"`` (PAM-like baseline of Sect. 5:
    ``k ~ U{1..k_max}`` items uniformly) or ``"kmeans++"`` (k-means from k-means++
    seeds, ``k ~ U{1..k_max}``, Sect. 6).
k_max
    Largest ``k`` of the uniform and k-means++ samplers; default ``ceil(sqrt(n))``
    (with ``a = 1/2`` no final cluster can be smaller than ``sqrt(n)``, so no more
    than ``sqrt(n)`` clusters survive).
reference_size
    Not in the paper; the default. The DPP of the runs is drawn from
    ``L · reference_size / n`` (when ``n > reference_size``): the kernel matrix of
    ``n`` items is ``n`` times a discretisation of the kernel's integral operator on
    the data distribution, so this is the DPP the paper's kernel defines on
    ``reference_size`` items from the same distribution, and the number of generators
    per run no longer grows with ``n``. With the paper's ``L`` (``None``) the mean draw
    ``Σ λ/(1+λ)`` grows with ``n`` and with the dimension (180 generators on 2,000
    items in 50 dimensions, 147 in the low-rank route at 10,000), each run is a very
    fine Voronoi partition and the consensus fragments into too many clusters. Data
    with at most ``reference_size`` items get the paper's kernel unchanged. At least 2:
    the kernel of one item draws at most one generator, so no partition.
expected_size
    Not in the paper: draw from ``DPP(c L)`` with ``c`` set so that the mean number
    of generators per run is ``expected_size`` (same eigenvectors, so the same
    notion of diversity). Takes precedence over ``reference_size``.""",
    "dpp_cut": """\
a
    Components smaller than ``n**a`` are merged (paper: 1/2).
tau
    Smallest consensus threshold considered (paper: 0.6).
s
    Bandwidth scale of eq. 9 (paper: 1).
n_thresholds
    Keep at most this many thresholds, spread over the observed values (default:
    every observed value ``≥ tau``).""",
    "dpp_n_clusters": """\
n_clusters
    Return the cut of the consensus with this many clusters instead of the one with
    the lowest kernel validity index (not in the paper). Every observed consensus
    value is then a threshold (``tau`` is no floor, fewer clusters may need lower
    cuts); among the cuts with that many clusters the validity index decides. When
    no cut has exactly ``n_clusters`` (components smaller than ``n**a`` are merged,
    so no more than about ``n**(1-a)`` clusters can survive), the nearest is returned
    with a warning (``tl.dpp``) and the reason is recorded. ``None`` (default) or
    ``"auto"``: the number of clusters is chosen from the data. Any ``1..n`` may be
    asked for, the trivial cuts included, where PCC and PLA, which fit a model at
    ``K``, take ``[2, n)`` (both checked by ``_validation.check_n_clusters``).""",
    "dpp_route": """\
mode
    ``"dense"``: exact kernel, exact DPP sampler and full consensus matrix (O(n²)
    memory, O(n³) eigendecomposition). ``"sparse"``: the large-n route (Nyström
    kernel, low-rank sampler, consensus on sampled pairs). ``"auto"``: dense up to
    ``scconsensus.settings.dense_auto_max_items`` items.
n_components
    Nyström rank of the sparse route (default ``min(n, 300)``).
n_neighbors, n_random
    Pairs per item on which the sparse route counts consensus
    (:func:`scconsensus.core.sample_pairs`).""",
    # --- tl.dpp's Returns ---
    "dpp_uns": """\
Memberships: each item's mean consensus with each cluster's items, each row
rescaled to sum to one (so the confidence, the membership in the item's own
cluster, is that share, not the mean consensus itself). ``.uns``:
``candidates`` (threshold, n_clusters, kvi, sr, within, between, btilde, chosen),
``threshold`` (θ), ``n_clusters``, ``reason`` (why this cut, also logged),
``sigma2``, ``mode``, ``run_sizes`` (generators per run), ``alpha``,
``label_agreement`` (the share of items whose largest membership is their own
cluster: the labels are the cut's components, joined through chains of strong
consensus, the memberships average the consensus over each cluster, and the two
part wherever a cut cluster is large and mixed), the DPP's
``expected_size`` and ``kernel_scale`` (the factor applied to ``L``, when not
1). ``pl.k_selection(adata, key_added)`` plots the candidates.""",
}
