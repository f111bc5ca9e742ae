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
#' Arguments are checked when the object is made (and when one is set): an
#' argument the function does not take, one given twice under two spellings
#' (`nClusters` and `n.clusters`), or a value of the wrong kind is an error
#' then, not when clustering. `show()` prints every argument, those left unset
#' with the Python default they take.
#'
#' **Orientation**: `clusterRows(x, PCCParam())` takes items in **rows** and
#' features in columns, as bluster does (e.g. a `reducedDim`; `t()` an assay),
#' whereas [pcc()] takes features in rows. A dense or sparse (`dgCMatrix`)
#' matrix works.
#'
#' @inheritParams pcc
#' @param ... Further arguments of the Python function in camelCase (see
#'   [pcc()], [pla()], [dpp()]).
#' @param nClusters Number of clusters: `NULL` (Python's default, `"auto"`), `"auto"`
#'   or a number (one: [bluster::clusterRows()] returns one labelling; [pcc()] and
#'   [pla()] fit several).
#' @param weighted See [pla()].
#' @param nRuns See [dpp()].
#' @param verbose See [ensemble()].
#' @return A `PCCParam`, `PLAParam` or `DPPParam` object.
#' @seealso [pcc()], [pla()], [dpp()], and [bluster::clusterRows()].
#' @examples
#' PCCParam(nClusters = 4, ensembleArgs = list(nPartitions = 20))
#' if (isTRUE(sccAvailable())) {
#'     set.seed(1)
#'     x <- rbind(matrix(rnorm(200), 20), matrix(rnorm(200, 3), 20))  # 40 items x 10 features
#'     print(PCCParam())  # the defaults it takes
#'     print(table(bluster::clusterRows(x, PCCParam(nClusters = 4,
#'                                            ensembleArgs = list(nPartitions = 20)))))
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

.scc_param <- function(class, formals, given, dots) {
    if (length(dots) && (is.null(names(dots)) || any(names(dots) == ""))) {
        stop("Arguments of ", class, "() must be named.", call. = FALSE)
    }
    methods::new(class, args = .merge_args(formals, given, dots))
}

#' @rdname PCCParam
#' @export
PCCParam <- function(nClusters = NULL, divergence = NULL, randomState = NULL, ...,
                     ensembleArgs = list(), progress = FALSE, verbose = FALSE) {
    .scc_param("PCCParam", list(nClusters = nClusters, divergence = divergence,
                                randomState = randomState, ensembleArgs = ensembleArgs,
                                progress = progress, verbose = verbose),
               .given(match.call(), sys.function()), list(...))
}

#' @rdname PCCParam
#' @export
PLAParam <- function(nClusters = NULL, weighted = NULL, randomState = NULL, ...,
                     ensembleArgs = list(), progress = FALSE, verbose = FALSE) {
    .scc_param("PLAParam", list(nClusters = nClusters, weighted = weighted,
                                randomState = randomState, ensembleArgs = ensembleArgs,
                                progress = progress, verbose = verbose),
               .given(match.call(), sys.function()), list(...))
}

#' @rdname PCCParam
#' @export
DPPParam <- function(nRuns = NULL, randomState = NULL, ..., progress = FALSE,
                     verbose = FALSE) {
    .scc_param("DPPParam", list(nRuns = nRuns, randomState = randomState,
                                progress = progress, verbose = verbose),
               .given(match.call(), sys.function()), list(...))
}

# The R function behind each class.
.param_fun <- function(object) {
    switch(class(object)[1], PCCParam = "pcc", PLAParam = "pla", DPPParam = "dpp")
}

# R formals of `fun` a parameter object may set (clusterRows() gives x; a matrix has
# no assay, reducedDims or colLabels).
.param_names <- function(fun) {
    setdiff(names(formals(get(fun, mode = "function"))),
            c("x", "...", "assay.type", "use.dimred", "colLabels"))
}

# Python's arguments of scconsensus.tl.<fun> with their defaults (camelCase names), or
# NULL when Python is not available.
.py_defaults <- function(fun) {
    if (!isTRUE(sccAvailable())) return(NULL)
    reticulate::py_to_r(.py_try(.scc_bridge()$defaults(fun)))
}

.whole <- function(v) is.numeric(v) && length(v) == 1L && !is.na(v) && v == round(v)

# Problems with the arguments of a parameter object for `fun` (character(0) if none),
# as bluster's validity methods report them. Argument names are checked against
# Python's only when Python is available.
.param_problems <- function(args, fun, py) {
    out <- character(0)
    if ("nNull" %in% names(args)) {  # documented in ?pcc, where the result keeps it
        out <- c(out, paste0("nNull is not taken here: clusterRows() returns labels only. ",
                             "Call ", fun, "(x, nNull = 3) to compare K with data without ",
                             "groups"))
        args$nNull <- NULL
    }
    known <- c(.param_names(fun), names(py))
    unknown <- setdiff(names(args), known)
    if (length(unknown) && !is.null(py)) {
        out <- c(out, paste0(fun, "() has no argument '", unknown[1], "'; its arguments: ",
                             paste(sort(unique(known)), collapse = ", ")))
    }
    k <- args[["nClusters", exact = TRUE]]
    low <- if (fun == "dpp") 1 else 2  # as Python checks it
    if (!is.null(k) && !identical(k, "auto") && !(.whole(k) && k >= low)) {
        out <- c(out, paste0("nClusters must be NULL, \"auto\" or a whole number >= ", low,
                             if (length(k) > 1L) paste0(" (one: clusterRows() returns one ",
                                                         "labelling; pcc() and pla() fit several)")))
    }
    seed <- args[["randomState", exact = TRUE]]
    if (!is.null(seed) && !(.whole(seed) && seed >= 0)) {
        out <- c(out, "randomState must be a whole number >= 0")
    }
    for (flag in c("progress", "verbose")) {
        v <- args[[flag, exact = TRUE]]
        if (!(is.null(v) || isTRUE(v) || isFALSE(v))) {
            out <- c(out, paste(flag, "must be TRUE or FALSE"))
        }
    }
    c(out, .ensemble_args_problems(args[["ensembleArgs", exact = TRUE]], py))
}

.ensemble_args_problems <- function(ens, py) {
    if (is.null(ens)) return(character(0))
    if (!is.list(ens) || (length(ens) && (is.null(names(ens)) || any(names(ens) == "")))) {
        return("ensembleArgs must be a named list of ensemble() arguments")
    }
    if (!length(ens) || is.null(py)) return(character(0))
    known <- c(.param_names("ensemble"), names(.py_defaults("ensemble")))
    bad <- setdiff(.camel(names(ens)), known)
    if (length(bad)) return(paste0("ensembleArgs: ensemble() has no argument '", bad[1], "'"))
    character(0)
}

methods::setValidity("SccParam", function(object) {
    fun <- .param_fun(object)
    problems <- .param_problems(object@args, fun, .py_defaults(fun))
    if (length(problems)) problems else TRUE
})

#' @exportMethod "[["
setMethod("[[", "SccParam", function(x, i, j, ...) x@args[[.camel(i)]])

#' @exportMethod "[[<-"
setMethod("[[<-", "SccParam", function(x, i, j, ..., value) {
    x@args[[.camel(i)]] <- value
    methods::validObject(x)
    x
})

#' @exportMethod show
setMethod("show", "SccParam", function(object) {
    methods::callNextMethod()
    constructor <- get(class(object)[1], mode = "function")
    py <- .py_defaults(.param_fun(object))
    for (nm in union(setdiff(names(formals(constructor)), "..."), names(object@args))) {
        v <- object@args[[nm]]
        shown <- if (is.null(v)) {
            paste(if (nm %in% names(py)) .show_value(py[[nm]]) else "NULL",
                  "(Python's default)")
        } else if (is.list(v) && !inherits(v, "sccRange")) {
            paste0("list(", paste(names(v), vapply(v, .show_value, ""), sep = " = ",
                                  collapse = ", "), ")")
        } else .show_value(v)
        cat(nm, ": ", shown, "\n", sep = "")
    }
})

.show_value <- function(v) {
    if (is.null(v)) return("NULL")
    if (is.character(v) && length(v) == 1L) return(paste0('"', v, '"'))
    if (is.list(v) && !inherits(v, "sccRange")) return(.show_value(unlist(v)))
    if (inherits(v, "sccRange")) {
        return(paste0("sccRange(", unclass(v)[1], ", ", unclass(v)[2], ")"))
    }
    if (is.character(v)) return(paste(v, collapse = " "))
    if (is.atomic(v)) return(paste(format(v), collapse = " "))
    class(v)[1]
}

.cluster_rows <- function(fun, x, BLUSPARAM, full) {
    if (is.data.frame(x)) x <- as.matrix(x)
    .check_orientation(x, items = "rows", call = "clusterRows()")
    # the labels come back unnamed, as KmeansParam's: names that could not name items
    # (duplicated barcodes after cbind() of samples) need not stop the clustering
    rn <- rownames(x)
    if (!is.null(rn) && (anyDuplicated(rn) || anyNA(rn) || any(rn == ""))) rownames(x) <- NULL
    # bluster has items in rows, scconsensusR features in rows; Matrix::t() also
    # transposes a dgCMatrix (base::t() does not)
    res <- withCallingHandlers(
        do.call(fun, c(list(x = Matrix::t(x)), BLUSPARAM@args)),
        scconsensusOrientationWarning = function(w) invokeRestart("muffleWarning"))
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
