# Consensus clustering for k = 2..maxK (Monti et al. 2003, as ConsensusClusterPlus):
# the statistics as a data.frame, and their plots in base graphics.

#' Choose the number of clusters as ConsensusClusterPlus does (consensus-k)
#'
#' Resamples the items (`pItem`) and features (`pFeature`) `reps` times,
#' clusters each resample into `k = 2..maxK` clusters (hierarchical clustering
#' on Pearson distance by default, as ConsensusClusterPlus), and summarises
#' the consensus matrices with Monti et al.'s (2003) statistics: the empirical
#' CDF of the consensus values, the area under it and its relative change
#' (delta area), and the proportion of ambiguous clustering (PAC; Senbabaoglu
#' et al. 2014), the lower the better. Python `scconsensus.tl.consensus_k`.
#'
#' @inheritSection scconsensus-io Input and output
#' @inheritSection scconsensus-io Arguments in R style
#' @inheritSection scconsensus-io Warnings, messages and errors
#' @inheritSection scconsensus-io Defaults
#' @inheritParams ensemble
#' @param maxK Largest number of clusters tried (`NULL`: Python's default, 6).
#' @param reps Number of resamples (`NULL`: Python's default, 50).
#' @param ... Further arguments of `scconsensus.tl.consensus_k` in camelCase,
#'   e.g. `pItem`, `pFeature`, `method`, `distance`, `linkage`, `pacWindow`,
#'   `keepK` (which k get labels: `"best"`, a number or `"all"`).
#' @param name Name of the result (Python `key_added`, default
#'   `"consensus_k"`).
#' @return For a matrix, a `data.frame` of class `"sccConsensusK"` with one row
#'   per k: `k`, `pac`, `area` (under the CDF) and `deltaArea`; attributes
#'   `cdf` (k x bins matrix of CDF values at `cdfX`), `cdfX`,
#'   `clusterConsensus` (a data.frame: `k`, `cluster`, `clusterConsensus`,
#'   `size`), `bestK` (lowest PAC; the smallest k when several tie, with a
#'   warning) and `bestKTies` (every k of lowest PAC), `labels` (items x k matrix of every k's
#'   labels, `1..k`, columns `"k2"`, `"k3"`, ...) and `uns` (everything Python
#'   wrote). [plot()][plot.sccConsensusK] draws
#'   the CDF, delta-area and PAC plots. For a `SingleCellExperiment`, `x` with
#'   the labels of the kept k in `colData`, every k's labels as
#'   `reducedDim(x, "<name>_labels")` and the statistics in
#'   `metadata(x)[[name]]`; [consensusKStats()] makes the data.frame of them. A
#'   rerun under the same `name` replaces every k its earlier run wrote, those it
#'   does not write again included (a warning names them).
#' @seealso [plot.sccConsensusK()];
#'   `ConsensusClusterPlus::ConsensusClusterPlus()`, which this follows.
#' @examples
#' if (isTRUE(sccAvailable())) {
#'     set.seed(1)
#'     x <- cbind(matrix(rnorm(300), 10), matrix(rnorm(300, 3), 10))
#'     ck <- consensusK(x, maxK = 4, reps = 10, distance = "euclidean")
#'     print(ck)  # inside if (), values print only when asked
#'     plot(ck, which = "pac")
#' }
#' @export
consensusK <- function(x, maxK = NULL, reps = NULL, randomState = NULL, ..., name = NULL,
                       progress = interactive(), verbose = FALSE,
                       assay.type = "logcounts", use.dimred = NULL) {
    args <- .merge_args(list(maxK = maxK, reps = reps, randomState = randomState,
                             keyAdded = name),
                        .given(match.call(), sys.function()), list(...))
    res <- .run_scc("consensus_k", x, args, assay.type = assay.type,
                    use.dimred = use.dimred, progress = progress, verbose = verbose)
    if (methods::is(x, "SummarizedExperiment")) return(res)
    key <- if (is.null(name)) "consensus_k" else name
    out <- .consensus_k_frame(res$uns[[key]])
    labels <- res$obsm[[paste0(key, "_labels")]]
    if (!is.null(labels)) colnames(labels) <- paste0("k", out$k)
    attr(out, "labels") <- labels
    attr(out, "uns") <- res$uns
    out
}

#' The consensus-k statistics stored in a SingleCellExperiment
#'
#' @param x A `SingleCellExperiment` returned by [consensusK()].
#' @param name The `name` given to [consensusK()].
#' @return The `"sccConsensusK"` data.frame described in [consensusK()]
#'   (without `labels`: they are `colData` columns of `x`).
#' @examples
#' if (isTRUE(sccAvailable())) {
#'     set.seed(1)
#'     x <- cbind(matrix(rnorm(300), 10), matrix(rnorm(300, 3), 10))
#'     sce <- SingleCellExperiment::SingleCellExperiment(list(logcounts = x))
#'     sce <- consensusK(sce, maxK = 4, reps = 10)
#'     consensusKStats(sce)
#' }
#' @export
consensusKStats <- function(x, name = "consensus_k") {
    uns <- S4Vectors::metadata(x)[[name]]
    if (is.null(uns) || is.null(uns$pac)) {
        stop("metadata(x) has no consensus-k result '", name, "': run x <- consensusK(x",
             if (name != "consensus_k") paste0(", name = '", name, "'"), ") first.",
             call. = FALSE)
    }
    .consensus_k_frame(uns)
}

# The statistics Python stored (ConsensusK.to_uns) as R users read them.
.consensus_k_frame <- function(uns) {
    ks <- as.integer(uns$k)
    out <- data.frame(k = ks, pac = as.double(uns$pac), area = as.double(uns$area),
                      deltaArea = as.double(uns$delta_area))
    cdf <- matrix(as.double(uns$cdf), nrow = length(ks), dimnames = list(ks, NULL))
    cc <- uns$cluster_consensus
    names(cc)[names(cc) == "cluster_consensus"] <- "clusterConsensus"
    structure(out, class = c("sccConsensusK", "data.frame"), cdf = cdf,
              cdfX = as.double(uns$cdf_x), clusterConsensus = cc,
              bestK = as.integer(uns$best_k), bestKTies = as.integer(uns$best_k_ties),
              pacWindow = as.double(unlist(uns$pac_window)))
}

#' @export
print.sccConsensusK <- function(x, ...) {
    ties <- attr(x, "bestKTies")
    at <- if (length(ties) > 1L) {
        paste0(paste(ties, collapse = ", "), " (tied)")
    } else attr(x, "bestK")
    cat("Consensus-k for k = ", min(x$k), "..", max(x$k), "; lowest PAC at k = ", at, "\n",
        sep = "")
    print(as.data.frame(unclass(x)[c("k", "pac", "area", "deltaArea")]), ...)
    invisible(x)
}

#' Plots of consensus-k: CDF, delta area and PAC
#'
#' The plots ConsensusClusterPlus draws to choose k, in base graphics: the
#' empirical CDF of the consensus values for each k (`"cdf"`), the relative
#' change in the area under it (`"delta"`), and the proportion of ambiguous
#' clustering, the share of consensus values inside the PAC window (`"pac"`).
#'
#' @param x The result of [consensusK()] or [consensusKStats()].
#' @param which One or more of `"cdf"`, `"delta"`, `"pac"`.
#' @param col Colours of the k (CDF plot).
#' @param ... Passed to [graphics::plot()].
#' @return `x`, invisibly.
#' @examples
#' if (isTRUE(sccAvailable())) {
#'     set.seed(1)
#'     x <- cbind(matrix(rnorm(300), 10), matrix(rnorm(300, 3), 10))
#'     ck <- consensusK(x, maxK = 4, reps = 10)
#'     plot(ck)
#' }
#' @importFrom grDevices hcl.colors
#' @export
plot.sccConsensusK <- function(x, which = c("cdf", "delta", "pac"),
                               col = hcl.colors(nrow(x), "Dark 3"), ...) {
    which <- match.arg(which, several.ok = TRUE)
    for (w in which) {
        switch(w,
               cdf = .plot_cdf(x, col, ...),
               delta = graphics::plot(x$k, x$deltaArea, type = "b", xlab = "k",
                                      ylab = "relative change in area under CDF",
                                      main = "Delta area", xaxt = "n", ...),
               pac = graphics::plot(x$k, x$pac, type = "b", xlab = "k", ylab = "PAC",
                                    main = "Proportion of ambiguous clustering",
                                    xaxt = "n", ...))
        if (w != "cdf") graphics::axis(1, at = x$k)
    }
    invisible(x)
}

.plot_cdf <- function(x, col, ...) {
    cdf <- attr(x, "cdf")
    cdfX <- attr(x, "cdfX")
    graphics::plot(range(cdfX), c(0, 1), type = "n", xlab = "consensus index",
                   ylab = "CDF", main = "Consensus CDF", ...)
    for (i in seq_len(nrow(cdf))) {
        graphics::lines(cdfX, cdf[i, ], type = "s", col = col[i])
    }
    graphics::abline(v = attr(x, "pacWindow"), lty = 3, col = "grey50")
    graphics::legend("bottomright", legend = paste("k =", x$k), col = col, lty = 1,
                     bty = "n")
}
