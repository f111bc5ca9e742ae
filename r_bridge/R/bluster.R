# bluster integration: PCCParam(), PLAParam() and DPPParam() for clusterRows(),
# scran::clusterCells() and clusterSweep().

#' Consensus clustering with bluster's interface
#'
#' Parameter objects extending [bluster::BlusterParam-class], so that PCC, PLA
#' and DPP consensus clustering run through [bluster::clusterRows()] (items in
#' rows, as bluster expects), [scran::clusterCells()] and
#' [bluster::clusterSweep()]. `clusterRows()` returns a factor with levels
#' `"1"`, ..., `"k"` (no empty level); with `full = TRUE` a list with
#' `clusters` and `objects` (`membership`, `confidence` and `uns`, the
#' parameters and figures).
#'
#' Every argument of [pcc()], [pla()] or [dpp()] (and of the Python function,
#' in camelCase) can be set; `x[["nClusters"]]` reads one and
#' `x[["nClusters"]] <- 4` sets one, which is how `clusterSweep()` varies them.
#'
#' @inheritParams pcc
#' @param ... Further arguments of the Python function in camelCase (see
#'   [pcc()], [pla()], [dpp()]).
#' @param weighted See [pla()].
#' @param nRuns See [dpp()].
#' @return A `PCCParam`, `PLAParam` or `DPPParam` object.
#' @seealso [pcc()], [pla()], [dpp()], and [bluster::clusterRows()].
#' @examples
#' PCCParam(nClusters = 4, ensembleArgs = list(nPartitions = 20))
#' if (isTRUE(sccAvailable())) {
#'     set.seed(1)
#'     x <- rbind(matrix(rnorm(200), 20), matrix(rnorm(200, 3), 20))  # 40 items x 10 features
#'     table(bluster::clusterRows(x, PCCParam(nClusters = 4,
#'                                            ensembleArgs = list(nPartitions = 20))))
#'     sweep <- bluster::clusterSweep(x, DPPParam(nRuns = 20), randomState = 1:2)
#'     sweep$parameters
#' }
#' @name PCCParam
#' @aliases PCCParam-class PLAParam-class DPPParam-class SccParam-class
#'   clusterRows,ANY,PCCParam-method clusterRows,ANY,PLAParam-method
#'   clusterRows,ANY,DPPParam-method show,SccParam-method
#'   [[,SccParam-method [[<-,SccParam-method
NULL

#' @importClassesFrom bluster BlusterParam
#' @importFrom bluster clusterRows
#' @importFrom methods new show callNextMethod setClass setMethod
setClass("SccParam", contains = c("BlusterParam", "VIRTUAL"),
                  slots = c(args = "list"))

#' @exportClass PCCParam
setClass("PCCParam", contains = "SccParam")
#' @exportClass PLAParam
setClass("PLAParam", contains = "SccParam")
#' @exportClass DPPParam
setClass("DPPParam", contains = "SccParam")

.scc_param <- function(class, formals, dots) {
    if (length(dots) && (is.null(names(dots)) || any(names(dots) == ""))) {
        stop("Arguments of ", class, "() must be named.", call. = FALSE)
    }
    names(dots) <- .camel(names(dots))
    args <- c(formals[setdiff(names(formals), names(dots))], dots)
    methods::new(class, args = args[!vapply(args, is.null, logical(1))])
}

#' @rdname PCCParam
#' @export
PCCParam <- function(nClusters = NULL, divergence = "kl", randomState = 0, ...,
                     ensembleArgs = list(), progress = FALSE) {
    .scc_param("PCCParam", list(nClusters = nClusters, divergence = divergence,
                                randomState = randomState, ensembleArgs = ensembleArgs,
                                progress = progress), list(...))
}

#' @rdname PCCParam
#' @export
PLAParam <- function(nClusters = NULL, weighted = FALSE, randomState = 0, ...,
                     ensembleArgs = list(), progress = FALSE) {
    .scc_param("PLAParam", list(nClusters = nClusters, weighted = weighted,
                                randomState = randomState, ensembleArgs = ensembleArgs,
                                progress = progress), list(...))
}

#' @rdname PCCParam
#' @export
DPPParam <- function(nRuns = 200, randomState = 0, ..., progress = FALSE) {
    .scc_param("DPPParam", list(nRuns = nRuns, randomState = randomState,
                                progress = progress), list(...))
}

#' @exportMethod "[["
setMethod("[[", "SccParam", function(x, i, j, ...) x@args[[.camel(i)]])

#' @exportMethod "[[<-"
setMethod("[[<-", "SccParam", function(x, i, j, ..., value) {
    x@args[[.camel(i)]] <- value
    x
})

#' @exportMethod show
setMethod("show", "SccParam", function(object) {
    methods::callNextMethod()
    for (nm in names(object@args)) {
        v <- object@args[[nm]]
        shown <- if (is.list(v) && !inherits(v, "sccRange")) {
            paste0("list(", paste(names(v), vapply(v, .show_value, ""), sep = " = ",
                                  collapse = ", "), ")")
        } else .show_value(v)
        cat(nm, ": ", shown, "\n", sep = "")
    }
})

.show_value <- function(v) {
    if (inherits(v, "sccRange")) {
        return(paste0("sccRange(", unclass(v)[1], ", ", unclass(v)[2], ")"))
    }
    if (is.character(v)) return(paste(v, collapse = " "))
    if (is.atomic(v)) return(paste(format(v), collapse = " "))
    class(v)[1]
}

.cluster_rows <- function(fun, x, BLUSPARAM, full) {
    if (is.data.frame(x)) x <- as.matrix(x)
    # bluster has items in rows, scconsensusR features in rows
    res <- do.call(fun, c(list(x = t(x)), BLUSPARAM@args))
    clusters <- unname(res$labels)
    if (!full) return(clusters)
    list(clusters = clusters,
         objects = list(membership = res$membership, confidence = unname(res$confidence),
                        uns = res$uns))
}

#' @exportMethod clusterRows
setMethod("clusterRows", c("ANY", "PCCParam"), function(x, BLUSPARAM, full = FALSE) {
    .cluster_rows(pcc, x, BLUSPARAM, full)
})

#' @exportMethod clusterRows
setMethod("clusterRows", c("ANY", "PLAParam"), function(x, BLUSPARAM, full = FALSE) {
    .cluster_rows(pla, x, BLUSPARAM, full)
})

#' @exportMethod clusterRows
setMethod("clusterRows", c("ANY", "DPPParam"), function(x, BLUSPARAM, full = FALSE) {
    .cluster_rows(dpp, x, BLUSPARAM, full)
})
