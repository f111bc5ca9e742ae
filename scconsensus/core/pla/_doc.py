"""Parameter text shared by :func:`scconsensus.core.pla.pla` and ``tl.pla``."""

from ..._docs import PARAMS

PLA_PARAMS = {
    "pla_weighted": """\
weighted
    Weighted PLA: learn the partition weights ``α`` (entropy-regularised, eq. 21).""",
    # the fields of core.pla.Weighting, in order
    "pla_lambda": """\
lam
    λ of the entropy regulariser (> 0), or ``"cv"`` to choose it from ``lam_grid``
    by ``cv_folds``-fold cross-validation over items. Only weighted PLA uses it and
    the three options below: set with ``weighted=False``, they have no effect and
    give a ``UserWarning`` (``tl.pla``: each option given; the core: ``lam``).
lam_grid
    λ values tried by cross-validation: a non-empty sequence of positive numbers.
cv_folds
    Folds of held-out items: at least 2 and at most the number of fitted items
    (each fold refits the weights for every λ of the grid, so the cost grows with it).
cv_score
    What the cross-validation minimises over the held-out items (whose
    posteriors come from the out-of-sample extension), per unit of
    co-association: ``"heldout"`` (default) the negative log-likelihood of
    their observed, unweighted co-association with the training items;
    ``"penalized"`` the negative log-likelihood of the α-weighted
    co-association minus ``λH(α)``, eq. 27 as printed; ``"weighted"`` that
    without the penalty. Eq. 27 is the held-out version of the objective
    ``min_α Σ α_l c_l − λH(α)``, whose minimum falls with λ (its derivative is
    ``−H(α) < 0``), so it selects the largest λ of the grid, i.e. near-uniform
    weights; ``"weighted"`` rewards the partitions the fit already explains and
    selects the smallest. ``"heldout"`` scores every λ against the same data.""",
    "pla_fit_subset": """\
fit_size, fit_fraction
    Fit on ``r`` randomly chosen items (or ``ceil(fit_fraction n)``), more than
    ``n_clusters``, and give the rest posteriors by the out-of-sample extension
    (Sect. 3.3; by default each item is folded into the fitted model, see
    :func:`~scconsensus.core.pla.pla_extend`); ``r >= n`` or ``None`` fits all.
    ``fit_size="auto"`` (``tl.pla``'s default): at most ``settings.auto_fit_size``
    items (``None``: 20,000; PCC's extension needs fewer).""",
    "pla_stop": """\
max_iter, tol
    EM stops after ``max_iter`` steps or when the relative log-likelihood change
    is at most ``tol``.""",
    "pla_n_init": """\
n_init
    EM runs: the ``init`` start, then random ones; the best log-likelihood wins.""",
    # --- tl.pla only ---
    "pla_n_clusters": """\
n_clusters
    Number of consensus clusters ``K`` (at most: components that duplicate one
    another, sharing cells the ensemble does not separate, are merged, and clusters
    no item is assigned to are dropped), or ``"auto"``: chosen from the ensemble by
    :func:`scconsensus.core.select_k`, the evidence in ``.uns[key_added]["k_selection"]``.
    A list of K (e.g. ``.uns[key_added]["k_candidates"]``, every stable resolution of
    ``"auto"``, one K per split; a tuple, range or 1-d array too, a set in increasing
    order) fits each K in one call, stored under ``f"{key_added}_k{K}"`` with
    the other arguments shared; the list is checked (each K in ``[2, n_obs)``, none twice)
    before anything is written.""",
    "pla_plan": """\
init
    ``"spectral"`` (default): start EM from the spectral consensus of the
    ensemble at ``K`` (:func:`scconsensus.core.spectral_consensus`), 90 % of each
    row spread uniformly (PCC's start: 10 %): PLA's likelihood does not identify its
    posteriors, and from this soft start EM ends where the paper's random starts do;
    ``"random"``: ``n_init`` random starts.
partitions
    ``"matched"`` (default): aggregate the partitions whose number of clusters is
    near ``K``, which PLA's ``K``-cluster model describes; ``"all"``: every
    partition. See :func:`scconsensus.tl.pcc`.""",
    "pla_uns": """\
``.uns[key_added]`` holds ``method`` (``"pla"``), ``params``, ``log_likelihood``,
``log_likelihood_trace``, ``n_iter``, ``converged``, ``cluster_priors``, ``weights`` (α),
``lam``, with ``weighted=True`` ``objective_trace`` and, when ``lam`` was chosen by
cross-validation, ``cv_scores``; the choice of K (``n_clusters_chosen`` and, when
chosen, ``k_selection``, ``k_selection_reason``, ``k_selection_threshold``,
``k_candidates``, ``k_splits``), ``partitions_used`` and ``ensemble_run`` (the
ensemble's columns it read and its run id: readers refuse an ensemble rebuilt since),
``fit_index`` (items the model was fitted on), ``fitted_n_obs`` (the cells of the
object it was fitted on: ``tl.pla_transfer`` refuses a reference subset since),
``n_stored`` (entries of ``Z`` the fit read), ``route`` (``"dense"``: all pairs, or
``"sparse"``) and, on the sparse route, ``pair_source`` (``"knn"`` or ``"ensemble"``).

Items that no partition of the ensemble sampled carry no co-association evidence: they
get uniform posteriors (``1 / k`` each), a missing hard label (NaN in
``.obs[key_added]``), a NaN confidence and the largest entropy, and a
``RuntimeWarning`` gives their number.""",
    # --- core.pla.pla only ---
    "pla_ensemble": """\
ensemble
    ``(n, L)`` integer labels (``-1`` = the partition did not sample the item), or
    a list of ``L`` soft memberships ``(n, k_l)`` (rows on the simplex, zero rows
    for unsampled items).
n_clusters
    ``K``, the number of consensus clusters, a maximum: components that duplicate
    one another (the same items, which the ensemble does not separate) are merged
    (:class:`PLAResult`).""",
    "pla_core": """\
max_outer, outer_tol
    Weighted PLA alternations and their relative tolerance on ``F``.
random_state
    Seed: a non-negative int, a :class:`numpy.random.Generator` or ``None``; it seeds
    the restarts, fitted subset, sampled pairs and CV folds.
progress
    Show a progress bar over the λ cross-validation (``None``: when scanpy's
    verbosity is ``'info'`` or higher).
init
    ``(n_items, n_clusters)`` starting posteriors ``p(v|i)`` (rows on the simplex),
    e.g. :func:`scconsensus.core.plan_consensus`'s spectral start; it counts as the
    first of the ``n_init`` EM runs, the others start at random.""",
    "pla_fit_index": """\
fit_index
    The items to fit (increasing indices) instead of drawing ``fit_size`` or
    ``fit_fraction`` of them; ``init`` may then give their rows only.
    :func:`~scconsensus.core.pla_consensus` passes its plan's subset, on which the
    spectral start was computed.""",
    "pla_route": """\
mode
    ``"dense"`` (all pairs, O(r²K) per EM step), ``"sparse"`` (the pairs of
    ``pairs`` or of :func:`~scconsensus.core.coassociation.sample_pairs`,
    O(pairs·K) per step, no ``r x r`` temporary) or ``"auto"`` (dense up to
    ``settings.dense_auto_max_items`` fitted items, ``settings.dense_auto_max_items_knn``
    where kNN pairs can be drawn).
X
    ``(n, p)`` representation for the kNN pairs of the sparse route.
pairs
    ``"auto"``, ``"knn"`` or ``"ensemble"``: where the sparse route's
    within-cluster partners come from, as in :func:`scconsensus.tl.pla`
    (``"auto"``: kNN of ``X``, from the ensemble without ``X`` or above 100,000
    fitted items); or ``(m, 2)`` item pairs, which override ``X``,
    ``n_neighbors`` and ``n_random``.
n_neighbors, n_random
    Pairs per item on the sparse route: within-cluster partners and uniformly
    random ones.
diagonal
    Include ``z_ii`` (``Z = Σ Y_l Y_lᵀ`` has it; the paper keeps it).""",
}
#: ``tl.pla`` takes ``n_init`` right after ``init`` and ``partitions`` (its start plan)
PLA_PARAMS["pla_plan"] += "\n" + PLA_PARAMS["pla_n_init"]
PLA_PARAMS["pla_use_rep"] = PARAMS["pairs_use_rep"]
PLA_PARAMS["pla_mode"] = """\
mode
    ``"dense"`` (all pairs of items), ``"sparse"`` (sampled pairs) or ``"auto"``: all
    pairs up to ``scconsensus.settings.dense_auto_max_items`` fitted items, or
    ``settings.dense_auto_max_items_knn`` where kNN pairs can be drawn (``pairs``
    ``"auto"`` or ``"knn"``, ``n_neighbors > 0`` and a representation)."""
PLA_PARAMS["pla_pairs"] = PARAMS["pairs_per_item"] + "\n" + PARAMS["pairs"]
PLA_PARAMS["pla_weighting"] = PLA_PARAMS["pla_weighted"] + "\n" + PLA_PARAMS["pla_lambda"]
PLA_PARAMS["pla_weighting_record"] = """\
weighting
    ``lam``, ``lam_grid``, ``cv_folds``, ``cv_score`` as a
    :class:`~scconsensus.core.pla.Weighting` (``tl.pla`` documents each); ``None``: its
    defaults (λ cross-validated on :data:`LAMBDA_GRID`). Used with ``weighted=True`` only."""
# core.pla.pla's place beside pla_consensus
PLA_PARAMS["pla_solver"] = """\
Fits ``p(i, j) ≈ p(i) Σ_v p(v|i) p(j|v)`` to the aggregated co-association
``Z = Σ_l α_l Y_l Y_lᵀ`` by EM (Sect. 3.1); with ``weighted=True`` also the
partition weights ``α`` (Sect. 3.2); items outside the fitted subset get
posteriors from the out-of-sample extension (Sect. 3.3).

This is the solver: ``n_clusters`` is fitted on the partitions given, from the start
given (else ``n_init`` random ones), with the solver's own defaults.
:func:`~scconsensus.core.pla_consensus` is the whole method with :func:`tl.pla
<scconsensus.tl.pla>`'s defaults (K chosen, partitions matched, spectral start)."""
