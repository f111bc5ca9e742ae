# Between R objects and the AnnData the Python side works on.
#
# Matrices never go through reticulate's NumPy conversion (reticulate < 1.36
# cannot use NumPy 2): they travel as the raw bytes of their column-major
# values with their shape, and come back as plain lists (see
# scconsensus/r_bridge.py, encode()).

# Argument values for Python: vectors of length > 1 go as lists (values, e.g.
# k = 2:10 or k = c(3, 5, 8)), as do R lists; a sccRange() as a tuple (a
# range); length-1 vectors as scalars; matrices as byte specs (decoded to NumPy
# arrays in Python). Whole numbers are made integers on the Python side, where
# the Python signature wants an integer (reticulate sends 5 as 5.0), and a list
# becomes a tuple where Python takes only a tuple.
.py_args <- function(args) {
    if (length(args) == 0L) return(reticulate::dict())
    if (is.null(names(args)) || any(names(args) == "")) {
        stop("All arguments passed on to scconsensus must be named.", call. = FALSE)
    }
    # reticulate sends a logical NA as True: the Python message would name a value the
    # user never gave
    for (name in names(args)) {
        v <- args[[name]]
        if (is.atomic(v) && is.null(dim(v)) && length(v) > 0L && anyNA(v)) {
            stop(name, " = NA: give a value, or leave ", name, " out for its default.",
                 call. = FALSE)
        }
    }
    conv <- lapply(args, .py_value)
    reticulate::dict(conv)
}

.py_value <- function(v) {
    if (is.factor(v)) v <- as.character(v)
    if (inherits(v, "sccRange")) return(reticulate::tuple(unclass(v)[1], unclass(v)[2]))
    if (!is.null(dim(v)) || methods::is(v, "Matrix")) {
        return(c(.matrix_spec(v), list(matrix = TRUE)))
    }
    if (is.list(v)) return(lapply(unname(v), .py_value))
    if (is.atomic(v) && length(v) > 1L) return(as.list(unname(v)))
    v
}

#' A range of values drawn per partition
#'
#' `k = sccRange(2, 20)` asks [ensemble()] for a number of clusters drawn
#' uniformly between 2 and 20 (inclusive) in each partition, whereas a vector
#' such as `k = 2:10` or `k = c(3, 5, 8)` gives the values themselves, cycled
#' over the partitions. Also for Leiden's `resolution`, which takes one value or
#' a range, not a vector of values.
#'
#' @param lo,hi Lower and upper end (inclusive). `sccRange(c(2, 20))` works too.
#' @return An object of class `"sccRange"`: the two numbers.
#' @seealso [ensemble()]
#' @examples
#' sccRange(2, 20)
#' @export
sccRange <- function(lo, hi) {
    if (missing(hi) && length(lo) == 2L) {
        hi <- lo[2]
        lo <- lo[1]
    }
    if (!is.numeric(lo) || !is.numeric(hi) || length(lo) != 1L || length(hi) != 1L ||
        anyNA(c(lo, hi)) || lo > hi) {
        stop("sccRange() needs two numbers lo <= hi, as in sccRange(2, 20).", call. = FALSE)
    }
    structure(c(lo, hi), class = "sccRange")
}

#' @export
print.sccRange <- function(x, ...) {
    cat("sccRange(", unclass(x)[1], ", ", unclass(x)[2], ")\n", sep = "")
    invisible(x)
}

# k as R users give it, checked with R wording before Python sees it.
.check_k <- function(k) {
    if (is.null(k) || inherits(k, "sccRange") || identical(k, "auto")) return(invisible())
    v <- unlist(k)
    if (!is.numeric(v) || length(v) == 0L || anyNA(v) || any(v != round(v))) {
        stop("k must be \"auto\" or whole numbers: one value (k = 4), the values to use ",
             "(k = 2:10, k = c(3, 5, 8)) or a range drawn per partition (k = sccRange(2, 20)).",
             call. = FALSE)
    }
    invisible()
}

# Leiden's resolution: one value or sccRange(); Python would read a vector as a range.
.check_resolution <- function(resolution) {
    if (is.null(resolution) || inherits(resolution, "sccRange")) return(invisible())
    v <- unlist(resolution)
    if (!is.numeric(v) || length(v) != 1L || anyNA(v)) {
        stop("resolution takes one number (resolution = 1) or a range drawn per partition ",
             "(resolution = sccRange(0.5, 2)); a vector of values is not supported.",
             call. = FALSE)
    }
    invisible()
}

# nClusters, n.clusters and n_clusters are one argument: nClusters.
.camel <- function(x) gsub("[._]+([[:alnum:]])", "\\U\\1", x, perl = TRUE)

# Merge the named formals of a wrapper with its `...`, naming everything in
# camelCase. `given` are the formals the caller supplied; a `...` name that is
# another spelling of a formal replaces the formal's default, or is an error
# when the formal was given as well.
.merge_args <- function(formals, given, dots) {
    if (length(dots)) {
        if (is.null(names(dots)) || any(names(dots) == "")) {
            stop("Arguments passed on to scconsensus must be named.", call. = FALSE)
        }
        original <- names(dots)
        names(dots) <- .camel(original)
        twice <- duplicated(names(dots))
        if (any(twice)) {
            stop("'", original[twice][1], "' is given twice (as ",
                 paste0("'", original[names(dots) == names(dots)[twice][1]], "'",
                        collapse = " and "), ").", call. = FALSE)
        }
        for (i in seq_along(dots)) {
            nm <- names(dots)[i]
            if (nm %in% given) {
                shown <- if (nm == "keyAdded") "name" else nm
                stop("'", original[i], "' and '", shown, "' are the same argument; ",
                     "give it once.", call. = FALSE)
            }
            if (nm %in% names(formals)) formals[nm] <- list(NULL)
        }
    }
    args <- c(formals, dots)
    args[!vapply(args, is.null, logical(1))]
}

# The formals of `fun` its call supplied (name = keyAdded).
.given <- function(call, fun) {
    nm <- names(as.list(call))[-1]
    nm <- nm[!is.na(nm) & nm %in% setdiff(names(formals(fun)), "...")]
    nm[nm == "name"] <- "keyAdded"
    nm
}

# A matrix as a spec for scconsensus.r_bridge.decode_matrix().
.matrix_spec <- function(m, transpose = FALSE) {
    if (methods::is(m, "sparseMatrix")) {
        m <- methods::as(methods::as(m, "CsparseMatrix"), "generalMatrix")
        if (!methods::is(m, "dgCMatrix")) m <- methods::as(m, "dMatrix")
        return(list(shape = as.list(dim(m)), i = writeBin(m@i, raw()),
                    p = writeBin(m@p, raw()), x = writeBin(as.double(m@x), raw()),
                    transpose = transpose))
    }
    m <- as.matrix(m)
    if (is.integer(m)) {
        return(list(shape = as.list(dim(m)), dtype = "int32",
                    data = writeBin(as.vector(m), raw()), transpose = transpose))
    }
    if (!is.numeric(m) && !is.logical(m)) {
        stop("x must be numeric, not ", typeof(m), ".", call. = FALSE)
    }
    list(shape = as.list(dim(m)), dtype = "float64",
         data = writeBin(as.double(m), raw()), transpose = transpose)
}

# Items x features input (as a spec) from a features x items matrix or a
# SingleCellExperiment, with the item names.
.item_matrix <- function(x, assay.type, use.dimred, call = "this function") {
    if (methods::is(x, "SummarizedExperiment")) {
        if (!is.null(use.dimred)) {
            if (!methods::is(x, "SingleCellExperiment")) {
                stop("use.dimred needs a SingleCellExperiment (reducedDims); x is a ",
                     class(x)[1], ": convert it with as(x, 'SingleCellExperiment') and add ",
                     "the reducedDim, or pass assay.type.", call. = FALSE)
            }
            if (!use.dimred %in% SingleCellExperiment::reducedDimNames(x)) {
                stop("use.dimred = '", use.dimred, "' is not among reducedDimNames(x): ",
                     .listed(SingleCellExperiment::reducedDimNames(x)), call. = FALSE)
            }
            # reducedDims hold items in rows already
            m <- SingleCellExperiment::reducedDim(x, use.dimred)
            .check_values(m, paste0("reducedDim(x, '", use.dimred, "')"), items = "rows")
            spec <- .matrix_spec(m)
            features <- colnames(m)
        } else {
            available <- SummarizedExperiment::assayNames(x)
            if (!assay.type %in% available) {
                stop("assay.type = '", assay.type, "' is not among assayNames(x): ",
                     .listed(available),
                     ". Pass assay.type (e.g. 'logcounts') or use.dimred (e.g. 'PCA').",
                     call. = FALSE)
            }
            m <- SummarizedExperiment::assay(x, assay.type, withDimnames = FALSE)
            .check_values(m, paste0("assay(x, '", assay.type, "')"), items = "columns")
            spec <- .matrix_spec(m, transpose = TRUE)
            features <- rownames(x)
        }
        n <- ncol(x)
        names <- colnames(x)
    } else if (is.matrix(x) || methods::is(x, "Matrix")) {
        if (!is.null(use.dimred)) {
            stop("use.dimred = '", use.dimred, "' needs a SingleCellExperiment; x is a ",
                 "matrix, used as it is (features in rows, items in columns): leave ",
                 "use.dimred out.", call. = FALSE)
        }
        .check_orientation(x, items = "columns", call = call)
        .check_values(x, "x", items = "columns")
        spec <- .matrix_spec(x, transpose = TRUE)
        features <- rownames(x)
        n <- ncol(x)
        names <- colnames(x)
    } else if (is.data.frame(x)) {
        stop("x is a data.frame: convert it with as.matrix(x) (features in rows, items ",
             "in columns).", call. = FALSE)
    } else {
        stop("x must be a numeric matrix (features in rows, items in columns) or a ",
             "SingleCellExperiment, not a ", class(x)[1], ".", call. = FALSE)
    }
    # a reducedDim (or a matrix of its components, as bluster's clusterRows() gets them) is
    # a representation: Python reads those from .obsm, without the checks of a matrix of
    # features (its first component may hold most of the variance)
    list(spec = spec, n = n, names = names, features = features,
         representation = !is.null(use.dimred) || .mostly(features, .component_pattern))
}

# R's NA marks items a partition left out; Python's ensemble uses -1 and labels
# 0..k-1 per partition (R's are recoded, whatever they are: 1..k, factors,
# strings).
.ensemble_spec <- function(ensemble, n) {
    if (is.null(ensemble)) return(NULL)
    if (is.list(ensemble) && !is.data.frame(ensemble) && !is.null(ensemble$labels)) {
        stop("ensemble is the whole result of ensemble(); pass its label matrix: ",
             "ensemble = ens$labels.", call. = FALSE)
    }
    if (is.data.frame(ensemble) || methods::is(ensemble, "DataFrame")) {
        ensemble <- do.call(cbind, lapply(as.list(ensemble), as.character))
    }
    if (is.character(ensemble) && length(ensemble) == 1L && n != 1L) {
        stop("ensemble = '", ensemble, "' is a name; pass the name of a stored ensemble as ",
             "ensembleKey = '", ensemble, "', or the label matrix itself as ensemble.",
             call. = FALSE)
    }
    ensemble <- as.matrix(ensemble)
    .check_ensemble_values(ensemble)
    if (nrow(ensemble) != n) {
        stop("ensemble has ", nrow(ensemble), " rows but x has ", n,
             " items; it must be items x partitions.", call. = FALSE)
    }
    codes <- apply(ensemble, 2, function(p) match(p, sort(unique(p[!is.na(p)]))) - 1L)
    codes <- matrix(as.integer(codes), nrow = n)
    codes[is.na(codes)] <- -1L
    .matrix_spec(codes)
}

# Cluster ids are whole numbers, factors or strings; NA marks an item a partition did not
# sample. A negative number (Python's -1) would be recoded as one more cluster that every
# unsampled item shares, and a non-integer (an embedding passed by mistake) as n clusters.
.check_ensemble_values <- function(ensemble) {
    if (!is.numeric(ensemble)) return(invisible())
    v <- ensemble[!is.na(ensemble)]
    if (any(v != round(v))) {
        stop("ensemble holds non-integer values (e.g. ", format(v[v != round(v)][1]),
             "): it must hold cluster ids, one column per partition, such as ",
             "ensemble()'s labels. Is it an embedding (e.g. reducedDim 'PCA')? Pass ",
             "ensembleKey naming a stored ensemble instead.", call. = FALSE)
    }
    if (any(v < 0)) {
        stop("ensemble holds negative values (", format(min(v)), "): in R, mark the items ",
             "a partition did not sample with NA, not -1 (Python's convention), e.g. ",
             "labels[labels < 0] <- NA.", call. = FALSE)
    }
}

# Inverse of encode() in scconsensus/r_bridge.py.
.decode <- function(v) {
    if (!is.list(v)) return(v)
    nm <- names(v)
    if (!is.null(nm) && all(c("shape", "dtype", "data") %in% nm) && length(nm) == 3L) {
        data <- unlist(v$data)
        if (is.null(data)) data <- vector(if (v$dtype == "int32") "integer" else "double")
        data <- switch(v$dtype, int32 = as.integer(data), bool = as.logical(data),
                       str = as.character(data), as.double(data))
        shape <- as.integer(unlist(v$shape))
        if (length(shape) <= 1L) return(data)
        return(array(data, dim = shape))
    }
    if (!is.null(nm) && setequal(nm, c("levels", "values"))) {
        values <- vapply(v$values, function(s) if (is.null(s)) NA_character_ else s,
                         character(1))
        return(factor(values, levels = unlist(v$levels)))
    }
    if (!is.null(nm) && setequal(nm, c("columns", "index"))) {
        cols <- lapply(v$columns, .decode)
        df <- as.data.frame(cols, optional = TRUE, stringsAsFactors = FALSE)
        idx <- unlist(v$index)
        # pandas' default index 0..n-1 becomes R's own 1..n, not the strings "0", "1", ...
        if (length(idx) == nrow(df) && nrow(df) > 0L &&
            !identical(idx, as.character(seq_len(nrow(df)) - 1L))) rownames(df) <- idx
        return(df)
    }
    lapply(v, .decode)
}

.decode_obsm <- function(m, names) {
    m <- as.matrix(.decode(m))
    if (is.integer(m)) {
        # ensemble labels: -1 = not sampled, clusters 0..k-1 become 1..k
        m[m < 0L] <- NA_integer_
        m <- m + 1L
        colnames(m) <- paste0("p", seq_len(ncol(m)))
    } else if (is.character(m) && all(grepl("^-?[0-9]+$", m[!is.na(m)]))) {
        # labels as strings (consensus-k's for every k): "0".."k-1" become 1..k
        m <- matrix(as.integer(m) + 1L, nrow(m), dimnames = dimnames(m))  # "k2", "k3", ...
        m[!is.na(m) & m < 1L] <- NA_integer_
    }
    rownames(m) <- names
    m
}

# Labels "1".."k" without empty levels, as bluster and scran give them, with
# the membership columns in the same order and named alike (clusters no item
# is assigned to come last, so that rows still sum to one).
.bioc_labels <- function(labels, membership = NULL) {
    used <- levels(droplevels(labels))
    new <- factor(match(as.character(labels), used), levels = seq_along(used))
    names(new) <- names(labels)
    if (!is.null(membership)) {
        # Python's label "j" is membership column j + 1
        cols <- suppressWarnings(as.integer(used)) + 1L
        if (anyNA(cols) || any(cols > ncol(membership))) {
            cols <- match(used, levels(labels))  # otherwise by position
        }
        if (!anyNA(cols) && all(cols <= ncol(membership))) {
            order <- c(cols, setdiff(seq_len(ncol(membership)), cols))
            membership <- membership[, order, drop = FALSE]
        }
        colnames(membership) <- seq_len(ncol(membership))
    }
    list(labels = new, membership = membership)
}

# Names that identify features, not items: probe sets ("1000_at", "1552256_a_at",
# Affymetrix controls), Ensembl genes, Illumina probes, and the components of a
# reducedDim ("PC1", "UMAP_2"); and cell barcodes (10x: 16 bases, "-1"), which identify
# items. Gene symbols do not tell genes from sample names, so they are not used.
.component_pattern <- "^(PC|IC|UMAP|TSNE|LSI|Harmony|MNN|DC|Dim|Comp)[ _.]?[0-9]+$"
.feature_pattern <- paste0("(_at$)|(^ENS[A-Z]*G[0-9]{6,}([.][0-9]+)?$)|(^ILMN_[0-9]+$)|(",
                           .component_pattern, ")|(^gene[_.-]?[0-9]+$)")
# (and simulated data's "cell1", "Cell_2", as a user trial's transposed matrix had them)
.barcode_pattern <- "([ACGT]{12,})|(^cell[_.-]?[0-9]+$)"

.mostly <- function(names, pattern) {
    names <- names[!is.na(names)]
    length(names) >= 2L && mean(grepl(pattern, names, ignore.case = TRUE)) >= 0.9
}

# Warn (class "scconsensusOrientationWarning") when the names of a matrix show the
# other orientation: `items` is where `call` expects the items, "rows" or "columns".
.check_orientation <- function(x, items = c("columns", "rows"), call = "this function") {
    items <- match.arg(items)
    features <- if (items == "columns") "rows" else "columns"
    item_names <- if (items == "columns") colnames(x) else rownames(x)
    feature_names <- if (items == "columns") rownames(x) else colnames(x)
    shown <- NULL
    if (.mostly(item_names, .feature_pattern)) {
        shown <- paste0("its ", items, " are named like features (",
                        paste0("'", item_names[1:2], "'", collapse = ", "), ")")
    } else if (.mostly(feature_names, .barcode_pattern)) {
        shown <- paste0("its ", features, " are named like cells (",
                        paste0("'", feature_names[1:2], "'", collapse = ", "), ")")
    }
    if (is.null(shown)) return(invisible(FALSE))
    warning(warningCondition(
        paste0("x looks transposed: ", call, " takes items (cells, samples) in ", items,
               " and features in ", features, ", but ", shown, ". If so, pass t(x)."),
        class = c("scconsensusOrientationWarning", "scconsensusWarning")))
    invisible(TRUE)
}

# The values of the matrix to cluster, checked in R terms before any work: items and
# features (`items`: the dimension that holds the items), numbers (a logical matrix is
# refused, not read as 0/1 silently), none missing or infinite.
.check_values <- function(m, what, items) {
    dims <- if (items == "rows") c("rows", "columns") else c("columns", "rows")
    counts <- if (items == "rows") dim(m) else rev(dim(m))
    empty <- which(counts == 0L)[1]
    if (!is.na(empty)) {
        stop(what, " has no ", c("items", "features")[empty], " (0 ", dims[empty], "; items ",
             "are its ", dims[1], ", features its ", dims[2], ").", call. = FALSE)
    }
    if (is.logical(m) || methods::is(m, "lMatrix") || methods::is(m, "nMatrix")) {
        stop(what, " is logical: scconsensus clusters numbers. If TRUE/FALSE are meant as ",
             "1/0, pass a numeric matrix, e.g. x * 1.", call. = FALSE)
    }
    values <- if (methods::is(m, "sparseMatrix")) m@x else m
    if (!is.numeric(values) && !is.matrix(values)) values <- as.matrix(values)
    bad <- if (is.numeric(values)) sum(!is.finite(values)) else 0L
    if (bad > 0L) {
        stop(what, " has ", bad, " missing (NA/NaN) or infinite value(s). Remove or ",
             "impute them before clustering, e.g. keep complete rows with ",
             "x[stats::complete.cases(x), ] or set x[is.na(x)] <- 0.", call. = FALSE)
    }
    invisible()
}

# nClusters in R terms, before an ensemble is built: NULL, "auto" or low <= k < n, low as
# Python checks it (2 for pcc and pla; dpp takes 1: a user trial passed nClusters = 1 to
# pcc here and got Python's refusal); with `several`, also a vector of such K, none twice
# (pcc and pla fit each).
.check_n_clusters <- function(k, n, low = 2, several = FALSE) {
    # NA has its own message (see .py_args)
    if (is.null(k) || identical(k, "auto") || identical(as.vector(is.na(k)), TRUE)) {
        return(invisible())
    }
    if (is.factor(k)) {  # its codes, not its labels, would be the numbers
        stop("nClusters is a factor: give numbers, e.g. as.numeric(as.character(k)).",
             call. = FALSE)
    }
    forms <- paste0("a whole number >= ", low,
                    if (several) ", a vector of them (c(4, 8))", ", \"auto\" or NULL")
    if (!is.numeric(k) || !length(k) || anyNA(k) || any(k != round(k)) || any(k < low) ||
        (length(k) > 1L && !several)) {
        stop("nClusters must be ", forms, " (chosen from the data), not ", deparse(k),
             if (length(k) > 1L && !several) "; this method fits one number of clusters",
             ".", call. = FALSE)
    }
    if (anyDuplicated(k)) {
        stop("nClusters lists ", k[anyDuplicated(k)], " more than once; each number of ",
             "clusters is fitted and stored once. Remove the repeats.", call. = FALSE)
    }
    top <- if (low == 1) n else n - 1  # dpp may cut every item apart, as Python allows
    if (any(k > top)) {
        # "choose nClusters below 1" for one item (a user trial) advised the impossible
        stop("nClusters = ", max(k), " is too large for ", n, " items: ",
             if (top >= low) paste0("choose nClusters <= ", top, ", or leave it NULL to ",
                                    "choose it from the data.")
             else paste0("cluster at least ", low + 1, " items."), call. = FALSE)
    }
    invisible()
}

# Names for a message, "(none)" for none (a user trial read "reducedDimNames(x): ." as a
# cut-off message).
.listed <- function(names) if (length(names)) paste(names, collapse = ", ") else "(none)"
