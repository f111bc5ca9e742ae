"""Parameter text shared by :func:`scconsensus.core.pcc.pcc`, ``pcc_consensus`` and ``tl.pcc``."""

from ..._docs import PARAMS

PCC_PARAMS = {
    # --- the solver on a co-association (core.pcc.pcc) ---
    "pcc_counts": """\
C
    Co-clustering counts ``c_ij``: a dense ``(n, n)`` array, or a symmetric
    :class:`scipy.sparse.csr_matrix` holding only sampled pairs (then ``N`` must be
    sparse with the same pattern). The diagonal is ignored.
N
    Co-sampling counts ``N_ij >= c_ij``; pairs with ``N_ij = 0`` carry no
    information (incomplete partitions).
n_clusters
    Maximum number of clusters ``K``; clusters left without mass are dropped.""",
    "pcc_starts": """\
n_init
    Starts: ``init`` (when given) and random points of the simplex; the one with
    the lowest objective is returned. Default 3, or 1 with ``init``.
init
    Optional ``(n, K)`` starting memberships (rows on the simplex); it counts as
    the first of the ``n_init`` starts, the others are random (``None``: random
    starts only; the named starts are :func:`scconsensus.core.pcc_consensus`'s). With zeros in it,
    its objective must be finite: for KL no two co-clustered items may share no
    cluster (a one-hot start fails; smooth it, e.g. ``0.9 * init + 0.1 / K``).""",
    "pcc_trace_every": """\
trace_every
    Record the objective once every this many iterations (``1``: every iteration).
    ``None`` picks about ``n K / 1000`` and at most ~10,000 points, so long runs
    keep a small trace.""",
    # --- shared by the solver, core.pcc_consensus and tl.pcc ---
    "pcc_divergence": """\
divergence
    ``"kl"`` (the binomial likelihood of the co-association: PCC-KL, PEACE),
    ``"l2"`` (squared error, eq. 4) or a :class:`scconsensus.core.Bregman`.""",
    "pcc_solver": """\
solver
    ``"greedy"``: the paper's line search, one item per iteration (the
    reference). ``"batch"``: all memberships move at once per iteration, one
    BLAS-bound gradient each (exponentiated-gradient steps, then projected
    diagonal-Newton steps made conjugate, with an exact search along the
    segment; the objective never increases), finishing with the greedy solver
    if the batch steps stall above ``tol``. ``"sweep"`` (sampled pairs only):
    the greedy solver's moves, made item by item, each item's subproblem
    solved at one visit, over the items whose gap is above a threshold that
    falls to ``tol`` (in ``tl.pcc`` / ``pcc_consensus`` it implies ``mode="sparse"``;
    ``mode="dense"`` or ``"lowrank"`` with it is an error). All stop on the same
    KKT gap. ``"auto"`` (default): ``"batch"`` on a dense co-association,
    ``"sweep"`` on sampled pairs, where the batch steps converge slowly on flat
    optima and the sweep took a third of the greedy solver's time at
    ``tl.pcc``'s sizes (measured in ``benchmarks/pcc.py``).""",
    "pcc_stop": """\
tol
    Relative KKT tolerance: stop when ``max_j (g_JV - g_JU)`` is below ``tol``
    times the mean co-sampled weight per item.
max_iter
    Iteration cap per start; ``None`` gives ``50 n K`` (the paper's rule of
    thumb is that ``~nK`` iterations are needed). For ``"batch"`` it caps batch
    steps (at most 10,000) plus greedy polish iterations.
min_mass
    Clusters whose expected size (total membership) is at most this many items
    are treated as empty: dropped, and each item's membership is renormalised
    over the rest. The solver stops at a tolerance, so a cluster the optimum
    empties can keep a residue of a few hundredths. Where dropping them all would
    leave KL's objective infinite (two items some partition kept apart wholly in one
    cluster), some stay: restored largest first, by bisection, until it is finite
    (usually the fewest that make it so).""",
    # --- the method on an ensemble (core.pcc_consensus, tl.pcc) ---
    "pcc_mode": """\
mode
    ``"dense"``: all ``n^2`` pairs; ``"sparse"``: sampled pairs (Sect. 5.4:
    within-cluster partners plus ``n_random`` random partners per item);
    ``"auto"``: all pairs up to ``scconsensus.settings.dense_auto_max_items`` fitted
    items, or ``settings.dense_auto_max_items_knn`` where kNN pairs can be drawn
    (``pairs`` ``"auto"`` or ``"knn"``, ``n_neighbors > 0`` and a representation).
    ``"lowrank"`` (``divergence="l2"`` only): all pairs without an ``n x n``
    matrix, from the co-association's low-rank form ``C = sum_l H_l H_l^T``
    (:func:`scconsensus.core.pcc.pcc_lowrank`; batch steps only): each step
    costs O(n R K) time and the fit O(n (R + K)) memory for ``R`` partitions
    (about 30 steps, 2 s at 20,000 items, K = 20; ``benchmarks/lowrank.py``);
    ``fit_size="auto"`` then fits every item. Its ``objective`` leaves out the
    constant ``sum_{i<j} c_ij^2 / N_ij``.""",
    "pcc_plan": """\
init
    ``"spectral"`` (default): the smoothed one-hot of the spectral consensus of
    the whole ensemble at ``K`` (:func:`scconsensus.core.spectral_consensus`;
    deterministic for a seed, and at the measured optimum's doorstep on the
    accuracy panel). ``"ensemble"``: of the matched partition closest to ``K``
    (:func:`scconsensus.core.pcc.ensemble_init`). ``"random"``: ``n_init``
    random points of the simplex.
partitions
    ``"matched"`` (default): fit the partitions whose number of clusters is near
    ``K`` (``K / 1.25`` to ``1.25 K``; :func:`scconsensus.core.matched_partitions`).
    PCC models every partition as a draw of the same ``K`` soft clusters;
    partitions much coarser (merges) or finer (splits) than ``K`` contradict
    that model and make PCC spread each group over several clusters.
    ``"all"``: every partition, as in the paper.""",
    "pcc_fit_subset": """\
fit_size, fit_fraction
    Fit PCC on this many (or ``ceil(fit_fraction n)``) items drawn at random,
    more than ``K``, then give every other item the membership that best
    explains its co-association with sampled fitted partners: ``n_neighbors``
    within-cluster ones and a tenth of ``n_random`` random ones, at least one of each
    (:func:`scconsensus.core.pcc.pcc_extend`). ``None``: fit all items.
    ``"auto"`` (default): fit at most ``settings.auto_fit_size`` items (``None``:
    10,000) and extend to the rest, so the cost grows smoothly with n and a
    million cells take minutes.""",
    "pcc_n_clusters": """\
n_clusters
    Number of clusters ``K``, a maximum: clusters left without mass are dropped.
    ``"auto"``: chosen from the ensemble by :func:`scconsensus.core.select_k`, with
    the evidence in ``.uns[key_added]["k_selection"]`` (:func:`scconsensus.pl.k_selection`).
    A list of K (e.g. ``.uns[key_added]["k_candidates"]``, every stable resolution of
    ``"auto"``, one K per split; a tuple, range or 1-d array too, a set in increasing
    order) fits each K in one call, stored under ``f"{key_added}_k{K}"`` with
    the other arguments shared; the list is checked (each K in ``[2, n_obs)``, none twice)
    before anything is written.""",
    "pcc_tl": """\
relationship_threshold
    Memberships below this, in ``[0, 1]``, are ignored in the cluster-relationship matrix.""",
    "pcc_n_init": """\
n_init
    Starts: the ``init`` start and ``n_init - 1`` random points of the simplex;
    the lowest objective wins.""",
    "pcc_uns": """\
``.uns[key_added]`` holds ``method`` (``"pcc"``), ``params``, ``objective``, ``objective_trace``,
``restart_objectives``, ``n_iter`` (item moves, or batch steps and their polish
moves: the log names the unit), ``converged``, ``kkt_gap``, ``solver``,
``route`` (``"dense"``/``"sparse"``/``"lowrank"``), ``n_isolated``, ``cluster_mass``,
``cluster_relationships`` (the matrix ``m_ij`` of Sect. 7.4), ``fit_size`` (items
fitted), ``fit_index`` (when a subset was fitted; as PLA's), ``partitions_used`` (columns
of the ensemble whose run id is ``ensemble_run``: readers refuse one rebuilt since), the
choice of ``K`` (``n_clusters_chosen``, ``k_selection``, ``k_candidates``, ``k_splits``...)
and, on the sparse route, ``n_pairs`` and ``pair_source`` (``"knn"``/``"ensemble"``).

Items that no partition of the ensemble sampled (a small ``subsample`` with few
partitions) carry no co-association evidence: they get a uniform membership row
(``1 / k`` each), a missing hard label (NaN in ``.obs[key_added]``), a NaN
confidence and the largest entropy, and a ``RuntimeWarning`` gives their number.
Build the ensemble with ``predict_unsampled=True`` or more partitions to label them.""",
}
#: ``tl.pcc`` takes ``pairs`` right after the pairs per item (``pcc_consensus`` after
#: its ``route`` record)
PCC_PARAMS["pcc_mode"] += "\n" + PARAMS["pairs_per_item"]
PCC_PARAMS["pcc_pairs"] = PARAMS["pairs"]
PCC_PARAMS["pcc_tl"] = PARAMS["pairs_use_rep"] + "\n" + PCC_PARAMS["pcc_tl"]
PCC_PARAMS["pcc_route"] = PCC_PARAMS["pcc_mode"] + "\n" + PARAMS["pairs"]
