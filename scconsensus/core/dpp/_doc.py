"""Parameter text shared by :func:`scconsensus.core.dpp.dpp_consensus` and ``tl.dpp``."""

DPP_PARAMS = {
    "dpp_runs": """\
n_runs
    Number of runs ``R`` (paper: 200).
sampler
    ``"dpp"`` (determinantal generators), ``"uniform"`` (PAM-like baseline of Sect. 5:
    ``k ~ U{1..k_max}`` items uniformly) or ``"kmeans++"`` (k-means from k-means++
    seeds, ``k ~ U{1..k_max}``, Sect. 6).
k_max
    Largest ``k`` of the uniform and k-means++ samplers; default ``ceil(sqrt(n))``
    (with ``a = 1/2`` no final cluster can be smaller than ``sqrt(n)``, so no more
    than ``sqrt(n)`` clusters survive).
expected_size
    Not in the paper: draw from ``DPP(c L)`` with ``c`` set so that the mean number
    of generators per run is ``expected_size`` (same eigenvectors, so the same
    notion of diversity). ``None`` (default) uses ``L`` as the paper does. With the
    paper's ``L`` the mean size ``Σ λ/(1+λ)`` grows with ``n`` and with the
    dimension (about 33 generators on the standardised 30-feature breast cancer
    data, 171 on 100,000 items in 20 dimensions), and runs with many more cells than
    there are clusters fragment the consensus; see ``vignettes/dpp_table4.py``.""",
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
}
