#' Input, output and argument conventions of scconsensusR
#'
#' How the functions of scconsensusR read their input, return results and
#' translate arguments to the Python package 'scconsensus'.
#'
#' @section Input and output:
#' `x` is either
#' * a numeric matrix (or sparse `Matrix`) with **features in rows and items
#'   (cells, samples) in columns**, as Bioconductor holds expression data. The
#'   result of [pcc()], [pla()] and [dpp()] is a list (of class `sccResult`,
#'   which prints as a summary; [ensemble()] returns its partitions, see its
#'   Value):
#'   `labels` (factor with levels `"1"`, ..., `"k"` and no
#'   empty level, as in bluster and scran, named by the column names of `x`),
#'   `membership` (items x clusters soft memberships, rows summing to one,
#'   columns named `"1"`, `"2"`, ... like the levels; clusters no item is
#'   assigned to come last), `confidence` (pcc, pla: how far the ensemble agrees with the item's label, between 0 and 1; dpp: the item's membership in its own cluster), `obs`
#'   (a data.frame of every per-item value written), `obsm` (every per-item
#'   matrix written) and `uns` (parameters and method figures);
#' * a `SingleCellExperiment` (or a `SummarizedExperiment`, which comes back as a
#'   `SingleCellExperiment`: memberships and ensembles are reducedDims): the values come from
#'   `assay(x, assay.type)` or, with `use.dimred`, from `reducedDim(x,
#'   use.dimred)`; the result is `x` with the labels, confidence and entropy
#'   added as `colData` columns (and the labels as [colLabels()][SingleCellExperiment::colLabels]
#'   with `colLabels = TRUE`), the memberships as a `reducedDim` named
#'   `"<name>_membership"` and the parameters and figures in
#'   `metadata(x)[[name]]` (its `params` name the input as R does: `use.dimred`
#'   or `assay.type`). An ensemble is a `reducedDim` (items x partitions,
#'   labels `1..k`, `NA` where a partition left the item out; default name
#'   `"scc_ensemble"`), which [pcc()] and [pla()] find by `ensembleKey`. An
#'   `ensemble` given with row names is matched to the items by name; a name that
#'   holds another kind of record (an ensemble's, a result's) is refused.
#'
#' The column names of `x` (item names) must be unique.
#'
#' **Orientation.** [ensemble()], [pcc()], [pla()] and [dpp()] take features
#' in rows and items in columns (as `assay()` of a `SummarizedExperiment`);
#' [bluster::clusterRows()] with [PCCParam()] takes items in rows and features
#' in columns (as bluster does, and as a `reducedDim`). A matrix whose names
#' show the other orientation (items named like features: probe sets such as
#' `"1000_at"`, Ensembl genes, `"PC1"`; or features named like cell barcodes)
#' gets a warning naming `t()`; without names the orientation cannot be
#' checked.
#'
#' @section Warnings, messages and errors:
#' Python's warnings, and the warnings scanpy's log would print, are R
#' warnings of class `c("scconsensusWarning", "warning", "condition")` (the
#' Python category in the condition's `category`), so that
#' [withCallingHandlers()], [tryCatch()] and [suppressWarnings()] handle them.
#' With `verbose = TRUE` the log's information (what was run, what was chosen,
#' e.g. the number of clusters) arrives as R messages of class
#' `c("scconsensusMessage", "message", "condition")`, silenced by
#' [suppressMessages()] or `verbose = FALSE` (the default). Nothing is printed
#' to the standard error but progress bars (`progress = TRUE`). Python errors
#' are R errors, with the Python message.
#'
#' @section Defaults:
#' An argument left at `NULL` takes the default of the Python function, which
#' is defined there only: `ensemble(x)` and the ensemble `pcc(x)` builds are the
#' same for the same `randomState`. `show()` of a parameter object such as
#' [PCCParam()] prints these defaults.
#'
#' @section Arguments in R style:
#' Any argument of the Python function can be passed in `...` with its name in
#' camelCase (`nNeighbors` for `n_neighbors`); `n.neighbors` and `n_neighbors`
#' are the same argument, also for the named arguments (`n_clusters = 4` is
#' `nClusters = 4`; giving both is an error). Whole numbers are sent as
#' integers where Python expects one. Vectors of length > 1 are the values
#' themselves (`k = 2:10`, `k = c(3, 5, 8)`, `method = c("kmeans", "hc")`), as
#' are lists; a range is given with [sccRange()] (`k = sccRange(2, 20)`: a
#' number drawn per partition between 2 and 20).
#'
#' Random numbers come from Python's generator, seeded by `randomState`;
#' [set.seed()] has no effect on them.
#' @name scconsensus-io
#' @keywords internal
NULL

#' Build a clustering ensemble
#'
#' Clusters many item (and feature) subsamples of `x` with scconsensus's
#' ensemble generators (Python `scconsensus.tl.ensemble`): k-means,
#' hierarchical clustering, PAM, spectral, Leiden, or a mix.
#'
#' @inheritSection scconsensus-io Input and output
#' @inheritSection scconsensus-io Arguments in R style
#' @inheritSection scconsensus-io Warnings, messages and errors
#' @inheritSection scconsensus-io Defaults
#' @param x Numeric matrix (or sparse `Matrix`) with **features in rows and
#'   items in columns** (as an assay; `t()` a `reducedDim`), or a
#'   `SingleCellExperiment`.
#' @param nPartitions Number of partitions (`NULL`: Python's default, 100).
#' @param method Clustering method(s) (`methods`, the old name, still works
#'   with a warning until the next release): `"kmeans"`, `"kmeans_split"`, `"hc"`,
#'   `"hc_average"`, `"hc_complete"`, `"hc_single"`, `"hc_ward"`,
#'   `"hc_centroid"`, `"pam"`, `"spectral"`, `"leiden"`; several are cycled over
#'   the partitions (`NULL`: Python's default, `"kmeans"`).
#' @param k Clusters per partition: a number, the values to use cycled over the
#'   partitions (`2:10`, `c(3, 5, 8)`), a range drawn per partition,
#'   [sccRange()]`(lo, hi)`, or `"auto"`: drawn log-uniformly from 2 to
#'   `sqrt(n)` (within 10 to 50) per partition. `NULL`: Python's default,
#'   `"auto"`, the ensemble [pcc()] and [pla()] build themselves.
#' @param subsample Fraction of items clustered in each partition (`NULL`:
#'   Python's default, 0.8).
#' @param randomState Seed of the Python random generator (`NULL`: Python's
#'   default, 0).
#' @param ... Further arguments of `scconsensus.tl.ensemble` in camelCase, e.g.
#'   `featureSubsample`, `predictUnsampled`, `linkage`, `distance`,
#'   `resolution`, `nNeighbors`, `nJobs`.
#' @param name Name of the result (Python `key_added`): here the `reducedDim`
#'   holding the ensemble of a `SingleCellExperiment` and its `metadata` entry.
#' @param progress Show progress bars (written by Python to the standard
#'   error); `FALSE` writes nothing.
#' @param verbose Pass the Python log's information on as R messages (class
#'   `"scconsensusMessage"`); warnings are R warnings either way (see section
#'   "Warnings, messages and errors").
#' @param assay.type Assay used for a `SingleCellExperiment` input.
#' @param use.dimred Use this `reducedDim` of a `SingleCellExperiment` (e.g.
#'   `"PCA"`) instead of an assay.
#' @return For a matrix, a list: `labels`, an integer matrix items x
#'   partitions (labels `1..k` per partition, `NA` for items a partition left
#'   out), and `uns`, the parameters and the per-partition method and k. For a
#'   `SingleCellExperiment`, `x` with that matrix as `reducedDim(x, name)`
#'   (default `"scc_ensemble"`) and `metadata(x)[[name]]`, with
#'   `reducedDim(x, "<name>_run")`, the id of the run that built each item's labels
#'   (ensembles built apart and joined are told apart by it); [pcc()] and [pla()]
#'   use it (see their `ensembleKey`).
#' @seealso [pcc()], [pla()] and [dpp()] for the consensus.
#' @examples
#' if (isTRUE(sccAvailable())) {
#'     set.seed(1)
#'     x <- cbind(matrix(rnorm(200), 10), matrix(rnorm(200, 3), 10))  # 10 features x 40 items
#'     ens <- ensemble(x, nPartitions = 20, k = sccRange(2, 5))
#'     print(dim(ens$labels))
#'     ens <- ensemble(x, nPartitions = 20, k = 2:5)  # 2, 3, 4, 5, 2, 3, ...
#' }
#' @export
ensemble <- function(x, nPartitions = NULL, method = NULL, k = NULL, subsample = NULL,
                     randomState = NULL, ..., name = NULL, progress = interactive(),
                     verbose = FALSE, assay.type = "logcounts", use.dimred = NULL) {
    if (missing(method) && "methods" %in% names(list(...))) method <- NULL  # old name
    args <- .merge_args(list(nPartitions = nPartitions, method = method, k = k,
                             subsample = subsample, randomState = randomState,
                             keyAdded = name),
                        .given(match.call(), sys.function()), list(...))
    res <- .run_scc("ensemble", x, args, assay.type = assay.type, use.dimred = use.dimred,
                    progress = progress, verbose = verbose)
    if (methods::is(x, "SummarizedExperiment")) return(res)
    key <- names(res$obsm)[1]
    list(labels = res$obsm[[key]], uns = res$uns[[key]])
}

#' Probabilistic consensus clustering (PCC)
#'
#' Fits soft memberships `y_i` so that `y_i . y_j` matches the co-association
#' `c_ij / N_ij` of an ensemble under a Bregman divergence (KL by default), as
#' in the PCC paper; Python `scconsensus.tl.pcc`.
#'
#' @inheritSection scconsensus-io Input and output
#' @inheritSection scconsensus-io Arguments in R style
#' @inheritSection scconsensus-io Warnings, messages and errors
#' @inheritSection scconsensus-io Defaults
#' @inheritParams ensemble
#' @param nClusters Number of clusters: `NULL` (default) leaves it to the
#'   Python default (`"auto"`, chosen from the data, in current scconsensus),
#'   `"auto"`, or the largest number of clusters (clusters without mass are
#'   dropped).
#'   Several numbers, `c(4, 8)` (e.g. `as.list(res$uns$pcc$k_candidates)`, every stable
#'   resolution of an `"auto"` run), fit each on the same ensemble and store it
#'   under `"<name>_k<K>"` (`"pcc_k4"`, `"pcc_k8"`): for a matrix the result is then
#'   a list of results named so, for a `SingleCellExperiment` the columns,
#'   `reducedDim`s and `metadata` entries of each K. A single number is stored
#'   under `name` itself; a list, `as.list(k)`, is fitted per K even when it
#'   holds one (as Python's `n_clusters=[4]`).
#' @param divergence `"kl"` (Kullback-Leibler) or `"l2"` (squared Euclidean)
#'   (`NULL`: Python's default, `"kl"`; other Bregman divergences are built in
#'   Python).
#' @param ensemble Optional items x partitions label matrix (`NA` = item not
#'   sampled), e.g. `ensemble(x)$labels`. When `NULL`, the `reducedDim(x,
#'   ensembleKey)` of a `SingleCellExperiment` is used if present, or an
#'   ensemble is built with `ensembleArgs` (and stored under `ensembleKey`).
#' @param ensembleKey Name of the ensemble: the `reducedDim` of a
#'   `SingleCellExperiment` to use (as stored by `ensemble(x, name =
#'   ensembleKey)`), or under which a given or built ensemble is stored. An
#'   `ensembleKey` given but not found is an error unless `ensembleArgs` say how
#'   to build it.
#' @param ensembleArgs List of arguments for [ensemble()] (camelCase names).
#' @param name Name of the result (Python `key_added`): the `colData` column,
#'   reducedDim prefix and metadata entry.
#' @param colLabels With a `SingleCellExperiment`, also store the labels as
#'   [colLabels()][SingleCellExperiment::colLabels] (one `nClusters` only).
#' @param ... Further arguments of `scconsensus.tl.pcc` in camelCase, e.g.
#'   `mode`, `nInit`, `tol`, `maxIter`, `minMass`; and `nNull`, reference draws
#'   of `scconsensus.tl.k_null` (is K more stable than in data without groups,
#'   one Gaussian with the data's covariance? `uns[[name]]$k_null` and
#'   `k_null_ratio`; a warning when the draws cut under 1.5 times as much). It
#'   needs the ensemble's recipe: built by the call, or stored by [ensemble()].
#' @return See section "Input and output".
#' @seealso [PCCParam()] for [bluster::clusterRows()].
#' @examples
#' if (isTRUE(sccAvailable())) {
#'     set.seed(1)
#'     x <- cbind(matrix(rnorm(200), 10), matrix(rnorm(200, 3), 10))
#'     res <- pcc(x, nClusters = 4, ensembleArgs = list(nPartitions = 20, k = 2:5))
#'     print(res)
#'     print(table(res$labels))
#'     both <- pcc(x, nClusters = c(2, 4),
#'                 ensemble = ensemble(x, nPartitions = 20, k = 2:5)$labels)
#'     sapply(both, function(r) nlevels(r$labels))  # pcc_k2, pcc_k4
#' }
#' @export
pcc <- function(x, nClusters = NULL, divergence = NULL, randomState = NULL, ...,
                ensemble = NULL, ensembleKey = "scc_ensemble", ensembleArgs = list(),
                name = NULL, colLabels = FALSE, progress = interactive(),
                verbose = FALSE, assay.type = "logcounts", use.dimred = NULL) {
    given <- .given(match.call(), sys.function())
    args <- .merge_args(list(nClusters = nClusters, divergence = divergence,
                             randomState = randomState, ensembleKey = ensembleKey,
                             keyAdded = name), given, list(...))
    .run_scc("pcc", x, args, ensemble, ensembleArgs, assay.type, use.dimred,
             progress = progress, colLabels = colLabels,
             ensembleKeyGiven = "ensembleKey" %in% c(given, .camel(names(list(...)))),
             verbose = verbose, repGiven = any(c("assay.type", "use.dimred") %in% given))
}

#' Probabilistic label aggregation (PLA) of the co-association
#'
#' EM factorisation `p(i, j) = p(i) sum_v p(v | i) p(j | v)` of an ensemble's
#' co-association, optionally with entropy-regularised partition weights
#' (weighted PLA); Python `scconsensus.tl.pla`.
#'
#' @inheritSection scconsensus-io Input and output
#' @inheritSection scconsensus-io Arguments in R style
#' @inheritSection scconsensus-io Warnings, messages and errors
#' @inheritSection scconsensus-io Defaults
#' @inheritParams pcc
#' @param nClusters Number of latent clusters: `NULL` (default) leaves it to
#'   the Python default (`"auto"`, chosen from the data, in current
#'   scconsensus), `"auto"`, or a number.
#'   Several numbers, `c(4, 8)` (e.g. `as.list(res$uns$pla$k_candidates)`, every stable
#'   resolution of an `"auto"` run), fit each on the same ensemble and store it
#'   under `"<name>_k<K>"` (`"pla_k4"`, `"pla_k8"`): for a matrix the result is then
#'   a list of results named so, for a `SingleCellExperiment` the columns,
#'   `reducedDim`s and `metadata` entries of each K. A single number is stored
#'   under `name` itself; a list, `as.list(k)`, is fitted per K even when it
#'   holds one (as Python's `n_clusters=[4]`).
#' @param weighted Learn partition weights (weighted PLA; `NULL`: Python's
#'   default, `FALSE`).
#' @param ... Further arguments of `scconsensus.tl.pla` in camelCase, e.g.
#'   `lam`, `cvFolds`, `mode`, `nInit`, `maxIter`, `tol`; and `nNull` (see
#'   [pcc()]).
#' @return See section "Input and output"; the memberships are the posteriors
#'   `p(v | i)`.
#' @seealso [PLAParam()] for [bluster::clusterRows()].
#' @examples
#' if (isTRUE(sccAvailable())) {
#'     set.seed(1)
#'     x <- cbind(matrix(rnorm(200), 10), matrix(rnorm(200, 3), 10))
#'     res <- pla(x, nClusters = 2, ensembleArgs = list(nPartitions = 20, k = 2:5))
#'     table(res$labels)
#' }
#' @export
pla <- function(x, nClusters = NULL, weighted = NULL, randomState = NULL, ...,
                ensemble = NULL, ensembleKey = "scc_ensemble", ensembleArgs = list(),
                name = NULL, colLabels = FALSE, progress = interactive(),
                verbose = FALSE, assay.type = "logcounts", use.dimred = NULL) {
    given <- .given(match.call(), sys.function())
    args <- .merge_args(list(nClusters = nClusters, weighted = weighted,
                             randomState = randomState, ensembleKey = ensembleKey,
                             keyAdded = name), given, list(...))
    .run_scc("pla", x, args, ensemble, ensembleArgs, assay.type, use.dimred,
             progress = progress, colLabels = colLabels,
             ensembleKeyGiven = "ensembleKey" %in% c(given, .camel(names(list(...)))),
             verbose = verbose, repGiven = any(c("assay.type", "use.dimred") %in% given))
}

#' DPP consensus clustering
#'
#' Samples diverse Voronoi generators with a determinantal point process,
#' accumulates a consensus matrix over the resulting partitions, and cuts it
#' by thresholds, merging small clusters and choosing by a kernel validity
#' index; Python `scconsensus.tl.dpp`. It builds its own partitions, so it
#' takes no ensemble (an ensemble stored in a `SingleCellExperiment` is left
#' alone).
#'
#' @inheritSection scconsensus-io Input and output
#' @inheritSection scconsensus-io Arguments in R style
#' @inheritSection scconsensus-io Warnings, messages and errors
#' @inheritSection scconsensus-io Defaults
#' @inheritParams pcc
#' @param nRuns Number of DPP-sampled partitions (`NULL`: Python's default, 200).
#' @param ... Further arguments of `scconsensus.tl.dpp` in camelCase, e.g.
#'   `sampler`, `a`, `tau`, `s`, `mode`, `kMax`.
#' @return See section "Input and output".
#' @seealso [DPPParam()] for [bluster::clusterRows()].
#' @examples
#' if (isTRUE(sccAvailable())) {
#'     set.seed(1)
#'     x <- cbind(matrix(rnorm(200), 10), matrix(rnorm(200, 3), 10))
#'     res <- dpp(x, nRuns = 30)
#'     table(res$labels)
#' }
#' @export
dpp <- function(x, nRuns = NULL, randomState = NULL, ..., name = NULL, colLabels = FALSE,
                progress = interactive(), verbose = FALSE, assay.type = "logcounts",
                use.dimred = NULL) {
    args <- .merge_args(list(nRuns = nRuns, randomState = randomState, keyAdded = name),
                        .given(match.call(), sys.function()), list(...))
    .run_scc("dpp", x, args, assay.type = assay.type, use.dimred = use.dimred,
             progress = progress, colLabels = colLabels, verbose = verbose)
}
