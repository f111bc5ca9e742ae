#' Input, output and argument conventions of scconsensusR
#'
#' How the functions of scconsensusR read their input, return results and
#' translate arguments to the Python package 'scconsensus'.
#'
#' @section Input and output:
#' `x` is either
#' * a numeric matrix (or sparse `Matrix`) with **features in rows and items
#'   (cells, samples) in columns**, as Bioconductor holds expression data. The
#'   result is a list: `labels` (factor, levels `"0"`, `"1"`, ..., named by the
#'   column names of `x`), `membership` (items x clusters soft memberships, rows
#'   summing to one), `confidence` (largest membership per item), `obs` (a
#'   data.frame of every per-item value written), `obsm` (every per-item matrix
#'   written) and `uns` (parameters and method figures);
#' * a `SingleCellExperiment` (or `SummarizedExperiment`): the values come from
#'   `assay(x, assay.type)` or, with `use.dimred`, from `reducedDim(x,
#'   use.dimred)`; the result is `x` with the labels, confidence and entropy
#'   added as `colData` columns, the memberships as a `reducedDim` named
#'   `"<name>_membership"` and the figures in `metadata(x)[[name]]`.
#'
#' @section Arguments in R style:
#' Any argument of the Python function can be passed in `...` with its name in
#' camelCase (`nNeighbors` for `n_neighbors`; `n.neighbors` and `n_neighbors`
#' work too). Whole numbers are sent as integers where Python expects one.
#' Vectors of length > 1 are sent as tuples (so `k = c(2, 20)` is a range) and
#' lists as lists (`k = list(3, 5, 8)` are explicit values).
#'
#' Random numbers come from Python's generator, seeded by `randomState`;
#' [set.seed()] has no effect on them.
#' @name scconsensus-io
#' @keywords internal
NULL

.collect_args <- function(explicit, dots) {
    explicit <- explicit[!vapply(explicit, is.null, logical(1))]
    c(explicit, dots)
}

#' Build a clustering ensemble
#'
#' Clusters many item (and feature) subsamples of `x` with scconsensus's
#' ensemble generators (Python `scconsensus.tl.ensemble`): k-means,
#' hierarchical clustering, PAM, spectral, Leiden, or a mix.
#'
#' @inheritSection scconsensus-io Input and output
#' @inheritSection scconsensus-io Arguments in R style
#' @param x Numeric matrix (features in rows, items in columns) or a
#'   `SingleCellExperiment`.
#' @param nPartitions Number of partitions.
#' @param methods Clustering method(s): `"kmeans"`, `"kmeans_split"`, `"hc"`,
#'   `"hc_average"`, `"hc_complete"`, `"hc_single"`, `"hc_ward"`,
#'   `"hc_centroid"`, `"pam"`, `"spectral"`, `"leiden"`; several are cycled over
#'   the partitions.
#' @param k Clusters per partition: a number, a range `c(lo, hi)` drawn per
#'   partition, or a list of values cycled over partitions.
#' @param subsample Fraction of items clustered in each partition.
#' @param randomState Seed of the Python random generator.
#' @param ... Further arguments of `scconsensus.tl.ensemble` in camelCase, e.g.
#'   `featureSubsample`, `predictUnsampled`, `linkage`, `distance`,
#'   `resolution`, `nNeighbors`, `nJobs`.
#' @param assay.type Assay used for a `SingleCellExperiment` input.
#' @param use.dimred Use this `reducedDim` of a `SingleCellExperiment` (e.g.
#'   `"PCA"`) instead of an assay.
#' @return For a matrix, an integer matrix of labels, items x partitions, with
#'   `NA` for items a partition left out (element `labels` of the list; `uns`
#'   holds the parameters and per-partition method and k). For a
#'   `SingleCellExperiment`, `x` with that matrix as `reducedDim(x,
#'   "scc_ensemble")`, which [pcc()] and [pla()] then use.
#' @seealso [pcc()], [pla()] and [dpp()] for the consensus.
#' @examples
#' if (isTRUE(sccAvailable())) {
#'     set.seed(1)
#'     x <- cbind(matrix(rnorm(200), 10), matrix(rnorm(200, 3), 10))  # 10 features x 40 items
#'     ens <- ensemble(x, nPartitions = 20, k = c(2, 5))
#'     dim(ens$labels)
#' }
#' @export
ensemble <- function(x, nPartitions = 100, methods = "kmeans", k = c(2, 20),
                     subsample = 0.8, randomState = 0, ...,
                     assay.type = "logcounts", use.dimred = NULL) {
    args <- .collect_args(list(nPartitions = nPartitions, methods = methods, k = k,
                               subsample = subsample, randomState = randomState),
                          list(...))
    res <- .run_scc("ensemble", x, args, assay.type = assay.type, use.dimred = use.dimred)
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
#' @inheritParams ensemble
#' @param nClusters Largest number of clusters; clusters without mass are
#'   dropped.
#' @param divergence `"kl"` or `"l2"` (squared Euclidean), or another Bregman
#'   divergence known to scconsensus.
#' @param ensemble Optional items x partitions label matrix (`NA` = item not
#'   sampled), e.g. from [ensemble()]. When `NULL`, the `"scc_ensemble"`
#'   reducedDim of a `SingleCellExperiment` is used, or an ensemble is built
#'   with `ensembleArgs`.
#' @param ensembleArgs List of arguments for [ensemble()] (camelCase names).
#' @param name Name of the result (Python `key_added`): the `colData` column,
#'   reducedDim prefix and metadata entry.
#' @param ... Further arguments of `scconsensus.tl.pcc` in camelCase, e.g.
#'   `mode`, `nInit`, `tol`, `maxIter`, `minMass`.
#' @return See section "Input and output".
#' @examples
#' if (isTRUE(sccAvailable())) {
#'     set.seed(1)
#'     x <- cbind(matrix(rnorm(200), 10), matrix(rnorm(200, 3), 10))
#'     res <- pcc(x, nClusters = 4, ensembleArgs = list(nPartitions = 20, k = c(2, 5)))
#'     table(res$labels)
#' }
#' @export
pcc <- function(x, nClusters = 10, divergence = "kl", randomState = 0, ...,
                ensemble = NULL, ensembleArgs = list(), name = NULL,
                assay.type = "logcounts", use.dimred = NULL) {
    args <- .collect_args(list(nClusters = nClusters, divergence = divergence,
                               randomState = randomState, keyAdded = name), list(...))
    .run_scc("pcc", x, args, ensemble, ensembleArgs, assay.type, use.dimred)
}

#' Probabilistic latent analysis (PLA) of the co-association
#'
#' EM factorisation `p(i, j) = p(i) sum_v p(v | i) p(j | v)` of an ensemble's
#' co-association, optionally with entropy-regularised partition weights
#' (weighted PLA); Python `scconsensus.tl.pla`.
#'
#' @inheritSection scconsensus-io Input and output
#' @inheritSection scconsensus-io Arguments in R style
#' @inheritParams pcc
#' @param nClusters Number of latent clusters.
#' @param weighted Learn partition weights (weighted PLA).
#' @param ... Further arguments of `scconsensus.tl.pla` in camelCase, e.g.
#'   `lam`, `cvFolds`, `mode`, `nRestarts`, `maxIter`, `tol`.
#' @return See section "Input and output"; the memberships are the posteriors
#'   `p(v | i)`.
#' @examples
#' if (isTRUE(sccAvailable())) {
#'     set.seed(1)
#'     x <- cbind(matrix(rnorm(200), 10), matrix(rnorm(200, 3), 10))
#'     res <- pla(x, nClusters = 2, ensembleArgs = list(nPartitions = 20, k = c(2, 5)))
#'     table(res$labels)
#' }
#' @export
pla <- function(x, nClusters = 10, weighted = FALSE, randomState = 0, ...,
                ensemble = NULL, ensembleArgs = list(), name = NULL,
                assay.type = "logcounts", use.dimred = NULL) {
    args <- .collect_args(list(nClusters = nClusters, weighted = weighted,
                               randomState = randomState, keyAdded = name), list(...))
    .run_scc("pla", x, args, ensemble, ensembleArgs, assay.type, use.dimred)
}

#' DPP consensus clustering
#'
#' Samples diverse Voronoi generators with a determinantal point process,
#' accumulates a consensus matrix over the resulting partitions, and cuts it
#' by thresholds, merging small clusters and choosing by a kernel validity
#' index; Python `scconsensus.tl.dpp`. It builds its own partitions, so it
#' takes no ensemble.
#'
#' @inheritSection scconsensus-io Input and output
#' @inheritSection scconsensus-io Arguments in R style
#' @inheritParams pcc
#' @param nRuns Number of DPP-sampled partitions.
#' @param ... Further arguments of `scconsensus.tl.dpp` in camelCase, e.g.
#'   `sampler`, `a`, `tau`, `s`, `mode`, `kMax`.
#' @return See section "Input and output".
#' @examples
#' if (isTRUE(sccAvailable())) {
#'     set.seed(1)
#'     x <- cbind(matrix(rnorm(200), 10), matrix(rnorm(200, 3), 10))
#'     res <- dpp(x, nRuns = 30)
#'     table(res$labels)
#' }
#' @export
dpp <- function(x, nRuns = 200, randomState = 0, ..., name = NULL,
                assay.type = "logcounts", use.dimred = NULL) {
    args <- .collect_args(list(nRuns = nRuns, randomState = randomState, keyAdded = name),
                          list(...))
    .run_scc("dpp", x, args, assay.type = assay.type, use.dimred = use.dimred)
}
